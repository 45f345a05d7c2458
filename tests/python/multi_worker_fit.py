"""One worker of `mpirun -np 2 python3 multi_worker_fit.py OUT [--tf-config]`: the MLP fitted
under MultiWorkerMirroredStrategy, as `mpirun -np 2 mirrorlab train --model mlp` fits it; writes
OUT.<rank> (JSON): what the worker saw and its weights' fingerprint. --tf-config gives each
rank the TF_CONFIG of its own index first, as TensorFlow's workers are given theirs."""

import hashlib
import json
import os
import sys

import numpy as np

if "--tf-config" in sys.argv:
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["vm:20000", "vm:20001"]},
                                          "task": {"type": "worker", "index": rank}})

import logging  # noqa: E402

import mirrorlab as ml  # noqa: E402
from cli_models import mlp_with_adam  # noqa: E402

logging.basicConfig(format="%(levelname)s:%(name)s:%(message)s")
ml.get_logger().setLevel("INFO")  # the strategy's line, with this worker's TF_CONFIG
out = sys.argv[1]
strategy = ml.distribute.MultiWorkerMirroredStrategy()
ml.keras.utils.set_random_seed(7)
(x, y), (x_test, y_test) = ml.datasets.fashion_mnist.load_data()
with strategy.scope():
    model = mlp_with_adam()
history = model.fit(x[:1024] / 255.0, y[:1024], batch_size=64, epochs=1, verbose=0,
                    validation_data=(x_test, y_test))
weights = hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest()

# The custom loop across the workers: each worker's replicas take their shards; reduce sums over
# every worker's.
dataset = ml.data.Dataset.from_tensor_slices((x[:40], y[:40])).batch(8)
batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
labels = strategy.run(lambda shard: shard[1].astype(float), args=(batch,))
total = float(strategy.reduce("SUM", labels, axis=0))
losses = strategy.run(model.train_step, args=(batch,))

# predict across the workers: each worker's replicas take their shards of every batch of 4; the
# rows meet by a sum. Checked against the Dense layers' sums in NumPy.
images = x_test[:10] / 255.0
predicted = model.predict(images, batch_size=4)
h = images.reshape(len(images), -1)
kernels = model.get_weights()
for i in range(0, len(kernels), 2):
    h = h @ kernels[i] + kernels[i + 1]
    h = np.maximum(h, 0) if i + 2 < len(kernels) else h

# Callbacks across the workers: a stop only worker 0 asks ends every worker's fit after the same
# epoch; ModelCheckpoint, run by every worker (save_weights is an exchange among them), keeps
# the weights every worker holds.
asks = ml.keras.callbacks.LambdaCallback(
    on_epoch_end=lambda epoch, logs: setattr(model, "stop_training",
                                             strategy._worker_index == 0))
saved = f"{out}.checkpoint.weights.h5"
stopped = model.fit(x[:256] / 255.0, y[:256], batch_size=64, epochs=3, verbose=0,
                    callbacks=[asks, ml.keras.callbacks.ModelCheckpoint(saved)])
loaded = mlp_with_adam()
loaded.load_weights(saved)
checkpoint = [np.array_equal(a, b) for a, b in zip(loaded.get_weights(), model.get_weights())]

with open(f"{out}.{strategy._worker_index}", "w") as f:
    json.dump({"worker": strategy._worker_index, "workers": strategy._num_workers,
               "replicas": strategy.num_replicas_in_sync, "loss": history.history["loss"],
               "val_loss": history.history["val_loss"], "weights": weights,
               "shard_labels": [list(map(int, s[1])) for s in batch.values],
               "label_sum": total, "expected_label_sum": float(y[:8].sum()),
               "step_loss": float(strategy.reduce("SUM", losses)),
               "predicted": predicted.tolist(), "forward": h.tolist(),
               "stopped_epochs": len(stopped.history["loss"]), "checkpoint": checkpoint,
               "after_step": hashlib.sha256(
                   b"".join(w.tobytes() for w in model.get_weights())).hexdigest()}, f)
