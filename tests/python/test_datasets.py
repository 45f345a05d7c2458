"""mirrorlab.datasets.fashion_mnist.load_data(): Keras' arrays, from Debian's files."""

import os
import tempfile
import unittest

import numpy as np

import mirrorlab as ml


class FashionMnist(unittest.TestCase):
    def test_load_data_gives_keras_shapes_and_types(self):
        (x_train, y_train), (x_test, y_test) = ml.datasets.fashion_mnist.load_data()
        self.assertEqual(x_train.shape, (60000, 28, 28))
        self.assertEqual(y_train.shape, (60000,))
        self.assertEqual(x_test.shape, (10000, 28, 28))
        self.assertEqual(y_test.shape, (10000,))
        for a in (x_train, y_train, x_test, y_test):
            self.assertEqual(a.dtype, np.uint8)
            self.assertTrue(a.flags.c_contiguous)
            self.assertTrue(a.flags.owndata or a.base is not None)
        self.assertEqual(int(y_train.max()), 9)
        self.assertEqual(np.bincount(y_train).tolist(), [6000] * 10)
        self.assertEqual(int(x_train.max()), 255)
        # Keras' first training label is 9 (an ankle boot), its first test label too.
        self.assertEqual(int(y_train[0]), 9)
        self.assertEqual(int(y_test[0]), 9)

    def test_a_missing_folder_says_where_the_files_come_from(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaisesRegex(FileNotFoundError, "dataset-fashion-mnist") as caught:
                ml.datasets.fashion_mnist.load_data(path=os.path.join(empty, "nothing"))
        said = str(caught.exception)
        self.assertEqual(said.count("apt-get install"), 1, said)  # the advice once
        self.assertIn("load_data(path=FOLDER)", said)

    def test_a_damaged_file_is_a_value_error(self):
        with tempfile.TemporaryDirectory() as folder:
            for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
                with open(os.path.join(folder, name), "wb") as f:
                    f.write(b"not an idx file")
            with self.assertRaises(ValueError):
                ml.datasets.fashion_mnist.load_data(path=folder)


if __name__ == "__main__":
    unittest.main()
