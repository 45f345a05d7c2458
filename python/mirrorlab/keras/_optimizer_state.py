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
from typing import Any, Dict, List, NamedTuple, Optional

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


def _scalar(path: str, what: str, value: np.ndarray, kind: Any) -> Any:
    if value.shape != () or not np.issubdtype(value.dtype, kind):
        raise ValueError(f"{path}: the optimizer's {what} (optimizer/vars) is {value.dtype} of "
                         f"shape {value.shape}, not one number as Keras saves it")
    return value[()]


class State(NamedTuple):
    """What load() sets: the optimizer's update count, learning rate, Nadam's schedule so far
    and the slots (an array per weight each, by the core's slot names)."""
    iterations: int
    learning_rate: float
    momentum_schedule: float
    slots: Dict[str, List[np.ndarray]]


def checked(model: Any, saved: List[np.ndarray], path: str, stacklevel: int) -> Optional[State]:
    """The state in ``saved`` (a weights file's optimizer/vars, in order) for the model's
    optimizer, checked, as Keras takes them: only if they are as many as the optimizer has now
    (None, and a warning in Keras' words, if not; None for a model not compiled, as Keras says
    nothing then). Raises ValueError, naming the file, for values no optimizer holds."""
    optimizer = model._optimizer
    if optimizer is None:
        return None
    mine = count(model)
    if len(saved) != mine:
        warnings.warn(f"Skipping variable loading for optimizer '{optimizer._kind}', because it "
                      f"has {mine} variables whereas the saved optimizer has {len(saved)} "
                      f"variables ({path}; Keras' words: its optimizer's state is as it was)",
                      stacklevel=stacklevel)
        return None
    iterations = int(_scalar(path, "iteration count", saved[0], np.integer))
    rate = float(_scalar(path, "learning rate", saved[1], np.floating))
    if iterations < 0:
        raise ValueError(f"{path}: the optimizer's iteration count is {iterations}, below 0")
    try:
        optimizers._number("learning_rate", rate, 1e-9, 10)
    except ValueError as e:
        raise ValueError(f"{path}: the optimizer's {e}") from None
    _, schedule, now_slots = model._run.optimizer_state()
    slots: Dict[str, List[np.ndarray]] = {name: list(arrays) for name, arrays in now_slots.items()}
    if model._optimizer_built:
        names = _slot_names(optimizer)
        shapes = [a.shape for a in now_slots[names[0]]] if names else []
        for i, shape in enumerate(shapes):
            for j, name in enumerate(names):
                k = 2 + i * len(names) + j
                array = saved[k]
                if array.shape != shape or not np.issubdtype(array.dtype, np.floating):
                    raise ValueError(f"{path}: the optimizer's variable {k} (optimizer/vars/{k}) "
                                     f"is {array.dtype} of shape {array.shape}, this model's "
                                     f"{shape}")
                if not np.isfinite(array).all():
                    raise ValueError(f"{path}: the optimizer's variable {k} holds NaN or "
                                     "infinity: training from it would give NaN")
                slots[name][i] = np.ascontiguousarray(array, dtype=np.float32)
        if optimizer._kind == "nadam":
            schedule = float(_scalar(path, "momentum schedule", saved[-1], np.floating))
            if not 0 < schedule <= 1:
                raise ValueError(f"{path}: the optimizer's momentum schedule is {schedule!r}, "
                                 "not in (0, 1] (a product of factors below 1)")
    return State(iterations, rate, schedule, slots)


def load(model: Any, state: Optional[State]) -> None:
    """Sets the model's optimizer to ``state`` (checked()'s; None: nothing to set)."""
    if state is None:
        return
    optimizer = model._optimizer
    if np.float32(state.learning_rate) != np.float32(optimizer.learning_rate):
        optimizer.learning_rate = state.learning_rate  # a variable of Keras' file too
        model._rebuild()
    model._run.set_optimizer_state(state.iterations, state.momentum_schedule, state.slots)
