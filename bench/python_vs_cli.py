#!/usr/bin/env python3
"""What going through Python costs a training step: `mirrorlab train` against model.fit of the
Python module, the same model, devices, batch and examples, in turn (interleaved pairs, so that
the machine's drift falls on both alike). Each run's images per second are the fit loop's own
(the steps' time: `Training: N images/s` of the command, History.params["train_seconds"] of
model.fit); the ratio is taken pair by pair, and its median reported with the pairs'.

  PYTHONPATH=build/python python3 bench/python_vs_cli.py --build build --pairs 7
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

PYTHON_RUN = r"""
import sys, mirrorlab as ml
model_name, gpus, per_replica, examples, seed = sys.argv[1], *map(int, sys.argv[2:])
cpu = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    cpu, [ml.config.LogicalDeviceConfiguration(memory_limit=1024)] * gpus)
ml.keras.utils.set_random_seed(seed)
(x, y), _ = ml.datasets.fashion_mnist.load_data()
with ml.distribute.MirroredStrategy().scope():
    if model_name == "cnn":  # mirrorlab's cnn (Keras' example CNN)
        layers = [ml.keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
                  ml.keras.layers.MaxPooling2D(), ml.keras.layers.Flatten(),
                  ml.keras.layers.Dense(128, activation="relu"), ml.keras.layers.Dense(10)]
        x = x.reshape(-1, 28, 28, 1)
    else:  # mlp: 784-256-128-10
        layers = [ml.keras.layers.Flatten(input_shape=(28, 28)),
                  ml.keras.layers.Dense(256, activation="relu"),
                  ml.keras.layers.Dense(128, activation="relu"), ml.keras.layers.Dense(10)]
    model = ml.keras.Sequential(layers)
    model.compile(optimizer=ml.keras.optimizers.Adam(),
                  loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
history = model.fit(x[:examples], y[:examples], batch_size=per_replica * gpus, epochs=1, verbose=1)
print("images/s", examples / history.params["train_seconds"])
"""


def cli(args):
    out = subprocess.run(
        [os.path.join(args.build, "app", "mirrorlab"), "train", "--model", args.model, "--gpus",
         str(args.gpus), "--batch-per-replica", str(args.batch_per_replica), "--train-examples",
         str(args.examples), "--epochs", "1", "--seed", "1", "--optimizer", "adam"],
        check=True, capture_output=True, text=True).stdout
    return float(re.search(r"Training: (\d+) images/s", out).group(1))


def python(args):
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"))
    out = subprocess.run([sys.executable, "-c", PYTHON_RUN, args.model, str(args.gpus),
                          str(args.batch_per_replica), str(args.examples), "1"],
                         check=True, capture_output=True, text=True, env=env).stdout
    return float(re.search(r"images/s ([\d.]+)", out).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--model", default="cnn", choices=["cnn", "mlp"])
    p.add_argument("--gpus", type=int, default=2)
    p.add_argument("--batch-per-replica", type=int, default=64)
    p.add_argument("--examples", type=int, default=12800)
    p.add_argument("--pairs", type=int, default=7)
    args = p.parse_args()
    ratios = []
    print(f"{args.model}, {args.gpus} CPU-backed virtual GPUs, {args.batch_per_replica} per "
          f"replica, {args.examples} examples; images/s of the steps")
    print(f"{'pair':>4}  {'mirrorlab train':>15}  {'model.fit':>10}  {'Python/CLI':>10}")
    for i in range(args.pairs):
        first, second = (cli, python) if i % 2 == 0 else (python, cli)
        a = first(args)
        b = second(args)
        c, py = (a, b) if first is cli else (b, a)
        ratios.append(py / c)
        print(f"{i + 1:>4}  {c:>15.0f}  {py:>10.0f}  {py / c:>10.3f}", flush=True)
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    print(f"median Python/CLI {statistics.median(ratios):.3f} (quartiles {q[0]:.3f}, {q[2]:.3f}); "
          f"the step through Python costs {100 * (1 / statistics.median(ratios) - 1):+.1f}%")


if __name__ == "__main__":
    main()
