"""Exercises of lesson 04: every bucket opened, the bucket probe, a bucket setting the lesson skipped.

q1 (predict) asks what opening all sixteen buckets costs; q2 (build) has the student write
the bucket index's search (order the buckets by representative, open the first few, rank the
candidates, count the comparisons) and reproduce the lesson's 0.9500 for 47.2 comparisons;
q3 (measure) reads recall and cost at a setting the lesson's table did not hold.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.index import BucketIndex, build_bucket_index
from ...retrieval.metrics import overlap_recall
from ...retrieval.ranking import top_k
from ...world.embedding import cosine
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_estimate, expect_number,
                         expect_pair, first_hint, require_function, shown)
from ..reference import K, OTHER_SEEDS, document_vectors, query_vectors

BUCKETS, PROBES = 16, 2


@lru_cache(maxsize=32)
def bucket_index(seed: int, buckets: int, build_seed: int | None = None) -> BucketIndex:
    """The bucket index of lesson 04 over the documents of ``seed``, built from ``build_seed`` (default: seed)."""
    return build_bucket_index(document_vectors(seed), buckets, seed if build_seed is None else build_seed)


@lru_cache(maxsize=8)
def full_scan(seed: int) -> tuple[tuple[int, ...], ...]:
    """The exhaustive top K of every query: the baseline every index is measured against."""
    vectors = document_vectors(seed)
    return tuple(tuple(top_k([cosine(q, v) for v in vectors], K)) for q in query_vectors(seed))


def measure_setting(seed: int, buckets: int, probes: int, search: Callable[..., Any]) -> tuple[float, float]:
    """(recall against the full scan, mean comparisons) over the 40 queries, searching with ``search``."""
    index = bucket_index(seed, buckets)
    recall = comparisons = 0.0
    for n, query_vector in enumerate(query_vectors(seed)):
        ids, cost = search(index, list(query_vector), probes, K)
        recall += overlap_recall(list(ids), full_scan(seed)[n])
        comparisons += cost
    queries = len(query_vectors(seed))
    return recall / queries, comparisons / queries


@lru_cache(maxsize=32)
def setting_measures(seed: int, buckets: int, probes: int, build_seed: int | None = None) -> tuple[float, float]:
    """The reference (recall, mean comparisons) of one bucket setting, index built from ``build_seed``."""
    index = bucket_index(seed, buckets, build_seed)
    results = [index.search(list(q), probes, K) for q in query_vectors(seed)]
    recall = sum(overlap_recall(r.ids, full_scan(seed)[n]) for n, r in enumerate(results))
    return recall / len(results), sum(r.comparisons for r in results) / len(results)


# ---------------------------------------------------------------- q1: predict the cost of every bucket

def check_all_buckets(prediction: Any) -> list[str]:
    """PREDICTED_COMPARISONS: mean comparisons per query with all 16 buckets open (course seed)."""
    truth = setting_measures(COURSE_SEED, BUCKETS, BUCKETS)[1]
    return check_estimate(
        prediction, "PREDICTED_COMPARISONS", truth, 0.5,
        f"{truth:.1f} comparisons per query with all {BUCKETS} buckets open (the full scan: 200)",
        ["With every bucket open every document becomes a candidate, which is the full scan's 200",
         f"comparisons. The search still compares the query with the {BUCKETS} representatives first, to put the",
         "buckets in order, so it pays more than the scan it was meant to beat. An index saves work only",
         "while it leaves most of the corpus closed."], decimals=1)


# ---------------------------------------------------------------- q2: build the bucket probe

def variant_search(index: BucketIndex, query_vector: Sequence[float], probes: int, k: int, *, extra_probes: int = 0,
                   representatives_counted: str = "all", ties_high_first: bool = False, farthest_first: bool = False,
                   scan: bool = False) -> tuple[list[int], int]:
    """The bucket search with one deliberate mistake switched on (for hints); all off it is the reference."""
    scores = [cosine(query_vector, index.vectors[r]) for r in index.representatives]
    order = sorted(range(index.n_buckets), key=lambda b: scores[b] if farthest_first else -scores[b])
    opened = order[:max(0, probes + extra_probes)]
    candidates = list(range(len(index.vectors))) if scan else [i for b in opened for i in index.members[b]]
    key = ((lambda i: (-cosine(query_vector, index.vectors[i]), -i)) if ties_high_first
           else (lambda i: -cosine(query_vector, index.vectors[i])))
    ranked = sorted(candidates, key=key)
    extra = {"all": index.n_buckets, "none": 0, "opened": len(opened)}[representatives_counted]
    return ranked[:k], extra + len(candidates)


def probe_cases() -> list[tuple[int, int, int, int, int]]:
    """(seed, buckets, probes, query number, k): three seeds, four bucket settings, four queries."""
    cases = []
    for seed in (COURSE_SEED, *OTHER_SEEDS):
        for buckets, probes in ((BUCKETS, PROBES), (8, 1), (25, 4), (BUCKETS, BUCKETS)):
            for query_number in (0, 9, 21, 38):
                cases.append((seed, buckets, probes, query_number, 3 if query_number == 21 else K))
    return cases


def unpack_result(got: Any, tried: str) -> tuple[list[Any], float]:
    """The student's ``(ids, comparisons)``, or Mismatch when the result has another shape."""
    if not isinstance(got, (tuple, list)) or len(got) != 2 or not isinstance(got[0], (list, tuple)):
        raise Mismatch(tried, "a pair (list of document numbers, number of comparisons)", shown(got),
                       "return two things: `return top_ids, comparisons`")
    return list(got[0]), as_number(got[1], tried, "a number of comparisons")


def probe_hints(index: BucketIndex, query_vector, probes: int, k: int) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the bucket search and what to say about each."""
    def wrong(**mistake):
        return lambda: variant_search(index, query_vector, probes, k, **mistake)

    return [
        (wrong(extra_probes=1), "open exactly `probes` buckets, not one more"),
        (wrong(extra_probes=-1), "open exactly `probes` buckets, not one fewer"),
        (wrong(representatives_counted="none"),
         "count every representative the query was compared with, as well as every candidate"),
        (wrong(representatives_counted="opened"),
         "the query is compared with all representatives (to order the buckets), not only the opened ones"),
        (wrong(ties_high_first=True),
         "on equal scores keep the earlier document (probe order, then document number) first"),
        (wrong(farthest_first=True), "open the buckets whose representatives are most similar to the query first"),
        (wrong(scan=True), "rank only the members of the opened buckets: that is the whole point of the index"),
    ]


def check_bucket_search(answer: Any) -> list[str]:
    """bucket_search equals BucketIndex.search on 48 searches; reproduces 0.9500 and 47.2 at the course seed."""
    search = require_function(answer, "bucket_search")
    cases = probe_cases()
    for seed, buckets, probes, query_number, k in cases:
        index, query_vector = bucket_index(seed, buckets), list(query_vectors(seed)[query_number])
        tried = (f"bucket_search(<index: {buckets} buckets, seed {seed}>, <query {query_number + 1}'s vector>,"
                 f" {probes}, {k})")
        got = call(search, "bucket_search", (index, query_vector, probes, k), tried)
        ids, comparisons = unpack_result(got, tried)
        reference = index.search(query_vector, probes, k)
        expected = (list(reference.ids), reference.comparisons)
        if ids != expected[0] or comparisons != expected[1]:
            raise Mismatch(tried, shown(expected), shown((ids, got[1])), first_hint(
                (ids, comparisons), probe_hints(index, query_vector, probes, k),
                "order the buckets by their representative's cosine with the query, open the first `probes`,"
                " rank their members by cosine, keep k; comparisons = representatives + candidates"))
    recall, comparisons = measure_setting(COURSE_SEED, BUCKETS, PROBES, search)
    expected_recall, expected_comparisons = setting_measures(COURSE_SEED, BUCKETS, PROBES)
    tried = f"your bucket_search over the 40 queries at the course seed, {BUCKETS} buckets, {PROBES} probes"
    expect_number(recall, expected_recall, tried + " (recall)", "see the per-query check above", tolerance=1e-12)
    expect_number(comparisons, expected_comparisons, tried + " (comparisons)", "see the per-query check above",
                  tolerance=1e-9)
    return [f"bucket_search returns the package's top k and comparison count on {len(cases)} searches (three seeds,"
            " four bucket settings),",
            f"and reproduces lesson 04's row at the course seed: recall {recall:.4f} for {comparisons:.1f}"
            f" comparisons ({BUCKETS} buckets, {PROBES} probes)."]


# ---------------------------------------------------------------- q3: measure another bucket setting

SETTING_PROBES = ((COURSE_SEED + 1, 20, 3, True), (7, 12, 2, True), (COURSE_SEED, BUCKETS, PROBES, True),
                  (COURSE_SEED, 20, 3, False))


def check_bucket_setting(answer: Any) -> list[str]:
    """bucket_setting(seed, buckets, probes) equals the reference at other settings, then at the asked one."""
    measure = require_function(answer, "bucket_setting")
    for seed, buckets, probes, reveal in SETTING_PROBES:
        tried = f"bucket_setting({seed}, {buckets}, {probes})"
        got = call(measure, "bucket_setting", (seed, buckets, probes), tried)
        recall, comparisons = unpack_setting(got, tried)
        expected = setting_measures(seed, buckets, probes)

        def without_representatives(seed=seed, buckets=buckets, probes=probes):
            found = setting_measures(seed, buckets, probes)
            return found[0], found[1] - buckets

        hints = [(without_representatives, "count the representatives among the comparisons, as the lesson does"),
                 (lambda: setting_measures(COURSE_SEED, buckets, probes),
                  "your function measures the course seed's world: build the world, the model and the index from"
                  " its seed"),
                 (lambda: setting_measures(seed, buckets, probes, build_seed=seed + 1),
                  "build the index from the seed itself (the lesson's first build), not seed + 1")]
        hint = first_hint((recall, comparisons), hints,
                          "build the index with build_bucket_index(document vectors, buckets, seed), search every"
                          " query, and average recall against the full scan's top 5 and the comparisons")
        expect_number(recall, expected[0], tried + " (recall, first number)", hint, reveal=reveal)
        expect_number(comparisons, expected[1], tried + " (comparisons, second number)", hint, reveal=reveal)
    recall, comparisons = setting_measures(COURSE_SEED, 20, 3)
    return [f"bucket_setting matches the reference at {len(SETTING_PROBES)} settings, three seeds among them.",
            f"20 buckets, 3 probes, course seed: recall {recall:.4f} for {comparisons:.1f} comparisons"
            f" (16 buckets, 2 probes: 0.9500 for 47.2)."]


def unpack_setting(got: Any, tried: str) -> tuple[float, float]:
    """The student's ``(recall, comparisons)``, or Mismatch when the result has another shape."""
    expect_pair(got, tried, "recall, mean comparisons", "return two numbers: `return recall, comparisons`")
    return as_number(got[0], tried, "a recall"), as_number(got[1], tried, "a number of comparisons")


EXERCISES = ExerciseSet("04-vector-databases", "Vector databases", [
    Exercise("q1", "predict", "the cost of opening every bucket", ("PREDICTED_COMPARISONS",), check_all_buckets),
    Exercise("q2", "build", "the bucket probe", ("bucket_search",), check_bucket_search),
    Exercise("q3", "measure", "20 buckets and 3 probes", ("bucket_setting",), check_bucket_setting),
])
check = EXERCISES.check
