"""tf.distribute for mirrorlab: MirroredStrategy, and the all-reduce it uses.

A strategy is a set of logical devices and an all-reduce; a model made under its ``scope()`` is
mirrored on every device: one replica each, every global batch split among them, the gradients
all-reduced, the same update on every copy (mirrorlab's core does each step as TensorFlow does).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
from typing import Iterator, List, Optional, Sequence, Union

from . import _mirrorlab, _numbers, config
from ._custom_loop import (DistributedBatch, DistributedDataset, DivergedError, PerReplica,
                           ReduceOp, ReplicaContext, ReplicasOutOfSyncError, StepByStep,
                           get_replica_context)
from . import _custom_loop

__all__ = [
    "MirroredStrategy",
    "MultiWorkerMirroredStrategy",
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
        if not _numbers.is_whole(num_packs) or num_packs < 0:
            raise ValueError(f"num_packs must be a whole number of at least 0, not {num_packs!r}")
        self.num_packs = int(num_packs)

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


# Where this process's devices are, in TensorFlow's full names ("/job:localhost/replica:0/task:0
# /device:GPU:1", strategy.extended.worker_devices): a name may say so, or leave it out.
_LOCAL = {"job": "localhost", "replica": "0", "task": "0"}


def _gpu_number(text: str, count: int) -> int:
    """N of a GPU's name: '/gpu:N', '/device:GPU:N', or the full name of a local one."""
    *where, device = [p for p in text.lower().split("/") if p] or [""]
    for part in where:
        key, _, value = part.partition(":")
        if _LOCAL.get(key) != value:
            raise ValueError(f"device {text!r} is not one of this process's: a MirroredStrategy "
                             "runs on the local GPUs, '/gpu:N' or "
                             "'/job:localhost/replica:0/task:0/device:GPU:N'")
    kind, _, number = device.removeprefix("device:").partition(":")
    if kind != "gpu" or not number.removeprefix("-").isdigit():
        raise ValueError(f"device {text!r}: mirrorlab's replicas run on GPUs: give '/gpu:0' to "
                         f"'/gpu:{count - 1}'")
    return int(number)


def _device_index(name: Union[str, config.LogicalDevice], count: int) -> int:
    text = name.name if isinstance(name, config.LogicalDevice) else name
    if not isinstance(text, str):
        raise TypeError(f"a device is a name such as '/gpu:0', not {name!r}")
    index = _gpu_number(text, count)
    if not 0 <= index < count:
        there = (f"there are {count} logical GPUs, '/gpu:0' to '/gpu:{count - 1}'" if count > 1
                 else "there is 1 logical GPU, '/gpu:0'" if count == 1
                 else "there is no logical GPU")
        raise ValueError(f"device {text!r}: GPU {index} is out of range: {there} "
                         "(mirrorlab.config.list_logical_devices('GPU'))")
    return index


class MirroredStrategy:
    """Synchronous training on several devices of one machine, as tf.distribute.MirroredStrategy.

    ``devices``: names of logical GPUs ("/gpu:0", "/device:GPU:1", or TensorFlow's full
    "/job:localhost/replica:0/task:0/device:GPU:1"); None: every logical GPU.
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
        self._built_models: list = []  # weak references, for mirrorlab.gui.watch(strategy)
        self._cross_device_ops = cross_device_ops or CrossDeviceOps()
        self._device_names = [names[i][0] for i in indices]
        tuple_text = ", ".join(f"'/job:localhost/replica:0/task:0/device:GPU:{i}'" for i in indices)
        if len(indices) == 1:
            tuple_text += ","
        if not _default:  # TensorFlow's default strategy logs nothing
            logging.getLogger("mirrorlab").info("Using MirroredStrategy with devices (%s)",
                                                tuple_text)

    # One process alone (MultiWorkerMirroredStrategy sets them otherwise).
    _workers = None
    _worker_index = 0
    _num_workers = 1

    @property
    def num_replicas_in_sync(self) -> int:
        """How many replicas train in step: one per device (of every worker)."""
        return len(self._indices) * self._num_workers

    @property
    def _local_replicas(self) -> int:
        return len(self._indices)

    @property
    def extended(self) -> "MirroredStrategy":
        """TensorFlow's strategy.extended: here the strategy itself (its worker_devices)."""
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
        ``axis``, each replica's values reduced along it too (MEAN over every example). With
        several workers, over every worker's replicas (every worker must call it)."""
        return _custom_loop.reduce(self, reduce_op, value, axis)

    def experimental_local_results(self, value) -> tuple:
        """Each replica's value of ``value``, in replica order (a tuple)."""
        return _custom_loop.local_results(value)

    def __repr__(self) -> str:
        return (f"MirroredStrategy(devices={self._device_names!r}, "
                f"cross_device_ops={self._cross_device_ops!r})")


def _tf_config() -> Optional[dict]:
    """TF_CONFIG as TensorFlow reads it: None when unset or empty."""
    text = os.environ.get("TF_CONFIG", "").strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ValueError(f"TF_CONFIG is not JSON ({e}): give it as "
                         '\'{"cluster": {"worker": ["host:port", ...]}, "task": {"type": '
                         '"worker", "index": 0}}\'') from None
    if not isinstance(value, dict):
        raise ValueError("TF_CONFIG must be a JSON object with \"cluster\" and \"task\"")
    return value


_workers_of_process = None  # (the _Workers, its timeout): made once a process


def _process_workers(timeout: float):
    """This process's workers, made by the first MultiWorkerMirroredStrategy (every worker at
    the same point) and ended once, as the interpreter exits: a second strategy (a notebook's
    cell run again) uses them, where making them again would end MPI twice at exit."""
    global _workers_of_process
    if _workers_of_process is None:
        workers = _mirrorlab._Workers(timeout)
        atexit.register(workers.finish)
        _workers_of_process = (workers, timeout)
    elif _workers_of_process[1] != timeout:
        logging.getLogger("mirrorlab").warning(
            "MultiWorkerMirroredStrategy: this process's workers were made with worker_timeout="
            "%g, which they keep (worker_timeout=%g is not used)", _workers_of_process[1], timeout)
    return _workers_of_process[0]


class MultiWorkerMirroredStrategy(MirroredStrategy):
    """tf.distribute.MultiWorkerMirroredStrategy: this process is one worker of several, each
    mirroring on its logical GPUs, the gradients all-reduced within each worker, across the workers
    and back. mirrorlab's workers are MPI ranks: start them with ``mpirun -np W python3 yours.py``
    (Debian's openmpi-bin). TF_CONFIG, where given, must name as many workers as mpirun started,
    and this one's index as its rank (TensorFlow's workers find each other by its addresses;
    mirrorlab's through MPI). Without it, the workers are mpirun's, and each logs the TF_CONFIG
    TensorFlow would need. Every worker runs the same program: making a model, fit, evaluate and
    strategy.reduce are done by all of them together.

    Keras 3.15's model.fit on NumPy arrays fails under TensorFlow's MultiWorkerMirroredStrategy
    (ValueError on a PerReplica value, measured: docs/tensorflow-conformance.md); mirrorlab's
    trains, each worker taking its part of every global batch as TensorFlow's DATA sharding does.
    """

    def __init__(self, communication_options: object = None, *,
                 worker_timeout: float = 60.0) -> None:
        if not _numbers.is_number(worker_timeout) or not 0 < worker_timeout < float("inf"):
            raise ValueError(f"worker_timeout={worker_timeout!r}: give the seconds a worker waits "
                             "for the others before it names them gone, a number above 0")
        size, rank, launcher = _mirrorlab._launched_by()
        tf_config = _tf_config()
        workers = None
        if tf_config is not None:
            cluster = tf_config.get("cluster", {})
            task = tf_config.get("task", {})
            names = cluster.get("worker") if isinstance(cluster, dict) else None
            if not isinstance(names, list) or not names:
                raise ValueError('TF_CONFIG has no "cluster": {"worker": [...]}: mirrorlab\'s '
                                 "workers are all of type worker")
            if not isinstance(task, dict) or task.get("type") != "worker" or \
                    not isinstance(task.get("index"), int):
                raise ValueError('TF_CONFIG\'s "task" must be {"type": "worker", "index": i}')
            workers = len(names)
            if not 0 <= task["index"] < workers:
                raise ValueError(f"TF_CONFIG's task index {task['index']} is not one of its "
                                 f"{workers} workers (0 to {workers - 1})")
            if workers > 1 and size <= 1:
                raise ValueError(
                    f"TF_CONFIG names {workers} workers, but this process was not started by "
                    f"mpirun: mirrorlab's workers are MPI ranks, started with mpirun -np "
                    f"{workers} python3 ... (each given its TF_CONFIG, or none: mpirun's ranks)")
            if size > 1 and (workers != size or task["index"] != rank):
                raise ValueError(
                    f"TF_CONFIG names {workers} workers and this one index {task['index']}, but "
                    f"{launcher} started {size} processes and this is rank {rank}: give each "
                    f"rank the TF_CONFIG of its own index, or none")
        if size > 1 and not _mirrorlab._has_mpi:
            raise RuntimeError("this mirrorlab was built without MPI, which its workers need: "
                               "apt-get install libopenmpi-dev openmpi-bin, then build again")
        super().__init__(_default=True)
        if size > 1:
            self._workers = _process_workers(float(worker_timeout))
            self._worker_index = self._workers.rank
            self._num_workers = self._workers.size
        logging.getLogger("mirrorlab").info(
            "MultiWorkerMirroredStrategy: worker %d of %d (%s), %d device%s each, %d replicas in "
            "sync; TF_CONFIG='%s'", self._worker_index, self._num_workers,
            "MPI ranks" if self._workers is not None else "one process",
            self._local_replicas, "" if self._local_replicas == 1 else "s",
            self.num_replicas_in_sync,
            self._workers.tf_config(self._worker_index) if self._workers is not None else
            json.dumps(tf_config) if tf_config else "")

    @property
    def worker_devices(self) -> List[str]:
        return [f"/job:worker/replica:0/task:{self._worker_index}/device:GPU:{i}"
                for i in self._indices]

    def __repr__(self) -> str:
        return (f"MultiWorkerMirroredStrategy(worker {self._worker_index} of "
                f"{self._num_workers}, devices={self._device_names!r})")


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
