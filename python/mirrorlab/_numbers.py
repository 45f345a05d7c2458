"""The checks of one number a user gives (a layer's units, a learning rate, a seed, a batch size):
Python's numbers and NumPy's scalars alike (``np.int64(3)``, ``np.float32(1e-3)``), as
numbers.Integral and numbers.Real take them. A bool is refused, though Python counts it a whole
number: ``Dense(True)`` is a slip, not one unit."""

from __future__ import annotations

import numbers


def is_whole(value: object) -> bool:
    """An int or a NumPy integer (not a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """An int, a float, or a NumPy integer or float (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def whole(name: str, value: object, low: int, high: int) -> int:
    """``value`` as a Python int from ``low`` to ``high`` (the core and JSON take no NumPy
    scalar): TypeError for anything but a whole number, ValueError outside the range."""
    if not is_whole(value):
        raise TypeError(f"{name} must be a whole number, not {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise ValueError(f"{name}={value!r}: give a whole number from {low} to {high}")
    return value
