"""mirrorlab's window on a run trained from Python: ``mirrorlab.gui.watch``.

TensorFlow has no such call (TensorBoard reads the logs a run writes); this one opens the
``mirrorlab gui`` window on the model's own run, in the same process, as it trains::

    with strategy.scope():
        model = ml.keras.Sequential([...])
        model.compile(...)
    window = ml.gui.watch(strategy, font_scale=1.5)   # the window opens beside the notebook
    model.fit(x_train, y_train, epochs=2)              # its panels follow every step
    window.screenshot("fit.png")
    window.close()                                     # or close the window itself

The window draws what the run does (the devices, the timeline of every phase, each step's split,
gradients and all-reduce, the curves of model.fit) on a thread of its own while Python trains;
nothing in it trains, pauses or changes the run. Where there is no display (a notebook on a
server, a test without Xvfb) or the module was built without the window, ``watch`` opens none,
warns once saying why, and returns a Watch whose ``opened`` is False: the notebook goes on.
"""

from __future__ import annotations

import atexit
import os
import warnings
from typing import List, Optional

from . import _mirrorlab

__all__ = ["watch", "Watch"]

# The windows open: kept (a Watch nobody holds on to keeps its window until closed or the end).
_open: "set[Watch]" = set()


class Watch:
    """A window watching a model's run (see :func:`watch`)."""

    def __init__(self, window: Optional["_mirrorlab._Window"], why_not: str) -> None:
        self._window = window
        self._error_said = False
        self.why_not = why_not  #: why no window opened ("" when one did)
        if window is not None:
            _open.add(self)

    @property
    def opened(self) -> bool:
        """Whether a window was opened (it may have been closed since: see is_open)."""
        return self._window is not None

    @property
    def is_open(self) -> bool:
        """Whether the window is still open (the user may close it)."""
        if self._window is None:
            return False
        if self._window.is_open:
            return True
        _open.discard(self)  # closed by its user
        self._say_error()
        return False

    def _say_error(self) -> None:
        """Warns, once, why the window ended if it ended with an error."""
        error = self._window.error if self._window is not None else ""
        if error and not self._error_said:
            self._error_said = True
            warnings.warn(f"mirrorlab's window ended with an error: {error}", RuntimeWarning,
                          stacklevel=3)

    def screenshot(self, path: "os.PathLike[str] | str", timeout: float = 30.0) -> str:
        """Writes the window's next frame to ``path`` (a PNG, or a JPEG if it ends in .jpg) and
        returns the path. Raises ValueError for another ending, RuntimeError when no window is
        open or the picture could not be written."""
        path = os.fspath(path)
        if self._window is None:
            raise RuntimeError(f"no window to take a picture of: {self.why_not}")
        if not path:
            raise ValueError("give the picture a file name, e.g. 'fit.png'")
        self._window.screenshot(path, float(timeout))
        return path

    def close(self) -> None:
        """Closes the window (if it is open) and waits until it has gone; the run goes on."""
        if self._window is not None:
            self._window.close()
            _open.discard(self)
            self._say_error()

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._window is None:
            return f"Watch(no window: {self.why_not})"
        return f"Watch({'open' if self.is_open else 'closed'})"


def _model_of(target):
    """The model a watch shows: ``target`` itself, or the latest model built under ``target``'s
    scope."""
    from .distribute import MirroredStrategy
    from .keras.models import Sequential
    if isinstance(target, Sequential):
        target._build()
        return target
    if isinstance(target, MirroredStrategy):
        models: List[Sequential] = [m for m in (r() for r in target._built_models)
                                    if m is not None and m._run is not None]
        if not models:
            raise ValueError(
                f"{target!r} has no model built yet: make and compile one in its scope first "
                "(with strategy.scope(): model = ...; model.compile(...)), then watch it, or "
                "watch the model itself: mirrorlab.gui.watch(model)")
        return models[-1]
    raise TypeError("mirrorlab.gui.watch takes a MirroredStrategy (its latest model) or a "
                    f"keras.Sequential model, not {type(target).__name__}")


def watch(strategy_or_model, *, width: Optional[int] = None, height: Optional[int] = None,
          font_scale: float = 1.0, present: bool = False, panel: Optional[str] = None,
          report: "os.PathLike[str] | str | None" = None) -> Watch:
    """Opens the mirrorlab window on a model's run, as it trains from here.

    ``strategy_or_model``: a MirroredStrategy (the model built last in its scope) or a model.
    ``width``, ``height``: the window in screen pixels (neither given: 1600x1000, or the
    screen's work area where that is smaller; one given: the other 1600 or 1000);
    ``font_scale``: 1.5 or more for a projector; ``present``: the presenter layout (fewer,
    larger panels); ``panel``: only this panel ("Timeline", "Devices", ...), filling the window;
    ``report``: a JSON file of what each panel drew, written when the window closes.

    One window at a time in a process. Watch before ``model.fit``: a model compiled again is a
    new run, to watch again. Where no window can open, warns why and returns a Watch whose
    ``opened`` is False (``why_not`` says why).
    """
    model = _model_of(strategy_or_model)
    if not _mirrorlab._has_window:
        return _no_window(_mirrorlab._no_window_why)
    try:
        if width is None and height is None:
            width = height = 0  # the binding's "fit the screen"
        else:
            width = 1600 if width is None else width
            height = 1000 if height is None else height
        window = _mirrorlab._Window(model._run, int(width), int(height), float(font_scale),
                                    bool(present), panel or "",
                                    os.fspath(report) if report is not None else "")
    except _mirrorlab._NoDisplayError as e:
        return _no_window(f"no display to open it on ({e}): run Python where a screen is, or "
                          "under a virtual one (xvfb-run), to see the window")
    return Watch(window, "")


def _no_window(why: str) -> Watch:
    warnings.warn(f"mirrorlab.gui.watch opened no window: {why}", RuntimeWarning, stacklevel=3)
    return Watch(None, why)


@atexit.register
def _close_windows() -> None:  # before the interpreter's end takes the models away
    for w in list(_open):
        w.close()
