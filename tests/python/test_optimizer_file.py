"""The optimizer's state in the weights and model files (model.save_weights, load_weights,
model.save, keras.models.load_model), laid out and loaded as Keras 3.15.1 was seen to: a fit
loaded from either file goes on bit for bit as if it had never stopped, on 2 replicas; what
Keras skips is skipped with its warning; values no optimizer holds are refused, changing
nothing. (scripts/check-tensorflow has Keras read mirrorlab's files and the other way round.)"""

import os
import tempfile
import unittest

import h5py
import numpy as np

import mirrorlab as ml

CPU = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    CPU, [ml.config.LogicalDeviceConfiguration(memory_limit=512)] * 2)
keras = ml.keras
layers = keras.layers
X = np.random.default_rng(7).integers(0, 256, (48, 28, 28, 1)).astype(np.uint8)
Y = np.arange(48) % 10
SHAPES = [(3, 3, 1, 4), (4,), (676, 10), (10,)]  # the kernels and biases of cnn()
OPTIMIZERS = {"adam": lambda: keras.optimizers.Adam(0.01),
              "sgd with momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
              "nadam": lambda: keras.optimizers.Nadam(0.01)}


def cnn(strategy, optimizer, seed=1):
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        model = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(4, 3, activation="relu"),
                                  layers.MaxPooling2D(), layers.Flatten(), layers.Dense(10)])
        model.compile(optimizer=optimizer,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def saved_variables(path):
    with h5py.File(path, "r") as f:
        group = f["optimizer/vars"]
        return [group[str(i)][()] for i in range(len(group))]


def assert_same_weights(a, b):
    for mine, theirs in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(mine, theirs)


class OptimizerFile(unittest.TestCase):
    def setUp(self):
        self.strategy = ml.distribute.MirroredStrategy()
        self.folder = tempfile.TemporaryDirectory()
        self.weights = os.path.join(self.folder.name, "cnn.weights.h5")
        self.model_file = os.path.join(self.folder.name, "cnn.keras")

    def tearDown(self):
        self.folder.cleanup()

    def test_a_fit_goes_on_from_either_file_as_if_it_never_stopped(self):
        for name, optimizer in OPTIMIZERS.items():
            with self.subTest(name):
                for path in (self.weights, self.model_file):
                    if os.path.exists(path):
                        os.unlink(path)
                ran = cnn(self.strategy, optimizer())
                ran.fit(X, Y, batch_size=8, epochs=1, verbose=0)
                ran.save_weights(self.weights)
                ran.save(self.model_file)
                with self.strategy.scope():
                    from_model_file = keras.models.load_model(self.model_file)
                # Same seed (the same shuffles), its slots made by a step, then the file's state.
                from_weights = cnn(self.strategy, optimizer())
                from_weights.fit(X[:8], Y[:8], batch_size=8, epochs=1, verbose=0)
                from_weights.load_weights(self.weights)
                # The same weights with the optimizer's state afresh: the state matters here.
                afresh = cnn(self.strategy, optimizer())
                afresh.fit(X[:8], Y[:8], batch_size=8, epochs=1, verbose=0)
                afresh.set_weights(ran.get_weights())
                for model in (ran, from_model_file, from_weights, afresh):
                    model.fit(X[::-1], Y[::-1], batch_size=8, epochs=1, verbose=0)
                assert_same_weights(from_model_file, ran)
                assert_same_weights(from_weights, ran)
                self.assertFalse(np.array_equal(afresh.get_weights()[2], ran.get_weights()[2]))

    def test_the_variables_are_laid_out_as_keras_writes_them(self):
        for name, slots in (("adam", 2), ("sgd with momentum", 1), ("nadam", 2)):
            with self.subTest(name):
                model = cnn(self.strategy, OPTIMIZERS[name]())
                model.save_weights(self.weights)  # before a step: no slots made, as Keras'
                count, rate = saved_variables(self.weights)
                self.assertEqual((count.dtype, count[()]), (np.int64, 0))
                self.assertEqual(rate.dtype, np.float32)
                self.assertEqual(rate, np.float32(model.optimizer.learning_rate))
                model.fit(X, Y, batch_size=8, epochs=1, verbose=0)  # 6 steps
                model.save_weights(self.weights)
                saved = saved_variables(self.weights)
                extra = 1 if name == "nadam" else 0
                self.assertEqual(len(saved), 2 + slots * len(SHAPES) + extra)
                self.assertEqual(saved[0][()], 6)
                # Each weight's slots in turn (Keras' momentum, velocity: the core's m, v).
                self.assertEqual([a.shape for a in saved[2:len(saved) - extra]],
                                 [shape for shape in SHAPES for _ in range(slots)])
                self.assertTrue(all(a.dtype == np.float32 for a in saved[1:]))
                if extra:  # the product of Nadam's momentum schedule, below 1 after 6 steps
                    self.assertEqual(saved[-1].shape, ())
                    self.assertTrue(0 < saved[-1] < 1)
                os.unlink(self.weights)

    def test_the_learning_rate_is_the_files_as_in_keras(self):
        ran = cnn(self.strategy, keras.optimizers.Adam(0.01))
        ran.fit(X, Y, batch_size=8, epochs=1, verbose=0)
        ran.save_weights(self.weights)
        other = cnn(self.strategy, keras.optimizers.Adam(0.5))
        other.fit(X[:8], Y[:8], batch_size=8, epochs=1, verbose=0)
        run = other._run  # what gui.watch and model.progress() follow
        other.load_weights(self.weights)
        self.assertIs(other._run, run)
        self.assertEqual(np.float32(other.optimizer.learning_rate), np.float32(0.01))
        for model in (ran, other):
            model.fit(X[::-1], Y[::-1], batch_size=8, epochs=1, verbose=0)
        assert_same_weights(other, ran)
        # The lowest learning rate there is, 1e-9, is 9.9999997e-10 as float32: taken back.
        for path in (self.weights, self.model_file):
            lowest = cnn(self.strategy, keras.optimizers.SGD(1e-9, momentum=0.5))
            lowest.fit(X, Y, batch_size=8, epochs=1, verbose=0)
            lowest.save_weights(self.weights)
            lowest.save(self.model_file)
            with self.strategy.scope():
                loaded = keras.models.load_model(path) if path == self.model_file else lowest
            loaded.load_weights(self.weights)
            self.assertEqual(np.float32(loaded.optimizer.learning_rate), np.float32(1e-9))
        # Taken into a model of another rate, then saved and loaded again, or compiled again.
        other = cnn(self.strategy, keras.optimizers.SGD(0.5, momentum=0.5))
        other.fit(X[:8], Y[:8], batch_size=8, epochs=1, verbose=0)
        other.load_weights(self.weights)
        self.assertEqual(other.optimizer.learning_rate, 1e-9)
        other.save(self.model_file)
        with self.strategy.scope():
            self.assertEqual(keras.models.load_model(self.model_file).optimizer.learning_rate,
                             1e-9)
        self.assertEqual(keras.optimizers.Adam(float(np.float32(1e-9))).learning_rate, 1e-9)

    def test_as_many_variables_or_none_are_loaded_as_keras_with_its_warning(self):
        unbuilt = cnn(self.strategy, keras.optimizers.Adam(0.01))
        unbuilt.save_weights(self.weights)
        built = cnn(self.strategy, keras.optimizers.Adam(0.01), seed=2)
        built.fit(X, Y, batch_size=8, epochs=1, verbose=0)
        before = built._run.optimizer_state()
        with self.assertWarnsRegex(UserWarning, "optimizer 'adam', because it has 10 variables "
                                                "whereas the saved optimizer has 2") as said:
            built.load_weights(self.weights)
        self.assertEqual(said.filename, __file__)  # the warning points at the call
        self.assertEqual(built._run.optimizer_state()[0], before[0])  # its own count kept
        assert_same_weights(built, unbuilt)  # the layers' weights are loaded all the same
        # A plain SGD has no slots: its 2 variables load into a model not trained yet.
        sgd = cnn(self.strategy, keras.optimizers.SGD(0.1))
        sgd.fit(X, Y, batch_size=8, epochs=1, verbose=0)
        sgd.save_weights(self.weights, overwrite=True)
        fresh = cnn(self.strategy, keras.optimizers.SGD(0.1))
        fresh.load_weights(self.weights)
        self.assertEqual(fresh._run.optimizer_state()[0], 6)
        # Variables that are no numbers are read only if taken: a model not compiled takes none
        # (as Keras, which says nothing), a count that differs is skipped (Keras warns).
        with h5py.File(self.weights, "a") as f:
            f["optimizer/vars/2"] = "not a number"
        with self.strategy.scope():
            plain = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(4, 3),
                                      layers.MaxPooling2D(), layers.Flatten(), layers.Dense(10)])
        plain.load_weights(self.weights)
        with self.assertWarnsRegex(UserWarning, "it has 2 variables whereas the saved optimizer "
                                                "has 3"):
            cnn(self.strategy, keras.optimizers.SGD(0.1)).load_weights(self.weights)

    def test_values_no_optimizer_holds_are_refused_changing_nothing(self):
        ran = cnn(self.strategy, keras.optimizers.Nadam(0.01))
        ran.fit(X, Y, batch_size=8, epochs=1, verbose=0)
        ran.save_weights(self.weights)
        model = cnn(self.strategy, keras.optimizers.Nadam(0.01), seed=2)
        model.fit(X[:8], Y[:8], batch_size=8, epochs=1, verbose=0)
        weights, state = model.get_weights(), model._run.optimizer_state()
        last = len(saved_variables(self.weights)) - 1
        for index, value, words in (
                (0, np.int64(-1), "iteration count is -1, not from 0 to 2\\*\\*50"),
                (0, np.int64(2**63 - 1), "iteration count is 9223372036854775807, not from"),
                (0, np.uint64(2**64 - 1), "iteration count is 18446744073709551615, not from"),
                (0, np.float32(1.5), r"iteration count \(optimizer/vars/0\) is float32, not a "
                                     "whole number"),
                (0, np.zeros(2, np.int64), r"iteration count \(optimizer/vars/0\) has the shape "
                                           r"\(2,\), this model's \(\)"),
                (1, np.float32(0.0), "learning rate 0.0: mirrorlab computes with one from 1e-09"),
                (1, np.float32(np.nan), "learning rate nan"),
                (1, "0.01", r"learning rate \(optimizer/vars/1\) is no array of numbers"),
                (2, np.full((3, 3, 1, 4), np.nan, np.float32), "variable 2 holds NaN"),
                (3, np.zeros(5, np.float32), r"variable 3 \(optimizer/vars/3\) has the shape "
                                             r"\(5,\), this model's \(3, 3, 1, 4\)"),
                (last, np.float32(1.5), r"momentum schedule is 1\.5, not in \(0, 1\]")):
            with self.subTest(words):
                changed = os.path.join(self.folder.name, f"changed{index}.weights.h5")
                with open(self.weights, "rb") as f, open(changed, "wb") as g:
                    g.write(f.read())
                with h5py.File(changed, "a") as f:
                    del f[f"optimizer/vars/{index}"]
                    f[f"optimizer/vars/{index}"] = value
                with self.assertRaisesRegex(ValueError, changed + ": the optimizer's " + words):
                    model.load_weights(changed)
                for mine, then in zip(model.get_weights(), weights):
                    np.testing.assert_array_equal(mine, then)
                after = model._run.optimizer_state()
                self.assertEqual(after[:2], state[:2])
                for name, arrays in state[2].items():
                    for mine, then in zip(after[2][name], arrays):
                        np.testing.assert_array_equal(mine, then)


if __name__ == "__main__":
    unittest.main()
