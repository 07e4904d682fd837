"""Reciprocal rank fusion: several rankings of the same items merged into one (lesson 06).

Each ranking lists every item once, best first. An item at position ``p`` of a list
(``p = 0`` for the first place, as the course counts) earns ``1 / (constant + p)`` from
that list; its fused score is the sum of those terms, added in list order. The fused
ranking orders items by descending fused score, ties by ascending index, which is the
course's stable ``sorted(..., key=-score)``. Only positions enter; the raw scores of
the lists (token counts, cosines) play no part.
"""
from __future__ import annotations

import math
from typing import Hashable, Sequence

from ..toolkit.params import check_int
from .ranking import rank_by_score

DEFAULT_CONSTANT = 20
COURSE_CONSTANTS: tuple[int, ...] = (5, 20, 60)
LARGEST_CONSTANT = 1000
MOST_CONSTANTS = 8


def _check_constant(constant: object) -> float:
    if isinstance(constant, bool) or not isinstance(constant, (int, float)) \
            or not math.isfinite(constant) or constant <= 0:
        raise ValueError(f"constant must be a finite number above 0; got {constant!r}")
    return constant


def _check_rankings(rankings: Sequence[Sequence[int]]) -> int:
    """The number of items, after checking every ranking is a permutation of range(n)."""
    if isinstance(rankings, (str, bytes)) or not isinstance(rankings, Sequence) or not rankings:
        raise ValueError("rankings must be a non-empty list of rankings (lists of item indices)")
    n_items = len(rankings[0])
    for number, ranking in enumerate(rankings):
        if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence):
            raise ValueError(f"ranking {number} must be a list of item indices; got {ranking!r}")
        if len(ranking) != n_items:
            raise ValueError(f"all rankings must list the same {n_items} items; "
                             f"ranking {number} has {len(ranking)}")
        if sorted(ranking) != list(range(n_items)):
            raise ValueError(f"ranking {number} must list each item index 0..{n_items - 1} exactly once")
    return n_items


def _check_first_position(first_position: object) -> int:
    if first_position not in (0, 1) or isinstance(first_position, bool):
        raise ValueError(f"first_position must be 0 (the course's count) or 1 (ranks from 1); "
                         f"got {first_position!r}")
    return first_position


def position_terms(ranking: Sequence[int], constant: float = DEFAULT_CONSTANT,
                   first_position: int = 0) -> list[float]:
    """One list's contribution per item: ``1 / (constant + position)``, indexed by item.

    The course counts the first place as position 0; ``first_position=1`` counts it as 1,
    the convention of Cormack et al.'s RRF and of libraries such as ranx.
    """
    _check_constant(constant)
    _check_first_position(first_position)
    n_items = _check_rankings([ranking])
    terms = [0.0] * n_items
    for position, item in enumerate(ranking, start=first_position):
        terms[item] = 1.0 / (constant + position)
    return terms


def fused_scores(rankings: Sequence[Sequence[int]], constant: float = DEFAULT_CONSTANT,
                 first_position: int = 0) -> list[float]:
    """The fused score of every item: its position terms summed over the lists, left to right."""
    _check_constant(constant)
    n_items = _check_rankings(rankings)
    per_list = [position_terms(ranking, constant, first_position) for ranking in rankings]
    return [sum(terms[item] for terms in per_list) for item in range(n_items)]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], constant: float = DEFAULT_CONSTANT,
                           first_position: int = 0) -> list[int]:
    """All items, best fused score first; equal scores keep ascending index order."""
    return rank_by_score(fused_scores(rankings, constant, first_position))


def check_weight(name: str, weight: object) -> float:
    """A fusion weight: a finite number above 0 (ValueError naming ``name`` otherwise)."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight <= 0:
        raise ValueError(f"{name} must be a finite number above 0; got {weight!r}")
    return float(weight)


def fuse_partial(rankings: Sequence[Sequence[Hashable]], constant: float = DEFAULT_CONSTANT,
                 first_position: int = 0, depth: int | None = None,
                 weights: Sequence[float] | None = None) -> list[tuple[Hashable, float]]:
    """``(item, fused score)`` best first, ties by item, for rankings that need not list the same items.

    A ranking may be cut to a depth or filtered (a retrieval path's top 30): an item earns
    ``1 / (constant + position)`` from each list it appears in and nothing from the others,
    terms added in list order. ``depth`` keeps only each list's first ``depth`` items.
    Over full permutations this is ``fused_scores`` exactly, bit for bit.

    ``weights`` (one finite number above 0 per ranking; None: all 1) multiply each list's terms:
    weighted RRF. A weight of 1 leaves a term as it is, to the bit (``x * 1.0 == x``).
    """
    _check_constant(constant)
    _check_first_position(first_position)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise ValueError(f"depth must be None or a whole number of at least 1; got {depth!r}")
    if weights is not None:
        if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or len(weights) != len(rankings):
            raise ValueError(f"weights must be None or one number per ranking ({len(rankings)}); got {weights!r}")
        weights = [check_weight(f"weight {number}", w) for number, w in enumerate(weights)]
    scores: dict[Hashable, float] = {}
    for number, ranking in enumerate(rankings):
        for position, item in enumerate(ranking if depth is None else ranking[:depth], start=first_position):
            term = 1.0 / (constant + position)
            if weights is not None:
                term *= weights[number]
            scores[item] = scores.get(item, 0.0) + term
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def check_constant_list(name: str, value: object, low: int = 1, high: int = LARGEST_CONSTANT) -> list[int]:
    """A notebook parameter holding fusion constants: 1 to 8 integers from ``low`` to ``high``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) \
            or not 1 <= len(value) <= MOST_CONSTANTS:
        raise ValueError(f"{name} must be a list of 1 to {MOST_CONSTANTS} integers from {low} to {high};"
                         f" got {value!r}")
    return [check_int(f"each value of {name}", c, low, high) for c in value]
