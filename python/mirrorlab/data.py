"""tf.data for mirrorlab's custom loop: a data set of (images, labels) examples cut into global
batches, which ``strategy.experimental_distribute_dataset`` splits among the replicas.

    dataset = ml.data.Dataset.from_tensor_slices((x_train, y_train)).batch(64)

Only what a custom loop over arrays needs: from_tensor_slices, batch, take. The examples stay in
their order (mirrorlab's fit shuffles; here, shuffle the arrays first if you want it).
"""

from __future__ import annotations

from typing import Iterator, Optional, Sequence, Tuple

import numpy as np

from . import _numbers

__all__ = ["Dataset"]


def _count(name: str, value: object, low: int) -> int:
    if not _numbers.is_whole(value) or value < low:
        raise ValueError(f"{name} must be a whole number of at least {low}, not {value!r}")
    return int(value)


class Dataset:
    """Examples (x, y) in order, whole or in batches."""

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: Optional[int] = None,
                 drop_remainder: bool = False, batches: Optional[int] = None) -> None:
        self._x, self._y = x, y
        self._batch_size = batch_size
        self._drop_remainder = drop_remainder
        self._batches = batches  # take(): at most this many elements

    @staticmethod
    def from_tensor_slices(tensors: Sequence[object]) -> "Dataset":
        """One example per row of ``tensors``, a pair (images, labels) of as many rows."""
        if not isinstance(tensors, (tuple, list)) or len(tensors) != 2:
            raise ValueError("mirrorlab's data sets are (images, labels) pairs: give "
                             "from_tensor_slices((x, y))")
        x, y = (np.asarray(t) for t in tensors)
        if x.ndim == 0 or y.ndim == 0 or len(x) != len(y):
            raise ValueError(f"Dimensions {x.shape[:1] or 'none'} and {y.shape[:1] or 'none'} "
                             "are not compatible: give as many labels as images")
        return Dataset(x, y)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> "Dataset":
        """Consecutive examples, ``batch_size`` at a time (the last batch may be smaller, unless
        ``drop_remainder``). With a strategy, ``batch_size`` is the global batch."""
        if self._batch_size is not None:
            raise ValueError("this data set is batched already")
        return Dataset(self._x, self._y, _count("batch_size", batch_size, 1),
                       bool(drop_remainder), self._batches)

    def take(self, count: int) -> "Dataset":
        """The first ``count`` elements (batches, once batched)."""
        count = _count("count", count, 0)
        if self._batch_size is None:
            return Dataset(self._x[:count], self._y[:count])
        taken = count if self._batches is None else min(count, self._batches)
        return Dataset(self._x, self._y, self._batch_size, self._drop_remainder, taken)

    def _ranges(self) -> Iterator[Tuple[int, int]]:
        """Each batch's [begin, end) in the arrays."""
        n, size = len(self._x), self._batch_size
        assert size is not None
        last = n - n % size if self._drop_remainder else n
        for i, begin in enumerate(range(0, last, size)):
            if self._batches is not None and i >= self._batches:
                return
            yield begin, min(begin + size, n)

    def cardinality(self) -> int:
        """How many elements it gives: examples, or batches once batched."""
        if self._batch_size is None:
            return len(self._x)
        return sum(1 for _ in self._ranges())

    def __len__(self) -> int:
        return self.cardinality()

    def __iter__(self) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        if self._batch_size is None:
            yield from zip(self._x, self._y)
            return
        for begin, end in self._ranges():
            yield self._x[begin:end], self._y[begin:end]

    def __repr__(self) -> str:
        if self._batch_size is None:
            return f"<Dataset: {len(self._x)} examples>"
        return f"<Dataset: {self.cardinality()} batches of {self._batch_size}>"
