"""mirrorlab.distribute.MirroredStrategy: its devices, its all-reduce, its scope and its log line."""

import threading
import unittest

import mirrorlab as ml

CPU = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    CPU, [ml.config.LogicalDeviceConfiguration(memory_limit=256)] * 4)


class Strategy(unittest.TestCase):
    def test_every_logical_gpu_is_a_replica_and_tensorflows_line_is_logged_at_info(self):
        with self.assertLogs("mirrorlab", level="INFO") as logs:
            strategy = ml.distribute.MirroredStrategy()
        self.assertEqual(strategy.num_replicas_in_sync, 4)
        self.assertEqual(logs.output, [
            "INFO:mirrorlab:Using MirroredStrategy with devices ("
            "'/job:localhost/replica:0/task:0/device:GPU:0', "
            "'/job:localhost/replica:0/task:0/device:GPU:1', "
            "'/job:localhost/replica:0/task:0/device:GPU:2', "
            "'/job:localhost/replica:0/task:0/device:GPU:3')"])
        self.assertEqual(strategy.extended.worker_devices[3],
                         "/job:localhost/replica:0/task:0/device:GPU:3")

    def test_some_devices_by_name(self):
        strategy = ml.distribute.MirroredStrategy(devices=["/gpu:1", "/device:GPU:3"])
        self.assertEqual(strategy.num_replicas_in_sync, 2)
        self.assertEqual(strategy.extended.worker_devices,
                         ["/job:localhost/replica:0/task:0/device:GPU:1",
                          "/job:localhost/replica:0/task:0/device:GPU:3"])
        with self.assertRaisesRegex(ValueError, "there are 4 logical GPUs, '/gpu:0' to '/gpu:3'"):
            ml.distribute.MirroredStrategy(devices=["/gpu:4"])
        with self.assertRaisesRegex(ValueError, "twice"):
            ml.distribute.MirroredStrategy(devices=["/gpu:1", "/gpu:1"])
        with self.assertRaisesRegex(ValueError, "GPUs"):
            ml.distribute.MirroredStrategy(devices=["/cpu:0"])
        # TensorFlow's full names of this process's GPUs, as worker_devices gives them.
        again = ml.distribute.MirroredStrategy(devices=strategy.extended.worker_devices)
        self.assertEqual(again.extended.worker_devices, strategy.extended.worker_devices)
        self.assertEqual(ml.distribute.MirroredStrategy(
            devices=["/job:localhost/replica:0/task:0/gpu:2"]).num_replicas_in_sync, 1)
        with self.assertRaisesRegex(ValueError, "not one of this process's"):
            ml.distribute.MirroredStrategy(
                devices=["/job:worker/replica:0/task:1/device:GPU:0"])
        with self.assertRaisesRegex(ValueError, r"'/gpu:-1': GPU -1 is out of range: there are 4"):
            ml.distribute.MirroredStrategy(devices=["/gpu:-1"])

    def test_cross_device_ops_name_the_algorithms_and_say_what_is_missing(self):
        strategy = ml.distribute.MirroredStrategy(
            cross_device_ops=ml.distribute.ReductionToOneDevice())
        self.assertIn("ReductionToOneDevice", repr(strategy))
        with self.assertRaisesRegex(ValueError, "no HierarchicalCopyAllReduce"):
            ml.distribute.HierarchicalCopyAllReduce()
        with self.assertRaisesRegex(TypeError, "cross_device_ops"):
            ml.distribute.MirroredStrategy(cross_device_ops="ring")
        with self.assertRaisesRegex(ValueError, "num_packs"):
            ml.distribute.NcclAllReduce(num_packs=-1)

    def test_an_all_reduce_that_cannot_run_names_the_classes_that_can(self):
        nccl = ml.distribute.MirroredStrategy(cross_device_ops=ml.distribute.NcclAllReduce())
        with nccl.scope():
            model = ml.keras.Sequential([ml.keras.layers.Flatten(input_shape=(28, 28)),
                                         ml.keras.layers.Dense(10)])
            with self.assertRaisesRegex(ValueError, "CPU-backed virtual GPUs") as caught:
                model.compile(optimizer="adam", loss=ml.keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True))
        said = str(caught.exception)
        self.assertIn("give cross_device_ops=None (TensorFlow's choice), ReductionToOneDevice(), "
                      "RingAllReduce() or OneShotAllReduce()", said)
        self.assertNotIn("use auto", said)

    def test_scopes_nest_per_thread_and_outside_is_one_device(self):
        outer = ml.distribute.MirroredStrategy()
        inner = ml.distribute.MirroredStrategy(devices=["/gpu:0"])
        self.assertFalse(ml.distribute.has_strategy())
        self.assertEqual(ml.distribute.get_strategy().num_replicas_in_sync, 1)
        seen = []
        with outer.scope():
            with inner.scope() as s:
                self.assertIs(s, inner)
                self.assertIs(ml.distribute.get_strategy(), inner)
                other = threading.Thread(target=lambda: seen.append(ml.distribute.has_strategy()))
                other.start()
                other.join()
            self.assertIs(ml.distribute.get_strategy(), outer)
        self.assertFalse(ml.distribute.has_strategy())
        self.assertEqual(seen, [False])


if __name__ == "__main__":
    unittest.main()
