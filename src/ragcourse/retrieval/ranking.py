"""Ranking by score with a stable tie-break: the one ordering rule of the whole course.

Plain scores in, indices out: no fictional world involved, so the labs rank real
documents with the same functions the lessons use.
"""
from __future__ import annotations

from typing import Sequence


def rank_by_score(scores: Sequence[float]) -> list[int]:
    """Indices ordered by descending score, ties by ascending index."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def top_k(scores: Sequence[float], k: int) -> list[int]:
    """The ``k`` best indices by score (ties by index)."""
    return rank_by_score(scores)[:k]
