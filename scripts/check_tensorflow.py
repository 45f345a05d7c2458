"""TensorFlow and mirrorlab side by side: what scripts/check-tensorflow runs.

TensorFlow's answers come from running it here (tensorflow-cpu, logical CPU devices standing for
the GPUs); mirrorlab's from build/tests/mirrorlab_answers, which runs mirrorlab's own code on the
same cases. Each row says "same", "DIFFERS", or "known" (a difference mirrorlab documents and
says in its output).
"""

import argparse
import json
import subprocess
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import tensorflow as tf  # noqa: E402  (after the warnings filter)
import keras  # noqa: E402

MAX_REPLICAS = 8
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    cpus[0], [tf.config.LogicalDeviceConfiguration()] * MAX_REPLICAS)

# (examples, replicas, batch per replica): every global batch of one epoch is compared.
SPLIT_CASES = [
    (1000, 3, 16),   # the README's and the Batch split panel's example: 40 left
    (40, 3, 16),     # only the short batch
    (82, 8, 3),      # the unit tests' dataset: 10 left on 8 replicas
    (82, 4, 6),
    (1001, 2, 32),
    (5, 4, 2),
    (7, 4, 2),
    (1, 2, 2),
    (9, 4, 2),
    (13, 4, 4),
    (3, 4, 2),
    (60000, 2, 128),  # all of Fashion-MNIST's training set
]


def strategy_of(replicas):
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])


def tf_split(examples, replicas, per_replica, drop_remainder=False):
    strategy = strategy_of(replicas)
    ds = tf.data.Dataset.range(examples).batch(per_replica * replicas,
                                               drop_remainder=drop_remainder)
    steps = []
    for batch in strategy.experimental_distribute_dataset(ds):
        steps.append([int(tf.shape(v)[0]) for v in strategy.experimental_local_results(batch)])
    return steps


def tf_fit_steps(examples, replicas, per_replica):
    """Steps model.fit takes over one epoch of numpy arrays (does it keep the short batch?)."""
    strategy = strategy_of(replicas)
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    counter = keras.callbacks.LambdaCallback()
    seen = []
    counter.on_train_batch_end = lambda batch, logs: seen.append(batch)
    x = np.zeros((examples, 1), np.float32)
    model.fit(x, x, batch_size=per_replica * replicas, epochs=1, verbose=0,
              callbacks=[counter], shuffle=False)
    return len(seen)


def tf_average_loss_scales(shards, global_batch_size):
    """Per replica, what compute_average_loss multiplies the summed per-example loss by."""
    strategy = strategy_of(len(shards))
    total = sum(shards)
    ds = tf.data.Dataset.range(total).batch(total)
    dist = strategy.experimental_distribute_dataset(ds)

    @tf.function
    def step(x):
        def fn(x):
            per_example = tf.ones_like(tf.cast(x, tf.float32))
            return tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)
        return strategy.run(fn, args=(x,))

    for batch in dist:
        got = [int(tf.shape(v)[0]) for v in strategy.experimental_local_results(batch)]
        values = [float(v) for v in strategy.experimental_local_results(step(batch))]
        return got, [v / n if n else 0.0 for v, n in zip(values, got)]


def tf_fit_weighting(examples=88, replicas=3, per_replica=16, lr=0.5):
    """model.fit of w * x against 0 (MSE, SGD) on `replicas` replicas, where the last batch is
    short: the weight it ends with, and what each loss scaling predicts."""
    x = (np.arange(examples, dtype=np.float32) / examples).reshape(examples, 1)
    strategy = strategy_of(replicas)
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(
            1, use_bias=False, kernel_initializer="ones")])
        model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse")
    ds = tf.data.Dataset.from_tensor_slices((x, np.zeros_like(x))).batch(per_replica * replicas)
    model.fit(ds, epochs=1, verbose=0)
    return float(model.layers[0].kernel.numpy()[0, 0])


def predicted_weight(scales_per_step, shards_per_step, examples=88, lr=0.5):
    """SGD on w * x against 0 when replica r scales its summed loss by scales[r]."""
    x = np.arange(examples, dtype=np.float64) / examples
    w, begin = 1.0, 0
    for scales, shards in zip(scales_per_step, shards_per_step):
        grad = 0.0
        for scale, count in zip(scales, shards):
            xs = x[begin:begin + count]
            grad += scale * np.sum(2 * w * xs * xs)
            begin += count
        w -= lr * grad
    return w


def isolated(function, *args):
    """Runs `function(*args)` in a Python of its own: TensorFlow's collectives keep their
    groups per process, and a second MirroredStrategy of another size in the same process fails
    ("joining a group with size 8, but that group has size 3")."""
    out = subprocess.run([sys.executable, __file__, "--isolated", function.__name__,
                          json.dumps(args)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{function.__name__}{args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def mirrorlab(answers_binary, cases):
    out = subprocess.run([answers_binary], input=json.dumps(cases), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def short(steps):
    """One epoch's splits, compactly: the full ones counted, the last written out."""
    if not steps:
        return "no steps"
    full = steps[0]
    n_full = sum(1 for s in steps if s == full)
    text = f"{n_full} x {full}" if n_full > 1 or steps[-1] == full else str(full)
    if steps[-1] != full:
        text += f" + {steps[-1]}"
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answers", help="build/tests/mirrorlab_answers")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--isolated", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.isolated:
        name, arguments = args.isolated
        print(json.dumps(globals()[name](*json.loads(arguments))))
        return 0
    if not args.answers:
        parser.error("--answers is required")

    rows = []  # (what, case, tensorflow, mirrorlab, verdict)

    def row(what, case, tf_value, ml_value, known=None, agree=None):
        """agree: whether the two agree, where the values shown are not compared as they are."""
        agree = tf_value == ml_value if agree is None else agree
        verdict = "same" if agree else ("known" if known else "DIFFERS")
        rows.append((what, case, str(tf_value), str(ml_value), verdict, known or ""))

    # 1. The split of every global batch, through experimental_distribute_dataset.
    ml = mirrorlab(args.answers, {"split": [
        {"examples": e, "replicas": r, "batch_per_replica": b} for e, r, b in SPLIT_CASES]})
    for (e, r, b), ml_steps in zip(SPLIT_CASES, ml["split"]):
        tf_steps = isolated(tf_split, e, r, b)
        case = f"{e} examples, {r} replicas x {b}"
        row("split", case, short(tf_steps), short(ml_steps))

    # drop_remainder=True: TensorFlow drops the short batch; mirrorlab, like model.fit on
    # arrays, keeps it.
    for e, r, b in [(1000, 3, 16), (82, 8, 3)]:
        dropped = len(isolated(tf_split, e, r, b, True))
        kept_by_fit = isolated(tf_fit_steps, e, r, b)
        ml_steps = len(ml["split"][SPLIT_CASES.index((e, r, b))])
        case = f"{e} examples, {r} replicas x {b}"
        row("steps per epoch, model.fit on arrays", case, kept_by_fit, ml_steps)
        row("steps per epoch, batch(drop_remainder=True)", case, dropped, ml_steps,
            known="mirrorlab has no drop_remainder: it keeps the short batch, as model.fit "
                  "on arrays does")

    # 2. Loss scaling on an uneven batch.
    shards, no_gbs = isolated(tf_average_loss_scales, [14, 14, 12], None)
    _, gbs_real = isolated(tf_average_loss_scales, [14, 14, 12], 40)
    ml = mirrorlab(args.answers, {"loss_scale": [
        {"shards": shards, "scaling": "replica-mean"},
        {"shards": shards, "scaling": "batch-mean"}]})
    rounded = lambda v: [round(float(s), 6) for s in v]  # noqa: E731
    row("compute_average_loss(per_example) vs replica-mean", f"shards {shards}",
        rounded(no_gbs), rounded(ml["loss_scale"][0]))
    row("compute_average_loss(global_batch_size=40) vs batch-mean", f"shards {shards}",
        rounded(gbs_real), rounded(ml["loss_scale"][1]))

    # model.fit's own weighting: train, and compare with what each scaling predicts.
    fit_shards = [[16, 16, 16], [14, 14, 12]]  # 88 examples, 3 replicas x 16
    ml = mirrorlab(args.answers, {"loss_scale": [
        {"shards": s, "scaling": scaling} for scaling in ("replica-mean", "batch-mean")
        for s in fit_shards]})
    tf_w = isolated(tf_fit_weighting)
    replica_mean_w = predicted_weight(ml["loss_scale"][0:2], fit_shards)
    batch_mean_w = predicted_weight(ml["loss_scale"][2:4], fit_shards)
    close = lambda a, b: abs(a - b) < 1e-5  # noqa: E731
    fit_agrees = close(tf_w, replica_mean_w)
    row("model.fit's loss weighting on an uneven batch (w after 1 epoch)",
        "88 examples, 3 replicas x 16, SGD",
        f"w = {tf_w:.6f}",
        f"w = {replica_mean_w:.6f} (replica-mean, the default)" if fit_agrees
        else f"replica-mean {replica_mean_w:.6f}, batch-mean {batch_mean_w:.6f}",
        agree=fit_agrees)
    row("--loss-scaling batch-mean against model.fit", "88 examples, 3 replicas x 16, SGD",
        f"w = {tf_w:.6f}", f"w = {batch_mean_w:.6f}",
        known="batch-mean is mirrorlab's option, not model.fit's: each example weighs the same, "
              "as on one device; mirrorlab train says so")

    header = ("what", "case", f"TensorFlow {tf.__version__}", "mirrorlab", "verdict")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(5)]
    for r in [header] + rows:
        print("  ".join(str(r[i]).ljust(widths[i]) for i in range(5)).rstrip())
    for known in dict.fromkeys(f"known: {r[0]}: {r[5]}" for r in rows if r[5]):
        print(known)
    differs = [r for r in rows if r[4] == "DIFFERS"]
    print(f"\n{len(rows)} cases: {sum(r[4] == 'same' for r in rows)} the same, "
          f"{sum(r[4] == 'known' for r in rows)} known differences, {len(differs)} differ "
          f"(TensorFlow {tf.__version__}, Keras {keras.__version__})")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| " + " | ".join(header) + " |\n|" + " --- |" * 5 + "\n")
            for r in rows:
                f.write("| " + " | ".join(str(c).replace("|", "/") for c in r[:5]) + " |\n")
            for known in dict.fromkeys(f"Known: {r[0]}: {r[5]}." for r in rows if r[5]):
                f.write(f"\n{known}\n")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
