"""TensorFlow's side of check_tensorflow.py: the functions that run TensorFlow itself, each called
there in a Python of its own (check_tensorflow.isolated), on logical CPU devices standing for the
GPUs."""

import io
import logging
from contextlib import redirect_stdout
from unittest import mock

import numpy as np
import tensorflow as tf
import keras
from check_tensorflow_training import compile_for_fit, keras_model

# The logical CPU devices standing for the GPUs, as many as the largest case needs: configured on
# import, before TensorFlow's runtime starts (it refuses a new configuration once they are in use).
MAX_REPLICAS = 8
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    cpus[0], [tf.config.LogicalDeviceConfiguration()] * MAX_REPLICAS)


def strategy_of(replicas):
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])


def tf_split(examples, replicas, per_replica, drop_remainder=False):
    strategy = strategy_of(replicas)
    ds = tf.data.Dataset.range(examples).batch(per_replica * replicas,
                                               drop_remainder=drop_remainder)
    steps = []
    for batch in strategy.experimental_distribute_dataset(ds):
        steps.append([int(tf.shape(v)[0]) for v in strategy.experimental_local_results(batch)])
    return steps


def tf_fit_steps(examples, replicas, per_replica):
    """Steps model.fit takes over one epoch of numpy arrays (does it keep the short batch?)."""
    strategy = strategy_of(replicas)
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    counter = keras.callbacks.LambdaCallback()
    seen = []
    counter.on_train_batch_end = lambda batch, logs: seen.append(batch)
    x = np.zeros((examples, 1), np.float32)
    model.fit(x, x, batch_size=per_replica * replicas, epochs=1, verbose=0,
              callbacks=[counter], shuffle=False)
    return len(seen)


def tf_fit_uneven_first_batch(examples, replicas, per_replica):
    """model.fit on arrays whose first global batch is split unevenly: "trains", or how it
    fails (the exception's type, and whether it is the AddN of adding unequal shapes)."""
    strategy = strategy_of(replicas)
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    x = np.zeros((examples, 1), np.float32)
    try:
        model.fit(x, x, batch_size=per_replica * replicas, epochs=1, verbose=0, shuffle=False)
    except Exception as error:  # noqa: BLE001: what it raises is the answer
        return f"fails: {type(error).__name__}" + (" in AddN" if "AddN" in str(error) else "")
    return "trains"


def tf_average_loss_scales(shards, global_batch_size):
    """Per replica, what compute_average_loss multiplies the summed per-example loss by."""
    strategy = strategy_of(len(shards))
    total = sum(shards)
    ds = tf.data.Dataset.range(total).batch(total)
    dist = strategy.experimental_distribute_dataset(ds)

    @tf.function
    def step(x):
        def fn(x):
            per_example = tf.ones_like(tf.cast(x, tf.float32))
            return tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)
        return strategy.run(fn, args=(x,))

    for batch in dist:
        got = [int(tf.shape(v)[0]) for v in strategy.experimental_local_results(batch)]
        values = [float(v) for v in strategy.experimental_local_results(step(batch))]
        return got, [v / n if n else 0.0 for v, n in zip(values, got)]


def tf_fit_weighting(examples=88, replicas=3, per_replica=16, lr=0.5):
    """model.fit of w * x against 0 (MSE, SGD) on `replicas` replicas, where the last batch is
    short: the weight it ends with, and what each loss scaling predicts."""
    x = (np.arange(examples, dtype=np.float32) / examples).reshape(examples, 1)
    strategy = strategy_of(replicas)
    with strategy.scope():
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(
            1, use_bias=False, kernel_initializer="ones")])
        model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse")
    ds = tf.data.Dataset.from_tensor_slices((x, np.zeros_like(x))).batch(per_replica * replicas)
    model.fit(ds, epochs=1, verbose=0)
    return float(model.layers[0].kernel.numpy()[0, 0])


def tf_custom_loop_step(scaling, replicas=2, examples=8, lr=0.01):
    """One SGD step of a custom loop (strategy.run, apply_gradients in the replica context) on
    w * x against 3 x, where each replica's loss is its own mean (`shard-mean`, the mistake) or
    that mean / num_replicas_in_sync (seed note 001's loop). Returns w after the step."""
    x = np.arange(1, examples + 1, dtype=np.float32)
    strategy = strategy_of(replicas)
    with strategy.scope():
        w = tf.Variable(0.5)
        opt = keras.optimizers.SGD(learning_rate=lr)
    dist = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, 3 * x)).batch(examples))

    def step(batch):
        xb, yb = batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(w * xb - yb))
            if scaling != "shard-mean":
                loss = loss / strategy.num_replicas_in_sync
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

    for batch in dist:
        strategy.run(step, args=(batch,))
    return float(w.numpy())


def tf_custom_loop_uneven(examples=50, replicas=3, per_replica=16, lr=0.5):
    """Seed note 001's loop (tf.reduce_mean / num_replicas_in_sync, a Mean metric of the unscaled
    loss) for one epoch of w * x against 0, whose last batch leaves a replica without examples.
    Returns w after the epoch, the replicas' losses on the last batch and the metric there."""
    x = (np.arange(examples, dtype=np.float32) / examples).reshape(examples, 1)
    strategy = strategy_of(replicas)
    with strategy.scope():
        w = tf.Variable([[1.0]])
        opt = keras.optimizers.SGD(learning_rate=lr)
        metric = keras.metrics.Mean()
    dist = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, np.zeros_like(x))).batch(per_replica * replicas))

    def step(batch):
        xb, yb = batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(xb @ w - yb))
            scaled = loss / strategy.num_replicas_in_sync
        opt.apply_gradients(zip(tape.gradient(scaled, [w]), [w]))
        metric.update_state(loss)
        return loss

    losses = []
    for batch in dist:
        metric.reset_state()
        losses = strategy.experimental_local_results(strategy.run(step, args=(batch,)))
    return (float(w.numpy()[0, 0]), [round(float(v), 4) for v in losses],
            float(metric.result()))


def tf_reconfigure_error():
    """What TensorFlow says when logical devices are configured again once in use."""
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    tf.constant(1.0)  # the runtime starts: the devices are in use
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * 3)
    except RuntimeError as e:
        return f"RuntimeError: {e}"
    return "accepted"


# ---- the all-reduce TensorFlow chooses, and what it logs -----------------------------------

def cross_device_ops_name(ops, options):
    name = type(ops).__name__
    if name == "CollectiveAllReduce":
        name += ", " + options.implementation.name
    return name


def tf_choice(placement, replicas):
    """The cross-device ops MirroredStrategy picks by default. On CPU devices by running it;
    for GPUs (there are none here) by running its own selection code,
    MirroredExtended._make_collective_ops_with_fallbacks, with TensorFlow's device lists of
    one card carved into `replicas` logical GPUs, or of `replicas` physical GPUs, patched in."""
    if placement == "cpu":
        s = strategy_of(replicas).extended
        return cross_device_ops_name(s._cross_device_ops, s._communication_options)
    from tensorflow.python.distribute import collective_util
    from tensorflow.python.distribute import mirrored_strategy
    from tensorflow.python.eager import context
    physical = 1 if placement == "logical" else replicas

    def gpus(n):
        return [context.LogicalDevice(f"/device:GPU:{i}", "GPU") for i in range(n)]

    ctx = type(context.context())
    with mock.patch.object(ctx, "list_physical_devices",
                           lambda self, device_type=None: gpus(physical)), \
            mock.patch.object(ctx, "list_logical_devices",
                              lambda self, device_type=None: gpus(replicas)):
        extended = object.__new__(mirrored_strategy.MirroredExtended)
        extended._collective_key_base = 0
        extended._devices = tuple(f"/job:localhost/replica:0/task:0/device:GPU:{i}"
                                  for i in range(replicas))
        extended._communication_options = collective_util.Options(
            implementation=collective_util.CommunicationImplementation.NCCL)  # as __init__ sets
        ops = extended._make_collective_ops_with_fallbacks()
    return cross_device_ops_name(ops, extended._communication_options)


def tf_fit_log(cross_device_ops, devices, model_kind="mlp"):
    """What TensorFlow logs (INFO and WARNING, its logger) while making a MirroredStrategy over
    `devices` and fitting one epoch with verbose=1; and the last line model.fit printed."""
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(f"{record.levelname}:tensorflow:{record.getMessage()}")

    tf.get_logger().addHandler(Keep())
    tf.get_logger().setLevel("INFO")
    kwargs = {}
    if cross_device_ops == "ReductionToOneDevice":
        kwargs["cross_device_ops"] = tf.distribute.ReductionToOneDevice()
    strategy = tf.distribute.MirroredStrategy(devices, **kwargs)
    printed = io.StringIO()
    if all("cpu" in d for d in devices):  # it can only train on the devices there are
        with strategy.scope():
            model = keras_model(model_kind)
            compile_for_fit(model)
        rng = np.random.default_rng(0)
        x = rng.random((512, 28, 28, 1), np.float32)
        y = rng.integers(0, 10, 512)
        with redirect_stdout(printed):
            model.fit(x, y, batch_size=128, epochs=1, verbose=1, validation_data=(x[:128], y[:128]))
    shown = printed.getvalue().replace("\r", "\n").split("\n")
    last = [l for l in shown if "val_loss" in l]
    return {"log": list(dict.fromkeys(lines)), "last_progress_line": last[-1] if last else "",
            "epoch_lines": [l for l in shown if l.startswith("Epoch ")]}


def tf_summary(kind):
    out = io.StringIO()
    with redirect_stdout(out):
        keras_model(kind).summary()
    return out.getvalue()


# ---- optimizers, initialisers, metrics -------------------------------------------------------

def keras_optimizer(kind, lr=None, momentum=0.0):
    kwargs = {} if lr is None else {"learning_rate": lr}
    if kind == "sgd":
        return keras.optimizers.SGD(momentum=momentum, **kwargs)
    return {"adam": keras.optimizers.Adam, "nadam": keras.optimizers.Nadam}[kind](**kwargs)


def tf_optimizer_steps(kind, lr, momentum, params, grads):
    """The parameters after Keras' optimizer has applied each gradient in turn."""
    optimizer = keras_optimizer(kind, lr, momentum)
    variable = tf.Variable(np.array(params, np.float32))
    for g in grads:
        optimizer.apply_gradients([(tf.constant(np.array(g, np.float32)), variable)])
    return variable.numpy().tolist()


def tf_optimizer_defaults(kind):
    config = keras_optimizer(kind).get_config()
    return {k: float(config[k]) for k in ("learning_rate", "momentum", "beta_1", "beta_2",
                                          "epsilon") if k in config}


def tf_initial_weights(kind):
    """Keras' default initial kernels and biases of the model's layers with weights."""
    tf.keras.utils.set_random_seed(0)
    return [{"name": layer.name, "kernel": layer.kernel.numpy().ravel().tolist(),
             "bias": layer.bias.numpy().tolist()}
            for layer in keras_model(kind).layers if layer.weights]


def tf_metrics(logits, labels):
    logits = np.array(logits, np.float32)
    labels = np.array(labels)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(labels, logits)
    return {"loss": float(loss), "accuracy": float(accuracy.result())}
