"""tf.distribute for mirrorlab: MirroredStrategy, and the all-reduce it uses.

A strategy is a set of logical devices and an all-reduce; a model made under its ``scope()`` is
mirrored on every device: one replica each, every global batch split among them, the gradients
all-reduced, the same update on every copy (mirrorlab's core does each step as TensorFlow does).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Iterator, List, Optional, Sequence, Union

from . import config
from ._custom_loop import (DistributedBatch, DistributedDataset, DivergedError, PerReplica,
                           ReduceOp, ReplicaContext, ReplicasOutOfSyncError, StepByStep,
                           get_replica_context)
from . import _custom_loop

__all__ = [
    "MirroredStrategy",
    "PerReplica",
    "ReduceOp",
    "ReplicaContext",
    "DistributedBatch",
    "DistributedDataset",
    "StepByStep",
    "ReplicasOutOfSyncError",
    "DivergedError",
    "get_replica_context",
    "CrossDeviceOps",
    "ReductionToOneDevice",
    "NcclAllReduce",
    "HierarchicalCopyAllReduce",
    "RingAllReduce",
    "OneShotAllReduce",
    "get_strategy",
    "has_strategy",
]


class CrossDeviceOps:
    """How a strategy all-reduces the gradients: one of mirrorlab's algorithms."""

    _algorithm = "auto"

    def __init__(self, num_packs: int = 1) -> None:
        if isinstance(num_packs, bool) or not isinstance(num_packs, int) or num_packs < 0:
            raise ValueError(f"num_packs must be a whole number of at least 0, not {num_packs!r}")
        self.num_packs = num_packs

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_packs={self.num_packs})"


class ReductionToOneDevice(CrossDeviceOps):
    """TensorFlow's ReductionToOneDevice: every gradient added into one device, then copied back."""

    _algorithm = "reduce-to-one"

    def __init__(self) -> None:
        super().__init__(1)


class NcclAllReduce(CrossDeviceOps):
    """TensorFlow's NcclAllReduce: NVIDIA's library, one CUDA GPU per replica.

    ``num_packs``: the gradients in that many equal packs, each its own all-reduce.
    """

    _algorithm = "nccl"


class RingAllReduce(CrossDeviceOps):
    """mirrorlab's ring (reduce-scatter, then all-gather): TensorFlow's choice for logical GPUs."""

    _algorithm = "ring"


class OneShotAllReduce(CrossDeviceOps):
    """mirrorlab's one-shot: one step, each replica summing its slice of every buffer."""

    _algorithm = "one-shot"


class HierarchicalCopyAllReduce(CrossDeviceOps):
    """TensorFlow's all-reduce for the 8 GPUs of a DGX-1: not in mirrorlab, which says so."""

    def __init__(self, num_packs: int = 1) -> None:
        raise ValueError(
            "mirrorlab has no HierarchicalCopyAllReduce (TensorFlow's for the two rings of a "
            "DGX-1's 8 GPUs): give NcclAllReduce(), ReductionToOneDevice(), RingAllReduce() or "
            "OneShotAllReduce()")


_scopes = threading.local()


def _device_index(name: Union[str, config.LogicalDevice], count: int) -> int:
    text = name.name if isinstance(name, config.LogicalDevice) else name
    if not isinstance(text, str):
        raise TypeError(f"a device is a name such as '/gpu:0', not {name!r}")
    parts = text.lower().replace("/device:", "/").strip("/").split(":")
    if len(parts) != 2 or parts[0] != "gpu" or not parts[1].isdigit():
        raise ValueError(f"device {text!r}: mirrorlab's replicas run on GPUs: give '/gpu:0' to "
                         f"'/gpu:{count - 1}'")
    index = int(parts[1])
    if index >= count:
        raise ValueError(f"device {text!r}: there are {count} logical GPUs "
                         "(mirrorlab.config.list_logical_devices('GPU'))")
    return index


class MirroredStrategy:
    """Synchronous training on several devices of one machine, as tf.distribute.MirroredStrategy.

    ``devices``: names of logical GPUs ("/gpu:0", "/device:GPU:1"); None: every logical GPU.
    ``cross_device_ops``: how the gradients are all-reduced (None: TensorFlow's choice, "auto").
    Making it makes the devices: the configuration is fixed from then on.
    """

    def __init__(self, devices: Optional[Sequence[Union[str, config.LogicalDevice]]] = None,
                 cross_device_ops: Optional[CrossDeviceOps] = None, *,
                 _default: bool = False) -> None:
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise TypeError("cross_device_ops must be one of mirrorlab.distribute's all-reduces "
                            f"(NcclAllReduce(), RingAllReduce(), ...), not {cross_device_ops!r}")
        names, _ = config._logical_devices()
        count = len(names)
        if devices is None:
            indices = list(range(count))
        else:
            if isinstance(devices, str):
                devices = [devices]
            indices = [_device_index(d, count) for d in devices]
            if not indices:
                raise ValueError("give at least one device, or devices=None for every logical GPU")
            if len(set(indices)) != len(indices):
                raise ValueError(f"devices {list(devices)!r} names a device twice")
        self._indices = indices
        self._cross_device_ops = cross_device_ops or CrossDeviceOps()
        self._device_names = [names[i][0] for i in indices]
        tuple_text = ", ".join(f"'/job:localhost/replica:0/task:0/device:GPU:{i}'" for i in indices)
        if len(indices) == 1:
            tuple_text += ","
        if not _default:  # TensorFlow's default strategy logs nothing
            logging.getLogger("mirrorlab").info("Using MirroredStrategy with devices (%s)",
                                                tuple_text)

    @property
    def num_replicas_in_sync(self) -> int:
        """How many replicas train in step: one per device."""
        return len(self._indices)

    @property
    def extended(self) -> "MirroredStrategy":
        return self

    @property
    def worker_devices(self) -> List[str]:
        """The devices' full names, as TensorFlow's strategy.extended.worker_devices."""
        return [f"/job:localhost/replica:0/task:0/device:GPU:{i}" for i in self._indices]

    @contextlib.contextmanager
    def scope(self) -> Iterator["MirroredStrategy"]:
        """Models made inside are mirrored by this strategy."""
        stack = getattr(_scopes, "stack", None)
        if stack is None:
            stack = _scopes.stack = []
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    # --- the custom loop ---
    def experimental_distribute_dataset(self, dataset) -> DistributedDataset:
        """``dataset`` (mirrorlab.data.Dataset, batched by the global batch) with each global
        batch split among the replicas as the core splits it: iterate for DistributedBatch."""
        return DistributedDataset(self, dataset)

    def run(self, fn, args=(), kwargs=None):
        """``fn`` on every replica, each given its own value of any PerReplica argument (its
        shard of a DistributedBatch); PerReplica of the results. ``model.train_step`` runs the
        whole training step in the core, on every replica at once."""
        return _custom_loop.run(self, fn, args, kwargs)

    def reduce(self, reduce_op, value, axis=None):
        """The replicas' values of ``value`` combined (ReduceOp.SUM or MEAN), as NumPy; with
        ``axis``, each replica's values reduced along it too (MEAN over every example)."""
        return _custom_loop.reduce(reduce_op, value, axis)

    def experimental_local_results(self, value) -> tuple:
        """Each replica's value of ``value``, in replica order (a tuple)."""
        return _custom_loop.local_results(value)

    def __repr__(self) -> str:
        return (f"MirroredStrategy(devices={self._device_names!r}, "
                f"cross_device_ops={self._cross_device_ops!r})")


_default: Optional[MirroredStrategy] = None


def has_strategy() -> bool:
    """Whether the code runs inside a strategy's scope()."""
    return bool(getattr(_scopes, "stack", None))


def get_strategy() -> MirroredStrategy:
    """The strategy whose scope() the code runs in; outside every scope, one replica on
    /gpu:0 (TensorFlow's default strategy: one device)."""
    global _default
    stack = getattr(_scopes, "stack", None)
    if stack:
        return stack[-1]
    if _default is None:
        _default = MirroredStrategy(devices=["/gpu:0"], _default=True)
    return _default
