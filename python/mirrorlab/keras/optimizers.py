"""keras.optimizers: SGD, Adam and Nadam, with Keras 3's formulas and defaults."""

from __future__ import annotations

import weakref
from typing import Dict, Sequence

from .. import _numbers

__all__ = ["Optimizer", "SGD", "Adam", "Nadam"]


def _number(name: str, value: object, low: float, high: float) -> float:
    if not _numbers.is_number(value):
        raise TypeError(f"{name} must be a number, not {value!r}")
    value = float(value)
    if not low <= value <= high:  # also refuses NaN
        raise ValueError(f"{name} {value!r}: give a number from {low:g} to {high:g}")
    return value


# 1e-9 as float32 has it, and as Keras writes it in a file (9.999999717180685e-10): taken as 1e-9.
_FLOAT32_1E_9 = 9.999999717180685e-10


def _learning_rate(value: object) -> float:
    """A learning rate from 1e-9 to 10 (float32's 1e-9, which is a little less, taken as 1e-9)."""
    if _numbers.is_number(value) and _FLOAT32_1E_9 <= float(value) < 1e-9:
        value = 1e-9
    return _number("learning_rate", value, 1e-9, 10)


class Optimizer:
    """What the optimizers share: a learning rate from 1e-9 to 10. Give compile() one of SGD,
    Adam or Nadam (or its name)."""

    _kind = ""
    _models: Sequence["weakref.ref"] = ()  # the models compiled with it

    def __init__(self, learning_rate: float) -> None:
        self._learning_rate = _learning_rate(learning_rate)

    @property
    def learning_rate(self) -> float:
        """The learning rate, from 1e-9 to 10. Set it (as Keras' ``optimizer.learning_rate =
        0.01``, between fits or in a callback of a fit, as a schedule does) and the model
        compiled with it updates with it from its next step on."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        rate = _learning_rate(value)
        runs = [m._run for m in (r() for r in self._models)
                if m is not None and m._optimizer is self and m._run is not None]
        done = []
        try:
            for run in runs:
                run.set_learning_rate(rate)  # refused, changing nothing, while it is busy
                done.append(run)
        except BaseException:
            for run in done:  # every model's rate as it was, as the attribute still says
                run.set_learning_rate(self._learning_rate)
            raise
        self._learning_rate = rate

    def _compiled_into(self, model: object) -> None:
        self._models = [r for r in self._models if r() is not None and r() is not model]
        self._models.append(weakref.ref(model))

    def __getstate__(self) -> Dict[str, object]:  # pickled and copied without its models
        state = dict(self.__dict__)
        state.pop("_models", None)
        return state

    def _settings(self) -> Dict[str, object]:
        return {"optimizer": self._kind, "learning_rate": self.learning_rate}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._settings().items() if k != "optimizer")
        return f"{type(self).__name__}({args})"


class SGD(Optimizer):
    """v = momentum * v - learning_rate * g; w += v (no momentum: plain SGD)."""

    _kind = "sgd"

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0) -> None:
        super().__init__(learning_rate)
        self.momentum = _number("momentum", momentum, 0, 1)

    def _settings(self) -> Dict[str, object]:
        return {**super()._settings(), "momentum": self.momentum}


class Adam(Optimizer):
    """Adam, as Keras 3 computes it: m and v, moving means of the gradient (beta_1) and of its
    square (beta_2); w -= lr_t * m / (sqrt(v) + epsilon), lr_t the learning rate corrected for
    the means' bias at step t."""

    _kind = "adam"

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7) -> None:
        super().__init__(learning_rate)
        self.beta_1 = _number("beta_1", beta_1, 0, 1)
        self.beta_2 = _number("beta_2", beta_2, 0, 1)
        self.epsilon = _number("epsilon", epsilon, 1e-12, 1)

    def _settings(self) -> Dict[str, object]:
        return {**super()._settings(), "beta1": self.beta_1, "beta2": self.beta_2,
                "epsilon": self.epsilon}


class Nadam(Adam):
    """Nadam, as Keras 3 computes it: Adam with Nesterov momentum (the step looks ahead along
    the moving mean); the same arguments as Adam."""

    _kind = "nadam"


def _get(optimizer: object) -> Optimizer:
    if isinstance(optimizer, Optimizer):
        return optimizer
    names = {"sgd": SGD, "adam": Adam, "nadam": Nadam}
    if isinstance(optimizer, str) and optimizer.lower() in names:
        return names[optimizer.lower()]()
    raise ValueError(f"optimizer {optimizer!r}: mirrorlab has 'sgd', 'adam' and 'nadam' "
                     "(or mirrorlab.keras.optimizers.SGD(...), Adam(...), Nadam(...))")
