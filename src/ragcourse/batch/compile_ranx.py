"""Compile ranx's numba functions once, into numba's on-disk cache, before the tests use them.

ranx (the library the course's metrics, fusion and significance tests are checked against)
compiles its functions with numba the first time a process calls them, and caches the result
beside its sources (``cache=True``). In a fresh environment every process pays that again until
the cache exists: about 70 s of one core here, and the test session's two workers and the
notebooks paid it side by side. ``make`` runs this module once, right after installing, so the
cache is written before anything else imports ranx:

  python -m ragcourse.batch.compile_ranx
"""
from __future__ import annotations

import time


def compile_ranx() -> float:
    """Call every ranx entry point the course and its tests use, on a tiny input; return the seconds taken."""
    started = time.perf_counter()
    import ranx

    qrels = ranx.Qrels({"q1": {"a": 1, "b": 1}, "q2": {"c": 1}})
    one = ranx.Run({"q1": {"a": 0.9, "c": 0.5}, "q2": {"c": 0.3, "a": 0.1}}, name="one")
    two = ranx.Run({"q1": {"b": 0.8, "a": 0.2}, "q2": {"a": 0.4, "c": 0.2}}, name="two")
    ranx.evaluate(qrels, one, ["recall@5", "mrr", "ndcg@10", "precision@5", "hit_rate@5", "hits@5", "map@10",
                               "r-precision"])
    ranx.fuse([one, two], method="rrf", params={"k": 60})
    ranx.compare(qrels, [one, two], metrics=["mrr"], stat_test="fisher", max_p=0.05)
    return time.perf_counter() - started


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")   # numba's type-safety notes about ranx's own casts
    print(f"ranx: numba functions compiled and cached in {compile_ranx():.0f} s")
