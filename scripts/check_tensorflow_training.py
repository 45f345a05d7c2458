"""One training run in TensorFlow from mirrorlab's initial weights and batches, for
check_tensorflow.py: the same model, in Keras layer for layer, the same Fashion-MNIST, the same
order of examples in every epoch, model.fit on a MirroredStrategy of logical CPU devices."""

import gzip
import os

import numpy as np
import tensorflow as tf
import keras

TRAIN_BATCH_PER_REPLICA = 64
TRAIN_FIRST_STEPS = 20


def keras_model(kind, name=None):
    """mirrorlab's models in Keras, layer for layer (its ReLUs are layers of their own)."""
    L = keras.layers
    if kind == "cnn":
        layers = [L.Conv2D(32, 3), L.ReLU(), L.MaxPooling2D(), L.Flatten(), L.Dense(128), L.ReLU(),
                  L.Dense(10)]
    else:
        layers = [L.Flatten(), L.Dense(256), L.ReLU(), L.Dense(128), L.ReLU(), L.Dense(10)]
    return keras.Sequential([keras.Input((28, 28, 1))] + layers, name=name or kind)


def compile_for_fit(model, optimizer="adam"):
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])


def read_idx(path):
    """A gzipped IDX file (Fashion-MNIST's format) as a numpy array of bytes."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_mnist(folder, prefix, limit=0):
    """Images as mirrorlab feeds them (bytes times the float 1/255, [n, 28, 28, 1]) and labels."""
    x = read_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"))
    if limit:
        x, y = x[:limit], y[:limit]
    return (x.astype(np.float32) * np.float32(1.0 / 255.0))[..., None], y.astype(np.int64)


def load_flat_weights(model, path):
    """Sets the model's weights from mirrorlab's flat buffer: per layer its kernel (in Keras'
    layout already), then its bias."""
    flat = np.fromfile(path, np.float32)
    at = 0
    for layer in model.layers:
        values = []
        for w in layer.weights:
            n = int(np.prod(w.shape))
            values.append(flat[at:at + n].reshape(w.shape))
            at += n
        if values:
            layer.set_weights(values)
    if at != flat.size:
        raise ValueError(f"{path}: {flat.size} values, the model has {at}")


def tf_train(kind, replicas, per_replica, epochs, first_steps, data, weights_path, order_path,
             train_examples=0):
    """model.fit of `kind` on `replicas` logical CPU devices, one epoch at a time in mirrorlab's
    order, from mirrorlab's initial weights (Adam and lr 0.001, Keras' defaults and mirrorlab
    train's). The first steps' losses come from Keras' running mean of the epoch's loss: with
    equal batches, step k's loss is k * mean_k - (k - 1) * mean_(k-1)."""
    x, y = fashion_mnist(data, "train", train_examples)
    x_test, y_test = fashion_mnist(data, "t10k")
    order = np.fromfile(order_path, np.uint32).astype(np.int64).reshape(epochs, len(y))
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
    with strategy.scope():
        model = keras_model(kind)
        compile_for_fit(model)
    load_flat_weights(model, weights_path)

    means = []
    recorder = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: means.append(float(logs["loss"])))
    x_all, y_all = tf.constant(x), tf.constant(y)
    results = []
    for e in range(epochs):
        ds = tf.data.Dataset.from_tensor_slices(order[e]).batch(per_replica * replicas).map(
            lambda i: (tf.gather(x_all, i), tf.gather(y_all, i)))
        history = model.fit(ds, epochs=1, verbose=0, validation_data=(x_test, y_test),
                            callbacks=[recorder] if e == 0 else [])
        h = {k: float(v[-1]) for k, v in history.history.items()}
        results.append({"loss": h["loss"], "accuracy": h["accuracy"],
                        "test_loss": h["val_loss"], "test_accuracy": h["val_accuracy"]})
    means = means[:first_steps]
    losses = [k * m - (k - 1) * p for k, m, p in zip(range(1, len(means) + 1), means,
                                                      [0.0] + means[:-1])]
    return {"first_losses": losses, "epochs": results}


def training_tables(runs):
    """Markdown tables of the training runs: the first steps' losses, then each epoch."""
    out = []
    for kind, tf_run, ml_run in runs:
        out.append(f"Training the {kind}, 2 replicas x {TRAIN_BATCH_PER_REPLICA}, from the same "
                   "initial weights and batches: the first steps' losses\n")
        out.append("| step | TensorFlow | mirrorlab | difference (relative) |\n| --- | --- | --- | --- |")
        for k, (t, m) in enumerate(zip(tf_run["first_losses"], ml_run["first_losses"]), 1):
            out.append(f"| {k} | {t:.6f} | {m:.6f} | {abs(t - m) / abs(t):.1g} |")
        out.append(f"\nand each epoch (train loss and accuracy as Keras logs them, then the test "
                   "set's)\n")
        out.append("| epoch | TensorFlow loss, accuracy | mirrorlab | TensorFlow test loss, "
                   "accuracy | mirrorlab |\n| --- | --- | --- | --- | --- |")
        for e, (t, m) in enumerate(zip(tf_run["epochs"], ml_run["epochs"]), 1):
            pair = lambda r, p: f"{r[p + 'loss']:.4f}, {r[p + 'accuracy']:.4f}"  # noqa: E731
            out.append(f"| {e} | {pair(t, '')} | {pair(m, '')} | {pair(t, 'test_')} | "
                       f"{pair(m, 'test_')} |")
        out.append("")
    return "\n".join(out)
