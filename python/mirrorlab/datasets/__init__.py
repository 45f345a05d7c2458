"""keras.datasets for mirrorlab: Fashion-MNIST from the Debian package dataset-fashion-mnist."""

from . import fashion_mnist

__all__ = ["fashion_mnist"]
