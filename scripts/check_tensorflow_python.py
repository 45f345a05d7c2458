"""The Python module against TensorFlow and Keras: what check_tensorflow.py runs for mirrorlab's
`mirrorlab` package (model.predict, evaluate, set_weights, strategy.reduce), on 3 replicas and 40
images whose global batches of 32 do not split evenly, and the weights files each side writes,
read by the other. TensorFlow's side runs in the Python of the check (isolated); mirrorlab's in
the Python the package was built for (build/python)."""

import json
import os
import subprocess
import sys
import tempfile

# Each case: (what, how it is called). Both sides answer with one line each, in these words:
# "gives SHAPE or VALUE", "raises TYPE".
CASES = [
    ("model.predict, uncompiled", "40 images, batch_size=32, 3 replicas"),
    ("model.predict", "40 images, batch_size=32, 3 replicas"),
    ("model.evaluate", "40 images, batch_size=32, 3 replicas"),
    ("strategy.reduce(SUM, a value of no replica)", "2.5 on 3 replicas"),
    ("strategy.reduce(MEAN, a value of no replica)", "2.5 on 3 replicas"),
    ("model.set_weights", "2 arrays for 4 weights"),
    ("fit(callbacks=[EarlyStopping(monitor='loss', mode='max', patience=1)])",
     "5 epochs of 30 images, batch_size=15: the epochs run"),
    ("fit(callbacks=[a Callback])", "its calls, stop_training set at epoch 1"),
    ("fit(verbose=2, callbacks=[a Callback raising in on_epoch_end])",
     "what is printed before the exception"),
    ("model.summary()", "Flatten, Dense(16, activation='relu'), Dense(10): its rows' types"),
    ("model.predict, the last Dense with activation='softmax'", "40 images, 3 replicas"),
    ("model.summary()", "Flatten, Activation('relu'), ReLU(), Dense(10): its rows' types"),
    ("optimizer.learning_rate = 0.05 on an SGD(0.01) model",
     "in on_epoch_begin (a schedule), or before fit; 2 epochs of one batch of 15: the weights "
     "against SGD(0.05)'s, to 1e-6; set from the second epoch, against a fit of an epoch at "
     "0.01 and one at 0.05"),
]

# What both sides run, with `ml` the module (tensorflow's names or mirrorlab's) and `make` the
# model's maker: one answer per case, in CASES' order.
PROGRAM = """
import contextlib, io, re


def answer(call):
    try:
        value = call()
    except Exception as e:  # the type says it: ValueError, InvalidArgumentError, ...
        return "raises " + type(e).__name__
    if isinstance(value, str):
        return "gives " + value
    shape = getattr(value, "shape", None)
    return "gives " + (str(tuple(shape)) if shape not in (None, ()) else f"{float(value):g}")

x = np.random.default_rng(0).integers(0, 256, (40, 28, 28)).astype(np.uint8) / 255.0
y = np.arange(40) % 10
with strategy.scope():
    model = make()
answers = [answer(lambda: model.predict(x, batch_size=32, verbose=0))]
with strategy.scope():
    model.compile(optimizer="sgd", loss=loss(from_logits=True))
answers += [answer(lambda: model.predict(x, batch_size=32, verbose=0)),
            answer(lambda: model.evaluate(x, y, batch_size=32, verbose=0)),
            answer(lambda: strategy.reduce("SUM", 2.5, axis=None)),
            answer(lambda: strategy.reduce("MEAN", 2.5, axis=None)),
            answer(lambda: model.set_weights(model.get_weights()[:2]))]


class Calls(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_begin(self, logs=None):
        self.calls.append(f"train_begin steps={self.params['steps']}")

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(f"epoch_begin {epoch}")

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(f"epoch_end {epoch} {sorted(logs)}")
        self.model.stop_training = epoch == 1

    def on_train_end(self, logs=None):
        self.calls.append(f"train_end {sorted(logs)}")


def epochs_run(callback):
    with strategy.scope():
        fitted = make()
        fitted.compile(optimizer="sgd", loss=loss(from_logits=True))
    history = fitted.fit(x[:30], y[:30], batch_size=15, epochs=5, verbose=0,
                         callbacks=[callback])
    return callback.calls if isinstance(callback, Calls) else len(history.history["loss"])


class Raises(callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        raise KeyError(epoch)


def printed_before_raising():
    with strategy.scope():
        fitted = make()
        fitted.compile(optimizer="sgd", loss=loss(from_logits=True))
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            fitted.fit(x[:30], y[:30], batch_size=15, epochs=2, verbose=2, callbacks=[Raises()])
    except KeyError:
        return repr(out.getvalue()) + ", then the KeyError"
    return repr(out.getvalue()) + ", and no exception"


answers += [answer(lambda: epochs_run(callbacks.EarlyStopping(monitor="loss", mode="max",
                                                                patience=1))),
            answer(lambda: "; ".join(epochs_run(Calls()))),
            answer(printed_before_raising)]


def summary_rows(of=None):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        (of or model).summary()
    return ", ".join(re.findall(r"\u2502 \\S+ \\((\\w+)\\)", out.getvalue()))


def softmax_rows():
    with strategy.scope():
        soft = make("softmax")
    sums = soft.predict(x, batch_size=32, verbose=0).sum(axis=1)
    return f"rows summing to {sums.min():.4f} to {sums.max():.4f}"


def activation_rows():
    with strategy.scope():
        relus = nn.Sequential([nn.Input((28, 28)), nn.layers.Flatten(),
                               nn.layers.Activation("relu"), nn.layers.ReLU(),
                               nn.layers.Dense(10)])
    return summary_rows(relus)


def rate_set():
    # One batch an epoch: its shuffle changes no gradient but for the order of a sum.
    with strategy.scope():
        start = make().get_weights()

    def made(rate):
        with strategy.scope():
            m = make()
            m.set_weights(start)
            m.compile(optimizer=optimizers.SGD(rate), loss=loss(from_logits=True))
        return m

    def trained(rate, callbacks_given=(), then=None):
        m = made(rate)
        if then is not None:
            then(m)
        m.fit(x[:15], y[:15], batch_size=15, epochs=2, verbose=0,
              callbacks=[c(m) for c in callbacks_given])
        return m

    def close(a, b):
        return all(np.allclose(p, q, rtol=0, atol=1e-6)
                   for p, q in zip(a.get_weights(), b.get_weights()))
    schedule = lambda m: callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs=None: setattr(m.optimizer, "learning_rate", 0.05))
    compiled = trained(0.05)
    scheduled = trained(0.01, [schedule])
    before = trained(0.01, then=lambda m: setattr(m.optimizer, "learning_rate", 0.05))
    kept = trained(0.01)
    # From the second epoch on, against an epoch's fit at 0.01 and then one at 0.05.
    late = trained(0.01, [lambda m: callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs=None: setattr(m.optimizer, "learning_rate",
                                                        0.05 if epoch else 0.01))])
    two = made(0.01)
    two.fit(x[:15], y[:15], batch_size=15, epochs=1, verbose=0)
    two.optimizer.learning_rate = 0.05
    two.fit(x[:15], y[:15], batch_size=15, epochs=1, verbose=0)
    return (f"as SGD(0.05)'s: in on_epoch_begin {close(scheduled, compiled)}, before fit "
            f"{close(before, compiled)}; SGD(0.01)'s {close(kept, compiled)}; 0.05 from the "
            f"second epoch as two fits {close(late, two)}, as SGD(0.05)'s {close(late, compiled)}")


answers += [answer(summary_rows), answer(softmax_rows), answer(activation_rows),
            answer(rate_set)]
print(json.dumps(answers))
"""

TENSORFLOW = """
import json, numpy as np, tensorflow as tf, keras
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1", "/cpu:2"])
nn = keras
loss = keras.losses.SparseCategoricalCrossentropy
callbacks = keras.callbacks
optimizers = keras.optimizers
load_model = keras.models.load_model
make = lambda last=None: keras.Sequential([
    keras.Input((28, 28)), keras.layers.Flatten(), keras.layers.Dense(16, activation="relu"),
    keras.layers.Dense(10, activation=last)])
"""

MIRRORLAB = """
import json, numpy as np, mirrorlab as ml
cpu = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(cpu, [ml.config.LogicalDeviceConfiguration()] * 3)
strategy = ml.distribute.MirroredStrategy()
nn = ml.keras
loss = ml.keras.losses.SparseCategoricalCrossentropy
callbacks = ml.keras.callbacks
optimizers = ml.keras.optimizers
load_model = ml.keras.models.load_model
make = lambda last=None: ml.keras.Sequential([
    ml.keras.Input((28, 28)), ml.keras.layers.Flatten(),
    ml.keras.layers.Dense(16, activation="relu"), ml.keras.layers.Dense(10, activation=last)])
"""


# The weights files and the model files: each side saves its model's initial weights (or the
# model, compiled with Adam(0.002)) and its outputs for x, then loads the other side's file and
# says how far its outputs are from the other's (and, for a model file, how it came compiled).
EXCHANGE = """
x = np.random.default_rng(0).integers(0, 256, (40, 28, 28)).astype(np.uint8) / 255.0
model = make()
model.compile(optimizer=optimizers.Adam(0.002), loss=loss(from_logits=True))
mine = os.path.join(folder, side + ENDING)
theirs = os.path.join(folder, other + ENDING)
if not os.path.exists(mine):
    SAVE
    np.save(os.path.join(folder, side + ".npy"), model.predict(x, verbose=0))
if os.path.exists(theirs):
    LOAD
    far = np.abs(model.predict(x, verbose=0) - np.load(os.path.join(folder, other + ".npy")))
    compiled = (f"{type(model.optimizer).__name__}"
                f"({float(np.asarray(model.optimizer.learning_rate)):g}), from_logits="
                f"{model.loss.get_config()['from_logits']}")
    print(json.dumps([float(far.max()), compiled]))
else:
    print(json.dumps([None, None]))
"""
WEIGHTS_EXCHANGE = (EXCHANGE.replace("ENDING", '".weights.h5"')
                    .replace("SAVE", "model.save_weights(mine)")
                    .replace("LOAD", "model.load_weights(theirs)"))
MODEL_EXCHANGE = (EXCHANGE.replace("ENDING", '".keras"').replace("SAVE", "model.save(mine)")
                  .replace("LOAD", "model = load_model(theirs)"))


# The optimizer's state in a weights file: each side trains 2 steps of Adam(0.002), saves, then
# trains a step more and keeps its outputs; the other side, its optimizer built by a step of
# Adam(0.5), loads the file and takes the same step: the same outputs only if the update count,
# the learning rate and the moments (each weight's, in order) came across as they were.
OPTIMIZER_EXCHANGE = """
x = np.random.default_rng(0).integers(0, 256, (40, 28, 28)).astype(np.uint8) / 255.0
y = np.arange(40) % 10
mine = os.path.join(folder, side + "-trained.weights.h5")
theirs = os.path.join(folder, other + "-trained.weights.h5")
with strategy.scope():
    model = make()
if not os.path.exists(mine):
    with strategy.scope():
        model.compile(optimizer=optimizers.Adam(0.002), loss=loss(from_logits=True))
    model.fit(x[:30], y[:30], batch_size=15, epochs=1, verbose=0)
    model.save_weights(mine)
    model.fit(x[:15], y[:15], batch_size=15, epochs=1, verbose=0)
    np.save(os.path.join(folder, side + "-after.npy"), model.predict(x, verbose=0))
if os.path.exists(theirs):
    with strategy.scope():
        model.compile(optimizer=optimizers.Adam(0.5), loss=loss(from_logits=True))
    model.fit(x[:15], y[:15], batch_size=15, epochs=1, verbose=0)
    model.load_weights(theirs)
    rate = float(np.asarray(model.optimizer.learning_rate))
    model.fit(x[:15], y[:15], batch_size=15, epochs=1, verbose=0)
    far = np.abs(model.predict(x, verbose=0) - np.load(os.path.join(folder, other + "-after.npy")))
    print(json.dumps([float(far.max()), f"learning rate {rate:g}"]))
else:
    print(json.dumps([None, None]))
"""


def answers(python, preamble, env=None, program=PROGRAM):
    out = subprocess.run([python, "-c", preamble + program], capture_output=True, text=True,
                         env=dict(os.environ, **(env or {})))
    if out.returncode != 0:
        raise RuntimeError(f"{python} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def check(row, build, python="/usr/bin/python3"):
    """A row per case. `build`: the build folder whose python/ holds the package; `python`: the
    interpreter it was built for (not the check's own, which has TensorFlow and not NumPy's
    build of the module)."""
    tf_answers = answers(sys.executable, TENSORFLOW, {"TF_CPP_MIN_LOG_LEVEL": "3"})
    ml_answers = answers(python, MIRRORLAB, {"PYTHONPATH": os.path.join(build, "python")})
    for (what, case), tf_answer, ml_answer in zip(CASES, tf_answers, ml_answers):
        # Where both fail, the exception's type is each library's own (TensorFlow's AddN
        # InvalidArgumentError, mirrorlab's ValueError saying Keras fails there): failing agrees.
        agree = tf_answer == ml_answer or (tf_answer.startswith("raises") and
                                           ml_answer.startswith("raises"))
        row(f"Python: {what}", case, tf_answer, ml_answer, agree=agree)
    check_files(row, build, python, WEIGHTS_EXCHANGE,
                "save_weights, read by the other's load_weights", "an MLP's initial weights")
    check_files(row, build, python, MODEL_EXCHANGE, "model.save, read by the other's "
                "keras.models.load_model", "an MLP compiled with Adam(0.002), from logits")
    check_files(row, build, python, OPTIMIZER_EXCHANGE, "save_weights after training, the "
                "optimizer's state read by the other's load_weights", "an MLP trained 2 steps "
                "of Adam(0.002), then a step more on each side")


def check_files(row, build, python, program, what, saved):
    """mirrorlab's file read by Keras, and Keras' by mirrorlab: the same outputs for the same
    images (to float32's rounding: the two compute in other orders); a model file's model
    compiled as it was saved."""
    with tempfile.TemporaryDirectory() as folder:
        def side(python, preamble, me, other, env):
            where = f"import os\nfolder, side, other = {folder!r}, {me!r}, {other!r}\n"
            return answers(python, preamble + where, env, program)
        tf_env = {"TF_CPP_MIN_LOG_LEVEL": "3"}
        ml_env = {"PYTHONPATH": os.path.join(build, "python")}
        side(python, MIRRORLAB, "mirrorlab", "keras", ml_env)  # saves mirrorlab's
        keras_read = side(sys.executable, TENSORFLOW, "keras", "mirrorlab", tf_env)
        mirrorlab_read = side(python, MIRRORLAB, "mirrorlab", "keras", ml_env)
    def said(read):
        far, compiled = read
        if far is None:
            return "not read"
        return f"outputs {far:.0e} from the writer's at most" + (
            f"; compiled {compiled}" if program is MODEL_EXCHANGE else
            f"; {compiled}" if program is OPTIMIZER_EXCHANGE else "")
    row(f"Python: {what}", f"{saved}, 40 images; TensorFlow: Keras reads mirrorlab's file",
        said(keras_read), said(mirrorlab_read),
        agree=all(far is not None and far <= 1e-5 for far, _ in (keras_read, mirrorlab_read))
        and keras_read[1] == mirrorlab_read[1] == (
            "learning rate 0.002" if program is OPTIMIZER_EXCHANGE else
            "Adam(0.002), from_logits=True"))
