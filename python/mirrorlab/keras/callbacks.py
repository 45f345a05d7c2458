"""keras.callbacks: History (what model.fit returns) and the callbacks model.fit(callbacks=...)
calls at the training's and each epoch's begin and end: Callback (subclass it), LambdaCallback,
EarlyStopping and ModelCheckpoint (weights or model files), as Keras 3.15 was seen to run them: a
callback's on_epoch_end runs before the epoch's line is printed, EarlyStopping says it stopped
and restores the best weights when the training ends, ModelCheckpoint's lines start with an empty
one. The batches' hooks (on_train_batch_end, ...) are not called: a callback that defines one is
refused, not left silent."""

from __future__ import annotations

import math
import numbers
import os
import warnings
from typing import Any, Callable, Dict, List, Optional

import numpy as np

__all__ = ["Callback", "EarlyStopping", "History", "LambdaCallback", "ModelCheckpoint"]


class History:
    """``history``: each metric's value at the end of each epoch (loss, accuracy, val_loss,
    val_accuracy); ``epoch``: the epochs' numbers, from 0; ``params``: the fit's own."""

    def __init__(self, history: Dict[str, List[float]], params: Dict[str, object]) -> None:
        self.history = history
        self.epoch = list(range(len(history.get("loss", []))))
        self.params = params

    def __repr__(self) -> str:
        return f"<History epochs={len(self.epoch)} keys={list(self.history)}>"


class Callback:
    """keras.callbacks.Callback: subclass it and define on_train_begin, on_epoch_begin,
    on_epoch_end or on_train_end; ``self.model`` is the model (``self.model.stop_training =
    True`` ends the fit after this epoch, as Keras 3.15 was seen to: set as an epoch begins, the
    epoch runs whole), ``self.params`` the fit's (verbose, epochs, steps an epoch). With several
    workers every worker runs the same callbacks, as in TensorFlow (save_weights is a collective
    there); a stop asked by one stops all."""

    _NOT_CALLED = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin",
                   "on_batch_end", "on_test_begin", "on_test_end", "on_test_batch_begin",
                   "on_test_batch_end", "on_predict_begin", "on_predict_end",
                   "on_predict_batch_begin", "on_predict_batch_end")

    def __init__(self) -> None:
        self.model: Any = None
        self.params: Dict[str, object] = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: Dict[str, object]) -> None:
        self.params = params

    def on_train_begin(self, logs: Optional[Dict[str, float]] = None) -> None:
        pass

    def on_train_end(self, logs: Optional[Dict[str, float]] = None) -> None:
        pass

    def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        pass

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, float]] = None) -> None:
        pass

    def _hooks_not_called(self) -> List[str]:
        """The batch and test hooks this callback defines, which mirrorlab's fit does not call."""
        return [name for name in self._NOT_CALLED if callable(getattr(type(self), name, None))]


class LambdaCallback(Callback):
    """keras.callbacks.LambdaCallback: functions for on_epoch_begin(epoch, logs),
    on_epoch_end(epoch, logs), on_train_begin(logs) and on_train_end(logs)."""

    def __init__(self, on_epoch_begin: Optional[Callable] = None,
                 on_epoch_end: Optional[Callable] = None,
                 on_train_begin: Optional[Callable] = None,
                 on_train_end: Optional[Callable] = None, **batch_hooks: Callable) -> None:
        super().__init__()
        if batch_hooks:
            raise ValueError(f"LambdaCallback({', '.join(sorted(batch_hooks))}=...): mirrorlab's "
                             "fit calls a callback at the epochs' and the training's begin and "
                             "end only")
        for name, fn in (("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end)):
            if fn is not None:
                setattr(self, name, fn)


def _better(monitor: str, mode: str, what: str) -> Callable[[float, float], bool]:
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{what} mode {mode!r} is unknown, fallback to auto mode.", stacklevel=3)
        mode = "auto"
    if mode == "auto":  # Keras: an accuracy rises, anything else falls
        mode = "max" if "acc" in monitor else "min"
    return np.greater if mode == "max" else np.less


def _checked(what: str, name: str, value: Any, kind: str) -> Any:
    """``value`` if it is of ``kind`` ("name": a str; "count": an int >= 0; "number": a real
    number; "number or None"), else a TypeError or ValueError saying what was given. Keras
    takes such arguments unchecked and fails at an epoch's end, or runs on with them (a negative
    patience, a patience of "a"); mirrorlab refuses them as the callback is made."""
    if kind == "number or None" and value is None:
        return value
    if kind == "name":
        ok, wanted = isinstance(value, str), "a metric's name, e.g. 'val_loss'"
    elif kind in ("count", "verbose"):  # Keras takes verbose=True for 1
        ok = isinstance(value, numbers.Integral) and value >= 0 and (
            kind == "verbose" or not isinstance(value, bool))
        wanted = "a whole number, 0 or more"
    else:
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and \
            math.isfinite(value)
        wanted = "a finite number" + (" or None" if kind == "number or None" else "")
    if not ok:
        error = ValueError if isinstance(value, numbers.Real) and kind != "name" else TypeError
        raise error(f"{what}({name}={value!r}): {name} must be {wanted}")
    return value


def _monitored(logs: Optional[Dict[str, float]], monitor: str) -> Optional[float]:
    value = (logs or {}).get(monitor)
    return None if value is None else float(value)


class EarlyStopping(Callback):
    """keras.callbacks.EarlyStopping: ends the fit once ``monitor`` has not improved by more
    than ``min_delta`` for ``patience`` epochs; ``restore_best_weights``: the best epoch's weights
    put back when the training ends (on every replica). A patience below 0 or not whole, a
    monitor that is no name, a min_delta or baseline that is no number is refused as it is made
    (Keras runs on with some of them, or fails as an epoch ends)."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: Optional[float] = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0) -> None:
        super().__init__()
        what = "EarlyStopping"
        self.monitor = _checked(what, "monitor", monitor, "name")
        self.patience = _checked(what, "patience", patience, "count")
        self.verbose = _checked(what, "verbose", verbose, "verbose")
        self.baseline = _checked(what, "baseline", baseline, "number or None")
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = _checked(what, "start_from_epoch", start_from_epoch, "count")
        self.monitor_op = _better(monitor, mode, what)
        self.min_delta = abs(_checked(what, "min_delta", min_delta, "number")) * \
            (1 if self.monitor_op is np.greater else -1)

    def _improves(self, value: float, reference: Optional[float]) -> bool:
        return reference is None or bool(self.monitor_op(value - self.min_delta, reference))

    def on_train_begin(self, logs=None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best: Optional[float] = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch: int, logs=None) -> None:
        current = _monitored(logs, self.monitor)
        if current is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(sorted(logs or {}))}",
                          stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improves(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improves(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print("Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)


class ModelCheckpoint(Callback):
    """keras.callbacks.ModelCheckpoint: after each epoch, the model saved to ``filepath``: its
    weights (model.save_weights) for a name ending in .weights.h5, the whole model (model.save)
    for one ending in .keras ("{epoch:02d}", "{val_loss:.3f}" and the like filled in from the
    epoch's logs), or with ``save_best_only`` only when ``monitor`` improved. (Keras 3.15.1,
    given a .weights.h5 name without save_weights_only=True, writes its older whole-model HDF5
    file under that name; mirrorlab writes the weights file the name asks for.)"""

    def __init__(self, filepath: Any, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: Any = "epoch",
                 initial_value_threshold: Optional[float] = None) -> None:
        super().__init__()
        self.filepath = os.fspath(filepath)
        if not isinstance(self.filepath, str):
            raise TypeError(f"ModelCheckpoint(filepath={filepath!r}): give the file's name as a "
                            "str (or a pathlib.Path)")
        if save_weights_only and not self.filepath.endswith(".weights.h5"):
            raise ValueError("When using `save_weights_only=True` in `ModelCheckpoint`, the "
                             "filepath provided must end in `.weights.h5` (Keras weights "
                             f"format). Received: filepath={self.filepath}")
        if not self.filepath.endswith((".weights.h5", ".keras")):
            raise ValueError("The filepath provided must end in `.keras` (Keras model format) "
                             "or `.weights.h5` (Keras weights format; mirrorlab writes no "
                             f"older .h5 model file). Received: filepath={self.filepath}")
        self.save_weights_only = save_weights_only
        if save_freq != "epoch":
            raise ValueError(f"ModelCheckpoint save_freq={save_freq!r}: mirrorlab saves at the "
                             "end of an epoch (save_freq='epoch')")
        what = "ModelCheckpoint"
        self.monitor = _checked(what, "monitor", monitor, "name")
        self.verbose = _checked(what, "verbose", verbose, "verbose")
        self.save_best_only = save_best_only
        self.monitor_op = _better(monitor, mode, what)
        self.best = _checked(what, "initial_value_threshold", initial_value_threshold,
                             "number or None")

    def _say(self, text: str) -> None:
        if self.verbose > 0:
            print(f"\n{text}")

    def on_epoch_end(self, epoch: int, logs=None) -> None:
        logs = dict(logs or {})
        try:
            path = self.filepath.format(epoch=epoch + 1, **logs)
        except (KeyError, IndexError, ValueError) as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {e!r} (the epoch's logs have {', '.join(sorted(logs))})"
                           ) from None
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)  # as Keras
        current = _monitored(logs, self.monitor) if self.save_best_only else None
        if self.save_best_only and current is None:  # Keras 3.15 warns and saves
            warnings.warn(f"Can save best model only with {self.monitor} available.",
                          stacklevel=2)
        elif self.save_best_only:
            if self.best is not None and (math.isnan(current) or
                                          not self.monitor_op(current, self.best)):
                self._say(f"Epoch {epoch + 1}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            before = "None" if self.best is None else f"{self.best:.5f}"
            self._say(f"Epoch {epoch + 1}: {self.monitor} improved from {before} to "
                      f"{current:.5f}, saving model to {path}")
            self.best = current
        if not self.save_best_only:
            self._say(f"Epoch {epoch + 1}: saving model to {path}")
        if path.endswith(".weights.h5"):
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)
        self._say(f"Epoch {epoch + 1}: finished saving model to {path}")
