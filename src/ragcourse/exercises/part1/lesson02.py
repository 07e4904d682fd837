"""Exercises of lesson 02: the outsider's top sets, counting distinct top sets, the class hit rate at five.

q1 (predict) asks how many different top-ten sets the out-of-domain model hands out; q2
(build) has the student count distinct top-k sets, the "sets" column of the lesson's first
table, and reproduce that column; q3 (measure) reads the class hit rate at a dimension the
lesson's sweep skipped, near its cliff.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.metrics import retrieval_scores
from ...retrieval.search import EmbeddingIndex, KeywordIndex
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, call, check_choice, expect_number,
                        first_hint, likely_hint, require_function, shown)
from ..reference import K, OTHER_SEEDS, model, world

DEEPER_K = 10
SETUP_NAMES = ("keyword search", "in-domain , model 1", "in-domain , model 2", "out-of-domain , model 1",
               "out-of-domain , model 2")


@lru_cache(maxsize=8)
def setup_rankings(seed: int) -> dict[str, tuple[tuple[int, ...], ...]]:
    """Full rankings of every query under the five setups of lesson 02's first table (32 dimensions)."""
    current = world(seed)
    texts = [d.text for d in current.documents]
    first, second = model(seed), model(seed, projection_seed=seed + 1)
    indexes = {"keyword search": KeywordIndex(texts),
               "in-domain , model 1": EmbeddingIndex(first, texts),
               "in-domain , model 2": EmbeddingIndex(second, texts),
               "out-of-domain , model 1": EmbeddingIndex(first.with_settings(in_domain=False), texts),
               "out-of-domain , model 2": EmbeddingIndex(second.with_settings(in_domain=False), texts)}
    return {name: tuple(tuple(index.rank(q.text)) for q in current.queries) for name, index in indexes.items()}


# ---------------------------------------------------------------- q1: predict the outsider's sets

OUTSIDER_OPTIONS = {"a": "one set for all forty queries", "b": "about seven, as many as keyword search",
                    "c": "about seventeen, like the in-domain model", "d": "forty, a different set for every query"}


def option_for_sets(count: int) -> str:
    """The option a count of distinct sets falls under."""
    if count == 1:
        return "a"
    if count <= 10:
        return "b"
    return "c" if count < 40 else "d"


def check_outsider_sets(prediction: Any) -> list[str]:
    """PREDICTED_SETS against the out-of-domain model's distinct top-ten sets at the course seed."""
    rankings = setup_rankings(COURSE_SEED)["out-of-domain , model 1"]
    count = len({frozenset(r[:DEEPER_K]) for r in rankings})
    return check_choice(
        prediction, "PREDICTED_SETS", OUTSIDER_OPTIONS, option_for_sets(count),
        f"{count} distinct top-{DEEPER_K} set{'s' if count != 1 else ''} over 40 queries",
        ["The outsider cannot read the customers' wording, and each filler word raises all twenty concept",
         "weights by the same 0.05. Every question therefore turns into the same flat concept vector: the",
         "search sees one question forty times. One vector gives one ranking, so one set, whatever K is."])


# ---------------------------------------------------------------- q2: build the distinct-set count

MADE_UP_CASES: tuple[tuple[tuple[tuple[int, ...], ...], int], ...] = (
    (((0, 1, 2), (1, 0, 2)), 2),
    (((0, 1, 2, 3), (0, 1, 3, 2)), 2),
    (((0, 1, 2), (0, 2, 1)), 2),
    (((0, 1, 2, 3), (1, 0, 2, 3), (0, 1, 3, 2)), 2),
    (((0, 1, 2, 3), (1, 0, 2, 3), (0, 1, 3, 2)), 3),
    (((4, 3, 2, 1, 0), (0, 1, 2, 3, 4), (4, 0, 1, 2, 3)), 1),
    (((2, 0, 1), (1, 2, 0), (0, 1, 2), (2, 1, 0)), 3),
    (((5, 4, 3, 2, 1, 0), (4, 5, 3, 0, 1, 2), (5, 4, 2, 3, 0, 1), (0, 1, 2, 3, 4, 5)), 2),
    (((5, 4, 3, 2, 1, 0), (4, 5, 3, 0, 1, 2), (5, 4, 2, 3, 0, 1), (0, 1, 2, 3, 4, 5)), 3),
)


def reference_count(rankings: Sequence[Sequence[int]], k: int) -> int:
    """How many different sets of first ``k`` items the rankings hold (order ignored)."""
    return len({frozenset(r[:k]) for r in rankings})


def count_cases() -> list[tuple[str, list[list[int]], int]]:
    """(label, rankings, k): made-up rankings first, then the lesson's setups at two seeds."""
    cases = [(f"made-up case {n}", [list(r) for r in rankings], k)
             for n, (rankings, k) in enumerate(MADE_UP_CASES, 1)]
    for seed in (OTHER_SEEDS[0], COURSE_SEED):
        for name, rankings in setup_rankings(seed).items():
            for k in ((3, K, DEEPER_K) if seed != COURSE_SEED else (K,)):
                cases.append((f"{name} at seed {seed}", [list(r) for r in rankings], k))
    return cases


def count_hints(rankings: list[list[int]], k: int) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the count and what to say about each."""
    return [
        (lambda: len({tuple(r[:k]) for r in rankings}),
         "order does not count: the same documents in another order are the same set (use a set or frozenset)"),
        (lambda: reference_count(rankings, k + 1), "take the first k documents of each ranking, no more: r[:k]"),
        (lambda: reference_count(rankings, k - 1), "take the first k documents of each ranking, no fewer: r[:k]"),
        (lambda: len({r[0] for r in rankings}), "a top set holds the first k documents, not only the first"),
        (lambda: len(rankings), "count the different sets, not the rankings"),
        (lambda: len({tuple(r) for r in rankings}), "compare only the first k documents, not whole rankings"),
    ]


def check_count_top_sets(answer: Any) -> list[str]:
    """count_top_sets agrees with the reference on made-up and real rankings; reproduces the sets column."""
    count = require_function(answer, "count_top_sets")
    cases = count_cases()
    for label, rankings, k in cases:
        tried = f"count_top_sets(<{len(rankings)} rankings: {label}>, k={k})"
        if label.startswith("made-up"):
            tried = f"count_top_sets({shown(rankings, 60)}, {k})"
        got = call(count, "count_top_sets", (rankings, k), tried)
        expected = reference_count(rankings, k)
        if isinstance(got, bool) or got != expected:
            raise Mismatch(tried, shown(expected), shown(got), likely_hint(
                count, got, (rankings, k), [([list(r) for r in rs], kk) for rs, kk in MADE_UP_CASES], count_hints,
                "make a set of the first k documents of every ranking and count how many different sets there are"))
    column = [reference_count(setup_rankings(COURSE_SEED)[name], K) for name in SETUP_NAMES]
    return [f"count_top_sets agrees with the reference on {len(cases)} cases (made-up rankings, and the lesson's five"
            " setups at two seeds and three depths),",
            "and reproduces the sets column of lesson 02's first table at the course seed: "
            + ", ".join(str(n) for n in column) + "."]


# ---------------------------------------------------------------- q3: measure the class hit rate at five

CLIFF_PROBES = ((COURSE_SEED + 1, 5, True), (7, 6, True), (COURSE_SEED, 4, True), (COURSE_SEED, 5, False))


@lru_cache(maxsize=32)
def scores_at(seed: int, dim: int, projection_seed: int | None = None):
    """Retrieval scores of the in-domain embedding search at ``dim`` dimensions, top K."""
    current = world(seed)
    index = EmbeddingIndex(model(seed, dim, projection_seed), [d.text for d in current.documents])
    return retrieval_scores(lambda q: index.rank(q.text), current.queries, current.documents, current.relevant, K)


def check_class_hit(answer: Any) -> list[str]:
    """class_hit_at(seed, dim) equals the reference at other seeds and dimensions, then at the asked one."""
    measure = require_function(answer, "class_hit_at")
    for seed, dim, reveal in CLIFF_PROBES:
        tried = f"class_hit_at({seed}, {dim})"
        got = call(measure, "class_hit_at", (seed, dim), tried)
        hints = [(lambda: scores_at(seed, dim).concept_hit,
                  "that is the concept hit rate; the class hit rate only asks whether the first result's class"
                  " is the query's class"),
                 (lambda: scores_at(seed, dim).precision, "that is precision; read only the first result"),
                 (lambda: scores_at(COURSE_SEED, dim).class_hit,
                  "your function measures the course seed's world: build the world and the model from its seed"),
                 (lambda: scores_at(seed, 32).class_hit, "use the dimension you are given, not 32"),
                 (lambda: scores_at(seed, dim, seed + 1).class_hit,
                  "that is model 2; the question asks for model 1, whose projection seed is the seed itself")]
        expected = scores_at(seed, dim).class_hit
        expect_number(got, expected, tried, first_hint(got, hints,
                      "build the world and model 1 (in-domain, projection seed = seed) at dim dimensions, search"
                      f" the top {K} for each of the 40 queries, and average the class hits of the first results"),
                      reveal=reveal)
    value = scores_at(COURSE_SEED, 5).class_hit
    return [f"class_hit_at matches the reference at {len(CLIFF_PROBES)} settings, three seeds among them.",
            f"Class hit rate of model 1 at 5 dimensions, course seed: {value:.4f} (8 dimensions: 1.0000,"
            " 4 dimensions: 0.6000)."]


EXERCISES = ExerciseSet("02-embedding-models", "Embedding models", [
    Exercise("q1", "predict", "the outsider's top-ten sets", ("PREDICTED_SETS",), check_outsider_sets),
    Exercise("q2", "build", "counting distinct top sets", ("count_top_sets",), check_count_top_sets),
    Exercise("q3", "measure", "the class hit rate at five dimensions", ("class_hit_at",), check_class_hit),
])
check = EXERCISES.check
