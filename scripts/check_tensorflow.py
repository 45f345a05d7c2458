"""TensorFlow and mirrorlab side by side: what scripts/check-tensorflow runs.

TensorFlow's answers come from running it here (tensorflow-cpu, logical CPU devices standing for
the GPUs); mirrorlab's from build/tests/mirrorlab_answers, which runs mirrorlab's own code on the
same cases. Each row says "same", "DIFFERS", or "known" (a difference mirrorlab documents and
says in its output).
"""

import argparse
import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import warnings
from contextlib import redirect_stdout
from unittest import mock

import numpy as np

warnings.filterwarnings("ignore")
import tensorflow as tf  # noqa: E402  (after the warnings filter)
import keras  # noqa: E402
from check_tensorflow_workers import check as check_workers  # noqa: E402
from check_tensorflow_training import (  # noqa: E402,F401
    TRAIN_BATCH_PER_REPLICA, TRAIN_FIRST_STEPS, compile_for_fit, keras_model, tf_train,
    training_tables)

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


def tf_custom_loop_step(scaling, replicas=2, examples=8, lr=0.01):
    """One SGD step of a custom loop (strategy.run, apply_gradients in the replica context) on
    w * x against 3 x, where each replica's loss is its own mean (`shard-mean`, the mistake) or
    that mean / num_replicas_in_sync (seed note 001's loop). Returns w after the step."""
    x = np.arange(1, examples + 1, dtype=np.float32)
    strategy = strategy_of(replicas)
    with strategy.scope():
        w = tf.Variable(0.5)
        opt = keras.optimizers.SGD(learning_rate=lr)
    dist = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, 3 * x)).batch(examples))

    def step(batch):
        xb, yb = batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(w * xb - yb))
            if scaling != "shard-mean":
                loss = loss / strategy.num_replicas_in_sync
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

    for batch in dist:
        strategy.run(step, args=(batch,))
    return float(w.numpy())


def tf_custom_loop_uneven(examples=50, replicas=3, per_replica=16, lr=0.5):
    """Seed note 001's loop (tf.reduce_mean / num_replicas_in_sync, a Mean metric of the unscaled
    loss) for one epoch of w * x against 0, whose last batch leaves a replica without examples.
    Returns w after the epoch, the replicas' losses on the last batch and the metric there."""
    x = (np.arange(examples, dtype=np.float32) / examples).reshape(examples, 1)
    strategy = strategy_of(replicas)
    with strategy.scope():
        w = tf.Variable([[1.0]])
        opt = keras.optimizers.SGD(learning_rate=lr)
        metric = keras.metrics.Mean()
    dist = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, np.zeros_like(x))).batch(per_replica * replicas))

    def step(batch):
        xb, yb = batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(xb @ w - yb))
            scaled = loss / strategy.num_replicas_in_sync
        opt.apply_gradients(zip(tape.gradient(scaled, [w]), [w]))
        metric.update_state(loss)
        return loss

    losses = []
    for batch in dist:
        metric.reset_state()
        losses = strategy.experimental_local_results(strategy.run(step, args=(batch,)))
    return (float(w.numpy()[0, 0]), [round(float(v), 4) for v in losses],
            float(metric.result()))


def tf_reconfigure_error():
    """What TensorFlow says when logical devices are configured again once in use."""
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    tf.constant(1.0)  # the runtime starts: the devices are in use
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * 3)
    except RuntimeError as e:
        return f"RuntimeError: {e}"
    return "accepted"


def custom_loop_weight(scales, replicas=2, examples=8, lr=0.01):
    """The same step computed from each replica's loss scale (mirrorlab's)."""
    x = np.arange(1, examples + 1, dtype=np.float64)
    per = examples // replicas
    grad = sum(scale * np.sum(2 * (0.5 * xs - 3 * xs) * xs)
               for scale, xs in zip(scales, (x[r * per:(r + 1) * per] for r in range(replicas))))
    return 0.5 - lr * grad


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


# ---- the all-reduce TensorFlow chooses, and what it logs -----------------------------------

def cross_device_ops_name(ops, options):
    name = type(ops).__name__
    if name == "CollectiveAllReduce":
        name += ", " + options.implementation.name
    return name


def tf_choice(placement, replicas):
    """The cross-device ops MirroredStrategy picks by default. On CPU devices by running it;
    for GPUs (there are none here) by running its own selection code,
    MirroredExtended._make_collective_ops_with_fallbacks, with TensorFlow's device lists of
    one card carved into `replicas` logical GPUs, or of `replicas` physical GPUs, patched in."""
    if placement == "cpu":
        s = strategy_of(replicas).extended
        return cross_device_ops_name(s._cross_device_ops, s._communication_options)
    from tensorflow.python.distribute import collective_util
    from tensorflow.python.distribute import mirrored_strategy
    from tensorflow.python.eager import context
    physical = 1 if placement == "logical" else replicas

    def gpus(n):
        return [context.LogicalDevice(f"/device:GPU:{i}", "GPU") for i in range(n)]

    ctx = type(context.context())
    with mock.patch.object(ctx, "list_physical_devices", lambda self, device_type=None: gpus(physical)), \
            mock.patch.object(ctx, "list_logical_devices", lambda self, device_type=None: gpus(replicas)):
        extended = object.__new__(mirrored_strategy.MirroredExtended)
        extended._collective_key_base = 0
        extended._devices = tuple(f"/job:localhost/replica:0/task:0/device:GPU:{i}"
                                  for i in range(replicas))
        extended._communication_options = collective_util.Options(
            implementation=collective_util.CommunicationImplementation.NCCL)  # as __init__ sets
        ops = extended._make_collective_ops_with_fallbacks()
    return cross_device_ops_name(ops, extended._communication_options)


def tf_fit_log(cross_device_ops, devices, model_kind="mlp"):
    """What TensorFlow logs (INFO and WARNING, its logger) while making a MirroredStrategy over
    `devices` and fitting one epoch with verbose=1; and the last line model.fit printed."""
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(f"{record.levelname}:tensorflow:{record.getMessage()}")

    tf.get_logger().addHandler(Keep())
    tf.get_logger().setLevel("INFO")
    kwargs = {}
    if cross_device_ops == "ReductionToOneDevice":
        kwargs["cross_device_ops"] = tf.distribute.ReductionToOneDevice()
    strategy = tf.distribute.MirroredStrategy(devices, **kwargs)
    printed = io.StringIO()
    if all("cpu" in d for d in devices):  # it can only train on the devices there are
        with strategy.scope():
            model = keras_model(model_kind)
            compile_for_fit(model)
        rng = np.random.default_rng(0)
        x = rng.random((512, 28, 28, 1), np.float32)
        y = rng.integers(0, 10, 512)
        with redirect_stdout(printed):
            model.fit(x, y, batch_size=128, epochs=1, verbose=1, validation_data=(x[:128], y[:128]))
    last = [l for l in printed.getvalue().replace("\r", "\n").split("\n") if "val_loss" in l]
    return {"log": list(dict.fromkeys(lines)), "last_progress_line": last[-1] if last else ""}


def tf_summary(kind):
    out = io.StringIO()
    with redirect_stdout(out):
        keras_model(kind).summary()
    return out.getvalue()


# ---- optimizers, initialisers, metrics -------------------------------------------------------

def keras_optimizer(kind, lr=None, momentum=0.0):
    kwargs = {} if lr is None else {"learning_rate": lr}
    if kind == "sgd":
        return keras.optimizers.SGD(momentum=momentum, **kwargs)
    return {"adam": keras.optimizers.Adam, "nadam": keras.optimizers.Nadam}[kind](**kwargs)


def tf_optimizer_steps(kind, lr, momentum, params, grads):
    """The parameters after Keras' optimizer has applied each gradient in turn."""
    optimizer = keras_optimizer(kind, lr, momentum)
    variable = tf.Variable(np.array(params, np.float32))
    for g in grads:
        optimizer.apply_gradients([(tf.constant(np.array(g, np.float32)), variable)])
    return variable.numpy().tolist()


def tf_optimizer_defaults(kind):
    config = keras_optimizer(kind).get_config()
    return {k: float(config[k]) for k in ("learning_rate", "momentum", "beta_1", "beta_2",
                                          "epsilon") if k in config}


def tf_initial_weights(kind):
    """Keras' default initial kernels and biases of the model's layers with weights."""
    tf.keras.utils.set_random_seed(0)
    return [{"name": layer.name, "kernel": layer.kernel.numpy().ravel().tolist(),
             "bias": layer.bias.numpy().tolist()}
            for layer in keras_model(kind).layers if layer.weights]


def tf_metrics(logits, labels):
    logits = np.array(logits, np.float32)
    labels = np.array(labels)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(labels, logits)
    return {"loss": float(loss), "accuracy": float(accuracy.result())}


def isolated(function, *args):
    """Runs `function(*args)` in a Python of its own: TensorFlow's collectives keep their
    groups per process, and a second MirroredStrategy of another size in the same process fails
    ("joining a group with size 8, but that group has size 3")."""
    out = subprocess.run([sys.executable, __file__, "--isolated", function.__name__,
                          json.dumps(args)], capture_output=True, text=True,
                         env=dict(os.environ, COLUMNS="80"))  # an 80-column terminal
    if out.returncode != 0:
        raise RuntimeError(f"{function.__name__}{args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ml_reconfigure_error(answers_binary):
    """What mirrorlab's device registry says to a second configuration once in use."""
    return mirrorlab(answers_binary, {"reconfigure": [{}]})["reconfigure"][0]


def mirrorlab(answers_binary, cases):
    out = subprocess.run([answers_binary], input=json.dumps(cases), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def train_output(binary, algorithm, model="mlp"):
    """What `mirrorlab train` prints for a short run on 2 CPU-backed virtual GPUs."""
    out = subprocess.run([binary, "train", "--model", model, "--gpus", "2", "--epochs", "1",
                          "--train-examples", "512", "--batch-per-replica", "64",
                          "--allreduce", algorithm], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"mirrorlab train failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def first_line(text, start):
    return next((l for l in text.splitlines() if l.startswith(start)), "none")


def epoch_end_line(text):
    """The last progress line of an epoch: the one with the validation metrics."""
    return next((l for l in text.splitlines() if "val_loss" in l), "none")


def summary_block(text):
    lines = text.splitlines()
    begin = next(i for i, l in enumerate(lines) if l.startswith("Model: "))
    end = next(i for i, l in enumerate(lines) if l.startswith(" Non-trainable params"))
    return "\n".join(lines[begin:end + 1])


def first_difference(a, b):
    for x, y in zip(a.splitlines(), b.splitlines()):
        if x != y:
            return f"{x!r} / {y!r}"
    return "one is longer"


def masked(line):
    """A progress line with its colour codes and backspaces removed and its numbers as #."""
    line = re.sub(r"\x1b\[[0-9;]*m|\x08", "", line).strip()
    line = re.sub(r"\d+(\.\d+)?(e[-+]\d+)?", "#", line)
    return line.replace("─", "━")  # mirrorlab's uncoloured part to go (none at an epoch's end)


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


def training_runs(args, kind):
    """mirrorlab trains first, writing its initial weights and its batches' order; TensorFlow
    then trains from those."""
    with tempfile.TemporaryDirectory() as tmp:
        weights, order = os.path.join(tmp, "weights.f32"), os.path.join(tmp, "order.u32")
        ml = mirrorlab(args.answers, {"train": [{
            "model": kind, "replicas": 2, "batch_per_replica": TRAIN_BATCH_PER_REPLICA,
            "epochs": args.train_epochs, "seed": 1, "data": args.data,
            "first_steps": TRAIN_FIRST_STEPS, "weights_out": weights, "order_out": order}]})
        tf_run = isolated(tf_train, kind, 2, TRAIN_BATCH_PER_REPLICA, args.train_epochs,
                          TRAIN_FIRST_STEPS, args.data, weights, order)
    return tf_run, ml["train"][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answers", help="build/tests/mirrorlab_answers")
    parser.add_argument("--mirrorlab", help="build/app/mirrorlab (its train command's output)")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                        help="Fashion-MNIST's gzipped IDX files, for the training runs "
                             "(default: Debian's dataset-fashion-mnist)")
    parser.add_argument("--train-epochs", type=int, default=5,
                        help="epochs of each training run (default 5; the CNN's take TensorFlow "
                             "about 45 s each on 2 cores)")
    parser.add_argument("--workers-only", action="store_true",
                        help="only the multi-worker cases (2 TensorFlow worker processes)")
    parser.add_argument("--isolated", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.isolated:
        name, arguments = args.isolated
        print(json.dumps(globals()[name](*json.loads(arguments))))
        return 0
    if not args.answers or not args.mirrorlab:
        parser.error("--answers and --mirrorlab are required")
    if args.train_epochs < 1:
        parser.error(f"--train-epochs {args.train_epochs}: give 1 or more")
    if not os.path.isfile(os.path.join(args.data, "t10k-labels-idx1-ubyte.gz")):
        parser.error(f"--data {args.data}: no Fashion-MNIST there (apt-get install "
                     "dataset-fashion-mnist, or give the folder of its .gz files)")

    rows = []  # (what, case, tensorflow, mirrorlab, verdict)

    def row(what, case, tf_value, ml_value, known=None, agree=None):
        """agree: whether the two agree, where the values shown are not compared as they are."""
        agree = tf_value == ml_value if agree is None else agree
        verdict = "same" if agree else ("known" if known else "DIFFERS")
        rows.append((what, case, str(tf_value), str(ml_value), verdict, known or ""))

    # 0. Several workers: MultiWorkerMirroredStrategy in 2 processes with TF_CONFIG (lesson 10).
    workers = check_workers(lambda cases: mirrorlab(args.answers, cases), row)
    print("TensorFlow's worker 0 logged:\n  " + "\n  ".join(workers["log"]) + "\n")
    if args.workers_only:
        return report(rows, [], args.markdown)

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

    # A custom loop's scaling (lessons 4 and 9): seed note 001's loss / replicas, and the mistake.
    ml = mirrorlab(args.answers, {"loss_scale": [
        {"shards": [4, 4], "scaling": s} for s in ("replica-mean", "shard-mean")]})
    for scaling, scales, what in (
            ("replica-mean", ml["loss_scale"][0], "loss / num_replicas_in_sync (seed note 001)"),
            ("shard-mean", ml["loss_scale"][1], "tf.reduce_mean alone (the mistake)")):
        tf_w = isolated(tf_custom_loop_step, scaling)
        ml_w = custom_loop_weight(scales)
        row(f"custom loop, {what}, against --loss-scaling {scaling}",
            "8 examples, 2 replicas, one SGD step", f"w = {tf_w:.6f}", f"w = {ml_w:.6f}",
            agree=abs(tf_w - ml_w) < 1e-5)
    # Seed note 001's loop on an uneven last batch with an empty replica (lesson 9).
    loop_shards = [[16, 16, 16], [1, 1, 0]]  # 50 examples, 3 replicas x 16
    ml = mirrorlab(args.answers, {"loss_scale": [
        {"shards": s, "scaling": "replica-mean"} for s in loop_shards]})
    tf_w, tf_losses, tf_metric = isolated(tf_custom_loop_uneven)
    ml_w = predicted_weight(ml["loss_scale"], loop_shards, examples=50)
    row("custom loop of seed note 001 on a last batch with an empty replica (w after 1 epoch), "
        "against --loss-scaling replica-mean",
        f"50 examples, 3 replicas x 16, SGD; TensorFlow's replica losses on the last batch "
        f"{tf_losses}, its loss metric {tf_metric}",
        f"w = {tf_w:.6f}", f"w = {ml_w:.6f}", agree=abs(tf_w - ml_w) < 1e-5)
    tf_said = isolated(tf_reconfigure_error)
    ml_said = "RuntimeError: " + ml_reconfigure_error(args.answers)
    row("devices configured again once in use", "2 logical devices, then 3",
        tf_said, ml_said, agree=ml_said.startswith(tf_said))

    # 3. The all-reduce MirroredStrategy picks, and what it logs.
    placements = [("cpu", "CPU devices (mirrorlab: CPU-backed virtual GPUs), run"),
                  ("logical", "2 logical GPUs of one card, TensorFlow's selection code run "
                              "with those device lists"),
                  ("physical", "2 physical GPUs, the same way")]
    ml = mirrorlab(args.answers, {"choice": [{"placement": p, "replicas": 2}
                                             for p, _ in placements]})
    as_mirrorlab = {"CollectiveAllReduce, RING": "ring", "CollectiveAllReduce, NCCL": "nccl",
                    "ReductionToOneDevice": "reduce-to-one"}
    for (placement, case), ml_choice in zip(placements, ml["choice"]):
        tf_ops = isolated(tf_choice, placement, 2)
        row("all-reduce by default", case, tf_ops, ml_choice,
            agree=as_mirrorlab.get(tf_ops) == ml_choice)

    cpu2 = ["/cpu:0", "/cpu:1"]
    logs = {algorithm: (isolated(tf_fit_log, ops, cpu2), train_output(args.mirrorlab, algorithm))
            for algorithm, ops in (("auto", None), ("reduce-to-one", "ReductionToOneDevice"))}
    tf_gpu_using = isolated(tf_fit_log, None, ["/gpu:0", "/gpu:1"])["log"]
    ml_auto = logs["auto"][1]
    row("log: the strategy's devices", 'MirroredStrategy(["/gpu:0", "/gpu:1"])',
        tf_gpu_using[0], first_line(ml_auto, "INFO:tensorflow:Using MirroredStrategy"))
    tf_collective = first_line("\n".join(logs["auto"][0]["log"]), "INFO:tensorflow:Collective")
    row("log: the gradients' all-reduce", "auto, MLP (6 weight tensors), 2 replicas",
        tf_collective, first_line(ml_auto, "INFO:tensorflow:Collective"))
    # TensorFlow also reduces its metrics to the host ("broadcast to (CPU:0,)"): the line for
    # the gradients is the one that broadcasts to both replicas.
    tf_reduce = [l for l in logs["reduce-to-one"][0]["log"] if "Reduce to" in l and "1')" in l]
    row("log: the gradients' all-reduce", "reduce-to-one (ReductionToOneDevice), 2 replicas",
        tf_reduce[0] if tf_reduce else "none",  # mirrorlab's GPU names, written CPU
        first_line(logs["reduce-to-one"][1], "INFO:tensorflow:Reduce to").replace("GPU", "CPU"))
    tf_warnings = [l for _, (t, _) in logs.items() for l in t["log"] if l.startswith("WARNING")]
    ml_warnings = [l for _, (_, m) in logs.items() for l in m.splitlines() if "WARNING" in l]
    row("log: warnings about the all-reduce", "auto and reduce-to-one, 2 CPU replicas",
        tf_warnings or "none", ml_warnings or "none")

    # 4. model.summary() and the progress of model.fit (numbers masked: times and values).
    for kind in ("cnn", "mlp"):
        tf_text = isolated(tf_summary, kind).strip()
        ml_text = summary_block(ml_auto if kind == "mlp" else train_output(args.mirrorlab, "auto",
                                                                           "cnn"))
        row("model.summary()", f"{kind}, its ReLUs as layers of their own",
            f"{len(tf_text.splitlines())} lines", f"{len(ml_text.splitlines())} lines"
            + ("" if tf_text == ml_text else ": " + first_difference(tf_text, ml_text)),
            agree=tf_text == ml_text)
    tf_bar = masked(logs["auto"][0]["last_progress_line"])
    ml_bar = masked(epoch_end_line(ml_auto))
    row("model.fit progress, an epoch's last line", "verbose=1, with validation", tf_bar, ml_bar)

    # 5. The optimizers: Keras' defaults, and the steps from the same gradients.
    ml_defaults = mirrorlab(args.answers, {"optimizer_defaults": [{}]})["optimizer_defaults"][0]
    for kind in ("adam", "nadam"):
        tf_d = isolated(tf_optimizer_defaults, kind)
        shown = lambda d: ", ".join(f"{k} {d[k]:.6g}" for k in ("beta_1", "beta_2", "epsilon",  # noqa
                                                                "learning_rate"))
        row("optimizer defaults", f"keras.optimizers.{kind.capitalize()}()", shown(tf_d),
            shown(ml_defaults), agree=all(abs(tf_d[k] - ml_defaults[k]) <= 1e-7 * abs(tf_d[k])
                                          for k in ("beta_1", "beta_2", "epsilon",
                                                    "learning_rate")))
    tf_sgd = isolated(tf_optimizer_defaults, "sgd")
    row("optimizer defaults", "keras.optimizers.SGD()",
        f"momentum {tf_sgd['momentum']:g}, learning_rate {tf_sgd['learning_rate']:g}",
        f"momentum {ml_defaults['momentum']:.6g}, learning_rate {ml_defaults['learning_rate']:.6g}",
        known="mirrorlab's sgd has Keras' momentum (0, --momentum sets it) but one --lr "
              "default (0.001) for every optimizer; --help says so")
    rng = np.random.default_rng(12)
    params = rng.normal(size=16).astype(np.float32).tolist()
    # 60 steps of gradients of every scale, some far below epsilon, some large.
    grads = [(rng.normal(size=16) * 10.0 ** rng.integers(-9, 3, size=16)).astype(
        np.float32).tolist() for _ in range(60)]
    optimizer_cases = [("sgd", 0.01, 0.0), ("sgd", 0.01, 0.9), ("adam", 0.001, 0.0),
                       ("nadam", 0.001, 0.0), ("adam", 0.1, 0.0), ("nadam", 0.1, 0.0)]
    ml = mirrorlab(args.answers, {"optimizer": [
        {"kind": k, "lr": lr, "momentum": m, "params": params, "grads": grads}
        for k, lr, m in optimizer_cases]})
    for (kind, lr, momentum), ml_w in zip(optimizer_cases, ml["optimizer"]):
        tf_w = np.array(isolated(tf_optimizer_steps, kind, lr, momentum, params, grads))
        worst = float(np.max(np.abs(tf_w - np.array(ml_w)) / np.maximum(1.0, np.abs(tf_w))))
        change = float(np.max(np.abs(tf_w - np.array(params))))
        case = f"{kind}, lr {lr}" + (f", momentum {momentum}" if kind == "sgd" else "") + \
            ", 60 steps of 16 weights"
        row("optimizer steps", case, f"weights moved up to {change:.3g}",
            f"largest difference {worst:.2g} (relative)", agree=worst <= 1e-4)

    # 6. Keras' default initialisers: glorot_uniform kernels, zero biases.
    for kind in ("cnn", "mlp"):
        ml = mirrorlab(args.answers, {"init": [{"model": kind, "seed": 42}]})["init"][0]
        for tf_layer, ml_layer in zip(isolated(tf_initial_weights, kind), ml):
            tk, mk = np.array(tf_layer["kernel"]), np.array(ml_layer["kernel"])
            # The same uniform law: equal spread within the sampling error of both (5 sigma).
            tolerance = 5 * np.sqrt(0.4 / tk.size)
            same_law = (abs(mk.std() / tk.std() - 1) <= tolerance and
                        mk.size == tk.size and abs(np.abs(mk).max() / np.abs(tk).max() - 1) <= 0.05)
            zero_bias = not np.any(tf_layer["bias"]) and not np.any(ml_layer["bias"])
            law = lambda k: f"largest abs {np.abs(k).max():.4f}, std {k.std():.4f}"  # noqa: E731
            row("initial weights", f"{kind} {ml_layer['name']} ({tk.size} kernel values)",
                law(tk) + ", biases 0" * (not np.any(tf_layer["bias"])),
                law(mk) + ", biases 0" * (not np.any(ml_layer["bias"])),
                agree=same_law and zero_bias and tf_layer["name"] == ml_layer["name"])

    # 7. The loss and accuracy metrics on the same logits.
    metric_cases = [
        ("64 random logits rows", rng.normal(size=(64, 10)).astype(np.float32).tolist(),
         rng.integers(0, 10, 64).tolist()),
        ("ties: the first largest logit counts", [[1, 1, 0], [0, 2, 2], [3, 3, 3]], [1, 1, 0]),
        ("large logits (stability)", [[1000, -1000, 0], [-80, 80, 0]], [1, 0]),
    ]
    ml = mirrorlab(args.answers, {"metrics": [{"logits": lg, "labels": lb}
                                              for _, lg, lb in metric_cases]})
    for (case, logits, labels), ml_m in zip(metric_cases, ml["metrics"]):
        tf_m = isolated(tf_metrics, logits, labels)
        for name in ("loss", "accuracy"):
            row(f"metric: {name}", case, f"{tf_m[name]:.6g}", f"{ml_m[name]:.6g}",
                agree=abs(tf_m[name] - ml_m[name]) <= 1e-5 * max(1.0, abs(tf_m[name])))

    # 8. One training run of each model, from the same initial weights and the same batches.
    side_by_side = []
    for kind in ("cnn", "mlp"):
        tf_run, ml_run = training_runs(args, kind)
        tl, ml_l = np.array(tf_run["first_losses"]), np.array(ml_run["first_losses"])
        worst = float(np.max(np.abs(tl - ml_l) / np.abs(tl)))
        case = f"{kind}, 2 replicas x {TRAIN_BATCH_PER_REPLICA}, Adam, from the same weights"
        losses = lambda l: ", ".join(f"{v:.5f}" for v in l[:3]) + f" ... {l[-1]:.5f}"  # noqa
        row(f"training: the first {len(tl)} steps' losses", case, losses(tl),
            losses(ml_l) + f" (largest difference {worst:.1g}, relative)",
            agree=len(tl) == len(ml_l) == TRAIN_FIRST_STEPS and worst <= 1e-4)
        ta, ma = tf_run["epochs"][-1]["test_accuracy"], ml_run["epochs"][-1]["test_accuracy"]
        epochs = f"{args.train_epochs} epoch" + "s" * (args.train_epochs != 1)
        row(f"training: test accuracy after {epochs}", case, f"{ta:.4f}",
            f"{ma:.4f}", agree=abs(ta - ma) <= 0.01)
        side_by_side.append((kind, tf_run, ml_run))

    return report(rows, side_by_side, args.markdown)


def report(rows, side_by_side, markdown):
    """Prints the table (and writes it to `markdown`); 1 when a case differs."""
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
    training_text = training_tables(side_by_side)
    print("\n" + training_text)
    if markdown:
        with open(markdown, "w") as f:
            f.write("| " + " | ".join(header) + " |\n|" + " --- |" * 5 + "\n")
            for r in rows:
                f.write("| " + " | ".join(str(c).replace("|", "/") for c in r[:5]) + " |\n")
            for known in dict.fromkeys(f"Known: {r[0]}: {r[5]}." for r in rows if r[5]):
                f.write(f"\n{known}\n")
            f.write("\n" + training_text)
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
