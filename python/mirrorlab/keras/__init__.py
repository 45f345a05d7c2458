"""keras for mirrorlab: Sequential models of the layers mirrorlab's core computes, trained with
model.fit on the strategy whose scope they were made in; keras.models.load_model reads a .keras
file; keras.datasets is mirrorlab.datasets."""

from .. import datasets
from . import callbacks, layers, losses, models, optimizers, utils
from .layers import Input
from .models import Sequential

__all__ = ["Sequential", "Input", "callbacks", "datasets", "layers", "losses", "models",
           "optimizers", "utils"]
