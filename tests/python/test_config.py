"""mirrorlab.config as tf.config: devices listed, split once, then fixed (TensorFlow's error)."""

import unittest

import numpy as np

import mirrorlab as ml


class Config(unittest.TestCase):
    def test_a_cpu_splits_into_virtual_gpus_until_they_are_used(self):
        physical = ml.config.list_physical_devices()
        self.assertEqual(physical[0], ml.config.PhysicalDevice("/physical_device:CPU:0", "CPU"))
        self.assertEqual(repr(physical[0]),
                         "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')")
        cpu = ml.config.list_physical_devices("CPU")[0]
        config = ml.config.LogicalDeviceConfiguration(memory_limit=512)
        with self.assertRaisesRegex(TypeError, "not iterable"):
            ml.config.set_logical_device_configuration(cpu, None)
        ml.config.set_logical_device_configuration(cpu, [])  # the default, as TensorFlow's
        self.assertIsNone(ml.config.get_logical_device_configuration(cpu))
        with self.assertRaisesRegex(TypeError, "LogicalDeviceConfiguration"):
            ml.config.set_logical_device_configuration(cpu, [512])
        with self.assertRaisesRegex(ValueError, "Unrecognized device"):
            ml.config.set_logical_device_configuration("/cpu:0", [config])
        with self.assertRaisesRegex(ValueError, "at least 1"):
            ml.config.LogicalDeviceConfiguration(memory_limit=0)
        with self.assertRaisesRegex(TypeError, "whole number"):
            ml.config.LogicalDeviceConfiguration(memory_limit=1.5)
        self.assertEqual(ml.config.LogicalDeviceConfiguration(memory_limit=np.int64(512)), config)
        ml.config.set_logical_device_configuration(cpu, [config] * 3)
        self.assertEqual(ml.config.get_logical_device_configuration(cpu), [config] * 3)

        logical = ml.config.list_logical_devices("GPU")
        self.assertEqual([d.name for d in logical],
                         ["/device:GPU:0", "/device:GPU:1", "/device:GPU:2"])
        self.assertEqual(ml.config.list_logical_devices()[0].device_type, "CPU")
        self.assertIn("3 Logical GPUs", ml.config.describe_logical_devices())
        self.assertIn("512 MiB", ml.config.describe_logical_devices())
        # Once in use, TensorFlow's RuntimeError, and the devices as they were.
        with self.assertRaisesRegex(RuntimeError,
                                    "^Virtual devices cannot be modified after being initialized$"):
            ml.config.set_logical_device_configuration(cpu, [config] * 2)
        self.assertEqual(len(ml.config.list_logical_devices("GPU")), 3)
        with self.assertRaisesRegex(TypeError, "device_type"):
            ml.config.list_logical_devices(3)


if __name__ == "__main__":
    unittest.main()
