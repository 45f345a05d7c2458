"""model.fit from Python and `mirrorlab train` with the same settings end with the same weights,
bit for bit: one core, one fit loop, two faces."""

import json
import os
import struct
import subprocess
import tempfile
import unittest

import numpy as np

import mirrorlab as ml
from cli_models import mlp_with_adam

MIRRORLAB = os.path.join(os.environ["MIRRORLAB_BINARY_DIR"], "app", "mirrorlab")


def read_safetensors(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(entry["shape"])
    return out


class SameAsTheCommandLine(unittest.TestCase):
    def test_the_mlp_on_two_virtual_gpus_ends_with_the_clis_weights(self):
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run([MIRRORLAB, "train", "--model", "mlp", "--gpus", "2",
                            "--batch-per-replica", "32", "--train-examples", "2048",
                            "--epochs", "2", "--seed", "7", "--optimizer", "adam",
                            "--checkpoint-dir", folder],
                           check=True, stdout=subprocess.DEVNULL)
            files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
            cli = read_safetensors(os.path.join(folder, files[-1]))

        cpu = ml.config.list_physical_devices("CPU")[0]
        ml.config.set_logical_device_configuration(
            cpu, [ml.config.LogicalDeviceConfiguration(memory_limit=1024)] * 2)
        ml.keras.utils.set_random_seed(7)
        (x, y), (x_test, y_test) = ml.datasets.fashion_mnist.load_data()
        strategy = ml.distribute.MirroredStrategy()
        with strategy.scope():
            model = mlp_with_adam()
        model.fit(x[:2048] / 255.0, y[:2048], batch_size=64, epochs=2, verbose=0,
                  validation_data=(x_test, y_test))
        weights = model.get_weights()
        names = ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias",
                 "dense_2/kernel", "dense_2/bias"]
        for name, w in zip(names, weights):
            with self.subTest(name=name):
                self.assertIn(name, cli)
                self.assertEqual(w.shape, cli[name].shape)
                self.assertEqual(w.tobytes(), cli[name].tobytes())
        self.assertEqual(len(weights), len(names))


if __name__ == "__main__":
    unittest.main()
