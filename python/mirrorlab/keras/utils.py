"""keras.utils: the seed of the next models' initial weights and of fit's shuffling."""

from __future__ import annotations

from .. import _numbers

__all__ = ["set_random_seed"]

_seed = 42  # mirrorlab train's default --seed: the same numbers from Python and the command line
_MAX_SEED = 2**64 - 1  # the core's seed is an unsigned 64-bit number (core/settings)


def set_random_seed(seed: int) -> None:
    """Seeds the initial weights of the models made from now on, and their fit's shuffling
    (keras.utils.set_random_seed). Without it, mirrorlab uses 42, as `mirrorlab train` does."""
    global _seed
    _seed = _numbers.whole("seed", seed, 0, _MAX_SEED)


def _current_seed() -> int:
    return _seed
