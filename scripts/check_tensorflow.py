"""TensorFlow and mirrorlab side by side: what scripts/check-tensorflow runs.

TensorFlow's answers come from running it here (tensorflow-cpu, logical CPU devices standing for
the GPUs); mirrorlab's from build/tests/mirrorlab_answers, which runs mirrorlab's own code on the
same cases. Each row says "same", "DIFFERS", or "known" (a difference mirrorlab documents and
says in its output).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import tensorflow as tf  # noqa: E402  (after the warnings filter)
import keras  # noqa: E402
import check_tensorflow_python  # noqa: E402
import check_tensorflow_workers  # noqa: E402
from check_tensorflow_training import (  # noqa: E402
    TRAIN_BATCH_PER_REPLICA, TRAIN_FIRST_STEPS, tf_train, training_tables)
# What isolated() runs, found by name in this module's globals in the Python it starts.
from tensorflow_side import (  # noqa: E402
    tf_average_loss_scales, tf_choice, tf_custom_loop_step, tf_custom_loop_uneven, tf_fit_log,
    tf_fit_steps, tf_fit_uneven_first_batch, tf_fit_weighting, tf_initial_weights, tf_metrics, tf_optimizer_defaults,
    tf_optimizer_steps, tf_reconfigure_error, tf_split, tf_summary)

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


AS_TENSORFLOW_LOGS = "(as TensorFlow logs it) "  # app/train/train_report.h


def train_output(binary, algorithm, model="mlp"):
    """What `mirrorlab train` prints for a short run on 2 CPU-backed virtual GPUs."""
    out = subprocess.run([binary, "train", "--model", model, "--gpus", "2", "--epochs", "1",
                          "--train-examples", "512", "--batch-per-replica", "64",
                          "--allreduce", algorithm], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"mirrorlab train failed:\n{out.stdout}\n{out.stderr}")
    # The lines TensorFlow would log come on stderr, as TensorFlow writes them, each marked as
    # mirrorlab's; compared here without the mark.
    logged = [l[len(AS_TENSORFLOW_LOGS):] for l in out.stderr.splitlines()
              if l.startswith(AS_TENSORFLOW_LOGS)]
    return "\n".join(logged) + "\n" + out.stdout


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


def check_workers(args, row):
    """MultiWorkerMirroredStrategy in 2 processes with TF_CONFIG (lesson 10) against mirrorlab."""
    workers = check_tensorflow_workers.check(lambda cases: mirrorlab(args.answers, cases), row)
    print("TensorFlow's worker 0 logged:\n  " + "\n  ".join(workers["log"]) + "\n")


def check_batch_split(args, row):
    """The split of every global batch through experimental_distribute_dataset, and steps."""
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


def check_uneven_first_batch(args, row):
    """Keras' model.fit whose first global batch splits unevenly, against mirrorlab train."""
    examples, replicas, per_replica = 40, 3, 16  # one batch of 40: 14, 14, 12
    tf_result = isolated(tf_fit_uneven_first_batch, examples, replicas, per_replica)
    out = subprocess.run([args.mirrorlab, "train", "--model", "mlp", "--gpus", str(replicas),
                          "--epochs", "1", "--train-examples", str(examples),
                          "--batch-per-replica", str(per_replica)], capture_output=True, text=True)
    said = "says Keras fails" if "Keras 3.15's model.fit fails on this" in out.stdout else \
        "does not say Keras fails"
    ml_result = ("trains" if out.returncode == 0 else "fails") + ", " + said
    # Known only while Keras fails there and mirrorlab says so; anything else differs.
    told = tf_result.startswith("fails") and said == "says Keras fails"
    row("model.fit whose first global batch is uneven", f"{examples} examples, {replicas} "
        f"replicas x {per_replica}", tf_result, ml_result, agree=False,
        known="mirrorlab trains it, and says Keras' model.fit fails there" if told else None)


def check_loss_scaling(args, row):
    """Loss scaling on uneven batches against --loss-scaling; devices configured again."""
    shards, no_gbs = isolated(tf_average_loss_scales, [14, 14, 12], None)
    _, gbs_real = isolated(tf_average_loss_scales, [14, 14, 12], 40)
    _, gbs_nominal = isolated(tf_average_loss_scales, [14, 14, 12], 48)
    ml = mirrorlab(args.answers, {"loss_scale": [
        {"shards": shards, "scaling": "replica-mean"},
        {"shards": shards, "scaling": "batch-mean"},
        {"shards": shards, "scaling": "global-batch", "global_batch_size": 48}]})
    rounded = lambda v: [round(float(s), 6) for s in v]  # noqa: E731
    row("compute_average_loss(per_example) vs replica-mean", f"shards {shards}",
        rounded(no_gbs), rounded(ml["loss_scale"][0]))
    row("compute_average_loss(global_batch_size=40) vs batch-mean", f"shards {shards}",
        rounded(gbs_real), rounded(ml["loss_scale"][1]))
    row("compute_average_loss(global_batch_size=48) vs global-batch",
        f"shards {shards} of a batch of 3 x 16", rounded(gbs_nominal), rounded(ml["loss_scale"][2]))

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


def check_allreduce_choice(args, row):
    """The all-reduce MirroredStrategy picks, and what it logs; returns both sides' logs."""
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
    return logs


def check_summary_and_progress(args, row, logs):
    """model.summary() and the progress of model.fit (numbers masked: times and values)."""
    ml_auto = logs["auto"][1]
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
    ml_epochs = [l for l in ml_auto.splitlines() if l.startswith("Epoch ")]
    row("model.fit progress, its \"Epoch\" lines", "epochs=1, verbose=1",
        logs["auto"][0]["epoch_lines"] or "none", ml_epochs or "none")


def check_optimizers(args, row, rng):
    """The optimizers: Keras' defaults, and the steps from the same gradients."""
    ml_defaults = mirrorlab(args.answers, {"optimizer_defaults": [{}]})["optimizer_defaults"][0]
    for kind in ("adam", "nadam"):
        tf_d = isolated(tf_optimizer_defaults, kind)
        keys = ("beta_1", "beta_2", "epsilon", "learning_rate")
        shown = lambda d: ", ".join(f"{k} {d[k]:.6g}" for k in keys)  # noqa: E731
        row("optimizer defaults", f"keras.optimizers.{kind.capitalize()}()", shown(tf_d),
            shown(ml_defaults), agree=all(abs(tf_d[k] - ml_defaults[k]) <= 1e-7 * abs(tf_d[k])
                                          for k in keys))
    tf_sgd = isolated(tf_optimizer_defaults, "sgd")
    row("optimizer defaults", "keras.optimizers.SGD()",
        f"momentum {tf_sgd['momentum']:g}, learning_rate {tf_sgd['learning_rate']:g}",
        f"momentum {ml_defaults['momentum']:.6g}, learning_rate {ml_defaults['learning_rate']:.6g}",
        known="mirrorlab's sgd has Keras' momentum (0, --momentum sets it) but one --lr "
              "default (0.001) for every optimizer; --help says so")
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


def check_initialisers(args, row):
    """Keras' default initialisers: glorot_uniform kernels, zero biases."""
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


def check_metrics(args, row, rng):
    """The loss and accuracy metrics on the same logits."""
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


def check_training_runs(args, row):
    """One training run of each model, from the same initial weights and the same batches."""
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
    return side_by_side


def parse_args():
    """The command line, checked (apart from --isolated: the call isolated() makes)."""
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
        return args
    if not args.answers or not args.mirrorlab:
        parser.error("--answers and --mirrorlab are required")
    if args.train_epochs < 1:
        parser.error(f"--train-epochs {args.train_epochs}: give 1 or more")
    if not os.path.isfile(os.path.join(args.data, "t10k-labels-idx1-ubyte.gz")):
        parser.error(f"--data {args.data}: no Fashion-MNIST there (apt-get install "
                     "dataset-fashion-mnist, or give the folder of its .gz files)")
    return args


def main():
    args = parse_args()
    if args.isolated:
        name, arguments = args.isolated
        print(json.dumps(globals()[name](*json.loads(arguments))))
        return 0

    rows = []  # (what, case, tensorflow, mirrorlab, verdict)

    def row(what, case, tf_value, ml_value, known=None, agree=None):
        """agree: whether the two agree, where the values shown are not compared as they are."""
        agree = tf_value == ml_value if agree is None else agree
        verdict = "same" if agree else ("known" if known else "DIFFERS")
        rows.append((what, case, str(tf_value), str(ml_value), verdict, known or ""))

    check_workers(args, row)
    if args.workers_only:
        return report(rows, [], args.markdown)
    check_batch_split(args, row)
    check_uneven_first_batch(args, row)
    check_loss_scaling(args, row)
    logs = check_allreduce_choice(args, row)
    check_summary_and_progress(args, row, logs)
    # One generator for both: the metrics' random logits come after the optimizers' gradients.
    rng = np.random.default_rng(12)
    check_optimizers(args, row, rng)
    check_initialisers(args, row)
    check_metrics(args, row, rng)
    check_tensorflow_python.check(row, os.path.dirname(os.path.dirname(args.answers)))
    return report(rows, check_training_runs(args, row), args.markdown)


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
