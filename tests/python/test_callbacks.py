"""model.fit(callbacks=[...]): keras.callbacks called as Keras 3.15 was seen to call them (each
epoch's on_epoch_end before its line, EarlyStopping and its restored weights at the end,
ModelCheckpoint's weights files), on 2 replicas; what mirrorlab does not call is refused."""

import io
import os
import tempfile
import threading
import unittest
import warnings
from contextlib import redirect_stdout

import numpy as np

import mirrorlab as ml

CPU = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    CPU, [ml.config.LogicalDeviceConfiguration(memory_limit=512)] * 2)
keras = ml.keras
X = np.random.default_rng(0).integers(0, 256, (64, 28, 28)).astype(np.uint8)
Y = np.arange(64) % 10


def model(strategy):
    keras.utils.set_random_seed(1)
    with strategy.scope():
        m = keras.Sequential([keras.Input((28, 28)), keras.layers.Flatten(),
                              keras.layers.Dense(10)])
        m.compile(optimizer="sgd", metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


class Recorder(keras.callbacks.Callback):
    """What was called, in order, and the weights at each epoch's end."""

    def __init__(self, stop_after=None):
        super().__init__()
        self.calls, self.weights, self.stop_after = [], [], stop_after

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin", dict(self.params)))

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("epoch_begin", epoch))

    def on_epoch_end(self, epoch, logs=None):
        print(f"recorded epoch {epoch}")
        self.calls.append(("epoch_end", epoch, sorted(logs)))
        self.weights.append(self.model.get_weights())
        if self.stop_after is not None:
            self.model.stop_training = epoch == self.stop_after

    def on_train_end(self, logs=None):
        self.calls.append(("train_end", sorted(logs)))


class Callbacks(unittest.TestCase):
    def setUp(self):
        self.strategy = ml.distribute.MirroredStrategy()
        self.folder = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.folder.cleanup()

    def fit(self, m, callbacks, epochs=4, verbose=2, **kw):
        out = io.StringIO()
        with redirect_stdout(out):
            history = m.fit(X, Y, batch_size=16, epochs=epochs, verbose=verbose,
                            callbacks=callbacks, **kw)
        return history, out.getvalue()

    def test_a_callback_is_called_as_keras_calls_it_and_can_stop_the_fit(self):
        recorder = Recorder(stop_after=1)
        history, out = self.fit(model(self.strategy), [recorder], validation_split=0.25)
        self.assertEqual(recorder.calls, [
            ("train_begin", {"verbose": 2, "epochs": 4, "steps": 3}),  # steps: an epoch's
            ("epoch_begin", 0), ("epoch_end", 0, ["accuracy", "loss", "val_accuracy", "val_loss"]),
            ("epoch_begin", 1), ("epoch_end", 1, ["accuracy", "loss", "val_accuracy", "val_loss"]),
            ("train_end", ["accuracy", "loss", "val_accuracy", "val_loss"])])
        self.assertEqual(len(history.history["loss"]), 2)  # stop_training after epoch 1
        self.assertEqual(history.params["steps"], 3)
        # on_epoch_end runs before the epoch's line is printed, as in Keras.
        lines = out.splitlines()
        self.assertRegex(lines[1], "^recorded epoch 0$")
        self.assertRegex(lines[2], r"^3/3 - \d+s - .* - val_loss: ")

    def test_early_stopping_stops_says_so_and_restores_the_best_weights(self):
        recorder = Recorder()
        stop = keras.callbacks.EarlyStopping(monitor="loss", mode="max", patience=1, verbose=1,
                                             restore_best_weights=True)
        m = model(self.strategy)
        history, out = self.fit(m, [recorder, stop])
        self.assertEqual(len(history.history["loss"]), 2)  # the loss fell: epoch 1 is the best
        self.assertTrue(out.endswith("Epoch 2: early stopping\nRestoring model weights from the "
                                     "end of the best epoch: 1.\n"), out)
        for restored, best in zip(m.get_weights(), recorder.weights[0]):
            np.testing.assert_array_equal(restored, best)
        self.assertFalse(np.array_equal(recorder.weights[1][0], recorder.weights[0][0]))

    def test_early_stopping_on_a_metric_not_there_warns_and_trains_every_epoch(self):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            history, _ = self.fit(model(self.strategy),
                                  [keras.callbacks.EarlyStopping(patience=0)], epochs=3)
        self.assertEqual(len(history.history["loss"]), 3)
        self.assertIn("Early stopping conditioned on metric `val_loss` which is not available. "
                      "Available metrics are: accuracy,loss", str(seen[0].message))

    def test_model_checkpoint_writes_weights_files_each_epoch_or_the_best(self):
        every = os.path.join(self.folder.name, "e{epoch:02d}.weights.h5")
        best = os.path.join(self.folder.name, "best.weights.h5")
        recorder = Recorder()
        m = model(self.strategy)
        _, out = self.fit(m, [recorder, keras.callbacks.ModelCheckpoint(every),
                              keras.callbacks.ModelCheckpoint(best, monitor="loss", verbose=1,
                                                              save_best_only=True)], epochs=3)
        self.assertEqual(sorted(os.listdir(self.folder.name)),
                         ["best.weights.h5", "e01.weights.h5", "e02.weights.h5",
                          "e03.weights.h5"])
        self.assertIn("\n\nEpoch 1: loss improved from None to ", out)
        self.assertIn(f"saving model to {best}\n\nEpoch 1: finished saving model to {best}\n",
                      out)
        for epoch in range(3):
            loaded = model(self.strategy)
            loaded.load_weights(os.path.join(self.folder.name, f"e{epoch + 1:02d}.weights.h5"))
            for a, b in zip(loaded.get_weights(), recorder.weights[epoch]):
                np.testing.assert_array_equal(a, b)
        loaded = model(self.strategy)
        loaded.load_weights(best)  # the loss fell each epoch: the last is the best
        np.testing.assert_array_equal(loaded.get_weights()[0], recorder.weights[2][0])

    def test_stop_training_set_as_an_epoch_begins_ends_the_fit_after_it_as_keras(self):
        class StopsAtBegin(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self.model.stop_training = epoch == 1

        recorder = Recorder()
        history, out = self.fit(model(self.strategy), [StopsAtBegin(), recorder],
                                validation_split=0.25)
        # Keras 3.15: epoch 2 runs whole (3 of 3 batches) and is validated, then the fit ends.
        self.assertEqual(len(history.history["val_loss"]), 2)
        self.assertRegex(out.splitlines()[-1], r"^3/3 - .* - val_loss: ")
        self.assertEqual(recorder.calls[-2], ("epoch_end", 1,
                                              ["accuracy", "loss", "val_accuracy", "val_loss"]))

    def test_zero_epochs_still_tell_the_callbacks_as_keras(self):
        recorder = Recorder()
        history, _ = self.fit(model(self.strategy), [recorder], epochs=0)
        self.assertEqual(recorder.calls, [("train_begin", {"verbose": 2, "epochs": 0,
                                                           "steps": 4}), ("train_end", [])])
        self.assertEqual(history.history, {})

    def test_model_checkpoint_makes_its_folder_and_saves_without_its_metric(self):
        path = os.path.join(self.folder.name, "runs", "best.weights.h5")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            checkpoint = keras.callbacks.ModelCheckpoint(path, save_best_only=True, mode="most")
            self.fit(model(self.strategy), [checkpoint], epochs=1)
        said = [str(w.message) for w in seen]
        self.assertIn("ModelCheckpoint mode 'most' is unknown, fallback to auto mode.", said)
        self.assertIn("Can save best model only with val_loss available.", said)  # Keras 3.15
        self.assertTrue(os.path.isfile(path))  # saved anyway, as Keras, in the folder made

    def test_model_checkpoint_saves_the_whole_model_to_a_keras_file(self):
        path = os.path.join(self.folder.name, "m-{epoch}.keras")
        m = model(self.strategy)
        self.fit(m, [keras.callbacks.ModelCheckpoint(path)], epochs=2)
        self.assertEqual(sorted(os.listdir(self.folder.name)), ["m-1.keras", "m-2.keras"])
        with self.strategy.scope():
            last = keras.models.load_model(os.path.join(self.folder.name, "m-2.keras"))
        for mine, theirs in zip(last.get_weights(), m.get_weights()):
            np.testing.assert_array_equal(mine, theirs)
        self.assertEqual(repr(last.optimizer), repr(m.optimizer))

    def test_what_mirrorlab_does_not_call_or_save_is_refused_before_training(self):
        class PerBatch(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                pass

        m = model(self.strategy)
        before = m.get_weights()[0]
        for callbacks, error, words in [
                ([PerBatch()], ValueError, "PerBatch defines on_train_batch_end, which "
                                           "mirrorlab's fit does not call"),
                (keras.callbacks.EarlyStopping(), TypeError, "callbacks is a list"),
                ([print], TypeError, "is no keras.callbacks.Callback")]:
            with self.assertRaisesRegex(error, words):
                m.fit(X, Y, epochs=1, verbose=0, callbacks=callbacks)
        np.testing.assert_array_equal(m.get_weights()[0], before)
        with self.assertRaisesRegex(ValueError, r"save_weights_only=True` in `ModelCheckpoint`, "
                                                r"the filepath provided must end in "
                                                r"`\.weights\.h5`"):  # Keras 3.15.1's words
            keras.callbacks.ModelCheckpoint("m.keras", save_weights_only=True)
        with self.assertRaisesRegex(ValueError, r"must end in `\.keras` .* or `\.weights\.h5` "
                                                r".* Received: filepath=m\.h5"):
            keras.callbacks.ModelCheckpoint("m.h5")
        with self.assertRaisesRegex(ValueError, "save_freq='epoch'"):
            keras.callbacks.ModelCheckpoint("m.weights.h5", save_freq=10)
        with self.assertRaisesRegex(ValueError,
                                    r"on_train_batch_end=\.\.\.\): mirrorlab.s fit calls"):
            keras.callbacks.LambdaCallback(on_train_batch_end=print)

    def test_arguments_keras_would_misuse_are_refused_as_the_callback_is_made(self):
        path = os.path.join(self.folder.name, "m.weights.h5")
        for make, error, words in [
                (lambda: keras.callbacks.EarlyStopping(patience=-1), ValueError,
                 r"EarlyStopping\(patience=-1\): patience must be a whole number, 0 or more"),
                (lambda: keras.callbacks.EarlyStopping(patience="a"), TypeError,
                 r"patience='a'\): patience must be a whole number"),
                (lambda: keras.callbacks.EarlyStopping(patience=1.5), ValueError,
                 "patience must be a whole number"),
                (lambda: keras.callbacks.EarlyStopping(min_delta="x"), TypeError,
                 r"min_delta='x'\): min_delta must be a finite number"),
                (lambda: keras.callbacks.EarlyStopping(min_delta=float("nan")), ValueError,
                 "min_delta must be a finite number"),
                (lambda: keras.callbacks.EarlyStopping(monitor=5), TypeError,
                 r"monitor=5\): monitor must be a metric's name, e.g. 'val_loss'"),
                (lambda: keras.callbacks.EarlyStopping(baseline="q"), TypeError,
                 "baseline must be a finite number or None"),
                (lambda: keras.callbacks.EarlyStopping(start_from_epoch=-2), ValueError,
                 "start_from_epoch must be a whole number"),
                (lambda: keras.callbacks.ModelCheckpoint(path, verbose="z"), TypeError,
                 r"ModelCheckpoint\(verbose='z'\): verbose must be a whole number"),
                (lambda: keras.callbacks.ModelCheckpoint(path, monitor=None), TypeError,
                 "monitor must be a metric's name"),
                (lambda: keras.callbacks.ModelCheckpoint(path, initial_value_threshold="a"),
                 TypeError, "initial_value_threshold must be a finite number or None")]:
            with self.assertRaisesRegex(error, words):
                make()
        with self.assertRaisesRegex(TypeError, r"filepath=b'm\.keras'\): give the file's name "
                                               "as a str"):
            keras.callbacks.ModelCheckpoint(b"m.keras")
        self.assertEqual(keras.callbacks.ModelCheckpoint(path, verbose=True).verbose, True)
        made = keras.callbacks.EarlyStopping(patience=np.int64(2), min_delta=np.float32(0.1),
                                             baseline=0.5, verbose=True)  # as Keras takes them
        self.assertEqual(made.patience, 2)
        self.assertAlmostEqual(made.min_delta, -0.1)

    def test_the_learning_rate_set_in_a_callback_or_between_fits_is_the_runs(self):
        # Keras' optimizer.learning_rate = x, as a schedule sets it in a callback of the fit, or
        # between fits: the model updates with it from its next step (mirrorlab kept the
        # compiled one, whatever the attribute said).
        def sgd(rate):
            m = model(self.strategy)
            m.compile(optimizer=keras.optimizers.SGD(rate),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            return m

        def weights_equal(a, b):
            return all(np.array_equal(x, y) for x, y in zip(a.get_weights(), b.get_weights()))

        compiled = sgd(0.05)
        self.fit(compiled, [], epochs=2)
        scheduled = sgd(0.01)
        schedule = keras.callbacks.LambdaCallback(
            on_epoch_begin=lambda epoch, logs=None: setattr(scheduled.optimizer,
                                                            "learning_rate", 0.05))
        self.fit(scheduled, [schedule], epochs=2)
        self.assertTrue(weights_equal(scheduled, compiled))
        between = sgd(0.01)
        between.optimizer.learning_rate = 0.05
        self.fit(between, [], epochs=2)
        self.assertTrue(weights_equal(between, compiled))
        # From the second epoch on: neither run of one rate.
        late = sgd(0.01)
        self.fit(late, [keras.callbacks.LambdaCallback(
            on_epoch_begin=lambda epoch, logs=None: setattr(late.optimizer, "learning_rate",
                                                            0.05 if epoch else 0.01))], epochs=2)
        kept = sgd(0.01)
        self.fit(kept, [], epochs=2)
        self.assertFalse(weights_equal(late, compiled) or weights_equal(late, kept))
        self.assertEqual(late.optimizer.learning_rate, 0.05)
        with self.assertRaisesRegex(ValueError, "learning_rate 0.0: give a number from 1e-09"):
            late.optimizer.learning_rate = 0
        self.assertEqual(late.optimizer.learning_rate, 0.05)

        # Another thread, while the fit runs: refused, the rate as it was.
        refused = []

        def from_another_thread(epoch, logs=None):
            def sets():
                try:
                    late.optimizer.learning_rate = 0.5
                except RuntimeError as e:
                    refused.append(str(e))
            thread = threading.Thread(target=sets)
            thread.start()
            thread.join()
        self.fit(late, [keras.callbacks.LambdaCallback(on_epoch_begin=from_another_thread)],
                 epochs=1)
        self.assertEqual(len(refused), 1)
        self.assertRegex(refused[0], "^setting the learning rate cannot start while this model "
                                     "trains")
        self.assertEqual(late.optimizer.learning_rate, 0.05)

        # Compiled again with another optimizer, the model no longer follows the first one; one
        # optimizer compiled into two models sets both.
        first = keras.optimizers.SGD(0.01)
        again = sgd(0.01)
        again.compile(optimizer=first,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        again.compile(optimizer=keras.optimizers.SGD(0.05),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        first.learning_rate = 0.5
        self.fit(again, [], epochs=2)
        self.assertTrue(weights_equal(again, compiled))
        shared = keras.optimizers.SGD(0.01)
        pair = [sgd(0.01), sgd(0.01)]
        for m in pair:
            m.compile(optimizer=shared,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        shared.learning_rate = 0.05
        for m in pair:
            self.fit(m, [], epochs=2)
            self.assertTrue(weights_equal(m, compiled))

    def test_a_callbacks_exception_ends_the_fit_and_leaves_the_model_usable(self):
        class Fails(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                raise KeyError(f"fails at {epoch}")

        class SetsWeights(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                self.model.set_weights(self.model.get_weights())

        class FailsAtBegin(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                raise ValueError(f"fails as {epoch} begins")

        m = model(self.strategy)
        before = m.get_weights()
        with self.assertRaisesRegex(ValueError, "fails as 0 begins"):
            self.fit(m, [FailsAtBegin()])
        for now, then in zip(m.get_weights(), before):  # before any batch, as Keras
            np.testing.assert_array_equal(now, then)
        for verbose in (1, 2):
            out = io.StringIO()
            with self.assertRaisesRegex(KeyError, "fails at 0"), redirect_stdout(out):
                m.fit(X, Y, batch_size=16, epochs=2, verbose=verbose, callbacks=[Fails()],
                      validation_split=0.25)
            self.assertEqual(out.getvalue(), "Epoch 1/2\n")  # raised before the epoch's line
        with self.assertRaisesRegex(RuntimeError, "set_weights cannot start while this model "
                                                  "trains .* in a callback of its fit"):
            self.fit(m, [SetsWeights()])
        history, _ = self.fit(m, [], epochs=2)  # trains on, in sync
        self.assertEqual(len(history.history["loss"]), 2)


if __name__ == "__main__":
    unittest.main()
