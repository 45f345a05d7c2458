"""keras.callbacks.History: what model.fit returns."""

from __future__ import annotations

from typing import Dict, List


class History:
    """``history``: each metric's value at the end of each epoch (loss, accuracy, val_loss,
    val_accuracy); ``epoch``: the epochs' numbers, from 0; ``params``: the fit's own."""

    def __init__(self, history: Dict[str, List[float]], params: Dict[str, object]) -> None:
        self.history = history
        self.epoch = list(range(len(history.get("loss", []))))
        self.params = params

    def __repr__(self) -> str:
        return f"<History epochs={len(self.epoch)} keys={list(self.history)}>"
