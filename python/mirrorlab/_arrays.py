"""The checks every way into the core makes of a user's arrays (model.fit, evaluate, a distributed
data set): images as Fashion-MNIST's bytes, labels as class numbers, each refused with
TensorFlow's exception and a sentence that says what to give."""

from __future__ import annotations

from typing import Tuple

import numpy as np


def image_bytes(x: object, what: str, shape: Tuple[int, ...], takes: str) -> np.ndarray:
    """``x`` as [n, 28, 28] bytes: ``shape`` is one image's (28, 28) or (28, 28, 1), ``takes``
    who takes them ("sequential" in "... but sequential takes (None, 28, 28)")."""
    if x is None:
        raise ValueError(f"give {what}: the images")
    a = np.asarray(x)
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"Invalid dtype: {a.dtype}: {what} must hold numbers (the uint8 "
                         "images, or them divided by 255)")
    if a.ndim != len(shape) + 1 or tuple(a.shape[1:]) != tuple(shape):
        raise ValueError(f"{what} has shape {a.shape}, but {takes} takes "
                         f"(None, {', '.join(map(str, shape))})")
    if np.issubdtype(a.dtype, np.floating):
        bad = ~np.isfinite(a)
        if bad.any():
            i = int(np.argmax(bad.reshape(len(a), -1).any(axis=1)))
            raise ValueError(f"{what} holds NaN or infinity (first in image {i}): give "
                             "finite numbers")
        scaled = a.astype(np.float64) * 255.0
        steps = np.rint(scaled)
        if a.size and _unscaled_bytes(a):
            raise ValueError(
                f"{what}: float images are taken as already scaled to [0, 1], and these go "
                f"up to {a.max():g}: divide them by 255 (x / 255.0), or give the uint8 images "
                "as load_data() gives them")
        if a.size and ((np.abs(scaled - steps) > 1e-3).any() or steps.min() < 0 or
                       steps.max() > 255):
            raise ValueError(
                f"{what}: float images are taken as already scaled to [0, 1], Fashion-MNIST's "
                "bytes divided by 255 (steps of 1/255), and these values lie between those "
                "steps or outside [0, 1]: give load_data()'s images, or them divided by 255")
        a = steps
    elif a.size and (a.min() < 0 or a.max() > 255):
        raise ValueError(f"{what}: image values must lie from 0 to 255")
    return np.ascontiguousarray(a.reshape(len(a), 28, 28), dtype=np.uint8)


def _unscaled_bytes(a: np.ndarray) -> bool:
    """Float images that are the bytes themselves, 0 to 255, not yet divided by 255."""
    return a.max() > 1 and a.min() >= 0 and a.max() <= 255 and bool((a == np.rint(a)).all())


def class_numbers(y: object, count: int, what: str, classes: int) -> np.ndarray:
    """``y`` as ``count`` bytes, each a class number below ``classes``."""
    if y is None:
        raise ValueError(f"give {what}: the labels")
    a = np.asarray(y)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        raise ValueError(f"{what} has shape {a.shape}: give one class number a image")
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"Invalid dtype: {a.dtype}: {what} must hold class numbers")
    if len(a) != count:
        raise ValueError("Data cardinality is ambiguous. Make sure all arrays contain the "
                         f"same number of samples. 'x' sizes: {count}, 'y' sizes: {len(a)}")
    if np.issubdtype(a.dtype, np.floating) and (~np.isfinite(a) | (a != np.rint(a))).any():
        raise ValueError(f"{what} holds values that are not class numbers (NaN, or a "
                         "fraction)")
    if a.size and (a.min() < 0 or a.max() >= classes):
        raise ValueError(f"{what} holds a class {int(a.max()) if a.max() >= classes else int(a.min())}: "
                         f"the model's last layer gives {classes} classes, 0 to {classes - 1}")
    return np.ascontiguousarray(a, dtype=np.uint8)
