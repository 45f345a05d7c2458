import os, sys, glob, shutil
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
import numpy as np
import tensorflow as tf
from absl import logging as absl_logging
absl_logging.set_verbosity(absl_logging.INFO)
tf.get_logger().setLevel("INFO")
bpp = int(sys.argv[1])
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()]*2)
from tensorflow.python.distribute import collective_all_reduce_strategy as cars
opts = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=bpp)
s = cars.CollectiveAllReduceStrategy._from_local_devices(["/device:CPU:0", "/device:CPU:1"], communication_options=opts)
print("num_replicas_in_sync", s.num_replicas_in_sync)
with s.scope():
    m = tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)])
    m.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x = np.random.rand(512, 784).astype("float32"); y = np.random.randint(0, 10, 512)
m.fit(x, y, batch_size=256, epochs=1, steps_per_epoch=2, verbose=2)   # warm-up / trace
logdir = "/tmp/mirrorlab-tf-packs/prof_%d" % bpp
shutil.rmtree(logdir, ignore_errors=True)
tf.profiler.experimental.start(logdir)
m.fit(x, y, batch_size=256, epochs=1, steps_per_epoch=2, verbose=2)
tf.profiler.experimental.stop()
print("PROFILE FILES", glob.glob(logdir + "/**/*", recursive=True))
