"""Keras 3's whole-model file, NAME.keras: what model.save writes and keras.models.load_model
reads. A zip, laid out as Keras 3.15 was seen to write it:
    metadata.json       {"keras_version": ..., "date_saved": ...} (mirrorlab's version, its own)
    config.json         the model: a Sequential of its layers' configs, and how it was compiled
    model.weights.h5    the weights, as save_weights writes them
Keras' configs hold more than mirrorlab's layers take (initializers, regularizers, dtypes): on
reading, what does not change what the layers compute is passed over, and what mirrorlab cannot
compute (a tanh, padding "same", a bias left out, a regularizer) is refused, naming it.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import zipfile
from typing import Any, Dict, List, Optional, Tuple

from . import _optimizer_state, _weights_file, layers as layers_module, losses, optimizers

ENDING = ".keras"

# Keras' layer keys whose values do not change what mirrorlab computes (the weights are loaded).
_PASSED_OVER = {"name", "dtype", "kernel_initializer", "bias_initializer", "quantization_config",
                "build_config", "data_format"}
# Keys mirrorlab computes only with these values (Keras' defaults).
_MUST_BE = {"trainable": True, "use_bias": True, "kernel_regularizer": None,
            "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None,
            "bias_constraint": None, "dilation_rate": [1, 1], "groups": 1, "lora_rank": None,
            "lora_alpha": None, "max_value": None, "negative_slope": 0.0, "threshold": 0.0}
# Each layer class: the config keys given to mirrorlab's layer of that name.
_TAKEN = {"Conv2D": ("filters", "kernel_size", "strides", "padding", "activation"),
          "MaxPooling2D": ("pool_size", "strides", "padding"), "Flatten": (),
          "Dense": ("units", "activation"), "ReLU": (), "Activation": ("activation",)}


def _path(filepath: object, call: str) -> str:
    if not isinstance(filepath, (str, os.PathLike)):
        raise TypeError(f"{call} takes a file name ending in {ENDING}, not "
                        f"{type(filepath).__name__}")
    path = str(os.fspath(filepath))
    if not path.endswith(ENDING):
        saving = call == "model.save"
        raise ValueError(f"Invalid filepath extension for {'saving' if saving else 'loading'}. "
                         f"Please add a `.keras` extension. Received: filepath={path} "
                         f"(mirrorlab's {call} {'writes' if saving else 'reads'} Keras 3's "
                         ".keras file; for the weights alone: "
                         f"{'save_weights' if saving else 'load_weights'}('NAME.weights.h5'))")
    return path


def _layer_config(layer: Any) -> Dict[str, Any]:
    cls = "Activation" if getattr(layer, "_key", "") == "activation" else layer._kind
    config: Dict[str, Any] = {"name": layer.name, "trainable": True}
    if cls == "Conv2D":
        config.update(filters=layer.filters, kernel_size=[3, 3], strides=[1, 1],
                      padding="valid", data_format="channels_last",
                      activation=layer.activation or "linear", use_bias=True)
    elif cls == "MaxPooling2D":
        config.update(pool_size=[2, 2], strides=[2, 2], padding="valid",
                      data_format="channels_last")
    elif cls == "Flatten":
        config.update(data_format="channels_last")
    elif cls == "Dense":
        config.update(units=layer.units, activation=layer.activation or "linear",
                      use_bias=True)
    elif cls == "Activation":
        config.update(activation="relu")
    return {"module": "keras.layers", "class_name": cls, "config": config,
            "registered_name": None}


def _compile_config(optimizer: Optional[optimizers.Optimizer],
                    loss: Optional[losses.SparseCategoricalCrossentropy],
                    accuracy: bool) -> Optional[Dict[str, Any]]:
    if optimizer is None or loss is None:
        return None
    settings = {"name": optimizer._kind, "learning_rate": optimizer.learning_rate}
    if isinstance(optimizer, optimizers.SGD):
        settings.update(momentum=optimizer.momentum, nesterov=False)
    elif isinstance(optimizer, optimizers.Adam):
        settings.update(beta_1=optimizer.beta_1, beta_2=optimizer.beta_2,
                        epsilon=optimizer.epsilon)
    return {"optimizer": {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
                          "config": settings, "registered_name": None},
            "loss": {"module": "keras.losses", "class_name": "SparseCategoricalCrossentropy",
                     "config": loss.get_config(), "registered_name": None},
            "loss_weights": None, "metrics": ["accuracy"] if accuracy else None,
            "weighted_metrics": None, "run_eagerly": False, "steps_per_execution": 1,
            "jit_compile": False}


def config_of(model: Any) -> Dict[str, Any]:
    """config.json's model: a Sequential of an InputLayer and the layers, compiled or not."""
    shape = [None, *model._input_shape]
    layer_configs = [{"module": "keras.layers", "class_name": "InputLayer",
                      "config": {"batch_shape": shape, "dtype": "float32", "sparse": False,
                                 "ragged": False, "name": "input_layer", "optional": False},
                      "registered_name": None}]
    layer_configs += [_layer_config(layer) for layer in model._layers]
    config = {"module": "keras", "class_name": "Sequential",
              "config": {"name": model.name, "trainable": True, "layers": layer_configs,
                         "build_input_shape": shape},
              "registered_name": None, "build_config": {"input_shape": shape}}
    compiled = _compile_config(model._optimizer, model._loss, model._accuracy)
    if compiled is not None:
        config["compile_config"] = compiled
    return config


def save(filepath: object, overwrite: bool, model: Any, version: str,
         weights: List[Tuple[str, str, list]]) -> None:
    """Writes the zip (an existing file replaced only if it is a zip, as write_safely says).
    The weights are written first, into memory: without h5py nothing is touched."""
    path = _path(filepath, "model.save")
    weights_h5 = io.BytesIO()
    optimizer = model._optimizer._kind if model._optimizer else ""
    _weights_file.write(weights_h5, model.name, optimizer, weights,
                        _optimizer_state.variables(model))
    metadata = {"keras_version": f"mirrorlab {version}",
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}

    def write(temporary: str) -> None:
        with zipfile.ZipFile(temporary, "w") as z:
            z.writestr("metadata.json", json.dumps(metadata))
            z.writestr("config.json", json.dumps(config_of(model)))
            z.writestr("model.weights.h5", weights_h5.getvalue())

    _weights_file.write_safely(path, overwrite, zipfile.is_zipfile,
                               "model file (not a zip)", write)


def read(filepath: object) -> Tuple[str, Dict[str, Any], io.BytesIO]:
    """(the path, config.json's model, model.weights.h5) of a .keras file, checked."""
    path = _path(filepath, "load_model")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file (model.save writes one)")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is no .keras file: not a zip (model.save writes one)")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            for needed in ("config.json", "model.weights.h5"):
                if needed not in names:
                    raise ValueError(f"{path} has no {needed}: it is no model file of Keras 3 "
                                     "or of mirrorlab's model.save")
            text, weights = z.read("config.json"), io.BytesIO(z.read("model.weights.h5"))
    except zipfile.BadZipFile as e:
        raise ValueError(f"{path} is a damaged zip ({e}): save the model again") from None
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{path}: its config.json is no JSON ({e})") from None
    if not weights.getvalue().startswith(_weights_file.HDF5_SIGNATURE):
        raise ValueError(f"{path}: its model.weights.h5 is no HDF5 file: save the model again")
    if not isinstance(config, dict) or config.get("class_name") != "Sequential":
        kind = config.get("class_name") if isinstance(config, dict) else type(config).__name__
        raise ValueError(f"{path} holds a {kind} model: mirrorlab's load_model reads Sequential "
                         "models")
    return path, config, weights


def _check_value(path: str, cls: str, name: str, key: str, value: Any) -> None:
    want, given = _MUST_BE[key], value
    if isinstance(want, list) and isinstance(value, int) and not isinstance(value, bool):
        value = [value] * len(want)  # Keras takes dilation_rate=1 for (1, 1)
    same = value == want or (isinstance(want, list) and isinstance(value, (list, tuple))
                             and list(value) == want)
    if not same:
        raise ValueError(f"{path}: layer {name} ({cls}) has {key}={given!r}; mirrorlab's "
                         f"core computes {cls} with {key}={want!r} only")


def _mapping(path: str, value: Any, what: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{path}: {what} is {type(value).__name__}, not an object as Keras "
                         "writes it: the file is not a model file of Keras 3 or of mirrorlab")
    return value


def _input_shape(path: str, batch_shape: Any) -> Tuple[int, ...]:
    if not isinstance(batch_shape, (list, tuple)) or len(batch_shape) < 2 or not all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in batch_shape[1:]):
        raise ValueError(f"{path}: the input's shape {batch_shape!r} is no batch shape (None, "
                         "28, 28) or (None, 28, 28, 1)")
    return tuple(batch_shape[1:])


def _dtype_name(dtype: Any) -> Any:
    """A layer's dtype as Keras writes it ("float32", or a DTypePolicy object) by its name."""
    if isinstance(dtype, dict):
        config = dtype.get("config")
        return config.get("name") if isinstance(config, dict) else dtype
    return dtype


def layers_of(path: str, config: Dict[str, Any]) -> Tuple[List[Any], Tuple[int, ...]]:
    """mirrorlab's layers for the Sequential's config, and its input's shape."""
    inner = _mapping(path, config.get("config"), "the model's config")
    items = inner.get("layers")
    if not isinstance(items, list) or not items:
        raise ValueError(f"{path}: the model has no list of layers: it is no Sequential model "
                         "mirrorlab can make")
    if inner.get("trainable", True) is not True:
        raise ValueError(f"{path}: the model is not trainable (trainable="
                         f"{inner.get('trainable')!r}); mirrorlab trains every layer")
    made: List[Any] = []
    shape = None
    for place, item in enumerate(items):
        item = _mapping(path, item, f"layer {place}")
        cls = item.get("class_name")
        layer = dict(_mapping(path, item.get("config", {}), f"layer {place}'s config"))
        name = layer.get("name")
        name = name if isinstance(name, str) and name else None
        said = name or f"{place}"
        dtype = _dtype_name(layer.get("dtype"))
        if dtype not in (None, "float32"):
            raise ValueError(f"{path}: layer {said} computes in {dtype}; mirrorlab computes in "
                             "float32")
        if cls == "InputLayer":
            if layer.get("sparse") or layer.get("ragged"):
                raise ValueError(f"{path}: its input is sparse or ragged; mirrorlab's is a "
                                 "dense array of images")
            if made:
                raise ValueError(f"{path}: an InputLayer after the first layer: mirrorlab's "
                                 "Sequential takes its input first")
            shape = _input_shape(path, layer.get("batch_shape", layer.get("batch_input_shape")))
            continue
        if not isinstance(cls, str) or cls not in _TAKEN:
            raise ValueError(f"{path}: layer {said} is a {cls}, which mirrorlab's core does not "
                             f"compute (it has {', '.join(sorted(_TAKEN))})")
        if layer.get("data_format", "channels_last") != "channels_last":
            raise ValueError(f"{path}: layer {said} ({cls}) is channels_first; mirrorlab "
                             "computes channels_last")
        kwargs: Dict[str, Any] = {"name": name}
        for key, value in layer.items():
            if key in _TAKEN[cls]:
                kwargs[key] = None if value == "linear" and key == "activation" else value
            elif key in _MUST_BE:
                _check_value(path, cls, said, key, value)
            elif key not in _PASSED_OVER:
                raise ValueError(f"{path}: layer {said} ({cls}) has {key}={value!r}, which "
                                 "mirrorlab does not know: it cannot say it computes the same")
        try:
            if cls == "Activation":
                made.append(layers_module.Activation(layer.get("activation"), name=name))
            else:
                made.append(getattr(layers_module, cls)(**kwargs))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: layer {said} ({cls}): {e}") from None
    if shape is None:
        build = inner.get("build_input_shape") or _mapping(
            path, config.get("build_config") or {}, "the model's build_config").get("input_shape")
        if build is None:
            raise ValueError(f"{path} does not say its model's input shape")
        shape = _input_shape(path, build)
    return made, shape


# The optimizers' config keys mirrorlab takes, and those it computes with one value only.
_OPTIMIZER_TAKES = {"SGD": ("learning_rate", "momentum"),
                    "Adam": ("learning_rate", "beta_1", "beta_2", "epsilon"),
                    "Nadam": ("learning_rate", "beta_1", "beta_2", "epsilon")}
_OPTIMIZER_MUST_BE = {"weight_decay": (None, 0, 0.0), "clipnorm": (None,),
                      "global_clipnorm": (None,), "clipvalue": (None,), "use_ema": (False,),
                      "ema_overwrite_frequency": (None,), "loss_scale_factor": (None,),
                      "gradient_accumulation_steps": (None,), "nesterov": (False,),
                      "amsgrad": (False,)}
_LOSS_MUST_BE = {"reduction": ("sum_over_batch_size",), "ignore_class": (None,),
                 "dtype": (None, "float32")}
ACCURACY = ("accuracy", "acc", "sparse_categorical_accuracy")  # what compile() measures
AFTER = "(load_model(..., compile=False) loads the layers; then compile them as you choose)"


def _optimizer(path: str, optimizer: Any) -> Any:
    if isinstance(optimizer, str):
        return optimizer
    optimizer = _mapping(path, optimizer, "the compiled optimizer")
    cls = optimizer.get("class_name")
    settings = _mapping(path, optimizer.get("config", {}), "the optimizer's config")
    if cls not in _OPTIMIZER_TAKES:
        raise ValueError(f"{path} was compiled with the optimizer {cls}: mirrorlab has SGD, "
                         f"Adam and Nadam {AFTER}")
    for key, value in settings.items():
        if key in _OPTIMIZER_MUST_BE and value not in _OPTIMIZER_MUST_BE[key]:
            raise ValueError(f"{path}: its {cls} has {key}={value!r}, which mirrorlab's {cls} "
                             f"does not compute {AFTER}")
        if key not in _OPTIMIZER_MUST_BE and key not in _OPTIMIZER_TAKES[cls] and \
                key not in ("name", "ema_momentum"):
            raise ValueError(f"{path}: its {cls} has {key}={value!r}, which mirrorlab does not "
                             f"know {AFTER}")
    if isinstance(settings.get("learning_rate"), dict):
        raise ValueError(f"{path}: its {cls}'s learning rate is a schedule, which mirrorlab "
                         f"does not compute {AFTER}")
    try:
        return getattr(optimizers, cls)(**{k: settings[k] for k in _OPTIMIZER_TAKES[cls]
                                           if k in settings})
    except (TypeError, ValueError) as e:  # a learning rate of NaN, a momentum of "a", ...
        raise ValueError(f"{path}: its {cls}: {e}") from None


def _loss(path: str, loss: Any) -> Any:
    if isinstance(loss, str) or loss is None:
        return loss
    loss = _mapping(path, loss, "the compiled loss")
    if loss.get("class_name") != "SparseCategoricalCrossentropy":
        said = loss.get("class_name") or f"{json.dumps(loss)[:80]} (no loss Keras names)"
        raise ValueError(f"{path} was compiled with the loss {said}: mirrorlab computes "
                         f"SparseCategoricalCrossentropy {AFTER}")
    settings = _mapping(path, loss.get("config", {}), "the loss's config")
    for key, value in settings.items():
        if key in _LOSS_MUST_BE and value not in _LOSS_MUST_BE[key]:
            raise ValueError(f"{path}: its loss has {key}={value!r}, which mirrorlab does not "
                             f"compute {AFTER}")
        if key not in _LOSS_MUST_BE and key not in ("name", "from_logits"):
            raise ValueError(f"{path}: its loss has {key}={value!r}, which mirrorlab does not "
                             f"know {AFTER}")
    from_logits = settings.get("from_logits", False)
    if not isinstance(from_logits, bool):
        raise ValueError(f"{path}: its loss has from_logits={from_logits!r}, not true or false")
    return losses.SparseCategoricalCrossentropy(from_logits=from_logits)


def compile_arguments(path: str, config: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """compile()'s arguments from config.json's compile_config, or None if there is none."""
    compiled = config.get("compile_config")
    if compiled is None or compiled == {}:  # Keras writes {} for a model never compiled
        return None
    compiled = _mapping(path, compiled, "the compile_config")
    for key in ("loss_weights", "weighted_metrics"):
        if compiled.get(key) is not None:
            raise ValueError(f"{path} was compiled with {key}={compiled[key]!r}, which "
                             f"mirrorlab does not compute {AFTER}")
    metrics = compiled.get("metrics")
    if metrics is not None and (not isinstance(metrics, list) or
                                not all(isinstance(m, str) and m in ACCURACY for m in metrics)):
        raise ValueError(f"{path} was compiled with the metrics {metrics!r}: mirrorlab measures "
                         f"'accuracy' {AFTER}")
    return {"optimizer": _optimizer(path, compiled.get("optimizer")),
            "loss": _loss(path, compiled.get("loss")), "metrics": metrics}
