"""Compile ranx's numba functions once, into numba's on-disk cache, before the tests use them.

ranx (the library the course's metrics, fusion and significance tests are checked against)
compiles its functions with numba the first time a process calls them, and caches the result
beside its sources (``cache=True``). In a fresh environment every process pays that again until
the cache exists, and the test session's two workers paid it side by side (about a minute each
under load). ``make test`` runs this module once in the background, beside ``prepare``, and the
tests that call ranx wait for it (``tests/conftest.py``); with the cache in place it takes seconds:

  python -m ragcourse.batch.compile_ranx
"""
from __future__ import annotations

import time


def compile_ranx() -> float:
    """Call every ranx entry point the tests use, on inputs shaped like theirs; return the seconds taken."""
    started = time.perf_counter()
    import ranx

    # ranx hands numba each query's document ids as a numpy array of dtype "<U{longest id}", so every
    # length of the longest id is a function of its own: the tests and labs use ids of 1 to 5 characters.
    # It also takes another path for runs of tens of documents than for two or three.
    for width in range(1, 6):
        documents = [f"{n:0{width}d}" for n in range(min(60, 10 ** width))]
        qrels = ranx.Qrels({f"q{q}": {d: 1 for d in documents[q:q + 3 + q]} for q in range(4)})
        runs = [ranx.Run({f"q{q}": {d: float(len(documents) - (n * (q + shift)) % len(documents))
                                    for n, d in enumerate(documents)} for q in range(4)}, name=f"run{shift}")
                for shift in (1, 2, 3)]
        ranx.fuse(runs[:2], method="rrf", params={"k": 60}).to_dict()
        if width == 1:
            ranx.evaluate(qrels, runs[0], ["recall@5", "mrr", "ndcg@10", "precision@1", "precision@5",
                                           "hit_rate@1", "hit_rate@5", "hits@5", "map@10", "r-precision"])
            ranx.compare(qrels, runs, metrics=["hit_rate@1", "recall@5", "mrr", "ndcg@10"], stat_test="fisher",
                         n_permutations=100, random_seed=42, threads=1)
    return time.perf_counter() - started


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")   # numba's type-safety notes about ranx's own casts
    print(f"ranx: numba functions compiled and cached in {compile_ranx():.0f} s")
