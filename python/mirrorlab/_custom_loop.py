"""The custom loop of tf.distribute in mirrorlab: per-replica values, a data set distributed among
the replicas, strategy.run / reduce / experimental_local_results, and a training step whose
phases are calls (StepByStep). mirrorlab.distribute exports these; MirroredStrategy's methods
call them."""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import _arrays, _mirrorlab, _numbers, data

ReplicasOutOfSyncError = _mirrorlab.ReplicasOutOfSyncError
DivergedError = _mirrorlab.DivergedError


class PerReplica:
    """One value per replica, in replica order (``values``): what strategy.run returns, a
    distributed batch's shards, each replica's gradients."""

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = tuple(values)

    def __repr__(self) -> str:
        inner = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self.values))
        return "PerReplica:{\n" + inner + "\n}"


class ReduceOp:
    """How strategy.reduce combines the replicas' values: their sum, or their mean."""

    SUM = "SUM"
    MEAN = "MEAN"


class ReplicaContext:
    """Inside strategy.run: which replica the function runs for (tf.distribute.ReplicaContext)."""

    def __init__(self, strategy: Any, replica_id: int) -> None:
        self.strategy = strategy
        self.replica_id_in_sync_group = replica_id

    @property
    def num_replicas_in_sync(self) -> int:
        """The replicas training in step, every worker's."""
        return self.strategy.num_replicas_in_sync

    def __repr__(self) -> str:
        return (f"ReplicaContext(replica_id_in_sync_group={self.replica_id_in_sync_group}, "
                f"num_replicas_in_sync={self.num_replicas_in_sync})")


_replica = threading.local()


def get_replica_context() -> Optional[ReplicaContext]:
    """The replica a function runs for inside strategy.run; None outside it."""
    return getattr(_replica, "context", None)


# --- a data set distributed among the replicas ----------------------------------------------------

class DistributedBatch(PerReplica):
    """A global batch, split among the replicas as the core splits it: ``values[r]`` is replica
    r's shard, a pair (images, labels) of the arrays given."""

    def __init__(self, values: Sequence[Any], strategy: Any, core_data: Any,
                 indices: np.ndarray, per_replica: int) -> None:
        super().__init__(values)
        self._strategy = strategy
        self._data = core_data
        self._indices = indices
        self._per_replica = per_replica

    @property
    def global_batch_size(self) -> int:
        """The examples of the whole batch (every replica's)."""
        return len(self._indices)


class DistributedDataset:
    """A batched data set whose every global batch is split among the strategy's replicas:
    iterate over it for DistributedBatch values."""

    def __init__(self, strategy: Any, dataset: data.Dataset) -> None:
        if not isinstance(dataset, data.Dataset):
            raise TypeError("experimental_distribute_dataset takes a mirrorlab.data.Dataset "
                            "(Dataset.from_tensor_slices((x, y)).batch(global_batch_size)), not "
                            f"{type(dataset).__name__}")
        size = dataset._batch_size
        if size is None:
            raise ValueError("batch the data set first: dataset.batch(global_batch_size), the "
                             "examples of one step over every replica")
        n = strategy.num_replicas_in_sync
        if size % n:
            raise ValueError(f"a global batch of {size} does not split over {n} replicas: give a "
                             f"multiple of num_replicas_in_sync ({size - size % n or n} or "
                             f"{size - size % n + n})")
        x = dataset._x
        shape = (28, 28, 1) if x.ndim == 4 else (28, 28)
        images = _arrays.image_bytes(x, "the data set's images", shape, "a distributed data set")
        labels = _arrays.class_numbers(dataset._y, len(images), "the data set's labels", 256)
        self._strategy = strategy
        self._dataset = dataset
        self._core = _mirrorlab._Data(images, labels)
        self._per_replica = size // n

    def __iter__(self) -> Iterator[DistributedBatch]:
        n = self._strategy.num_replicas_in_sync
        local = self._strategy._local_replicas
        first = self._strategy._worker_index * local  # this worker's replicas among all
        x, y = self._dataset._x, self._dataset._y
        for begin, end in self._dataset._ranges():
            shards = _mirrorlab._split_global_batch(end - begin, n, self._per_replica)
            shards = shards[first:first + local]
            values = [(x[begin + b:begin + b + c], y[begin + b:begin + b + c]) for b, c in shards]
            yield DistributedBatch(values, self._strategy, self._core,
                                   np.arange(begin, end, dtype=np.uint32), self._per_replica)

    def __len__(self) -> int:
        return self._dataset.cardinality()

    def __repr__(self) -> str:
        return (f"<DistributedDataset: {len(self)} global batches over "
                f"{self._strategy.num_replicas_in_sync} replicas>")


# --- strategy.run, reduce, experimental_local_results ------------------------------------------

def _local(value: Any, replica: int) -> Any:
    return value.values[replica] if isinstance(value, PerReplica) else value


def run(strategy: Any, fn: Callable[..., Any], args: Sequence[Any] = (),
        kwargs: Optional[Dict[str, Any]] = None) -> Any:
    if not callable(fn):
        raise TypeError(f"strategy.run takes a function to run on each replica, not {fn!r}")
    kwargs = kwargs or {}
    if getattr(fn, "_runs_every_replica", False):  # model.train_step: the core runs the replicas
        return fn(*args, **kwargs)
    results = []
    first = strategy._worker_index * strategy._local_replicas
    for r in range(strategy._local_replicas):  # this worker's replicas
        previous = get_replica_context()
        _replica.context = ReplicaContext(strategy, first + r)
        try:
            results.append(fn(*[_local(a, r) for a in args],
                              **{k: _local(v, r) for k, v in kwargs.items()}))
        finally:
            _replica.context = previous
    return results[0] if len(results) == 1 else PerReplica(results)


def local_results(value: Any) -> Tuple[Any, ...]:
    return value.values if isinstance(value, PerReplica) else (value,)


def reduce(strategy: Any, reduce_op: Any, value: Any, axis: Optional[int]) -> Any:
    op = getattr(reduce_op, "value", reduce_op)
    op = op.upper() if isinstance(op, str) else op
    if op not in (ReduceOp.SUM, ReduceOp.MEAN):
        raise ValueError(f"reduce_op {reduce_op!r}: give ReduceOp.SUM or ReduceOp.MEAN")
    if isinstance(value, PerReplica):
        if len(value.values) != strategy._local_replicas:
            count = len(value.values)
            raise ValueError(f"the PerReplica holds {count} value{'s' if count != 1 else ''}, but "
                             "the strategy "
                             f"has {strategy._local_replicas} replicas here: reduce takes one "
                             "value per replica, as strategy.run gives them")
    elif op == ReduceOp.SUM and strategy._local_replicas > 1:  # one replica here: its value
        raise ValueError(f"A non-DistributedValues value {value!r} cannot be reduced with "
                         "ReduceOp.SUM (TensorFlow refuses it too): give what strategy.run "
                         "returned, one value per replica; ReduceOp.MEAN gives it back as it is")
    values = [np.asarray(v, dtype=np.float64) for v in local_results(value)]
    parts = values if axis is None else [v.sum(axis=axis) for v in values]
    total = sum(parts[1:], parts[0])
    count = float(len(values) if axis is None else sum(v.shape[axis] for v in values))
    if strategy._workers is not None:  # every worker's replicas: a sum across the workers
        both = strategy._workers.all_reduce_sum(np.append(np.ravel(total), count))
        total, count = both[:-1].reshape(np.shape(total)), float(both[-1])
    if op == ReduceOp.SUM:
        return total
    return total / count if count else total * np.nan


# --- one training step, a phase at a time ------------------------------------------------------

def loss_scaling(batch: DistributedBatch, global_batch_size: Optional[int]) -> Tuple[str, int]:
    """How each replica of a step on ``batch`` scales its loss sum, as the custom loop's
    ``compute_average_loss(per_example_loss, global_batch_size)`` would: the core's scaling, and
    the divisor of every replica's sum (0: each its own count x the replicas)."""
    if global_batch_size is None:
        return "replica-mean", 0  # compute_average_loss without global_batch_size (and model.fit)
    if not _numbers.is_whole(global_batch_size):
        raise TypeError(f"global_batch_size must be a whole number, not {global_batch_size!r}")
    nominal = batch._per_replica * batch._strategy.num_replicas_in_sync
    if global_batch_size == nominal:
        return "global-batch", nominal
    if global_batch_size == batch.global_batch_size:
        return "batch-mean", batch.global_batch_size
    raise ValueError(f"global_batch_size={global_batch_size}: mirrorlab divides each replica's loss "
                     f"sum by the data set's global batch ({nominal}) or by this batch's examples "
                     f"({batch.global_batch_size}): give one of them, or None (each replica's "
                     "mean over num_replicas_in_sync)")


_ORDER = ["split", "forward", "backward", "all-reduce step", "update"]


class StepByStep:
    """One training step of ``model`` on ``batch`` (a DistributedBatch of its strategy), its
    phases called one at a time, every replica held between them:

        step = ml.distribute.StepByStep(model, batch)   # after the split: step.shards
        logits = step.forward()       # each replica's logits; step.losses: per example
        grads = step.backward()       # each replica's own gradients
        step.all_reduce_step()        # one step of the all-reduce (the ring's, ...)
        summed = step.all_reduce()    # the rest of it: every replica holds the sum
        prints = step.update()        # the optimizer's update: the weights' fingerprints

    Every value comes back as NumPy, per replica (PerReplica). ``set_gradients`` changes a
    replica's gradients before the update: summed by the all-reduce if changed before it, or
    applied to that replica alone after it, when the replicas leave sync (update() then raises
    ReplicasOutOfSyncError). ``global_batch_size``: what compute_average_loss divides by (None:
    each replica's mean over num_replicas_in_sync, as model.fit; the data set's global batch; or
    this batch's examples). The step is the one model.fit takes, bit for bit. Used as a context
    manager, it ends on leaving the block, by an exception too (which goes on); a step dropped
    half-way runs to its end.
    """

    def __init__(self, model: Any, batch: DistributedBatch,
                 global_batch_size: Optional[int] = None) -> None:
        if not isinstance(batch, DistributedBatch):
            raise TypeError("StepByStep takes a batch of strategy.experimental_distribute_dataset"
                            f"(...), not {type(batch).__name__}")
        model._check_compiled()
        if batch._strategy is not model._strategy:
            raise ValueError(f"the batch was distributed by {batch._strategy!r}, but "
                             f"{model.name} is mirrored by {model._strategy!r}")
        model._check_idle()
        model._build()
        self._model = model
        self._shapes = [w.shape for w in model.get_weights()]
        self.loss_scaling, self._divisor = loss_scaling(batch, global_batch_size)
        self._core = _mirrorlab._StepByStep(model._run, batch._data, batch._indices,
                                            batch._per_replica, self.loss_scaling)
        model._step = weakref.ref(self)
        model._trained = True
        self._losses: Optional[PerReplica] = None

    # --- where it is ---
    @property
    def num_replicas_in_sync(self) -> int:
        """Every worker's replicas (the values here are this worker's: local_replicas)."""
        return self._model._strategy.num_replicas_in_sync

    @property
    def local_replicas(self) -> int:
        """This process's replicas: how many values each PerReplica here holds."""
        return self._core.replicas

    @property
    def ended(self) -> bool:
        """Whether the step has run to its end (update(), finish(), or an error that ended it):
        the devices are free again."""
        return self._core.boundary == ""

    @property
    def where(self) -> str:
        """Where the replicas are held: "step 3: after backward", ...; "ended"."""
        return self._core.point.get("label", "ended")

    @property
    def all_reduce_phase(self) -> str:
        """Held in the all-reduce: the phase of its last step ("reduce-scatter", ...)."""
        return self._core.point.get("all_reduce_phase", "")

    def _past(self, boundary: str) -> bool:
        return self.ended or _ORDER.index(self._core.boundary) > _ORDER.index(boundary)

    def _go_to(self, boundary: str, call: str) -> None:
        if self._past(boundary):
            raise RuntimeError(f"{call}: the step is past it ({self.where}); start another "
                               "StepByStep for the next batch")
        while self._core.boundary != boundary:
            self._core.advance()

    def _per_replica(self, read: Callable[[int], Any]) -> PerReplica:
        if self.ended:
            raise RuntimeError("the step has ended: its replicas' values are the model's now "
                               "(model.get_weights())")
        return PerReplica([read(r) for r in range(self.local_replicas)])

    def _tensors(self, flat: np.ndarray) -> List[np.ndarray]:
        out, at = [], 0
        for shape in self._shapes:
            size = int(np.prod(shape))
            out.append(flat[at:at + size].reshape(shape))
            at += size
        return out

    # --- the phases ---
    @property
    def shards(self) -> PerReplica:
        """Each replica's shard as it holds it: images [n, 28, 28, 1] in [0, 1], labels."""
        return self._per_replica(lambda r: self._core.shard(r))

    def forward(self) -> PerReplica:
        """Each replica runs the model on its shard: its logits [n, classes]."""
        self._go_to("forward", "forward()")
        pairs = self._per_replica(lambda r: self._core.logits(r))
        self._losses = PerReplica([loss for _, loss in pairs.values])
        return PerReplica([logits for logits, _ in pairs.values])

    @property
    def losses(self) -> PerReplica:
        """After forward: each example's loss, -log softmax(logits)[label], per replica."""
        if self._losses is None:
            raise RuntimeError("call forward() first")
        return self._losses

    def backward(self) -> PerReplica:
        """Each replica backpropagates its loss, scaled as compute_average_loss(per_example_loss,
        global_batch_size) scales it (``loss_scaling``): its own gradients, one per weight."""
        self._go_to("backward", "backward()")
        return self.gradients

    def all_reduce_step(self) -> PerReplica:
        """One step of the all-reduce: every replica's gradient buffer after it."""
        if not self._past("backward"):
            self._go_to("backward", "all_reduce_step()")
        if self._core.boundary not in ("backward", "all-reduce step"):
            raise RuntimeError(f"all_reduce_step(): the all-reduce is done ({self.where})")
        self._core.advance()
        if self._core.boundary != "all-reduce step":
            raise RuntimeError(f"all_reduce_step(): the all-reduce had no more steps; the "
                               f"update is done ({self.where})")
        return self.gradients

    def all_reduce(self) -> PerReplica:
        """The rest of the all-reduce: every replica's gradients, summed over the replicas. Held
        after its last step, before the update: set_gradients there changes one replica's."""
        if not self._past("backward"):
            self._go_to("backward", "all_reduce()")
        if self._core.boundary not in ("backward", "all-reduce step"):
            raise RuntimeError(f"all_reduce(): the all-reduce is done ({self.where})")
        while True:
            point = self._core.point
            if point["boundary"] == "all-reduce step" and \
                    point["all_reduce_step"] + 1 >= point["all_reduce_steps"]:
                break
            if point["boundary"] not in ("backward", "all-reduce step"):
                break  # one replica: no all-reduce, and the update is done
            self._core.advance()
        return self.gradients

    def update(self) -> PerReplica:
        """The optimizer's update on every replica; ends the step. Each replica's weights'
        fingerprint: all equal while the replicas are in sync (else ReplicasOutOfSyncError)."""
        self._go_to("update", "update()")
        prints = self.fingerprints
        self._core.finish()
        return prints

    def finish(self) -> None:
        """Runs the rest of the step without stopping."""
        if not self.ended:
            self._core.finish()

    # --- every replica's values, while held ---
    @property
    def gradients(self) -> PerReplica:
        """Each replica's gradients now, one array per weight (model.get_weights()' shapes)."""
        return self._per_replica(lambda r: self._tensors(self._core.gradients(r)))

    @property
    def weights(self) -> PerReplica:
        """Each replica's weights now, as model.get_weights() gives them."""
        return self._per_replica(lambda r: self._tensors(self._core.weights(r)))

    @property
    def fingerprints(self) -> PerReplica:
        """A hash of each replica's weights: equal on every replica in sync."""
        return self._per_replica(self._core.fingerprint)

    def set_gradients(self, replica: int, gradients: Any) -> None:
        """Replica ``replica``'s gradients from now on: a list of arrays as ``gradients`` gives,
        or one flat array. After backward or between the all-reduce's steps."""
        n = self.local_replicas
        if not _numbers.is_whole(replica) or not 0 <= replica < n:
            raise ValueError(f"replica {replica!r}: the replicas are 0 to {n - 1}" if n > 1
                             else f"replica {replica!r}: the one replica is 0")
        if isinstance(gradients, (list, tuple)):
            if len(gradients) != len(self._shapes):
                raise ValueError(f"give {len(self._shapes)} arrays (one per weight), not "
                                 f"{len(gradients)}")
            for i, (g, shape) in enumerate(zip(gradients, self._shapes)):
                if np.shape(g) != shape:
                    raise ValueError(f"gradient {i} has shape {np.shape(g)}, its weight {shape}")
            flat = np.concatenate([np.asarray(g, dtype=np.float32).ravel() for g in gradients])
        else:
            flat = np.asarray(gradients, dtype=np.float32).ravel()
        if self._core.boundary not in ("backward", "all-reduce step"):
            raise RuntimeError(f"set_gradients: only after backward and between the all-reduce's "
                               f"steps ({self.where})")
        self._core.set_gradients(int(replica), np.ascontiguousarray(flat))

    def __enter__(self) -> "StepByStep":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        # The step ends on leaving the block, by an exception too: left held, it would hold every
        # device (no fit, evaluation or new model until it ended). It is finished, not abandoned:
        # the core has no way to leave a step half-way (its replicas are inside one
        # strategy.run; its own end, dropping a step, runs it to its end too), so the model takes
        # this step's update, as it would from a dropped StepByStep.
        if kind is None:
            self.finish()
            return
        try:
            self.finish()
        except Exception as end:  # the step has ended anyway; the block's exception is the news
            if hasattr(value, "add_note"):  # Python 3.11 on
                value.add_note(f"(ending the StepByStep on leaving the block failed too: {end})")

    def __repr__(self) -> str:
        return f"<StepByStep of {self._model.name}: {self.where}>"
