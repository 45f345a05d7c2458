"""model.save and keras.models.load_model: Keras 3's .keras file (a zip of config.json,
metadata.json and the weights), on 2 replicas; a config.json as Keras 3.15.1 wrote it
(data/keras-3.15.1-config.json) is read; what mirrorlab cannot compute is refused, naming it,
and no file is replaced that was not one. (scripts/check-tensorflow has Keras load mirrorlab's
file and the other way round.)"""

import io
import json
import os
import re
import tempfile
import unittest
import zipfile
from contextlib import redirect_stdout

import numpy as np

import mirrorlab as ml

CPU = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    CPU, [ml.config.LogicalDeviceConfiguration(memory_limit=512)] * 2)
keras = ml.keras
layers = keras.layers
X = np.random.default_rng(5).integers(0, 256, (48, 28, 28, 1)).astype(np.uint8)
Y = np.arange(48) % 10
KERAS_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                            "keras-3.15.1-config.json")


def cnn(strategy, seed=1, softmax=True):
    """The layers of KERAS_CONFIG's model: every kind mirrorlab computes."""
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        return keras.Sequential([
            keras.Input((28, 28, 1)), layers.Conv2D(4, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Flatten(), layers.Dense(16),
            layers.Activation("relu"), layers.ReLU(),
            layers.Dense(10, activation="softmax" if softmax else None)])


def summary_of(model):
    out = io.StringIO()
    with redirect_stdout(out):
        model.summary()
    return out.getvalue()


def loaded_skipping_optimizer(test, path, mine, saved):
    """load_model(path), which warns, as Keras', that the file holds ``saved`` optimizer
    variables where the compiled model's optimizer has ``mine``."""
    with test.assertWarnsRegex(UserWarning, rf"Skipping variable loading for optimizer '\w+', "
                                            rf"because it has {mine} variables whereas the "
                                            rf"saved optimizer has {saved} variables"):
        return keras.models.load_model(path)


def contents(path):
    with open(path, "rb") as f:
        return os.path.getmtime(path), f.read()


def config_in(path):
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read("config.json"))


def with_config(path, config):
    """The .keras file at ``path`` with its config.json replaced by ``config``."""
    with zipfile.ZipFile(path) as z:
        files = {name: z.read(name) for name in z.namelist()}
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)


class ModelFile(unittest.TestCase):
    def setUp(self):
        self.strategy = ml.distribute.MirroredStrategy()
        self.folder = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.folder.name, "m.keras")

    def tearDown(self):
        self.folder.cleanup()

    def test_a_trained_model_comes_back_whole_and_trains_on(self):
        model = cnn(self.strategy)
        model.compile(optimizer=keras.optimizers.Nadam(0.003, beta_1=0.8),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
        model.save(self.path)
        with zipfile.ZipFile(self.path) as z:
            self.assertEqual(sorted(z.namelist()),
                             ["config.json", "metadata.json", "model.weights.h5"])
            metadata = json.loads(z.read("metadata.json"))
        self.assertEqual(metadata["keras_version"], f"mirrorlab {ml.__version__}")
        with self.strategy.scope():
            loaded = keras.models.load_model(self.path)
        self.assertEqual(loaded.num_replicas_in_sync, 2)
        self.assertEqual(summary_of(loaded), summary_of(model))
        for mine, theirs in zip(loaded.get_weights(), model.get_weights()):
            np.testing.assert_array_equal(mine, theirs)
        self.assertEqual(repr(loaded._optimizer), repr(model._optimizer))
        self.assertEqual(repr(loaded._loss), repr(model._loss))
        np.testing.assert_array_equal(loaded.predict(X / 255.0, verbose=0),
                                      model.predict(X / 255.0, verbose=0))
        history = loaded.fit(X, Y, batch_size=8, epochs=1, verbose=0)  # compiled, in sync
        self.assertEqual(sorted(history.history), ["accuracy", "loss"])

    def test_a_model_saved_uncompiled_or_loaded_without_compiling_can_be_compiled(self):
        plain = os.path.join(self.folder.name, "plain.keras")
        model = cnn(self.strategy, softmax=False)
        model.save(plain)
        self.assertNotIn("compile_config", config_in(plain))
        with self.strategy.scope():
            model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(
                from_logits=True))
        model.save(self.path)
        self.assertIn("compile_config", config_in(self.path))
        for path, compile_it in ((plain, True), (self.path, False)):
            with self.strategy.scope():
                loaded = keras.models.load_model(path, compile=compile_it)
            self.assertIsNone(loaded.optimizer)
            with self.assertRaisesRegex(ValueError, "must call `compile\\(\\)`"):
                loaded.fit(X, Y, epochs=1, verbose=0)
            with self.strategy.scope():
                loaded.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True))
            for mine, theirs in zip(loaded.get_weights(), model.get_weights()):
                np.testing.assert_array_equal(mine, theirs)  # compile keeps them, as Keras'

    def test_a_refused_compile_changes_nothing_save_would_write(self):
        model = cnn(self.strategy, softmax=False)
        with self.strategy.scope():
            model.compile(optimizer=keras.optimizers.Adam(0.004),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            with self.assertRaisesRegex(ValueError, "the loss takes probabilities"):
                model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        self.assertEqual(repr(model.optimizer), repr(keras.optimizers.Adam(0.004)))
        self.assertTrue(model.loss.from_logits)
        model.save(self.path)
        with self.strategy.scope():  # saved before a step: its optimizer's slots not made
            self.assertEqual(repr(loaded_skipping_optimizer(self, self.path, 14, 2).optimizer),
                             repr(keras.optimizers.Adam(0.004)))

    def test_compile_keeps_weights_set_before_it(self):
        model = cnn(self.strategy, softmax=False)
        halves = [np.full_like(w, 0.5) for w in model.get_weights()]
        model.set_weights(halves)
        with self.strategy.scope():
            model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
                from_logits=True))
        for mine, theirs in zip(model.get_weights(), halves):
            np.testing.assert_array_equal(mine, theirs)

    def test_keras_config_is_read(self):
        reference = cnn(self.strategy, seed=4)
        reference.save(self.path)
        with open(KERAS_CONFIG) as f:
            with_config(self.path, json.load(f))
        with self.strategy.scope():
            loaded = loaded_skipping_optimizer(self, self.path, 8, 0)
        rows = re.findall(r"│ (\S+) \((\w+)\)", summary_of(loaded))
        self.assertEqual(rows, [("conv2d", "Conv2D"), ("max_pooling2d", "MaxPooling2D"),
                                ("flatten", "Flatten"), ("dense", "Dense"),
                                ("activation", "Activation"), ("re_lu", "ReLU"),
                                ("dense_1", "Dense")])
        self.assertEqual(repr(loaded._optimizer), "SGD(learning_rate=0.05000000074505806, "
                                                  "momentum=0.5)")
        self.assertFalse(loaded._loss.from_logits)
        for mine, theirs in zip(loaded.get_weights(), reference.get_weights()):
            np.testing.assert_array_equal(mine, theirs)
        probabilities = loaded.predict(X / 255.0, verbose=0)
        np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-6)

    def test_predict_gives_a_softmax_models_probabilities(self):
        soft, logits = cnn(self.strategy), cnn(self.strategy, softmax=False)
        logits.set_weights(soft.get_weights())
        z = logits.predict(X / 255.0, verbose=0).astype(np.float64)
        expected = np.exp(z - z.max(axis=1, keepdims=True))
        expected /= expected.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(soft.predict(X / 255.0, verbose=0), expected, rtol=1e-5,
                                   atol=1e-7)

    def test_what_mirrorlab_cannot_compute_is_refused_naming_it(self):
        cnn(self.strategy).save(self.path)
        with open(KERAS_CONFIG) as f:
            good = json.load(f)
        conv, dense = good["config"]["layers"][1], good["config"]["layers"][4]
        self.assertEqual((conv["class_name"], dense["class_name"]), ("Conv2D", "Dense"))

        def changed(change):
            config = json.loads(json.dumps(good))
            change(config, config["config"]["layers"])
            return config

        cases = [
            (lambda c, ls: ls[4]["config"].update(activation="tanh"),
             "dense: activation 'tanh'"),
            (lambda c, ls: ls[1]["config"].update(padding="same"), "padding"),
            (lambda c, ls: ls[4]["config"].update(use_bias=False),
             r"layer dense \(Dense\) has use_bias=False; mirrorlab's core computes Dense with "
             r"use_bias=True only"),
            (lambda c, ls: ls[4]["config"].update(kernel_regularizer={"class_name": "L2"}),
             "kernel_regularizer"),
            (lambda c, ls: ls[4]["config"].update(surprise=1),
             r"has surprise=1, which mirrorlab does not know"),
            (lambda c, ls: ls.insert(2, {"class_name": "Dropout", "config": {"name": "drop"}}),
             "layer drop is a Dropout, which mirrorlab's core does not compute"),
            (lambda c, ls: c["compile_config"]["optimizer"].update(class_name="RMSprop"),
             r"optimizer RMSprop: mirrorlab has SGD, Adam and Nadam \(load_model\(\.\.\., "
             r"compile=False\)"),
            (lambda c, ls: c["compile_config"].update(metrics=["mae"]), "metrics"),
            (lambda c, ls: c.update(class_name="Functional"),
             "holds a Functional model: mirrorlab's load_model reads Sequential models")]
        for change, words in cases:
            with_config(self.path, changed(change))
            with self.assertRaisesRegex(ValueError, words), self.strategy.scope():
                keras.models.load_model(self.path)
        with_config(self.path, changed(
            lambda c, ls: c["compile_config"]["optimizer"].update(class_name="RMSprop")))
        with self.strategy.scope():  # the layers alone are fine
            keras.models.load_model(self.path, compile=False)

    def test_files_not_laid_out_as_keras_writes_them_are_refused_saying_so(self):
        cnn(self.strategy).save(self.path)
        with open(KERAS_CONFIG) as f:
            good = json.load(f)

        def changed(change):
            config = json.loads(json.dumps(good))
            change(config, config["config"]["layers"])
            return config

        def layer(place, **values):
            return lambda c, ls: ls[place]["config"].update(values)

        def loss(**values):  # the loss as Keras writes SparseCategoricalCrossentropy(...)
            config = {"name": "sparse_categorical_crossentropy", "from_logits": False,
                      "reduction": "sum_over_batch_size", "ignore_class": None, **values}
            return lambda c, ls: compiled.update(loss={
                "module": "keras.losses", "class_name": "SparseCategoricalCrossentropy",
                "config": config, "registered_name": None})

        compiled = None
        for change, words in [
                (lambda c, ls: c["config"].update(layers="x"), "has no list of layers"),
                (lambda c, ls: c["config"].update(layers=[]), "has no list of layers"),
                (lambda c, ls: ls.insert(1, "x"), "layer 1 is str, not an object"),
                (lambda c, ls: ls[1].update(config=[1]), "layer 1's config is list"),
                (lambda c, ls: ls[1].update(class_name=[1]), r"is a \[1\], which mirrorlab"),
                (layer(0, batch_shape=28), "the input's shape 28 is no batch shape"),
                (layer(0, batch_shape={}), "the input's shape {} is no batch shape"),
                (lambda c, ls: ls.insert(3, ls[0]), "an InputLayer after the first layer"),
                (layer(1, kernel_size=None), r"layer conv2d \(Conv2D\): .*kernel_size"),
                (layer(1, dilation_rate=2), "dilation_rate=2"),
                (layer(5, activation="softmax"), r"layer activation \(Activation\): "
                                                 r"Activation\('softmax'\)"),
                (lambda c, ls: c.update(compile_config=[1]), "the compile_config is list"),
                (lambda c, ls: compiled["optimizer"].update(config=[1]), "optimizer's config"),
                (lambda c, ls: compiled["optimizer"]["config"].update(weight_decay=0.01),
                 r"its SGD has weight_decay=0.01, which mirrorlab's SGD does not compute "
                 r"\(load_model\(\.\.\., compile=False\)"),
                (lambda c, ls: compiled["optimizer"]["config"].update(clipnorm=1.0), "clipnorm"),
                (lambda c, ls: compiled["optimizer"]["config"].update(learning_rate=float("nan")),
                 "its SGD: learning_rate nan: give a number from"),
                (lambda c, ls: compiled["optimizer"]["config"].update(use_ema=True), "use_ema"),
                (lambda c, ls: compiled["optimizer"]["config"].update(
                    learning_rate={"class_name": "ExponentialDecay"}), "a schedule"),
                (loss(ignore_class=3), "ignore_class=3"),
                (loss(reduction="sum"), "reduction='sum'"),
                (loss(from_logits="false"), "from_logits='false', not true or false"),
                (loss(from_logits=True), r"cannot be compiled as it was saved: .* ends in a "
                                         "softmax"),
                (lambda c, ls: compiled.update(loss_weights=[2.0]), r"loss_weights=\[2\.0\]"),
                (lambda c, ls: c["config"].update(trainable=False), "the model is not trainable"),
                (layer(4, dtype={"class_name": "DTypePolicy", "config": {"name": "mixed_float16"}}),
                 "layer dense computes in mixed_float16"),
                (layer(0, sparse=True), "its input is sparse or ragged")]:
            config = json.loads(json.dumps(good))
            compiled = config["compile_config"]  # what the changes above change
            change(config, config["config"]["layers"])
            with_config(self.path, config)
            with self.assertRaisesRegex(ValueError, re.escape(self.path) + ".*" + words), \
                    self.strategy.scope():
                keras.models.load_model(self.path)
        config = changed(lambda c, ls: c["compile_config"].update(metrics=["acc"]))
        config["config"]["layers"][1]["config"]["dilation_rate"] = 1  # Keras' (1, 1)
        compiled = config["compile_config"]
        loss()(config, None)  # SparseCategoricalCrossentropy's defaults, as an object
        with_config(self.path, config)
        with self.strategy.scope():  # saved not compiled: no optimizer variables
            self.assertTrue(loaded_skipping_optimizer(self, self.path, 8, 0)._accuracy)
        config = changed(lambda c, ls: c.update(compile_config={}))  # Keras', never compiled
        with_config(self.path, config)
        with self.strategy.scope():
            self.assertIsNone(keras.models.load_model(self.path).optimizer)
        with zipfile.ZipFile(self.path, "w") as z:
            z.writestr("config.json", "[" * 100000 + "]" * 100000)
            z.writestr("model.weights.h5", b"")
        with self.assertRaisesRegex(ValueError, "its config.json is no JSON"), \
                self.strategy.scope():
            keras.models.load_model(self.path)
        with zipfile.ZipFile(self.path, "w") as z:
            z.writestr("config.json", json.dumps(good))
            z.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n" + b"0" * 100)  # cut short
        with self.assertRaisesRegex(ValueError, r"its weights cannot be read as Keras lays them "
                                                r"out \(OSError"), \
                self.strategy.scope():
            keras.models.load_model(self.path)

    def test_weights_not_laid_out_as_keras_lays_them_out_are_refused(self):
        import h5py

        def weights(change):
            cnn(self.strategy).save(self.path)
            with zipfile.ZipFile(self.path) as z:
                files = {name: z.read(name) for name in z.namelist()}
            buffer = io.BytesIO(files["model.weights.h5"])
            with h5py.File(buffer, "a") as f:
                change(f)
            files["model.weights.h5"] = buffer.getvalue()
            with zipfile.ZipFile(self.path, "w") as z:
                for name, data in files.items():
                    z.writestr(name, data)

        def layer_as_a_dataset(f):
            del f["layers/conv2d"]
            f["layers/conv2d"] = np.zeros(3)

        def complex_kernel(f):
            kernel = f["layers/dense/vars/0"][()]
            del f["layers/dense/vars/0"]
            f["layers/dense/vars/0"] = kernel.astype(np.complex64)

        for change, words in [
                (layer_as_a_dataset, r"its weights cannot be read as Keras lays them out "
                                    r"\(AttributeError"),
                (complex_kernel, r"dense(_\d+)?'s array 0 holds complex64, not real numbers")]:
            weights(change)
            with self.assertRaisesRegex(ValueError, words), self.strategy.scope():
                keras.models.load_model(self.path)

    def test_bad_files_and_names_say_what_is_wrong_and_nothing_is_replaced(self):
        model = cnn(self.strategy)
        with self.assertRaisesRegex(ValueError, r"add a `\.keras` extension\. Received: "
                                                r"filepath=m\.h5 .*save_weights"):
            model.save("m.h5")
        with self.assertRaisesRegex(TypeError, "ending in .keras, not int"):
            model.save(3)
        with self.assertRaisesRegex(ValueError, r"extension for loading\. .* "
                                                r"load_weights\('NAME\.weights\.h5'\)"):
            keras.models.load_model("m.h5")
        text = os.path.join(self.folder.name, "notes.keras")
        with open(text, "w") as f:
            f.write("my notes")
        with self.assertRaisesRegex(FileExistsError, "is no model file \\(not a zip\\): not "
                                                     "replaced"):
            model.save(text)
        with open(text) as f:
            self.assertEqual(f.read(), "my notes")
        model.save(self.path)
        before = contents(self.path)
        with self.assertRaisesRegex(FileExistsError, "overwrite=False: not replaced"):
            model.save(self.path, overwrite=False)
        self.assertEqual(contents(self.path), before)
        self.assertEqual(sorted(os.listdir(self.folder.name)), ["m.keras", "notes.keras"])
        for path, error, words in [
                (os.path.join(self.folder.name, "none.keras"), FileNotFoundError,
                 "no such file"),
                (text, ValueError, "is no .keras file: not a zip")]:
            with self.assertRaisesRegex(error, words), self.strategy.scope():
                keras.models.load_model(path)
        with zipfile.ZipFile(self.path, "w") as z:
            z.writestr("config.json", "{")
            z.writestr("model.weights.h5", b"")
        with self.assertRaisesRegex(ValueError, "its config.json is no JSON"), \
                self.strategy.scope():
            keras.models.load_model(self.path)


if __name__ == "__main__":
    unittest.main()
