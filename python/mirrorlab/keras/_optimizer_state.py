"""The optimizer's variables as Keras 3.15 was seen to save them (optimizer/vars in a weights
file), taken from a model's optimizer and set into it.

In order: the iteration count (int64), the learning rate (float32), then each weight's slots in
the weights' order (SGD with momentum: its momentum; Adam and Nadam: momentum and velocity, the
core's m and v), then, for Nadam, the product of its momentum schedule (float32). An optimizer
not built yet has the first two only: Keras makes the slots at the first training step (or as
load_model compiles), so a model compiled and not trained since has two.

Loading follows Keras: the variables are set only when the file holds as many as the model's
optimizer has now, the learning rate too; else a warning in Keras' words says they were skipped.
They are checked before the weights are set, so a file refused changes nothing.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, NamedTuple, Union

import numpy as np

from . import optimizers

_SLOTS = {"sgd": ("momentum",), "adam": ("m", "v"), "nadam": ("m", "v")}


def _slot_names(optimizer: optimizers.Optimizer) -> tuple:
    if isinstance(optimizer, optimizers.SGD) and optimizer.momentum == 0:
        return ()  # Keras' SGD without momentum has no slot, as the core's
    return _SLOTS[optimizer._kind]


def count(model: Any) -> int:
    """How many variables the model's optimizer has now (as Keras counts them)."""
    if model._optimizer is None:
        return 0
    if not model._optimizer_built:
        return 2
    weights = len(model._run.weight_names())
    return 2 + weights * len(_slot_names(model._optimizer)) + (model._optimizer._kind == "nadam")


def variables(model: Any) -> List[np.ndarray]:
    """The model's optimizer's variables, in Keras' order (none for a model not compiled)."""
    optimizer = model._optimizer
    if optimizer is None:
        return []
    iterations, schedule, slots = model._run.optimizer_state()
    out = [np.array(iterations, dtype=np.int64), np.array(optimizer.learning_rate, np.float32)]
    if not model._optimizer_built:
        return out
    names = _slot_names(optimizer)
    for i in range(len(model._run.weight_names())):
        out += [slots[name][i] for name in names]
    if optimizer._kind == "nadam":
        out.append(np.array(schedule, dtype=np.float32))
    return out


# The most updates a file may say were applied: the core's bound (kMaxOptimizerIterations), far
# beyond any run and far from overflowing the count as training goes on.
MAX_ITERATIONS = 1 << 50


class Skipped(NamedTuple):
    """checked()'s answer where Keras skips the file's variables: its warning."""
    message: str


class State(NamedTuple):
    """What load() sets: the optimizer's update count, learning rate, Nadam's schedule so far
    and the slots (an array per weight each, by the core's slot names)."""
    iterations: int
    learning_rate: float
    momentum_schedule: float
    slots: Dict[str, List[np.ndarray]]


def _numbers(path: str, k: int, entry: Any, shape: tuple, what: str) -> np.ndarray:
    """Entry k of the file's optimizer/vars (an h5py dataset, or an array), checked for its
    shape and kind before it is read."""
    dtype = getattr(entry, "dtype", None)
    if dtype is None or not (np.issubdtype(dtype, np.floating) or
                             np.issubdtype(dtype, np.integer)):
        raise ValueError(f"{path}: the optimizer's {what} (optimizer/vars/{k}) is no array of "
                         "numbers")
    if tuple(entry.shape) != shape:
        raise ValueError(f"{path}: the optimizer's {what} (optimizer/vars/{k}) has the shape "
                         f"{tuple(entry.shape)}, this model's {shape}")
    return np.asarray(entry[()])


def checked(model: Any, saved: List[Any], path: str) -> Union[State, Skipped, None]:
    """The state in ``saved`` (a weights file's optimizer/vars, in order, not read yet) for the
    model's optimizer, checked, as Keras takes them: only if they are as many as the optimizer
    has now (Skipped, with Keras' warning, if not; None for a model not compiled, as Keras says
    nothing then). Only what is taken is read. Raises ValueError, naming the file, for values
    no optimizer holds."""
    optimizer = model._optimizer
    if optimizer is None:
        return None
    mine = count(model)
    if len(saved) != mine:
        return Skipped(f"Skipping variable loading for optimizer '{optimizer._kind}', because "
                       f"it has {mine} variables whereas the saved optimizer has {len(saved)} "
                       f"variables ({path}; Keras' words: its optimizer's state is as it was)")
    count_entry = _numbers(path, 0, saved[0], (), "iteration count")
    if not np.issubdtype(count_entry.dtype, np.integer):
        raise ValueError(f"{path}: the optimizer's iteration count (optimizer/vars/0) is "
                         f"{count_entry.dtype}, not a whole number as Keras saves it")
    iterations = int(count_entry[()])
    if not 0 <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"{path}: the optimizer's iteration count is {iterations}, not from 0 "
                         f"to 2**50")
    saved_rate = float(np.float32(_numbers(path, 1, saved[1], (), "learning rate")[()]))
    try:
        rate = optimizers._learning_rate(saved_rate)  # float32's 1e-9 taken as 1e-9
    except ValueError:  # also NaN
        raise ValueError(f"{path}: the optimizer's learning rate {saved_rate!r}: mirrorlab "
                         "computes with one from 1e-09 to 10") from None
    _, schedule, now_slots = model._run.optimizer_state()
    slots: Dict[str, List[np.ndarray]] = {name: list(arrays) for name, arrays in now_slots.items()}
    if model._optimizer_built:
        names = _slot_names(optimizer)
        shapes = [a.shape for a in now_slots[names[0]]] if names else []
        for i, shape in enumerate(shapes):
            for j, name in enumerate(names):
                k = 2 + i * len(names) + j
                array = _numbers(path, k, saved[k], shape, f"variable {k}")
                if not np.isfinite(array).all():
                    raise ValueError(f"{path}: the optimizer's variable {k} holds NaN or "
                                     "infinity: training from it would give NaN")
                slots[name][i] = np.ascontiguousarray(array, dtype=np.float32)
        if optimizer._kind == "nadam":
            k = len(saved) - 1
            schedule = float(_numbers(path, k, saved[k], (), "momentum schedule")[()])
            if not 0 < schedule <= 1:
                raise ValueError(f"{path}: the optimizer's momentum schedule is {schedule!r}, "
                                 "not in (0, 1] (a product of factors below 1)")
    return State(iterations, rate, schedule, slots)


def load(model: Any, state: Union[State, Skipped, None], stacklevel: int) -> None:
    """Sets the model's optimizer to ``state`` (checked()'s), or warns that it was skipped;
    ``stacklevel``: the warning's, pointing at the user's call."""
    if isinstance(state, Skipped):
        warnings.warn(state.message, stacklevel=stacklevel + 1)
    if not isinstance(state, State):
        return
    model._run.set_optimizer_state(state.iterations, state.momentum_schedule, state.slots)
    optimizer = model._optimizer
    if np.float32(state.learning_rate) != np.float32(optimizer.learning_rate):
        optimizer.learning_rate = state.learning_rate  # a variable of Keras' file: the run's too
