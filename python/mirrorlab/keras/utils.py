"""keras.utils: the seed of the next models' initial weights and of fit's shuffling."""

from __future__ import annotations

__all__ = ["set_random_seed"]

_seed = 42  # mirrorlab train's default --seed: the same numbers from Python and the command line


def set_random_seed(seed: int) -> None:
    """Seeds the initial weights of the models made from now on, and their fit's shuffling
    (keras.utils.set_random_seed). Without it, mirrorlab uses 42, as `mirrorlab train` does."""
    global _seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number of at least 0, not {seed!r}")
    _seed = seed


def _current_seed() -> int:
    return _seed
