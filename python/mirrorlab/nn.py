"""tf.nn for mirrorlab's custom loop: compute_average_loss, the scaling of each replica's loss that
TensorFlow's tutorial writes, computed on NumPy values (a StepByStep's ``losses``)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import distribute

__all__ = ["compute_average_loss"]


def compute_average_loss(per_example_loss, global_batch_size: Optional[int] = None) -> float:
    """One replica's share of the step's loss, as tf.nn.compute_average_loss gives it (TensorFlow
    2.21, measured): the sum of ``per_example_loss`` divided by ``global_batch_size``; without it,
    by this replica's examples times num_replicas_in_sync (its mean over the replicas), which is
    what model.fit does. Summed over the replicas (strategy.reduce("SUM", ...)), the step's loss.
    The gradients a StepByStep backpropagates are scaled the same way by its own
    ``global_batch_size``."""
    losses = np.asarray(per_example_loss, dtype=np.float64)
    if losses.ndim != 1:
        raise ValueError(f"per_example_loss has shape {losses.shape}: give one loss per example")
    if global_batch_size is not None:
        if isinstance(global_batch_size, bool) or not isinstance(global_batch_size,
                                                                 (int, np.integer)) \
                or global_batch_size < 1:
            raise ValueError(f"global_batch_size must be a whole number of at least 1, not "
                             f"{global_batch_size!r}")
        return float(losses.sum() / global_batch_size)
    context = distribute.get_replica_context()
    replicas = context.num_replicas_in_sync if context is not None else \
        distribute.get_strategy().num_replicas_in_sync
    return float(losses.sum() / (len(losses) * replicas)) if len(losses) else 0.0
