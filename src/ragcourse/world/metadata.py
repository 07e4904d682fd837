"""The fictional metadata layer of lesson 05: one region code per document.

Every document gets a region from 1 to ``n_regions`` (16 in the course), drawn from
its own generator seeded by ``seed ^ (number + 1) * 40503``, so a region depends only
on SEED and the document's position, never on its content. A filter of width ``w``
keeps the documents whose region is at most ``w``: width ``n_regions`` keeps all of
them, smaller widths fewer.
"""
from __future__ import annotations

from typing import Sequence

from ..toolkit.params import check_non_negative_int, check_positive_int
from .rng import make_rng

N_REGIONS = 16
REGION_STRIDE = 40503


def assign_regions(seed: int, n_documents: int, n_regions: int = N_REGIONS) -> list[int]:
    """Region code (1..n_regions) of each of ``n_documents`` documents, from ``seed``."""
    check_positive_int("n_regions", n_regions)
    check_non_negative_int("n_documents", n_documents)
    return [1 + int(make_rng(seed ^ (i + 1) * REGION_STRIDE)() * n_regions) for i in range(n_documents)]


def filter_widths(n_regions: int = N_REGIONS) -> tuple[int, ...]:
    """Widths from no filter to the narrowest, halving each time: 16 gives (16, 8, 4, 2, 1)."""
    check_positive_int("n_regions", n_regions)
    widths = [n_regions]
    while widths[-1] > 1:
        widths.append(widths[-1] // 2)
    return tuple(widths)


def matching(regions: Sequence[int], width: int) -> list[int]:
    """Document numbers whose region passes the filter ``region <= width``, in ascending order."""
    return [i for i, region in enumerate(regions) if region <= width]
