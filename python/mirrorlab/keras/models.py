"""keras.Sequential for mirrorlab: a stack of the core's layers, mirrored by the strategy it was
made under, trained by the core's fit loop (the same as `mirrorlab train`'s, bit for bit)."""

from __future__ import annotations

import json
import sys
import weakref
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _arrays, _mirrorlab, _numbers, distribute
from . import _model_file, _optimizer_state, _weights_file, callbacks as callbacks_module
from . import layers as layers_module, losses
from . import optimizers, utils

__all__ = ["Sequential", "load_model"]

_ACCURACY = _model_file.ACCURACY


_whole = _numbers.whole


class Sequential:
    """keras.Sequential: layers in order, on 28x28 Fashion-MNIST images.

    Made inside ``strategy.scope()``, it is mirrored on that strategy's devices; outside any
    scope, on one device (TensorFlow's default strategy).
    """

    def __init__(self, layers: Optional[Sequence[layers_module.Layer]] = None,
                 name: Optional[str] = None) -> None:
        self.name = name or layers_module._unique_name("sequential")
        self._layers: List[layers_module.Layer] = []
        self._input_shape: Optional[Tuple[int, ...]] = None
        self._strategy = distribute.get_strategy()
        self._seed = utils._current_seed()
        self._run = None
        self._optimizer: Optional[optimizers.Optimizer] = None
        self._loss: Optional[losses.SparseCategoricalCrossentropy] = None
        self._accuracy = False
        self._trained = False
        self._built_by_load = False  # load_model built the optimizer, as Keras'
        self._step = None  # weakref to a StepByStep under way
        self.stop_training = False  # a callback's to set: fit ends after the epoch
        for layer in layers or []:
            self.add(layer)

    # --- the layers ---------------------------------------------------------------------------

    @property
    def layers(self) -> List[layers_module.Layer]:
        """The model's layers in order (a copy: add() changes the model). keras.Input is no
        layer here."""
        return list(self._layers)

    def add(self, layer: Union[layers_module.Layer, layers_module.InputLayer]) -> None:
        """Appends ``layer`` (or keras.Input(...), first only); before the model is built."""
        if self._run is not None:
            raise ValueError(f"{self.name} is built (compiled, summarised or asked for its "
                             "weights): add its layers before")
        if isinstance(layer, layers_module.InputLayer):
            if self._layers or self._input_shape is not None:
                raise ValueError("keras.Input(...) comes first, once")
            self._input_shape = layer.input_shape
            return
        if not isinstance(layer, layers_module.Layer):
            raise TypeError(f"a Sequential model takes mirrorlab.keras.layers, not {layer!r}")
        if any(layer is other for other in self._layers):
            raise ValueError(f"layer {layer.name} is already in {self.name}")
        if layer.input_shape is not None:
            if self._layers or self._input_shape is not None:
                raise ValueError(f"{layer.name}: only the first layer takes an input_shape")
            self._input_shape = layer.input_shape
        self._layers.append(layer)

    def _core_layers(self) -> List[Tuple[str, int, str]]:
        if not self._layers:
            raise ValueError(f"{self.name} has no layers: give Sequential([...]) some")
        if self._input_shape is None:
            raise ValueError(f"{self.name} does not know its input: give the first layer "
                             "input_shape=(28, 28) (or (28, 28, 1) before a Conv2D), or start "
                             "with keras.Input(shape=(28, 28))")
        first_conv = next((i for i, l in enumerate(self._layers)
                           if isinstance(l, layers_module.Conv2D)), None)
        if first_conv is not None and self._input_shape == (28, 28):
            raise ValueError("a Conv2D takes images with a channel: input_shape=(28, 28, 1)")
        out: List[Tuple[str, int, str]] = []
        for i, layer in enumerate(self._layers):
            out += layer._core_layers(last=i + 1 == len(self._layers))
        return out

    def _settings(self) -> Dict[str, object]:
        ops = self._strategy._cross_device_ops
        optimizer = self._optimizer or optimizers.Adam()
        return {**optimizer._settings(), "seed": self._seed, "allreduce": ops._algorithm,
                "num_packs": ops.num_packs if ops.num_packs > 1 else 0}

    def _build(self) -> None:
        if self._run is None:
            self._run = _mirrorlab._Run(json.dumps(self._settings()), self._core_layers(),
                                        self._strategy._indices, self._strategy._workers)
            built = self._strategy._built_models
            built[:] = [r for r in built if r() is not None and r() is not self]
            built.append(weakref.ref(self))

    # --- Keras' calls ---------------------------------------------------------------------------

    def compile(self, optimizer: Union[str, optimizers.Optimizer] = "rmsprop",
                loss: Union[str, losses.SparseCategoricalCrossentropy, None] = None,
                metrics: Optional[Sequence[str]] = None) -> None:
        """The optimizer, the loss and the metrics (mirrorlab has 'accuracy')."""
        if distribute.has_strategy() and distribute.get_strategy() is not self._strategy:
            raise RuntimeError(
                f'Need to be inside "with strategy.scope()" for {self._strategy!r}: {self.name} '
                f"was made there and is compiled under {distribute.get_strategy()!r}; make the "
                "model inside the scope of the strategy that trains it (with strategy.scope(): "
                "model = ...; model.compile(...))")
        if self._trained:
            raise ValueError(f"{self.name} has trained: mirrorlab compiles a model once; make a "
                             "new one to train with other settings")
        if optimizer == "rmsprop":
            raise ValueError("optimizer 'rmsprop' (Keras' default): mirrorlab has 'sgd', 'adam' "
                             "and 'nadam': give compile(optimizer='adam', ...)")
        chosen = optimizers._get(optimizer)  # kept only once every check has passed
        if loss is None:
            raise ValueError("give compile() a loss: 'sparse_categorical_crossentropy', or "
                             "keras.losses.SparseCategoricalCrossentropy(from_logits=True)")
        chosen_loss = losses._get(loss)
        last = self._layers[-1] if self._layers else None
        softmax = last is not None and last.activation == "softmax"
        if chosen_loss.from_logits and softmax:
            raise ValueError(f"{last.name} ends in a softmax, but the loss takes logits "
                             "(from_logits=True): drop one of them")
        if not chosen_loss.from_logits and last is not None and not softmax:
            raise ValueError(
                f"the loss takes probabilities (from_logits=False) but {last.name} gives logits "
                "(no activation): Keras would take them as probabilities and train badly; give "
                "SparseCategoricalCrossentropy(from_logits=True), or activation='softmax'")
        if isinstance(metrics, str):  # its letters would be read as metrics, one by one
            raise ValueError(f"metrics is a list, e.g. metrics=[{metrics!r}], not the string "
                             f"{metrics!r}")
        metrics = list(metrics or [])
        for m in metrics:
            if m not in _ACCURACY:
                raise ValueError(f"metric {m!r}: mirrorlab measures 'accuracy'")
        self._optimizer, self._loss, self._accuracy = chosen, chosen_loss, bool(metrics)
        chosen._compiled_into(self)  # its learning_rate set from now on is this model's run's too
        self._built_by_load = False  # a new optimizer, its slots made at the first step
        # Built again with this optimizer, keeping the weights it held (the seed's initial ones,
        # or those set or loaded since), as Keras' compile keeps them.
        kept = self._run.get_weights() if self._run is not None else None
        self._run = None
        self._build()
        if kept is not None:
            self.set_weights(kept)

    @property
    def _optimizer_built(self) -> bool:
        """Whether the optimizer has made its slots, as Keras': at the first training step since
        compile (compile is refused after it), or as load_model compiles."""
        return self._trained or self._built_by_load

    def summary(self) -> None:
        """Keras 3's table of the layers, a row each (an activation="relu" is part of its layer's
        row, as in Keras, though the core runs it as a ReLU layer of its own; an Activation("relu")
        is a ReLU layer in the core, an Activation in the table, as in Keras)."""
        self._build()
        folded = [layer._activation_name() for layer in self._layers]
        types = {layer.name: "Activation" for layer in self._layers
                 if getattr(layer, "_key", "") == "activation"}
        print(self._run.summary(self.name, [name for name in folded if name], types), end="")

    def count_params(self) -> int:
        """How many numbers the weights hold, every kernel and bias (summary()'s Total params)."""
        return sum(int(w.size) for w in self.get_weights())

    def get_weights(self) -> List[np.ndarray]:
        """Every kernel and bias, in order (replica 0's: every replica holds the same)."""
        self._build()
        return self._run.get_weights()

    def set_weights(self, weights: Sequence[object]) -> None:
        """Every kernel and bias, in get_weights()' order and shapes, on every replica (replicas
        that had left sync are in it again; the optimizer's state is kept)."""
        self._check_idle()
        self._build()
        now = self._run.get_weights()
        given = list(weights) if not isinstance(weights, np.ndarray) else None
        if given is None or len(given) != len(now):
            count = "an array" if given is None else f"{len(given)} arrays"
            raise ValueError(f"set_weights takes a list of {len(now)} arrays, as get_weights() "
                             f"gives them, not {count}")
        arrays = []
        for name, old, new in zip(self._run.weight_names(), now, given):
            try:
                array = np.asarray(new, dtype=np.float32)
            except (TypeError, ValueError):
                raise TypeError(f"set_weights: {name} must be an array of numbers, not "
                                f"{type(new).__name__}") from None
            if array.shape != old.shape:
                raise ValueError(f"set_weights: {name} has the shape {old.shape}, not "
                                 f"{array.shape}")
            if not np.isfinite(array).all():
                raise ValueError(f"set_weights: {name} holds NaN or infinity: training or "
                                 "predicting from it would give NaN")
            arrays.append(np.ascontiguousarray(array))
        self._run.set_weights(arrays)

    def save_weights(self, filepath, overwrite: bool = True) -> None:
        """Every layer's kernel and bias in Keras 3's weights file (``filepath`` ends in
        ``.weights.h5``; HDF5, through h5py): keras.Sequential(...).load_weights(filepath) reads
        it into the same layers in TensorFlow. The optimizer's variables too, as Keras writes
        them (its update count and learning rate; its slots once a training step has made them),
        so a fit loaded from it goes on where this one stopped. An existing file is replaced
        only if it is HDF5 and ``overwrite`` (Keras asks on a terminal when overwrite=False;
        mirrorlab refuses)."""
        self._check_idle()
        self._build()
        self._run.check_in_sync("model.save_weights")
        optimizer = self._optimizer._kind if self._optimizer else ""
        _weights_file.save(filepath, overwrite, self.name, optimizer, self._file_layers(),
                           _optimizer_state.variables(self))

    def load_weights(self, filepath) -> None:
        """The layers' weights from a weights file of save_weights, or of Keras 3's for a model
        of the same layers (by their kinds in order, whatever their names), on every replica, as
        set_weights. The optimizer's variables there (its update count, learning rate and slots)
        are loaded as Keras loads them: when they are as many as the optimizer has now (its
        slots are made at the first training step, or by load_model), else a warning says they
        were skipped."""
        self._check_idle()
        self._build()
        arrays, state = _weights_file.load(
            filepath, self._file_layers(),
            lambda saved, path: _optimizer_state.checked(self, saved, path))
        self.set_weights(arrays)
        _optimizer_state.load(self, state, stacklevel=2)

    def save(self, filepath, overwrite: bool = True) -> None:
        """The whole model in Keras 3's .keras file (a zip: its layers and how it was compiled
        in config.json, the weights as save_weights writes them): keras.models.load_model
        reads it, in TensorFlow or in mirrorlab, with the optimizer's variables, as
        save_weights. An existing file is replaced only if it is a zip and ``overwrite``."""
        from .. import __version__  # the package's, imported once the package is

        self._check_idle()
        self._build()
        self._run.check_in_sync("model.save")
        _model_file.save(filepath, overwrite, self, __version__, self._file_layers())

    def _file_layers(self):
        """(the layer's group in a weights file, its name, its arrays now) for every layer."""
        grouped = _weights_file.by_layer(self._run.weight_names(), self._run.get_weights())
        keys = _weights_file.layer_keys(self._layers)
        return [(k, layer.name, grouped.get(layer.name, []))
                for k, layer in zip(keys, self._layers)]

    def predict(self, x=None, batch_size: Optional[int] = None,
                verbose: Union[str, int] = "auto") -> np.ndarray:
        """The last layer's outputs for every image of ``x`` (logits, for a last Dense without
        softmax; with activation="softmax", the probabilities), shape (images, classes), every
        replica taking its share of each global batch (one that does not split evenly too, as
        in Keras: each image's outputs are its own).
        Keras' line by ``verbose``, as evaluate's without metrics."""
        self._check_idle()
        verbose = 1 if verbose == "auto" else _whole("verbose", verbose, 0, 2)
        n = self._strategy.num_replicas_in_sync
        batch = 32 if batch_size is None else _whole("batch_size", batch_size, 1, 65536 * n)
        images = self._images(x, "x")
        self._build()
        try:
            logits = self._run.predict(images, batch, *self._printing(verbose)[:3])
        finally:
            sys.stdout.flush()
        workers = self._strategy._workers
        if workers is not None:  # each worker predicted its shards: the others' rows are 0
            summed = workers.all_reduce_sum(logits.astype(np.float64).ravel())
            logits = summed.reshape(logits.shape).astype(np.float32)
        if self._layers[-1].activation == "softmax":  # the core gives the logits before it
            shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
            return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)
        return logits

    @property
    def optimizer(self) -> Optional[optimizers.Optimizer]:
        """The optimizer compile() was given (None before it)."""
        return self._optimizer

    @property
    def loss(self) -> Optional[losses.SparseCategoricalCrossentropy]:
        """The loss compile() was given (None before it)."""
        return self._loss

    @property
    def num_replicas_in_sync(self) -> int:
        """The replicas of the strategy the model was made under, each holding a copy."""
        return self._strategy.num_replicas_in_sync

    def _images(self, x: object, what: str) -> np.ndarray:
        images = _arrays.image_bytes(x, what, self._input_shape, self.name)
        if not len(images):  # a loss or an accuracy of no images would be a number of nothing
            raise ValueError(f"{what} holds no images: give at least one")
        return images

    def _classes(self) -> int:
        last = self._layers[-1]
        return last.units if isinstance(last, layers_module.Dense) else 256

    def _labels(self, y: object, count: int, what: str) -> np.ndarray:
        return _arrays.class_numbers(y, count, what, self._classes())

    def _per_replica(self, batch_size: Optional[int]) -> int:
        n = self._strategy.num_replicas_in_sync
        batch = 32 if batch_size is None else _whole("batch_size", batch_size, 1, 65536 * n)
        if batch % n:
            raise ValueError(f"batch_size={batch} does not split over {n} replicas: mirrorlab's "
                             f"global batch is a multiple of num_replicas_in_sync (give "
                             f"{batch - batch % n or n} or {batch - batch % n + n}); Keras 3.15 "
                             "fails there too, with an AddN shape error in its first step")
        return batch // n

    def _check_compiled(self) -> None:
        if self._optimizer is None:
            raise ValueError("You must call `compile()` before using the model.")

    def _check_idle(self) -> None:
        step = self._step() if self._step is not None else None
        if step is not None and not step.ended:
            raise RuntimeError(f"{self.name} is in a step taken phase by phase ({step.where}): "
                               "end it first (step.update() or step.finish())")

    def train_step(self, batch, global_batch_size: Optional[int] = None) -> "distribute.PerReplica":
        """One training step on a distributed batch, as model.fit takes it:
        ``strategy.run(model.train_step, args=(batch,))``. Each replica's loss as
        compute_average_loss(per_example_loss, global_batch_size) gives it (None: its mean over
        num_replicas_in_sync, as model.fit), so ``strategy.reduce("SUM", losses)`` is the
        step's loss."""
        step = distribute.StepByStep(self, batch, global_batch_size)
        n, divisor = step.num_replicas_in_sync, step._divisor
        losses = [(loss_sum / divisor if divisor else loss_sum / count / n) if count else 0.0
                  for loss_sum, count, _ in step._core.finish()]
        return distribute.PerReplica(losses) if len(losses) > 1 else losses[0]

    train_step._runs_every_replica = True  # strategy.run hands it the whole batch

    def fit(self, x=None, y=None, batch_size: Optional[int] = None, epochs: int = 1,
            verbose: Union[str, int] = "auto", validation_split: float = 0.0,
            validation_data=None, shuffle: bool = True,
            callbacks: Optional[Sequence["callbacks_module.Callback"]] = None
            ) -> "callbacks_module.History":
        """Trains on (x, y): every epoch shuffled, each global batch of ``batch_size`` split
        among the replicas. ``callbacks``: keras.callbacks (EarlyStopping, ModelCheckpoint,
        LambdaCallback, a Callback of yours), called as each epoch and the training begin and
        end. Ctrl-C (KeyboardInterrupt) stops after the step under way."""
        self._check_compiled()
        self._check_idle()
        called = self._callbacks(callbacks)
        if shuffle is not True:
            raise ValueError("mirrorlab shuffles the examples every epoch (Keras' default): "
                             "shuffle=False is not offered")
        epochs = _whole("epochs", epochs, 0, 1000)
        per_replica = self._per_replica(batch_size)
        images = self._images(x, "x")
        labels = self._labels(y, len(images), "y")
        val = None
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
                raise ValueError("validation_data is a pair (x_val, y_val)")
            vx = self._images(validation_data[0], "validation_data's x")
            val = (vx, self._labels(validation_data[1], len(vx), "validation_data's y"))
        elif validation_split:
            if not _numbers.is_number(validation_split) or not 0 < validation_split < 1:
                raise ValueError(f"validation_split={validation_split!r}: give a fraction "
                                 "between 0 and 1")
            keep = int(len(images) * (1 - validation_split))
            val = (images[keep:], labels[keep:])
            images, labels = images[:keep], labels[:keep]
        if len(images) == 0:
            raise ValueError("no images to train on")
        verbose = 1 if verbose == "auto" else _whole("verbose", verbose, 0, 2)
        global_batch = per_replica * self._strategy.num_replicas_in_sync
        params = {"verbose": verbose, "epochs": epochs,
                  "steps": -(-len(images) // global_batch)}  # an epoch's, as Keras
        for callback in called:
            callback.set_model(self)
            callback.set_params(params)
        self.stop_training = False
        if epochs == 0:  # as Keras: nothing trained, an empty history, the callbacks told
            for callback in called:
                callback.on_train_begin({})
            for callback in called:
                callback.on_train_end({})
            return callbacks_module.History({}, params)
        self._build()
        self._trained = True
        keys = ["loss"] + (["accuracy"] if self._accuracy else [])
        keys += [f"val_{k}" for k in keys] if val else []
        last_logs: Dict[str, float] = {}

        def epoch_hook(event: str, epoch: int, logs: Dict[str, float]) -> bool:
            """Called by the core's fit between steps; true ends the fit (after an epoch)."""
            nonlocal last_logs
            if event == "begin":
                for callback in called:
                    callback.on_epoch_begin(epoch, {})
                return False  # stop_training is read as the epoch ends, as Keras reads it
            last_logs = {k: logs[k] for k in sorted(keys) if k in logs}
            for callback in called:
                callback.on_epoch_end(epoch, dict(last_logs))
            sys.stdout.flush()
            return bool(self.stop_training)

        for callback in called:
            callback.on_train_begin({})
        try:
            result = self._run.fit(images, labels, per_replica, epochs, 0,
                                   val[0] if val else None, val[1] if val else None,
                                   *self._printing(verbose),
                                   epoch_hook=epoch_hook if called else None)
        finally:
            sys.stdout.flush()
        for callback in called:
            callback.on_train_end(dict(last_logs))
        sys.stdout.flush()
        history = {k: result[k] for k in sorted(keys)}
        # train_seconds: the steps' time, as `mirrorlab train` reports it (its images/s).
        return callbacks_module.History(history, dict(params, train_seconds=result["seconds"]))

    @staticmethod
    def _callbacks(given) -> List["callbacks_module.Callback"]:
        """fit's callbacks, checked: Callback objects whose hooks mirrorlab calls."""
        if given is None:
            return []
        if isinstance(given, callbacks_module.Callback) or not isinstance(given, (list, tuple)):
            raise TypeError("callbacks is a list of keras.callbacks objects, e.g. "
                            f"callbacks=[{type(given).__name__}(...)]")
        for callback in given:
            if not isinstance(callback, callbacks_module.Callback):
                raise TypeError(f"callbacks: {callback!r} is no keras.callbacks.Callback; "
                                "subclass keras.callbacks.Callback, or use LambdaCallback")
            not_called = callback._hooks_not_called()
            if not_called:
                raise ValueError(f"{type(callback).__name__} defines {', '.join(not_called)}, "
                                 "which mirrorlab's fit does not call: it calls a callback as "
                                 "the training and each epoch begin and end (on_train_begin, "
                                 "on_epoch_begin, on_epoch_end, on_train_end)")
        return list(given)

    def evaluate(self, x=None, y=None, batch_size: Optional[int] = None,
                 verbose: Union[str, int] = "auto", return_dict: bool = False):
        """The loss (and accuracy, if compiled with it) over (x, y), every replica taking its
        share of each global batch."""
        self._check_compiled()
        self._check_idle()
        per_replica = self._per_replica(batch_size)
        images = self._images(x, "x")
        labels = self._labels(y, len(images), "y")
        verbose = 1 if verbose == "auto" else _whole("verbose", verbose, 0, 2)
        try:
            loss, accuracy = self._run.evaluate(images, labels, per_replica,
                                                *self._printing(verbose))
        finally:
            sys.stdout.flush()
        if return_dict:
            return {"accuracy": accuracy, "loss": loss} if self._accuracy else {"loss": loss}
        return [loss, accuracy] if self._accuracy else loss

    def _printing(self, verbose: int):
        """How fit and evaluate print, as Keras by `verbose`: (write, live, one_line, accuracy).
        0: nothing; 1: the bar, redrawn live on a terminal or in a notebook, else its last line;
        2: one line per epoch."""
        live = verbose == 1 and (sys.stdout.isatty() or "ipykernel" in sys.modules)
        return (sys.stdout.write if verbose else None), live, verbose == 2, self._accuracy

    def progress(self) -> Dict[str, float]:
        """Where a fit stands now (its epoch and step, the running loss and accuracy): to read
        from another thread while fit() runs there."""
        if self._run is None:
            return {}
        return self._run.progress()


def load_model(filepath, compile: bool = True) -> Sequential:  # noqa: A002 (Keras' name)
    """keras.models.load_model: the Sequential model of a .keras file (model.save's, or Keras
    3's of the layers mirrorlab computes), made under the strategy whose scope this is called
    in (mirrored on its devices, as Keras makes it), its weights loaded and, with ``compile``,
    compiled as it was saved. What mirrorlab cannot compute (a layer, an activation, a
    regularizer, an optimizer's setting) is refused, naming it. Compiled, its optimizer is
    built and takes the file's variables, as Keras' (a file saved before any training step
    holds too few: a warning says they were skipped), so fit goes on where it stopped."""
    path, config, weights = _model_file.read(filepath)
    try:
        made, shape = _model_file.layers_of(path, config)
        arguments = _model_file.compile_arguments(path, config) if compile else None
    except (AttributeError, KeyError, IndexError, TypeError) as e:  # what the checks missed
        raise ValueError(f"{path}: its config.json is not laid out as Keras writes it "
                         f"({type(e).__name__}: {e})") from None
    name = (config.get("config") or {}).get("name")
    try:
        model = Sequential([layers_module.Input(shape), *made],
                           name=name if isinstance(name, str) and name else None)
    except (TypeError, ValueError) as e:  # the layers do not go together, or the input
        raise ValueError(f"{path}: {e}") from None
    if arguments is not None:
        try:
            model.compile(**arguments)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: the model cannot be compiled as it was saved: {e} "
                             f"{_model_file.AFTER}") from None
    model._build()
    model._built_by_load = model.optimizer is not None  # as Keras builds it, to load into it
    arrays, state = _weights_file.read(
        weights, path, model._file_layers(),
        lambda saved, path: _optimizer_state.checked(model, saved, path))
    model.set_weights(arrays)
    _optimizer_state.load(model, state, stacklevel=2)
    return model
