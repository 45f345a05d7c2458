"""keras.losses: the one loss mirrorlab's core computes, softmax cross-entropy of integer labels."""

from __future__ import annotations

__all__ = ["SparseCategoricalCrossentropy"]


class SparseCategoricalCrossentropy:
    """Integer labels against the model's output. ``from_logits=True``: the last layer gives
    logits (no activation); False: it ends in a softmax. mirrorlab computes both the same way,
    from the logits before the softmax (what Keras does too, more or less exactly)."""

    def __init__(self, from_logits: bool = False, name: str = "sparse_categorical_crossentropy"):
        if not isinstance(from_logits, bool):
            raise TypeError(f"from_logits must be True or False, not {from_logits!r}")
        self.from_logits = from_logits
        self.name = name

    def get_config(self) -> dict:
        """Keras' config of the loss (what a .keras file holds of it)."""
        return {"name": self.name, "reduction": "sum_over_batch_size",
                "from_logits": self.from_logits, "ignore_class": None}

    def __repr__(self) -> str:
        return f"SparseCategoricalCrossentropy(from_logits={self.from_logits})"


def _get(loss: object) -> SparseCategoricalCrossentropy:
    if isinstance(loss, SparseCategoricalCrossentropy):
        return loss
    if loss == "sparse_categorical_crossentropy":
        return SparseCategoricalCrossentropy(from_logits=False)
    raise ValueError(f"loss {loss!r}: mirrorlab's core computes one loss, "
                     "'sparse_categorical_crossentropy' (or SparseCategoricalCrossentropy("
                     "from_logits=True) for a last layer without activation)")
