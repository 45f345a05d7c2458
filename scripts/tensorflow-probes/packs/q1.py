import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
import numpy as np
import tensorflow as tf
from absl import logging as absl_logging
absl_logging.set_verbosity(absl_logging.INFO)
tf.get_logger().setLevel("INFO")
bpp = int(sys.argv[1]); mode = sys.argv[2]   # mode: default | local2 | resolver2
spy = len(sys.argv) > 3 and sys.argv[3] == "spy"
if mode != "default":
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()]*2)
print("logical devices:", tf.config.list_logical_devices())
if spy:
    # Observe (not change) TF's packing function: print what goes in and what comes out.
    from tensorflow.python.distribute import cross_device_utils as cdu
    orig = cdu.group_by_size
    def spy_group_by_size(input_tensors, bytes_per_pack):
        out = orig(input_tensors, bytes_per_pack)
        def sz(t): return t.shape.num_elements() * t.dtype.size
        print("SPY group_by_size bytes_per_pack=%d input(order as passed)=%s" % (bytes_per_pack, [sz(t) for t in input_tensors]))
        for i, p in enumerate(out):
            print("SPY   pack %d: sizes=%s total=%d" % (i, [sz(t) for t in p], sum(sz(t) for t in p)))
        import traceback
        st = [f"{os.path.basename(f.filename)}:{f.name}" for f in traceback.extract_stack()[:-1] if ("distribute" in f.filename or "keras" in f.filename)]
        print("SPY   stack:", " > ".join(st[-8:]))
        return out
    cdu.group_by_size = spy_group_by_size
    from tensorflow.python.distribute import cross_device_ops as cdo
    from tensorflow.python.distribute import distribute_lib as dl
    orig_brp = cdo.CollectiveAllReduce.batch_reduce_implementation
    def spy_brp(self, reduce_op, value_destination_pairs, options):
        print("SPY batch_reduce_implementation reduce_op=%s n=%d per-value sizes (replica 0)=%s" % (reduce_op, len(value_destination_pairs),
              [v.values[0].shape.num_elements()*v.values[0].dtype.size if hasattr(v, "values") else "?" for v, d in value_destination_pairs]))
        return orig_brp(self, reduce_op, value_destination_pairs, options)
    cdo.CollectiveAllReduce.batch_reduce_implementation = spy_brp
    orig_bar = dl.ReplicaContext.all_reduce
    def spy_bar(self, reduce_op, value, options=None):
        import tensorflow as tf
        flat = tf.nest.flatten(value)
        print("SPY ReplicaContext.all_reduce reduce_op=%s sizes(in order passed by caller)=%s names=%s" % (reduce_op,
              [t.shape.num_elements()*t.dtype.size for t in flat], [getattr(t, "name", "?") for t in flat]))
        return orig_bar(self, reduce_op, value, options)
    dl.ReplicaContext.all_reduce = spy_bar
opts = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=bpp)
if mode == "local2":
    from tensorflow.python.distribute import collective_all_reduce_strategy as cars
    s = cars.CollectiveAllReduceStrategy._from_local_devices(["/device:CPU:0", "/device:CPU:1"], communication_options=opts)
elif mode == "resolver2":
    r = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec({}), num_accelerators={"CPU": 2})
    s = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=r, communication_options=opts)
else:
    s = tf.distribute.MultiWorkerMirroredStrategy(communication_options=opts)
print("strategy", type(s).__name__, "num_replicas_in_sync", s.num_replicas_in_sync, "worker_devices", s.extended.worker_devices)
with s.scope():
    m = tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)])
    m.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
for v in m.trainable_variables:
    print("VAR", v.path, tuple(v.shape), tf.as_dtype(v.dtype).size * int(np.prod(v.shape)), "bytes")
x = np.random.rand(64, 784).astype("float32"); y = np.random.randint(0, 10, 64)
m.fit(x, y, batch_size=32, epochs=1, steps_per_epoch=2, verbose=2)
