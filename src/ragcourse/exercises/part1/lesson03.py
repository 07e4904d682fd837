"""Exercises of lesson 03: a uniform rescaling, the top-3 divergence count, divergence at eight dimensions.

q1 (predict) asks what doubling every stored vector does to the dot product's top three;
q2 (build) has the student count the queries whose top-3 sets differ between two rankers,
the number the lesson's comparison opens with, and reproduce 30 and 25; q3 (measure) runs
the comparison at a dimension the lesson did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.ranking import rank_by_score
from ...world.embedding import dot, unit
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, call, check_choice, expect_number, first_hint,
                        likely_hint, require_function, shown)
from ..reference import OTHER_SEEDS, model, world

DEPTH = 3


@lru_cache(maxsize=16)
def ranker_rankings(seed: int, dim: int = 32, projection_seed: int | None = None,
                    stored_scale: float = 1.0) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """(cosine rankings, dot-product rankings) of every query, as lesson 03's two rankers make them.

    ``stored_scale`` multiplies every stored raw document vector before the dot product (q1).
    """
    current, embedding = world(seed), model(seed, dim, projection_seed)
    raw_documents = [embedding.raw(d.text) for d in current.documents]
    unit_documents = [unit(v) for v in raw_documents]
    scaled_documents = [[stored_scale * x for x in v] for v in raw_documents]
    by_cosine, by_dot = [], []
    for query in current.queries:
        raw_query = embedding.raw(query.text)
        unit_query = unit(raw_query)
        by_cosine.append(tuple(rank_by_score([dot(unit_query, v) for v in unit_documents])))
        by_dot.append(tuple(rank_by_score([dot(raw_query, v) for v in scaled_documents])))
    return tuple(by_cosine), tuple(by_dot)


def reference_divergence(rankings_a: Sequence[Sequence[int]], rankings_b: Sequence[Sequence[int]], depth: int) -> int:
    """Queries whose first ``depth`` results differ as sets between two lists of rankings."""
    return sum(set(a[:depth]) != set(b[:depth]) for a, b in zip(rankings_a, rankings_b))


# ---------------------------------------------------------------- q1: predict a uniform rescaling

RESCALE_OPTIONS = {"a": "none of the forty", "b": "about ten", "c": "about thirty, as many as cosine against the dot"
                   " product", "d": "all forty"}


def check_rescaling(prediction: Any) -> list[str]:
    """PREDICTED_CHANGES: top-3 sets changed by doubling every stored vector (dot product, course seed)."""
    _, plain = ranker_rankings(COURSE_SEED)
    _, doubled = ranker_rankings(COURSE_SEED, stored_scale=2.0)
    changed = reference_divergence(plain, doubled, DEPTH)
    truth = "a" if changed == 0 else "b" if changed <= 20 else "c" if changed < 40 else "d"
    return check_choice(
        prediction, "PREDICTED_CHANGES", RESCALE_OPTIONS, truth,
        f"{changed} of 40 queries change their top three",
        ["Doubling every stored vector doubles every score a question gets, and multiplying a whole list of",
         "scores by one positive number leaves their order as it was (times two is even exact in floating",
         "point). A ranking moves only when documents are rescaled by different factors, and that is what",
         "normalising does: each vector is divided by its own length."])


# ---------------------------------------------------------------- q2: build the divergence count

MADE_UP_CASES: tuple[tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...], int], ...] = (
    (((0, 1, 2, 3),), ((1, 0, 2, 3),), 2),
    (((0, 1, 2, 3),), ((0, 1, 3, 2),), 2),
    (((0, 1, 2),), ((0, 2, 1),), 2),
    (((0, 1, 2, 3), (3, 2, 1, 0), (1, 2, 3, 0)), ((1, 0, 2, 3), (3, 2, 0, 1), (2, 1, 0, 3)), 3),
    (((4, 3, 2, 1, 0), (0, 1, 2, 3, 4)), ((4, 2, 3, 0, 1), (1, 0, 2, 4, 3)), 1),
)


def divergence_cases() -> list[tuple[str, list[list[int]], list[list[int]], int]]:
    """(label, rankings_a, rankings_b, depth): made-up cases, then the lesson's rankers at two seeds."""
    cases = [(f"made-up case {n}", [list(r) for r in a], [list(r) for r in b], depth)
             for n, (a, b, depth) in enumerate(MADE_UP_CASES, 1)]
    for seed, depths in ((OTHER_SEEDS[0], (1, DEPTH, 5)), (COURSE_SEED, (DEPTH,))):
        for label, projection_seed in (("model 1", None), ("model 2", seed + 1)):
            by_cosine, by_dot = ranker_rankings(seed, projection_seed=projection_seed)
            for depth in depths:
                cases.append((f"cosine against dot product, {label}, seed {seed}", [list(r) for r in by_cosine],
                              [list(r) for r in by_dot], depth))
    return cases


def divergence_hints(a: list[list[int]], b: list[list[int]], depth: int) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the count and what to say about each."""
    return [
        (lambda: sum(x[:depth] != y[:depth] for x, y in zip(a, b)),
         "the same documents in another order are not a divergence: compare the first results as sets"),
        (lambda: reference_divergence(a, b, depth + 1), "compare the first `depth` results, no more: r[:depth]"),
        (lambda: reference_divergence(a, b, depth - 1), "compare the first `depth` results, no fewer: r[:depth]"),
        (lambda: len(a) - reference_divergence(a, b, depth),
         "that counts the queries whose first results agree; the question counts those that differ"),
        (lambda: sum(x[0] != y[0] for x, y in zip(a, b)), "compare the whole top `depth`, not only the first result"),
        (lambda: len(set().union(*(set(x[:depth]) for x in a)) ^ set().union(*(set(y[:depth]) for y in b))),
         "compare the two rankings of each query with each other, query by query, and count queries"),
    ]


def check_divergence(answer: Any) -> list[str]:
    """diverging_queries agrees with the reference on made-up and real rankings; reproduces 30 and 25."""
    count = require_function(answer, "diverging_queries")
    cases = divergence_cases()
    for label, a, b, depth in cases:
        tried = (f"diverging_queries({shown(a, 40)}, {shown(b, 40)}, {depth})" if label.startswith("made-up")
                 else f"diverging_queries(<40 rankings: {label}>, <40 rankings>, {depth})")
        got = call(count, "diverging_queries", (a, b, depth), tried)
        expected = reference_divergence(a, b, depth)
        if isinstance(got, bool) or got != expected:
            raise Mismatch(tried, shown(expected), shown(got), likely_hint(
                count, got, (a, b, depth),
                [([list(r) for r in x], [list(r) for r in y], d) for x, y, d in MADE_UP_CASES], divergence_hints,
                "for each query compare the set of the first `depth` results of both rankings, and count the"
                " queries where the sets differ"))
    model_1 = reference_divergence(*ranker_rankings(COURSE_SEED), DEPTH)
    model_2 = reference_divergence(*ranker_rankings(COURSE_SEED, projection_seed=COURSE_SEED + 1), DEPTH)
    return [f"diverging_queries agrees with the reference on {len(cases)} cases (made-up rankings, and both models'"
            " rankers at two seeds),",
            f"and reproduces lesson 03's count at the course seed: {model_1}/40 queries with model 1,"
            f" {model_2}/40 with model 2."]


# ---------------------------------------------------------------- q3: measure divergence at eight dimensions

DIVERGENCE_PROBES = ((COURSE_SEED + 1, 8, True), (7, 16, True), (COURSE_SEED, 32, True), (COURSE_SEED, 8, False))


def check_divergence_at(answer: Any) -> list[str]:
    """diverging_at(seed, dim) equals the reference at other seeds and dimensions, then at the asked one."""
    measure = require_function(answer, "diverging_at")
    for seed, dim, reveal in DIVERGENCE_PROBES:
        tried = f"diverging_at({seed}, {dim})"
        got = call(measure, "diverging_at", (seed, dim), tried)
        hints = [(lambda: sum(a[:DEPTH] != b[:DEPTH] for a, b in zip(*ranker_rankings(seed, dim))),
                  "the same three documents in another order do not count: compare sets"),
                 (lambda: reference_divergence(*ranker_rankings(seed, dim), 5), "compare the first three, not five"),
                 (lambda: reference_divergence(*ranker_rankings(COURSE_SEED, dim), DEPTH),
                  "your function measures the course seed's world: build the world and the model from its seed"),
                 (lambda: reference_divergence(*ranker_rankings(seed, 32), DEPTH),
                  "use the dimension you are given, not 32"),
                 (lambda: reference_divergence(*ranker_rankings(seed, dim, seed + 1), DEPTH),
                  "that is model 2; the question asks for model 1, whose projection seed is the seed itself")]
        expected = reference_divergence(*ranker_rankings(seed, dim), DEPTH)
        expect_number(got, expected, tried, first_hint(got, hints,
                      "build the world and model 1 at dim dimensions, rank every query by cosine (unit vectors)"
                      " and by dot product (raw vectors), and count the queries whose top three differ as sets"),
                      tolerance=0, reveal=reveal)
    value = reference_divergence(*ranker_rankings(COURSE_SEED, 8), DEPTH)
    return [f"diverging_at matches the reference at {len(DIVERGENCE_PROBES)} settings, three seeds among them.",
            f"At 8 dimensions, course seed: {value}/40 queries diverge (30/40 at 32 dimensions)."]


EXERCISES = ExerciseSet("03-similarity-metrics", "Similarity metrics", [
    Exercise("q1", "predict", "doubling every stored vector", ("PREDICTED_CHANGES",), check_rescaling),
    Exercise("q2", "build", "the top-3 divergence count", ("diverging_queries",), check_divergence),
    Exercise("q3", "measure", "divergence at eight dimensions", ("diverging_at",), check_divergence_at),
])
check = EXERCISES.check
