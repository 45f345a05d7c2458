import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
import numpy as np
import tensorflow as tf
from absl import logging as absl_logging
absl_logging.set_verbosity(absl_logging.INFO)
tf.get_logger().setLevel("INFO")
which = sys.argv[1]
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()]*2)
print("logical devices:", tf.config.list_logical_devices())
ops = {"nccl": lambda: tf.distribute.NcclAllReduce(num_packs=2),
       "hier": lambda: tf.distribute.HierarchicalCopyAllReduce(num_packs=2),
       "r2one": lambda: tf.distribute.ReductionToOneDevice(),
       "nccl0": lambda: tf.distribute.NcclAllReduce(num_packs=0),
       "hier0": lambda: tf.distribute.HierarchicalCopyAllReduce(num_packs=0),
       "hier4": lambda: tf.distribute.HierarchicalCopyAllReduce(num_packs=4),
       "hier3": lambda: tf.distribute.HierarchicalCopyAllReduce(num_packs=3),
       "default": lambda: None}[which]()
print("cross_device_ops:", ops)
s = tf.distribute.MirroredStrategy(devices=["/cpu:0", "/cpu:1"], cross_device_ops=ops)
print("strategy", type(s).__name__, "num_replicas_in_sync", s.num_replicas_in_sync, "extended._cross_device_ops:", type(s.extended._cross_device_ops).__name__)
# spy (observe only) on the packer used by NcclAllReduce / HierarchicalCopyAllReduce
from tensorflow.python.distribute import cross_device_ops as cdo
orig_pack = cdo._ConcatAndSplitPacker.pack
def spy_pack(self, grouped_grads_and_vars):
    out = orig_pack(self, grouped_grads_and_vars)
    first = grouped_grads_and_vars[0]
    print("SPY _ConcatAndSplitPacker(num_packs=%d).pack input sizes (device 0)=%s" % (self.num_packs, [g.shape.num_elements()*g.dtype.size for g, _ in first]))
    print("SPY   -> packed sizes (device 0)=%s" % ([g.shape.num_elements()*g.dtype.size for g, _ in out[0]],))
    return out
cdo._ConcatAndSplitPacker.pack = spy_pack
orig_brimpl = {}
for cls in (cdo.AllReduceCrossDeviceOps, cdo.ReductionToOneDevice):
    def mk(cls, f):
        def spy(self, reduce_op, value_destination_pairs, options):
            print("SPY %s.batch_reduce_implementation reduce_op=%s n=%d" % (type(self).__name__, reduce_op, len(value_destination_pairs)))
            return f(self, reduce_op, value_destination_pairs, options)
        return spy
    cls.batch_reduce_implementation = mk(cls, cls.batch_reduce_implementation)
with s.scope():
    m = tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)])
    m.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
for v in m.trainable_variables:
    print("VAR", v.path, tuple(v.shape), tf.as_dtype(v.dtype).size * int(np.prod(v.shape)), "bytes")
x = np.random.rand(64, 784).astype("float32"); y = np.random.randint(0, 10, 64)
m.fit(x, y, batch_size=32, epochs=1, steps_per_epoch=2, verbose=2)
print("FIT DONE")
