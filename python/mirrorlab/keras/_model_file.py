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

from . import _weights_file, layers as layers_module, losses, optimizers

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
        raise ValueError(f"Invalid filepath extension for saving. Please add a `.keras` "
                         f"extension. Received: filepath={path} (mirrorlab's {call} "
                         f"{'writes' if call == 'model.save' else 'reads'} Keras 3's .keras "
                         "file; for the weights alone: save_weights('NAME.weights.h5'))")
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
    """Writes the zip (an existing file replaced only if it is a zip, as write_safely says)."""
    path = _path(filepath, "model.save")
    weights_h5 = io.BytesIO()
    optimizer = model._optimizer._kind if model._optimizer else ""
    _weights_file.write(weights_h5, model.name, optimizer, weights)
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
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        for needed in ("config.json", "model.weights.h5"):
            if needed not in names:
                raise ValueError(f"{path} has no {needed}: it is no model file of Keras 3 or "
                                 "of mirrorlab's model.save")
        try:
            config = json.loads(z.read("config.json"))
        except ValueError as e:
            raise ValueError(f"{path}: its config.json is no JSON ({e})") from None
        weights = io.BytesIO(z.read("model.weights.h5"))
    if not isinstance(config, dict) or config.get("class_name") != "Sequential":
        kind = config.get("class_name") if isinstance(config, dict) else type(config).__name__
        raise ValueError(f"{path} holds a {kind} model: mirrorlab's load_model reads Sequential "
                         "models")
    return path, config, weights


def _check_value(path: str, cls: str, name: str, key: str, value: Any) -> None:
    want = _MUST_BE[key]
    same = value == want or (isinstance(want, list) and list(value or []) == want)
    if not same:
        raise ValueError(f"{path}: layer {name} ({cls}) has {key}={value!r}; mirrorlab's "
                         f"core computes {cls} with {key}={want!r} only")


def layers_of(path: str, config: Dict[str, Any]) -> Tuple[List[Any], Any]:
    """mirrorlab's layers for the Sequential's config, and its input's shape (or None)."""
    inner = config.get("config") or {}
    made: List[Any] = []
    shape = None
    for item in inner.get("layers") or []:
        cls, layer = item.get("class_name"), dict(item.get("config") or {})
        name = layer.get("name", "?")
        if cls == "InputLayer":
            batch_shape = layer.get("batch_shape") or layer.get("batch_input_shape")
            shape = tuple(batch_shape[1:]) if batch_shape else None
            continue
        if cls not in _TAKEN:
            raise ValueError(f"{path}: layer {name} is a {cls}, which mirrorlab's core does not "
                             f"compute (it has {', '.join(sorted(_TAKEN))})")
        if layer.get("data_format", "channels_last") != "channels_last":
            raise ValueError(f"{path}: layer {name} ({cls}) is channels_first; mirrorlab "
                             "computes channels_last")
        kwargs = {"name": name}
        for key, value in layer.items():
            if key in _TAKEN[cls]:
                kwargs[key] = None if value == "linear" and key == "activation" else value
            elif key in _MUST_BE:
                _check_value(path, cls, name, key, value)
            elif key not in _PASSED_OVER:
                raise ValueError(f"{path}: layer {name} ({cls}) has {key}={value!r}, which "
                                 "mirrorlab does not know: it cannot say it computes the same")
        if cls == "Activation":
            kwargs.pop("activation", None)
            made.append(layers_module.Activation(layer.get("activation"), name=name))
            continue
        try:
            made.append(getattr(layers_module, cls)(**kwargs))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: layer {name} ({cls}): {e}") from None
    if shape is None:
        build = inner.get("build_input_shape") or (config.get("build_config") or {}).get(
            "input_shape")
        shape = tuple(build[1:]) if build else None
    return made, shape


def compile_arguments(path: str, config: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """compile()'s arguments from config.json's compile_config, or None if there is none."""
    compiled = config.get("compile_config")
    if not compiled:
        return None
    optimizer = compiled.get("optimizer")
    if isinstance(optimizer, dict):
        cls, settings = optimizer.get("class_name"), dict(optimizer.get("config") or {})
        takes = {"SGD": ("learning_rate", "momentum"),
                 "Adam": ("learning_rate", "beta_1", "beta_2", "epsilon"),
                 "Nadam": ("learning_rate", "beta_1", "beta_2", "epsilon")}
        if cls not in takes:
            raise ValueError(f"{path} was compiled with the optimizer {cls}: mirrorlab has SGD, "
                             "Adam and Nadam (load_model(..., compile=False), then compile)")
        if settings.get("nesterov") or settings.get("amsgrad"):
            raise ValueError(f"{path}: its {cls} has nesterov or amsgrad, which mirrorlab's "
                             "does not compute (load_model(..., compile=False), then compile)")
        optimizer = getattr(optimizers, cls)(**{k: settings[k] for k in takes[cls]
                                                if k in settings})
    loss = compiled.get("loss")
    if isinstance(loss, dict):
        if loss.get("class_name") != "SparseCategoricalCrossentropy":
            raise ValueError(f"{path} was compiled with the loss {loss.get('class_name')}: "
                             "mirrorlab computes SparseCategoricalCrossentropy")
        loss = losses.SparseCategoricalCrossentropy(
            from_logits=bool((loss.get("config") or {}).get("from_logits", False)))
    metrics = compiled.get("metrics")
    if metrics not in (None, [], ["accuracy"]):
        raise ValueError(f"{path} was compiled with the metrics {metrics!r}: mirrorlab has "
                         "'accuracy' (load_model(..., compile=False), then compile)")
    return {"optimizer": optimizer, "loss": loss, "metrics": metrics}
