"""mirrorlab: mirrored training, as TensorFlow's MirroredStrategy does it, on virtual GPUs.

The same core as the ``mirrorlab`` command and window, in TensorFlow's idiom::

    import mirrorlab as ml

    cpu = ml.config.list_physical_devices("CPU")[0]
    ml.config.set_logical_device_configuration(
        cpu, [ml.config.LogicalDeviceConfiguration(memory_limit=1024)] * 2)
    strategy = ml.distribute.MirroredStrategy()
    (x_train, y_train), (x_test, y_test) = ml.datasets.fashion_mnist.load_data()
    with strategy.scope():
        model = ml.keras.Sequential([
            ml.keras.layers.Flatten(input_shape=(28, 28)),
            ml.keras.layers.Dense(128, activation="relu"),
            ml.keras.layers.Dense(10)])
        model.compile(optimizer="adam",
                      loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    model.fit(x_train / 255.0, y_train, batch_size=128, epochs=1)

``mirrorlab.gui.watch(strategy)`` opens the mirrorlab window on the run as it trains.

Where TensorFlow configures CPUs as logical CPUs, mirrorlab makes CPU-backed virtual GPUs: a
laptop without a GPU trains on two (or eight) of them. Lines TensorFlow logs are logged by the
logger "mirrorlab" (shown at INFO level: ``mirrorlab.get_logger().setLevel("INFO")``).
"""

import logging as _logging

from . import config, data, datasets, distribute, gui, keras, nn

__version__ = "0.1.0"
__all__ = ["config", "data", "datasets", "distribute", "gui", "keras", "nn", "get_logger"]


def get_logger() -> _logging.Logger:
    """The logger of mirrorlab's imitations of TensorFlow's log lines (tf.get_logger())."""
    return _logging.getLogger("mirrorlab")
