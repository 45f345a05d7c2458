"""keras for mirrorlab: Sequential models of the layers mirrorlab's core computes, trained with
model.fit on the strategy whose scope they were made in."""

from . import callbacks, layers, losses, optimizers, utils
from .layers import Input
from .models import Sequential

__all__ = ["Sequential", "Input", "callbacks", "layers", "losses", "optimizers", "utils"]
