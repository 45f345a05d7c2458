"""mirrorlab.keras.Sequential: built from the core's layers, compiled, fitted and evaluated under
a strategy; bad input raises what a Keras user expects, and Ctrl-C leaves the model usable."""

import ast
import io
import os
import re
import signal
import threading
import time
import unittest
from contextlib import redirect_stdout

import numpy as np

import mirrorlab as ml

CPU = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    CPU, [ml.config.LogicalDeviceConfiguration(memory_limit=512)] * 2)
(X, Y), (X_TEST, Y_TEST) = ml.datasets.fashion_mnist.load_data()
layers = ml.keras.layers


def mlp():
    return ml.keras.Sequential([
        layers.Flatten(input_shape=(28, 28)),
        layers.Dense(64, activation="relu"),
        layers.Dense(10)])


def compiled(strategy, model_fn=mlp):
    with strategy.scope():
        model = model_fn()
        model.compile(optimizer="adam",
                      loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    return model


class TypeStub(unittest.TestCase):
    def test_the_stub_names_every_method_of_the_run_and_no_other(self):
        stub = os.path.join(os.path.dirname(ml._mirrorlab.__file__), "_mirrorlab.pyi")
        with open(stub) as f:
            tree = ast.parse(f.read())
        run = next(node for node in tree.body if isinstance(node, ast.ClassDef) and
                   node.name == "_Run")
        stubbed = {node.name for node in run.body if isinstance(node, ast.FunctionDef)}
        bound = {name for name in dir(ml._mirrorlab._Run) if not name.startswith("__")}
        self.assertEqual(stubbed - {"__init__"}, bound)


class Sequential(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.strategy = ml.distribute.MirroredStrategy()

    def test_fit_trains_every_replica_and_prints_keras_lines(self):
        model = compiled(self.strategy)
        self.assertEqual(model.num_replicas_in_sync, 2)
        out = io.StringIO()
        with redirect_stdout(out):
            history = model.fit(X[:4096] / 255.0, Y[:4096], batch_size=64, epochs=2,
                                validation_data=(X_TEST[:1000], Y_TEST[:1000]))
        text = out.getvalue()
        self.assertIn("Epoch 1/2\n", text)
        # Keras writes the time per step in ms, or in us below a millisecond.
        self.assertRegex(text, r"64/64 ━+ \d+s \d+(?:ms|us)/step - accuracy: 0\.\d{4} "
                               r"- loss: \d\.\d{4} - val_accuracy: 0\.\d{4} "
                               r"- val_loss: \d\.\d{4}\n")
        self.assertEqual(sorted(history.history),
                         ["accuracy", "loss", "val_accuracy", "val_loss"])
        self.assertEqual(history.epoch, [0, 1])
        self.assertLess(history.history["loss"][1], history.history["loss"][0])
        loss, accuracy = model.evaluate(X_TEST[:2000], Y_TEST[:2000], batch_size=100)
        self.assertGreater(accuracy, 0.7)  # 10 classes: chance is 0.1
        self.assertAlmostEqual(model.evaluate(X_TEST[:2000], Y_TEST[:2000], batch_size=100,
                                              verbose=0, return_dict=True)["loss"], loss)

    def test_the_lines_keras_prints_by_verbose_and_metrics(self):
        """As Keras 3.15 printed them (run): no "Epoch 1/1" for one epoch, verbose=2's one line
        an epoch, the loss alone without metrics=["accuracy"], and evaluate's line."""
        def printed(call):
            out = io.StringIO()
            with redirect_stdout(out):
                call()
            return out.getvalue()

        took = r"\d+s \d+(?:ms|us)/step"
        metrics = r" - accuracy: 0\.\d{4} - loss: \d\.\d{4}\n"
        model = compiled(self.strategy)
        text = printed(lambda: model.fit(X[:2048], Y[:2048], batch_size=64, epochs=1))
        self.assertRegex(text, r"^32/32 ━{20} " + took + metrics + "$")
        text = printed(lambda: model.fit(X[:2048], Y[:2048], batch_size=64, epochs=2, verbose=2))
        self.assertRegex(text, r"^Epoch 1/2\n32/32 - \d+s - \d+(?:ms|us)/step" + metrics +
                         r"Epoch 2/2\n32/32 - \d+s - \d+(?:ms|us)/step" + metrics + "$")
        text = printed(lambda: model.evaluate(X_TEST[:1000], Y_TEST[:1000], batch_size=100))
        self.assertRegex(text, r"^10/10 ━{20} " + took + metrics + "$")
        text = printed(lambda: model.evaluate(X_TEST[:1000], Y_TEST[:1000], verbose=0))
        self.assertEqual(text, "")

        with self.strategy.scope():
            plain = mlp()
            plain.compile(optimizer="adam",
                          loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        text = printed(lambda: plain.fit(X[:2048], Y[:2048], batch_size=64, epochs=1))
        self.assertRegex(text, r"^32/32 ━{20} " + took + r" - loss: \d\.\d{4}\n$")
        text = printed(lambda: plain.evaluate(X_TEST[:1000], Y_TEST[:1000], batch_size=100,
                                              verbose=2))
        self.assertRegex(text, r"^10/10 - \d+s - \d+(?:ms|us)/step - loss: \d\.\d{4}\n$")

    def test_summary_and_weights_are_keras_shaped(self):
        with self.strategy.scope():
            model = ml.keras.Sequential([
                ml.keras.Input(shape=(28, 28, 1)),
                layers.Conv2D(8, 3, activation="relu"),
                layers.MaxPooling2D(),
                layers.Flatten(),
                layers.ReLU(),
                layers.Activation("relu"),
                layers.Dense(10)], name="small_cnn")
        out = io.StringIO()
        with redirect_stdout(out):
            model.summary()
        text = out.getvalue()
        self.assertIn('Model: "small_cnn"', text)
        self.assertRegex(text, r"conv2d(_\d+)? \(Conv2D\) +│ \(None, 26, 26, 8\) +│ +80 │")
        # One row a layer, as Keras: the Conv2D's relu is in its row, a ReLU() has its own, an
        # Activation("relu") too, with Keras' type (a ReLU layer in the core).
        self.assertEqual(re.findall(r"│ \S+ \((\w+)\)", text),
                         ["Conv2D", "MaxPooling2D", "Flatten", "ReLU", "Activation", "Dense"])
        self.assertIn(" Total params: 13,610 (53.16 KB)", text)
        shapes = [w.shape for w in model.get_weights()]
        self.assertEqual(shapes, [(3, 3, 1, 8), (8,), (1352, 10), (10,)])
        self.assertEqual(model.count_params(), 13610)
        self.assertTrue(all(w.dtype == np.float32 for w in model.get_weights()))

    def test_predict_gives_every_images_outputs_and_set_weights_every_replicas(self):
        model = compiled(self.strategy)  # not fitted: predict needs no fit, as in Keras
        images = X_TEST[:7] / 255.0
        kernel, bias, out_kernel, out_bias = model.get_weights()
        expected = np.maximum(images.reshape(7, -1) @ kernel + bias, 0) @ out_kernel + out_bias
        predicted = model.predict(images, batch_size=3)  # does not split over 2: Keras takes it
        self.assertEqual((predicted.shape, predicted.dtype), ((7, 10), np.float32))
        np.testing.assert_allclose(predicted, expected, rtol=1e-4, atol=1e-5)
        # Whatever the batch: 32 (4 and 3 a replica), or one image (replica 1 takes none of it,
        # TensorFlow's split of a short batch). A product of one row sums in its own order.
        for batch in (None, 1):
            np.testing.assert_allclose(model.predict(images, batch_size=batch), predicted,
                                       rtol=1e-5, atol=1e-6)
        # set_weights: every replica takes them (predict reads replica 1's shards too).
        zeroed = [np.zeros_like(kernel), bias, out_kernel, out_bias + 1]
        model.set_weights(zeroed)
        for a, b in zip(model.get_weights(), zeroed):
            np.testing.assert_array_equal(a, b)
        row = np.maximum(bias, 0) @ out_kernel + out_bias + 1
        np.testing.assert_allclose(model.predict(images, batch_size=2),
                                   np.tile(row, (7, 1)), rtol=1e-5, atol=1e-6)
        model.fit(X[:64] / 255.0, Y[:64], batch_size=32, verbose=0)  # trains from them
        for bad, error, words in [
                (zeroed[:3], ValueError, "takes a list of 4 arrays, as get_weights"),
                ([kernel.T, bias, out_kernel, out_bias], ValueError,
                 r"dense(_\d+)?/kernel has the shape \(784, 64\), not \(64, 784\)"),
                ([kernel, bias * np.nan, out_kernel, out_bias], ValueError, "NaN or infinity"),
                (["w", bias, out_kernel, out_bias], TypeError, "an array of numbers")]:
            with self.assertRaisesRegex(error, words):
                model.set_weights(bad)
        with self.assertRaisesRegex(ValueError, "x holds no images"):
            model.predict(images[:0])

    def test_predict_prints_keras_line_by_verbose(self):
        model = compiled(self.strategy)
        images = X_TEST[:7] / 255.0
        for verbose, line in [(2, r"3/3 - \d+s - \d+(ms|us)/step\n"),
                              ("auto", r"3/3 ━{20} \d+s \d+(ms|us)/step\n"),
                              (0, "")]:
            out = io.StringIO()
            with redirect_stdout(out):
                model.predict(images, batch_size=3, verbose=verbose)  # 3, 3, 1: as Keras
            self.assertRegex(out.getvalue(), f"^{line}$")

    def test_bad_input_raises_what_a_keras_user_expects(self):
        model = compiled(self.strategy)
        x, y = X[:256], Y[:256]
        cases = [
            (ValueError, "Invalid dtype", lambda: model.fit(np.full((4, 28, 28), "a"), y[:4])),
            (ValueError, r"shape \(256, 784\)", lambda: model.fit(x.reshape(256, 784), y)),
            (ValueError, "NaN", lambda: model.fit(np.where(np.arange(256)[:, None, None] == 7,
                                                            np.nan, x / 255.0), y)),
            (ValueError, "between those steps", lambda: model.fit(x / 7.0, y)),
            (ValueError, r"already scaled to \[0, 1\], and these go up to 255: divide them by "
                         "255", lambda: model.fit(x.astype(np.float32), y)),
            (ValueError, "cardinality", lambda: model.fit(x, y[:255])),
            (ValueError, "gives 10 classes", lambda: model.fit(x, y + 10)),
            (ValueError, "not class numbers", lambda: model.fit(x, y + 0.5)),
            (ValueError, "does not split over 2 replicas", lambda: model.fit(x, y, batch_size=33)),
            (ValueError, "epochs", lambda: model.fit(x, y, epochs=-1)),
            (TypeError, "whole number", lambda: model.fit(x, y, epochs=1.5)),
            (ValueError, "^x holds no images", lambda: model.fit(X[:0] / 255.0, Y[:0])),
            (ValueError, "^x holds no images", lambda: model.evaluate(X[:0] / 255.0, Y[:0])),
            (ValueError, "^x holds no images", lambda: model.evaluate(X[:0], Y[:0])),
            (ValueError, "^validation_data's x holds no images",
             lambda: model.fit(x, y, validation_data=(X[:0] / 255.0, Y[:0]))),
            (ValueError, "^validation_data's x holds no images",
             lambda: model.fit(x, y, validation_data=(X[:0], Y[:0]))),
        ]
        for error, words, call in cases:
            with self.subTest(words=words):
                with self.assertRaisesRegex(error, words):
                    call()
        self.assertEqual(model.fit(x, y, epochs=0).history, {})  # as Keras: nothing to do
        # Not contiguous (every other image): taken as it is, as Keras takes it.
        with redirect_stdout(io.StringIO()):
            model.fit(X[:512:2], Y[:512:2], batch_size=64, verbose=0)

    def test_numpy_scalars_are_numbers(self):
        with self.strategy.scope():
            model = ml.keras.Sequential([layers.Flatten(input_shape=(28, 28)),
                                         layers.Dense(np.int64(10))])
            model.compile(optimizer=ml.keras.optimizers.Adam(np.float32(1e-3),
                                                             beta_1=np.float64(0.9)),
                          loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        self.assertEqual(model.layers[-1].units, 10)
        self.assertIs(type(model.layers[-1].units), int)
        self.assertAlmostEqual(model._optimizer.learning_rate, 1e-3)
        self.assertEqual(layers.Conv2D(np.int32(4), np.int64(3)).filters, 4)
        history = model.fit(X[:256], Y[:256], batch_size=np.int64(64), epochs=np.int32(1),
                            validation_split=np.float32(0.25), verbose=0)
        self.assertEqual(len(history.history["val_loss"]), 1)
        # A bool is no number here, NumPy's or Python's.
        with self.assertRaisesRegex(ValueError, "Dense units True"):
            layers.Dense(True)
        with self.assertRaisesRegex(TypeError, "learning_rate must be a number"):
            ml.keras.optimizers.SGD(np.bool_(True))

    def test_the_seed_is_one_the_core_takes(self):
        try:
            ml.keras.utils.set_random_seed(np.int64(3))
            self.assertIs(type(ml.keras.utils._current_seed()), int)
            ml.keras.utils.set_random_seed(2**64 - 1)
            compiled(self.strategy)
            with self.assertRaisesRegex(ValueError, "give a whole number from 0 to "
                                                    "18446744073709551615$"):
                ml.keras.utils.set_random_seed(2**64)
            with self.assertRaisesRegex(ValueError, "from 0 to"):
                ml.keras.utils.set_random_seed(-1)
            with self.assertRaisesRegex(TypeError, "whole number"):
                ml.keras.utils.set_random_seed(1.5)
        finally:
            ml.keras.utils.set_random_seed(42)

    def test_what_a_user_calls_says_what_it_does(self):
        seq, opt = ml.keras.Sequential, ml.keras.optimizers
        for thing in (seq.add, seq.layers, seq.count_params, seq.num_replicas_in_sync,
                      ml.keras.Input, opt.Optimizer, opt.Adam, opt.Nadam):
            with self.subTest(thing=getattr(thing, "__qualname__", thing)):
                self.assertTrue((thing.__doc__ or "").strip())

    def test_compile_says_what_mirrorlab_lacks_and_what_does_not_fit(self):
        with self.strategy.scope():
            model = mlp()
        with self.assertRaisesRegex(ValueError, "compile"):
            model.fit(X[:64], Y[:64])
        with self.assertRaisesRegex(ValueError, "rmsprop"):
            model.compile(loss="sparse_categorical_crossentropy")
        with self.assertRaisesRegex(ValueError, "probabilities"):
            model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        with self.assertRaisesRegex(ValueError, "metric 'mse'"):
            model.compile(optimizer="adam", metrics=["mse"],
                          loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        with self.assertRaisesRegex(ValueError, r"metrics is a list, e\.g\. "
                                                r"metrics=\['accuracy'\]"):
            model.compile(optimizer="adam", metrics="accuracy",
                          loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        other = ml.distribute.MirroredStrategy(devices=["/gpu:0"])
        with other.scope():
            with self.assertRaisesRegex(RuntimeError, r'Need to be inside "with strategy.scope\(\)"'):
                model.compile(optimizer="adam",
                              loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        with self.assertRaisesRegex(ValueError, "3x3"):
            layers.Conv2D(8, 5)
        with self.assertRaisesRegex(ValueError, "input_shape"):
            layers.Flatten(input_shape=(32, 32))
        with self.assertRaisesRegex(ValueError, "activation 'tanh'"):
            layers.Dense(10, activation="tanh")

    def test_ctrl_c_stops_after_the_step_and_leaves_the_model_usable(self):
        model = compiled(self.strategy)

        def press_ctrl_c_once_a_step_is_done():
            # Not after a fixed time: on a loaded machine fit may not have finished a step by then.
            deadline = time.monotonic() + 60
            while model.progress().get("steps", 0) == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)

        presser = threading.Thread(target=press_ctrl_c_once_a_step_is_done)
        presser.start()
        started = time.monotonic()
        with redirect_stdout(io.StringIO()):
            with self.assertRaises(KeyboardInterrupt):
                model.fit(X, Y, batch_size=64, epochs=5)
        presser.join()
        self.assertLess(time.monotonic() - started, 60)
        steps = model.progress()["steps"]
        self.assertGreater(steps, 0)
        self.assertLess(steps, 5 * 469)
        loss, accuracy = model.evaluate(X_TEST[:1000], Y_TEST[:1000], batch_size=100)
        self.assertTrue(np.isfinite(loss))

    def test_another_thread_reads_the_progress_while_fit_runs(self):
        model = compiled(self.strategy)
        seen = []
        done = threading.Event()

        def watch():
            while not done.is_set():
                seen.append(model.progress().get("steps", 0))
                time.sleep(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            with redirect_stdout(io.StringIO()):
                model.fit(X[:8192], Y[:8192], batch_size=64, epochs=1, verbose=0)
        finally:
            done.set()
            watcher.join()
        self.assertEqual(model.progress()["steps"], 128)
        # The watcher ran while fit computed (the GIL was free), seeing steps between.
        self.assertTrue(any(0 < s < 128 for s in seen), seen[-5:])

    def test_a_second_call_on_a_model_another_thread_fits_is_refused(self):
        # fit (or evaluate, or a step taken phase by phase) on a model that another thread is
        # fitting would mix both calls' steps on the same weights, or leave both threads waiting
        # on each other's collectives: it is refused, and the first fit goes on unharmed.
        model = compiled(self.strategy)
        failed = []

        def fit():
            try:
                model.fit(X[:16384], Y[:16384], batch_size=64, epochs=1, verbose=0)
            except Exception as e:  # pragma: no cover - reported below
                failed.append(e)

        batch = next(iter(self.strategy.experimental_distribute_dataset(
            ml.data.Dataset.from_tensor_slices((X[:64] / 255.0, Y[:64])).batch(64))))
        fitting = threading.Thread(target=fit)
        fitting.start()
        try:
            while model.progress().get("steps", 0) < 2 and fitting.is_alive():
                time.sleep(0.005)
            refused = []
            for call in (lambda: model.fit(X[:256], Y[:256], verbose=0),
                         lambda: model.evaluate(X[:256], Y[:256], verbose=0),
                         lambda: model.train_step(batch)):
                if not fitting.is_alive():
                    break
                with self.assertRaisesRegex(RuntimeError, "on another thread") as e:
                    call()
                refused.append(str(e.exception))
        finally:
            fitting.join()
        self.assertEqual(failed, [])
        self.assertEqual(model.progress()["steps"], 256)  # every step of the first fit ran
        self.assertTrue(refused, "the fit ended before a second call was tried")
        self.assertIn("model.fit cannot start while this model trains", refused[0])
        # Once it has returned, the model is the caller's again.
        loss, accuracy = model.evaluate(X_TEST[:1000], Y_TEST[:1000], verbose=0)
        self.assertTrue(np.isfinite(loss))


if __name__ == "__main__":
    unittest.main()
