"""Lab 03's fusion: ``practice.rrf`` equals the course's fused_scores (ranks from 1) and ranx's RRF."""
from __future__ import annotations

import random

import pytest

from ragcourse.labs.practice import rrf
from ragcourse.retrieval.fusion import fused_scores, reciprocal_rank_fusion


def permutations(seed: int, n_items: int, n_lists: int) -> list[list[int]]:
    rng = random.Random(seed)
    lists = []
    for _ in range(n_lists):
        items = list(range(n_items))
        rng.shuffle(items)
        lists.append(items)
    return lists


@pytest.mark.parametrize("seed", range(5))
def test_full_depth_equals_the_course_fusion_bit_for_bit(seed):
    rankings = permutations(seed, 40, 2 + seed % 2)
    ours = rrf(rankings, 60)
    scores = fused_scores(rankings, 60, first_position=1)
    assert [item for item, _ in ours] == reciprocal_rank_fusion(rankings, 60, first_position=1)
    assert all(score == scores[item] for item, score in ours)


def test_truncated_lists_only_score_their_top_items():
    fused = dict(rrf([[3, 1, 2, 0], [0, 1, 2, 3]], constant=10, depth=2))
    assert set(fused) == {3, 1, 0}
    assert fused[1] == 1 / 12 + 1 / 12
    assert fused[3] == 1 / 11


def test_bad_constant_and_depth_name_the_parameter():
    with pytest.raises(ValueError, match="constant"):
        rrf([[0, 1]], constant=0)
    with pytest.raises(ValueError, match="depth"):
        rrf([[0, 1]], depth=0)


@pytest.mark.ranx
@pytest.mark.parametrize("depth", [None, 10, 30])
def test_equals_ranx_rrf(depth):
    """ranx.fuse(method="rrf", k=60) over the same (truncated) runs: same scores within 1e-12, same order."""
    ranx = pytest.importorskip("ranx")
    queries = {f"q{n}": permutations(100 + n, 50, 2) for n in range(4)}
    runs = []
    for path in range(2):
        run = {}
        for qid, lists in queries.items():
            ranking = lists[path] if depth is None else lists[path][:depth]
            # Strictly falling scores, so ranx ranks every list exactly in this order.
            run[qid] = {f"d{item:03d}": float(len(ranking) - position) for position, item in enumerate(ranking)}
        runs.append(ranx.Run(run, name=f"path{path}"))
    fused = ranx.fuse(runs, method="rrf", params={"k": 60}).to_dict()
    for qid, lists in queries.items():
        ours = rrf(lists, 60, depth)
        theirs = sorted(fused[qid].items(), key=lambda pair: (-pair[1], pair[0]))
        assert [f"d{item:03d}" for item, _ in ours] == [doc for doc, _ in theirs]
        assert all(abs(score - fused[qid][f"d{item:03d}"]) <= 1e-12 for item, score in ours)
