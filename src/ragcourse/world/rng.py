"""The course's hash-seeded 32-bit generator and its weighted pick.

Every random draw in the course comes from ``make_rng``: a seed is mixed by a
small integer hash, then a linear congruential generator walks from it. The
constants are the course's; changing any of them changes every table.
"""
from __future__ import annotations

from typing import Callable, Sequence

MASK32 = 0xFFFFFFFF
HASH_MULTIPLIERS = (2246822507, 3266489909)
LCG_MULTIPLIER = 1664525
LCG_INCREMENT = 1013904223
TWO_TO_32 = 4294967296

Draw = Callable[[], float]


def mix_seed(seed: int) -> int:
    """Scramble an integer seed into the generator's 32-bit starting state."""
    state = ((seed ^ (seed >> 16)) * HASH_MULTIPLIERS[0]) & MASK32
    state = ((state ^ (state >> 13)) * HASH_MULTIPLIERS[1]) & MASK32
    return (state ^ (state >> 16)) & MASK32


def make_rng(seed: int) -> Draw:
    """Return a function that yields the next uniform draw in [0, 1) for this seed."""
    state = mix_seed(seed)

    def draw() -> float:
        nonlocal state
        state = (state * LCG_MULTIPLIER + LCG_INCREMENT) & MASK32
        return state / TWO_TO_32

    return draw


def pick(u: float, weights: Sequence[float]) -> int:
    """Index chosen by a uniform draw ``u`` against cumulative ``weights`` (last index as fallback)."""
    total = 0.0
    for index, weight in enumerate(weights):
        total += weight
        if u < total:
            return index
    return len(weights) - 1
