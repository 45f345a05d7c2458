"""keras.datasets.fashion_mnist, read from Debian's files (no download)."""

from __future__ import annotations

import os
from typing import Optional, Tuple

import numpy as np

from .. import _mirrorlab

__all__ = ["load_data"]

Split = Tuple[np.ndarray, np.ndarray]


def load_data(path: Optional[str] = None) -> Tuple[Split, Split]:
    """``(x_train, y_train), (x_test, y_test)`` as Keras gives them: uint8 images of shape
    (60000, 28, 28) and (10000, 28, 28), uint8 labels 0 to 9.

    ``path``: a folder holding the four gzipped IDX files (default: Debian's,
    /usr/share/datasets/fashion-mnist). Keras downloads them; mirrorlab
    reads the Debian package's: ``apt-get install dataset-fashion-mnist``.
    """
    folder = path if path is not None else _mirrorlab._default_fashion_mnist_dir
    try:
        train, test = _mirrorlab._load_fashion_mnist(os.fspath(folder))
    except FileNotFoundError as e:
        # The core's sentence says how to install the package already: only Python's way is added.
        raise FileNotFoundError(f"{e}; or give load_data(path=FOLDER), a folder holding the "
                                "four gzipped IDX files") from None
    return train, test
