"""model.save_weights and load_weights: Keras 3's weights file (.weights.h5), laid out as Keras
writes it (scripts/check-tensorflow has Keras read mirrorlab's and the other way round), on 2
replicas; what cannot be saved or loaded says why and leaves the files as they were."""

import os
import tempfile
import unittest
from unittest import mock

import h5py
import numpy as np

import mirrorlab as ml

CPU = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    CPU, [ml.config.LogicalDeviceConfiguration(memory_limit=512)] * 2)
layers = ml.keras.layers
X = np.random.default_rng(3).integers(0, 256, (48, 28, 28, 1)).astype(np.uint8)
Y = np.arange(48) % 10


def cnn(strategy, seed):
    ml.keras.utils.set_random_seed(seed)
    with strategy.scope():
        model = ml.keras.Sequential([
            ml.keras.Input((28, 28, 1)), layers.Conv2D(4, 3, activation="relu"),
            layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(8),
            layers.Activation("relu"), layers.Dense(10)])
        model.compile(optimizer="adam",
                      loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class WeightsFile(unittest.TestCase):
    def setUp(self):
        self.strategy = ml.distribute.MirroredStrategy()
        self.folder = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.folder.name, "cnn.weights.h5")

    def tearDown(self):
        self.folder.cleanup()

    def test_saved_weights_load_into_a_model_of_the_same_layers_on_every_replica(self):
        trained = cnn(self.strategy, 1)
        trained.fit(X / 255.0, Y, batch_size=16, epochs=1, verbose=0)
        trained.save_weights(self.path)
        other = cnn(self.strategy, 2)  # other initial weights, other layer names
        self.assertFalse(np.array_equal(other.get_weights()[0], trained.get_weights()[0]))
        with self.assertWarnsRegex(UserWarning, "optimizer 'adam', because it has 2 variables "
                                                "whereas the saved optimizer has 14"):
            other.load_weights(self.path)  # as Keras: its optimizer has made no slots yet
        for mine, theirs in zip(other.get_weights(), trained.get_weights()):
            np.testing.assert_array_equal(mine, theirs)
        np.testing.assert_array_equal(other.predict(X / 255.0, verbose=0),
                                      trained.predict(X / 255.0, verbose=0))
        # Every replica holds them: a step from here trains both alike (else it would refuse).
        other.fit(X / 255.0, Y, batch_size=16, epochs=1, verbose=0)
        self.assertEqual(os.listdir(self.folder.name), ["cnn.weights.h5"])  # nothing left beside

    def test_the_file_is_laid_out_as_keras_writes_it(self):
        model = cnn(self.strategy, 1)
        model.save_weights(self.path)
        weights = model.get_weights()
        with h5py.File(self.path, "r") as f:
            self.assertEqual(f["vars"].attrs["name"], model.name)
            self.assertEqual(sorted(f["layers"]), ["activation", "conv2d", "dense", "dense_1",
                                                   "flatten", "max_pooling2d"])
            for key, layer in zip(["conv2d", "max_pooling2d", "flatten", "dense", "activation",
                                   "dense_1"], model.layers):
                self.assertEqual(f[f"layers/{key}/vars"].attrs["name"], layer.name)
            arrays = [f[f"layers/{key}/vars/{i}"][()] for key in ("conv2d", "dense", "dense_1")
                      for i in (0, 1)]
            self.assertEqual(f["optimizer/vars"].attrs["name"], "adam")
            # Not trained: its update count and learning rate only (test_optimizer_file.py)
            self.assertEqual(len(f["optimizer/vars"]), 2)
        for saved, now in zip(arrays, weights):
            self.assertEqual(saved.dtype, np.float32)
            np.testing.assert_array_equal(saved, now)

    def test_a_file_of_another_model_or_none_is_refused_and_the_weights_kept(self):
        model = cnn(self.strategy, 1)
        before = model.get_weights()
        model.save_weights(self.path)
        with h5py.File(self.path, "a") as f:
            del f["layers/dense_1/vars/1"]
            f["layers/dense_1/vars/1"] = np.zeros(11, np.float32)
        with self.assertRaisesRegex(ValueError, r"dense.*array 1 \(layers/dense_1/vars/1\) has the "
                                                r"shape \(11,\), this model's \(10,\)"):
            model.load_weights(self.path)
        mlp = ml.keras.Sequential([ml.keras.Input((28, 28)), layers.Flatten(), layers.Dense(10)])
        with self.assertRaisesRegex(ValueError, "a layer conv2d this model has not"):
            mlp.load_weights(self.path)
        with self.assertRaisesRegex(FileNotFoundError, "no such file"):
            model.load_weights(os.path.join(self.folder.name, "none.weights.h5"))
        with self.assertRaisesRegex(ValueError, r"must end in `\.weights\.h5`"):
            model.load_weights(os.path.join(self.folder.name, "cnn.h5"))
        text = os.path.join(self.folder.name, "notes.weights.h5")
        with open(text, "w") as f:
            f.write("my notes")
        with self.assertRaisesRegex(ValueError, "not HDF5"):
            model.load_weights(text)
        for mine, then in zip(model.get_weights(), before):
            np.testing.assert_array_equal(mine, then)

    def test_save_replaces_only_a_weights_file_and_only_when_asked(self):
        model = cnn(self.strategy, 1)
        text = os.path.join(self.folder.name, "notes.weights.h5")
        with open(text, "w") as f:
            f.write("my notes")
        with self.assertRaisesRegex(FileExistsError, "no weights file .* not replaced"):
            model.save_weights(text)
        with open(text) as f:
            self.assertEqual(f.read(), "my notes")
        model.save_weights(self.path)
        cnn(self.strategy, 2).save_weights(self.path)  # a weights file: replaced (Keras' default)
        with self.assertRaisesRegex(FileExistsError, "overwrite=False: not replaced"):
            model.save_weights(self.path, overwrite=False)
        os.chmod(self.path, 0o444)  # kept on purpose: not replaced, by root either
        with self.assertRaisesRegex(PermissionError, r"read-only \(mode 0444\): not replaced"):
            model.save_weights(self.path)
        os.chmod(self.path, 0o644)
        loaded = cnn(self.strategy, 3)
        loaded.load_weights(self.path)
        second = cnn(self.strategy, 2).get_weights()[0]
        np.testing.assert_array_equal(loaded.get_weights()[0], second)
        with self.assertRaisesRegex(ValueError, r"must end in `\.weights\.h5`"):
            model.save_weights(os.path.join(self.folder.name, "cnn.h5"))
        with self.assertRaisesRegex(FileNotFoundError, "no folder"):
            model.save_weights(os.path.join(self.folder.name, "no", "cnn.weights.h5"))
        self.assertEqual(sorted(os.listdir(self.folder.name)), ["cnn.weights.h5",
                                                                "notes.weights.h5"])


    def test_modes_links_and_a_failed_write_leave_the_files_as_a_user_expects(self):
        model = cnn(self.strategy, 1)
        umask = os.umask(0o022)
        try:
            model.save_weights(self.path)  # new: the mode the umask gives, as h5py's own
            self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o644)
        finally:
            os.umask(umask)
        os.chmod(self.path, 0o640)
        model.save_weights(self.path)  # replaced: its mode kept
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o640)
        link = os.path.join(self.folder.name, "link.weights.h5")
        os.symlink("cnn.weights.h5", link)
        other = cnn(self.strategy, 2)
        other.save_weights(link)  # the link's file written, the link kept
        self.assertTrue(os.path.islink(link))
        with h5py.File(self.path, "r") as f:
            np.testing.assert_array_equal(f["layers/dense_1/vars/1"][()],
                                          other.get_weights()[5])
        with open(self.path, "rb") as f:
            before = f.read()
        with mock.patch("os.replace", side_effect=OSError(28, "No space left on device")):
            with self.assertRaisesRegex(OSError, "No space left"):
                model.save_weights(self.path)
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), before)  # the old file whole
        self.assertEqual(sorted(os.listdir(self.folder.name)),
                         ["cnn.weights.h5", "link.weights.h5"])  # no temporary left


if __name__ == "__main__":
    unittest.main()
