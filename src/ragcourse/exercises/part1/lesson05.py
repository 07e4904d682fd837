"""Exercises of lesson 05: fetching the whole corpus, filtering inside the search, four probes at width 1.

q1 (predict) asks what "filter after" reaches when it fetches everything; q2 (build) has the
student apply the filter inside the bucket index (candidates filtered before ranking) and
reproduce the narrowest row, 2.8 candidates and recall 0.4750; q3 (measure) opens four
buckets at the narrowest width, a setting the lesson only suggested.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.index import BucketIndex, build_bucket_index, rank_candidates
from ...world.embedding import cosine
from ...world.metadata import assign_regions, matching
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                         expect_pair, first_hint, require_function, shown)
from ..reference import K, OTHER_SEEDS, document_vectors, query_vectors

BUCKETS, PROBES, REGIONS = 16, 2, 16
NARROWEST = 1


@lru_cache(maxsize=8)
def regions(seed: int) -> tuple[int, ...]:
    """Region code of every document at ``seed`` (16 regions)."""
    return tuple(assign_regions(seed, len(document_vectors(seed)), REGIONS))


@lru_cache(maxsize=8)
def bucket_index(seed: int) -> BucketIndex:
    """Lesson 05's bucket index: 16 buckets drawn from ``seed``."""
    return build_bucket_index(document_vectors(seed), BUCKETS, seed)


def allowed(seed: int, width: int) -> set[int]:
    """Documents passing the filter ``region <= width``."""
    return set(matching(list(regions(seed)), width))


@lru_cache(maxsize=32)
def correct_answers(seed: int, width: int) -> tuple[tuple[int, ...], ...]:
    """The exact answer per query: every matching document ranked, best K kept."""
    vectors, keep = document_vectors(seed), matching(list(regions(seed)), width)
    return tuple(tuple(rank_candidates(q, vectors, keep)[:K]) for q in query_vectors(seed))


def recall_against(found: Sequence[int], correct: Sequence[int]) -> float:
    """Share of the correct answer found (an empty correct answer scores 0, as in the lesson)."""
    return len(set(found) & set(correct)) / max(1, len(correct))


def filter_after(index: BucketIndex, query_vector, probes: int, keep: set[int], fetch: int) -> list[int]:
    """Strategy 1: the index's top ``fetch``, other regions dropped, the first K kept."""
    return [i for i in index.search(query_vector, probes, fetch).ids if i in keep][:K]


@lru_cache(maxsize=32)
def inside_measures(seed: int, width: int, probes: int) -> tuple[float, float, float]:
    """(recall, mean comparisons, mean candidates) of filtering inside the index over the 40 queries."""
    index, keep = bucket_index(seed), allowed(seed, width)
    recall = comparisons = candidates = 0.0
    for n, query_vector in enumerate(query_vectors(seed)):
        result = index.search(query_vector, probes, K, keep=keep.__contains__)
        recall += recall_against(result.ids, correct_answers(seed, width)[n])
        comparisons += result.comparisons
        candidates += result.candidates
    queries = len(query_vectors(seed))
    return recall / queries, comparisons / queries, candidates / queries


# ---------------------------------------------------------------- q1: predict fetching everything

FETCH_OPTIONS = {"a": "1.0000, as exact as the scan of the filtered set",
                 "b": "exactly the recall of filtering inside the index (0.4750)",
                 "c": "somewhere between 0.4750 and 1.0000", "d": "below 0.4750"}


def check_fetch_everything(prediction: Any) -> list[str]:
    """PREDICTED_RECALL: filter after with fetch 200 at width 1 against filtering inside (course seed)."""
    index, keep = bucket_index(COURSE_SEED), allowed(COURSE_SEED, NARROWEST)
    after = sum(recall_against(filter_after(index, q, PROBES, keep, len(document_vectors(COURSE_SEED))),
                               correct_answers(COURSE_SEED, NARROWEST)[n])
                for n, q in enumerate(query_vectors(COURSE_SEED))) / len(query_vectors(COURSE_SEED))
    inside = inside_measures(COURSE_SEED, NARROWEST, PROBES)[0]
    truth = "b" if abs(after - inside) < 1e-12 else "a" if after == 1.0 else "c" if after > inside else "d"
    return check_choice(
        prediction, "PREDICTED_RECALL", FETCH_OPTIONS, truth,
        f"filter after with fetch 200 reaches recall {after:.4f} at width 1; filtering inside reaches {inside:.4f}",
        ["The index can only hand over the members of the buckets it opens, about 31 documents with two",
         "probes. Asking for 200 returns all of them, ranked; dropping the other regions then leaves exactly",
         "the candidates that filtering inside would have kept, in the same order. No fetch size reaches a",
         "document in a bucket that was never opened: only more probes, or scanning the filtered set, can."])


# ---------------------------------------------------------------- q2: build the filter inside the search

def variant_inside(index: BucketIndex, query_vector, probes: int, k: int, keep: set[int], *, after: bool = False,
                   count_before: bool = False, scan: bool = False, extra_probes: int = 0,
                   ties_high_first: bool = False) -> tuple[list[int], int]:
    """Filtering inside the index with one deliberate mistake switched on (for hints)."""
    opened = index.candidates(query_vector, max(1, probes + extra_probes))
    if after:
        return [i for i in rank_candidates(query_vector, index.vectors, opened)[:k] if i in keep], len(opened)
    candidates = sorted(keep) if scan else [i for i in opened if i in keep]
    key = ((lambda i: (-cosine(query_vector, index.vectors[i]), -i)) if ties_high_first
           else (lambda i: -cosine(query_vector, index.vectors[i])))
    return sorted(candidates, key=key)[:k], len(opened) if count_before else len(candidates)


def inside_cases() -> list[tuple[int, int, int, int, int]]:
    """(seed, width, probes, query number, k): three seeds, four widths, two probe counts, three queries."""
    cases = []
    for seed in (COURSE_SEED, *OTHER_SEEDS):
        for width in (REGIONS, 8, 4, NARROWEST):
            for probes in (PROBES, 4):
                for query_number in (0, 11, 30):
                    cases.append((seed, width, probes, query_number, 3 if query_number == 11 else K))
    return cases


def inside_hints(index: BucketIndex, query_vector, probes: int, k: int,
                 keep: set[int]) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the filtered search and what to say about each."""
    def wrong(**mistake):
        return lambda: variant_inside(index, query_vector, probes, k, keep, **mistake)

    return [
        (wrong(after=True), "that filters after the search: drop the other regions' documents before ranking,"
                            " so that all k results can come from the allowed ones"),
        (wrong(count_before=True), "count only the candidates that pass the filter"),
        (wrong(scan=True), "open only the `probes` nearest buckets; ranking every allowed document is the scan"),
        (wrong(extra_probes=1), "open exactly `probes` buckets, not one more"),
        (wrong(extra_probes=-1), "open exactly `probes` buckets, not one fewer"),
        (wrong(ties_high_first=True), "on equal scores keep the earlier candidate first"),
    ]


def unpack_pair(got: Any, tried: str, first: str, second: str, hint: str) -> tuple[Any, float]:
    """The student's pair, or Mismatch when the result has another shape."""
    expect_pair(got, tried, f"{first}, {second}", hint)
    return got[0], as_number(got[1], tried, second)


def check_filter_inside(answer: Any) -> list[str]:
    """filter_inside equals the index's in-search filter on 72 searches; reproduces the narrowest row."""
    search = require_function(answer, "filter_inside")
    cases = inside_cases()
    for seed, width, probes, query_number, k in cases:
        index, query_vector, keep = bucket_index(seed), list(query_vectors(seed)[query_number]), allowed(seed, width)
        tried = (f"filter_inside(<index, seed {seed}>, <query {query_number + 1}'s vector>, {probes}, {k},"
                 f" <{len(keep)} documents of regions 1-{width}>)")
        got = call(search, "filter_inside", (index, query_vector, probes, k, set(keep)), tried)
        ids, candidates = unpack_pair(got, tried, "list of document numbers", "number of candidates",
                                      "return two things: `return top_ids, candidates`")
        ids = list(ids) if isinstance(ids, (list, tuple)) else ids
        result = index.search(query_vector, probes, k, keep=keep.__contains__)
        expected = (list(result.ids), result.candidates)
        if ids != expected[0] or candidates != expected[1]:
            raise Mismatch(tried, shown(expected), shown((ids, got[1])), first_hint(
                (ids, candidates), inside_hints(index, query_vector, probes, k, keep),
                "open the `probes` nearest buckets, keep the members that are allowed, rank those by cosine and"
                " return the first k with the number of candidates kept"))
    index, keep = bucket_index(COURSE_SEED), allowed(COURSE_SEED, NARROWEST)
    recall = candidates = 0.0
    for n, query_vector in enumerate(query_vectors(COURSE_SEED)):
        ids, count = search(index, list(query_vector), PROBES, K, set(keep))
        recall += recall_against(list(ids), correct_answers(COURSE_SEED, NARROWEST)[n])
        candidates += count
    queries = len(query_vectors(COURSE_SEED))
    expected_recall, _, expected_candidates = inside_measures(COURSE_SEED, NARROWEST, PROBES)
    tried = f"your filter_inside over the 40 queries at the course seed, width {NARROWEST}, {PROBES} probes"
    expect_number(recall / queries, expected_recall, tried + " (recall)", "see the per-query check above",
                  tolerance=1e-12)
    expect_number(candidates / queries, expected_candidates, tried + " (candidates)", "see the per-query check above",
                  tolerance=1e-9)
    return [f"filter_inside agrees with the index's in-search filter on {len(cases)} searches (three seeds, four"
            " widths, two probe counts),",
            f"and reproduces lesson 05's narrowest row at the course seed: {candidates / queries:.1f} candidates,"
            f" recall {recall / queries:.4f}."]


# ---------------------------------------------------------------- q3: measure four probes at width 1

INSIDE_PROBES = ((COURSE_SEED + 1, NARROWEST, 4, True), (7, 2, 4, True), (COURSE_SEED, NARROWEST, PROBES, True),
                 (COURSE_SEED, NARROWEST, 4, False))


def check_inside_at(answer: Any) -> list[str]:
    """inside_at(seed, width, probes) equals the reference at other settings, then at the asked one."""
    measure = require_function(answer, "inside_at")
    for seed, width, probes, reveal in INSIDE_PROBES:
        tried = f"inside_at({seed}, {width}, {probes})"
        got = call(measure, "inside_at", (seed, width, probes), tried)
        recall, comparisons = unpack_pair(got, tried, "recall", "mean comparisons",
                                          "return two numbers: `return recall, comparisons`")
        recall = as_number(recall, tried, "a recall")
        expected = inside_measures(seed, width, probes)[:2]
        hints = [(lambda: (expected[0], expected[1] - BUCKETS),
                  "count the 16 representatives among the comparisons, as the lesson does"),
                 (lambda: (expected[0], inside_measures(seed, width, probes)[2]),
                  "that is the number of candidates; comparisons add the 16 representatives"),
                 (lambda: inside_measures(COURSE_SEED, width, probes)[:2],
                  "your function measures the course seed's world: build everything from the seed it is given")]
        hint = first_hint((recall, comparisons), hints,
                          "build the index (16 buckets from the seed) and the regions (16, from the seed), filter"
                          " inside the search, and average recall against the exact filtered top 5 and comparisons")
        expect_number(recall, expected[0], tried + " (recall, first number)", hint, reveal=reveal)
        expect_number(comparisons, expected[1], tried + " (comparisons, second number)", hint, reveal=reveal)
    recall, comparisons, _ = inside_measures(COURSE_SEED, NARROWEST, 4)
    matching_count = len(allowed(COURSE_SEED, NARROWEST))
    return [f"inside_at matches the reference at {len(INSIDE_PROBES)} settings, three seeds among them.",
            f"Width 1 with 4 probes, course seed: recall {recall:.4f} for {comparisons:.1f} comparisons, against"
            f" {matching_count} for the exact scan of the filtered set."]


EXERCISES = ExerciseSet("05-metadata-filtering", "Metadata filtering", [
    Exercise("q1", "predict", "filter after, fetching everything", ("PREDICTED_RECALL",), check_fetch_everything),
    Exercise("q2", "build", "the filter inside the search", ("filter_inside",), check_filter_inside),
    Exercise("q3", "measure", "four probes at the narrowest width", ("inside_at",), check_inside_at),
])
check = EXERCISES.check
