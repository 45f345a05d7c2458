"""keras.layers for mirrorlab: the layers its core computes.

Conv2D (3x3 kernels, stride 1, no padding), MaxPooling2D (2x2), Flatten, Dense, ReLU, and the
activations "relu" (a ReLU layer after the layer in the core, part of the layer in summary(), as
in Keras) and "softmax" on the last layer (computed inside the loss, from the logits). The input
is a 28x28 Fashion-MNIST image: input_shape (28, 28), or (28, 28, 1) before a Conv2D.
"""

from __future__ import annotations

import collections
from typing import List, Optional, Sequence, Tuple, Union

from .. import _numbers

__all__ = ["Layer", "Conv2D", "MaxPooling2D", "Flatten", "Dense", "ReLU", "Activation", "Input",
           "InputLayer"]

_INPUT_SHAPES = ((28, 28), (28, 28, 1))
_MAX_SIZE = 65536  # the most units or filters the core makes a layer with
_uids: "collections.Counter[str]" = collections.Counter()


def _unique_name(base: str) -> str:
    """Keras' names: "dense", then "dense_1", "dense_2", ... in the whole session."""
    n = _uids[base]
    _uids[base] += 1
    return base if n == 0 else f"{base}_{n}"


def _pair(name: str, value: Union[int, Sequence[int]], only: int, what: str) -> None:
    if _numbers.is_whole(value):
        pair = (value, value)
    else:
        pair = tuple(value) if isinstance(value, (list, tuple)) else None
    if pair != (only, only):
        raise ValueError(f"{name}={value!r}: mirrorlab's core has {what} only "
                         f"({name}={only} or ({only}, {only}))")


def _whole_size(what: str, value: int) -> int:
    """A Dense's units or a Conv2D's filters: a whole number the core can make."""
    if not _numbers.is_whole(value) or not 1 <= value <= _MAX_SIZE:
        raise ValueError(f"{what} {value!r}: give a whole number from 1 to {_MAX_SIZE}")
    return int(value)


def _valid_padding(padding: str) -> None:
    if padding != "valid":
        raise ValueError(f"padding={padding!r}: mirrorlab's core has padding='valid' only")


def _input_shape(shape: Optional[Sequence[int]]) -> Optional[Tuple[int, ...]]:
    if shape is None:
        return None
    shape = tuple(shape)
    if shape not in _INPUT_SHAPES:
        raise ValueError(f"input_shape {shape}: mirrorlab's models take 28x28 Fashion-MNIST "
                         "images: give (28, 28), or (28, 28, 1) before a Conv2D")
    return shape


def _activation(activation: Optional[str], layer: str) -> Optional[str]:
    if activation in (None, "linear"):
        return None
    if activation in ("relu", "softmax"):
        return activation
    raise ValueError(f"{layer}: activation {activation!r}: mirrorlab's core has 'relu' (and "
                     "'softmax' on the last layer, computed inside the loss)")


class Layer:
    """A layer of a Sequential model: what the core makes of it (kind, size, name)."""

    _kind = ""
    _base = ""

    def __init__(self, name: Optional[str] = None, input_shape=None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"a layer's name must be a non-empty string, not {name!r}")
        self.name = name or _unique_name(self._base)
        self.input_shape = _input_shape(input_shape)
        self.activation: Optional[str] = None

    def _size(self) -> int:
        return 0

    def _core_layers(self, last: bool) -> List[Tuple[str, int, str]]:
        """The core's layers for this one: itself, then a ReLU for activation='relu', named
        "NAME/activation" (no Keras layer's name has a "/": it cannot clash with one)."""
        out = [(self._kind, self._size(), self.name)]
        if self.activation == "relu":
            out.append(("ReLU", 0, self._activation_name()))
        elif self.activation == "softmax" and not last:
            raise ValueError(f"{self.name}: activation 'softmax' only on the last layer (the "
                             "core computes it inside the loss)")
        return out

    def _activation_name(self) -> Optional[str]:
        """The core's name for this layer's activation='relu' (a ReLU layer of its own there, a
        part of this one in Keras), or None."""
        return f"{self.name}/activation" if self.activation == "relu" else None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"


class Conv2D(Layer):
    _kind, _base = "Conv2D", "conv2d"

    def __init__(self, filters: int, kernel_size=(3, 3), strides=(1, 1), padding: str = "valid",
                 activation: Optional[str] = None, input_shape=None,
                 name: Optional[str] = None) -> None:
        filters = _whole_size("Conv2D filters", filters)
        _pair("kernel_size", kernel_size, 3, "3x3 kernels")
        _pair("strides", strides, 1, "stride 1")
        _valid_padding(padding)
        super().__init__(name, input_shape)
        if self.input_shape == (28, 28):
            raise ValueError("Conv2D takes images with a channel: input_shape=(28, 28, 1)")
        self.filters = filters
        self.activation = _activation(activation, self.name)

    def _size(self) -> int:
        return self.filters


class MaxPooling2D(Layer):
    _kind, _base = "MaxPooling2D", "max_pooling2d"

    def __init__(self, pool_size=(2, 2), strides=None, padding: str = "valid", input_shape=None,
                 name: Optional[str] = None) -> None:
        _pair("pool_size", pool_size, 2, "2x2 pooling")
        if strides is not None:
            _pair("strides", strides, 2, "pooling with stride 2")
        _valid_padding(padding)
        super().__init__(name, input_shape)


class Flatten(Layer):
    _kind, _base = "Flatten", "flatten"

    def __init__(self, input_shape=None, name: Optional[str] = None) -> None:
        super().__init__(name, input_shape)


class Dense(Layer):
    _kind, _base = "Dense", "dense"

    def __init__(self, units: int, activation: Optional[str] = None, input_shape=None,
                 name: Optional[str] = None) -> None:
        units = _whole_size("Dense units", units)
        super().__init__(name, input_shape)
        self.units = units
        self.activation = _activation(activation, self.name)

    def _size(self) -> int:
        return self.units


class ReLU(Layer):
    _kind, _base = "ReLU", "re_lu"

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__(name)


def Activation(activation: str, name: Optional[str] = None) -> Layer:
    """keras.layers.Activation: "relu" only, a ReLU layer."""
    if activation != "relu":
        raise ValueError(f"Activation({activation!r}): mirrorlab's core has Activation('relu')")
    layer = ReLU(name=name or _unique_name("activation"))  # Keras' name
    layer._key = "activation"  # Keras' class, in a weights file (ReLU computes it here)
    return layer


class InputLayer:
    """keras.Input(shape=...): the model's input, first in a Sequential."""

    def __init__(self, shape: Sequence[int]) -> None:
        self.input_shape = _input_shape(shape)

    def __repr__(self) -> str:
        return f"<InputLayer shape={self.input_shape}>"


def Input(shape: Sequence[int]) -> InputLayer:
    """keras.Input: the shape of one image, (28, 28), or (28, 28, 1) before a Conv2D; the first
    thing of a Sequential, instead of the first layer's input_shape."""
    return InputLayer(shape)
