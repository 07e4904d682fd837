"""Exercises of lesson 06: a constant of 1 on code queries, reciprocal rank fusion, top1 at constant 2.

q1 (predict) asks what a tiny fusion constant does to the code class; q2 (build) has the
student write reciprocal rank fusion (first place at position 0, ties to the lower index) and
reproduce the lesson's 0.4000 and 0.0500; q3 (measure) reads the document class's top1 at a
constant the lesson's sweep did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.fusion import fused_scores, reciprocal_rank_fusion
from ...retrieval.ranking import rank_by_score
from ...retrieval.search import EmbeddingIndex, KeywordIndex
from ...world.query_classes import ClassQuery, draw_query_classes, searchable_text
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, call, check_choice, expect_number, first_hint,
                        likely_hint, require_function, shown)
from ..reference import K, OTHER_SEEDS, model, shuffled, world

CONSTANT = 20


@lru_cache(maxsize=8)
def class_rankings(seed: int) -> dict[str, tuple[tuple[ClassQuery, tuple[int, ...], tuple[int, ...]], ...]]:
    """Per query class: (query, keyword ranking, embedding ranking) of every query, over the searchable texts."""
    current = world(seed)
    searchable = [searchable_text(d) for d in current.documents]
    keyword_index, embedding_index = KeywordIndex(searchable), EmbeddingIndex(model(seed), searchable)
    classes = draw_query_classes(seed, current.edition, current.documents)
    return {name: tuple((q, tuple(keyword_index.rank(q.text)), tuple(embedding_index.rank(q.text))) for q in queries)
            for name, queries in classes.items()}


@lru_cache(maxsize=8)
def relevant_by_concept(seed: int) -> dict[str, frozenset[int]]:
    """Documents per main concept."""
    current = world(seed)
    return {key: frozenset(i for i, d in enumerate(current.documents) if d.main == key) for key in current.edition.keys}


def class_measure(seed: int, query_class: str, fuse: Callable[[list[list[int]], float], Sequence[int]],
                  constant: float) -> tuple[float, float]:
    """(top1, target document@K) of the fused lists of one class, fused with ``fuse``."""
    documents, relevant = world(seed).documents, relevant_by_concept(seed)
    top1 = target = 0.0
    rows = class_rankings(seed)[query_class]
    for query, keyword_order, embedding_order in rows:
        fused = list(fuse([list(keyword_order), list(embedding_order)], constant))
        top1 += fused[0] in relevant[query.concept]
        target += any(documents[i].code == query.code for i in fused[:K])
    return top1 / len(rows), target / len(rows)


@lru_cache(maxsize=64)
def hybrid_measure(seed: int, query_class: str, constant: float, first_position: int = 0) -> tuple[float, float]:
    """The reference (top1, target document@K) of the hybrid on one class."""
    return class_measure(seed, query_class,
                         lambda rankings, c: reciprocal_rank_fusion(rankings, c, first_position), constant)


def single_top1(seed: int, query_class: str, which: int) -> float:
    """top1 of keyword (``which=1``) or embedding (``which=2``) search alone on one class."""
    rows, relevant = class_rankings(seed)[query_class], relevant_by_concept(seed)
    return sum(row[which][0] in relevant[row[0].concept] for row in rows) / len(rows)


# ---------------------------------------------------------------- q1: predict constant 1 on code queries

CODE_OPTIONS = {"a": "it stays near 0.05", "b": "it climbs to 1.0000, as keyword search alone",
                "c": "it falls to 0.0000", "d": "it settles near one half"}


def check_constant_one(prediction: Any) -> list[str]:
    """PREDICTED_TARGET: the hybrid's target document@5 on code queries at constant 1 (course seed)."""
    value = hybrid_measure(COURSE_SEED, "code", 1)[1]
    at_twenty = hybrid_measure(COURSE_SEED, "code", CONSTANT)[1]
    truth = "b" if value >= 0.99 else "c" if value == 0 else "a" if value <= 0.15 else "d"
    return check_choice(
        prediction, "PREDICTED_TARGET", CODE_OPTIONS, truth,
        f"target document@5 of the hybrid on code queries is {value:.4f} at constant 1 ({at_twenty:.4f} at 20)",
        ["At constant 1 a first place earns 1 and a fifth place 1/5, so a document that one list puts first",
         "stays near the top of the fused list however low the other list ranks it. Keyword search puts the",
         "requested document first for every code query. At constant 20 the first place earns 1/20 and the",
         "twentieth 1/40: places barely differ, and the documents both lists hold early (the start of the",
         "corpus, for the embedding's zero vector) outscore it. The constant decides how much one vote counts."])


# ---------------------------------------------------------------- q2: build reciprocal rank fusion

def fusion_cases() -> list[tuple[str, list[list[int]], float]]:
    """(label, rankings, constant): made-up rankings with ties, shuffles of ten items, the lesson's lists."""
    cases: list[tuple[str, list[list[int]], float]] = [
        ("made-up", [[0, 1, 2], [0, 1, 2]], 1),
        ("made-up", [[0, 1, 2, 3], [3, 2, 1, 0]], 5),
        ("made-up", [[1, 0, 2, 3], [2, 3, 1, 0]], 2),
        ("made-up", [[2, 0, 1], [1, 2, 0], [0, 1, 2]], 20),
    ]
    for number in range(6):
        lists = 2 + number % 2
        cases.append(("made-up", [shuffled(range(10), 1000 + 10 * number + j) for j in range(lists)],
                      (1, 2, 5, 20, 60, 3)[number]))
    for seed in (COURSE_SEED, OTHER_SEEDS[0]):
        for query_class in ("document", "code"):
            for number in (0, 17):
                _, keyword_order, embedding_order = class_rankings(seed)[query_class][number]
                cases.append((f"{query_class} query {number + 1} at seed {seed}",
                              [list(keyword_order), list(embedding_order)], (CONSTANT, 60)[number % 2]))
    return cases


def fusion_hints(rankings: list[list[int]], constant: float) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the fusion and what to say about each."""
    n = len(rankings[0])
    scores = fused_scores(rankings, constant)
    return [
        (lambda: reciprocal_rank_fusion(rankings, constant, first_position=1),
         "positions count from 0 in this course: the first place earns 1/c, not 1/(c + 1)"),
        (lambda: sorted(range(n), key=lambda i: (-scores[i], -i)),
         "on equal fused scores the lower item number comes first"),
        (lambda: sorted(rankings[0], key=lambda i: -scores[i]),
         "on equal fused scores the lower item number comes first, not the first list's order"),
        (lambda: sorted(range(n), key=lambda i: (scores[i], i)), "the highest fused score comes first"),
        (lambda: sorted(range(n), key=lambda i: (sum(r.index(i) for r in rankings), i)),
         "add the terms 1/(c + position), not the positions themselves"),
        (lambda: scores, "return the items in fused order, not their fused scores"),
        (lambda: rank_by_score([1.0 / (constant + rankings[0].index(i)) for i in range(n)]),
         "add one term from every list, not only the first"),
    ]


def check_rrf(answer: Any) -> list[str]:
    """rrf equals the package's fusion on made-up and real rankings; reproduces 0.4000 and 0.0500."""
    fuse = require_function(answer, "rrf")
    cases = fusion_cases()
    for label, rankings, constant in cases:
        tried = (f"rrf({shown(rankings, 150)}, {constant})" if label == "made-up"
                 else f"rrf(<keyword and embedding rankings of the {label}>, {constant})")
        got = call(fuse, "rrf", ([list(r) for r in rankings], constant), tried)
        expected = reciprocal_rank_fusion(rankings, constant)
        if not isinstance(got, (list, tuple)) or list(got) != expected:
            shown_got = list(got) if isinstance(got, (list, tuple)) else got
            raise Mismatch(tried, shown(expected, 60), shown(shown_got, 60), likely_hint(
                lambda *a: list(fuse(*a)), shown_got, (rankings, constant),
                [(r, c) for label, r, c in cases if label == "made-up"], fusion_hints,
                "give every item 1/(c + position) from each list (first place: position 0), add them up, and"
                " return all items by fused score, highest first, ties by the lower item number"))
    document_top1 = class_measure(COURSE_SEED, "document", fuse, CONSTANT)[0]
    code_target = class_measure(COURSE_SEED, "code", fuse, CONSTANT)[1]
    tried = f"your rrf on the lesson's 40 document and 40 code queries, constant {CONSTANT}, course seed"
    expect_number(document_top1, hybrid_measure(COURSE_SEED, "document", CONSTANT)[0], tried + " (document top1)",
                  "see the per-case check above", tolerance=1e-12)
    expect_number(code_target, hybrid_measure(COURSE_SEED, "code", CONSTANT)[1], tried + " (code target document@5)",
                  "see the per-case check above", tolerance=1e-12)
    return [f"rrf agrees with the package's reciprocal rank fusion on {len(cases)} cases (made-up rankings with ties,"
            " and the lesson's lists at two seeds),",
            f"and reproduces lesson 06 at the course seed: hybrid top1 {document_top1:.4f} on document phrasing,"
            f" target document@5 {code_target:.4f} on code queries."]


# ---------------------------------------------------------------- q3: measure top1 at constant 2

TOP1_PROBES = ((COURSE_SEED + 1, "subscriber", 10, True), (7, "document", 2, True),
               (COURSE_SEED, "document", CONSTANT, True), (COURSE_SEED, "document", 2, False))


def check_hybrid_top1(answer: Any) -> list[str]:
    """hybrid_top1(seed, query_class, constant) equals the reference at other settings, then at the asked one."""
    measure = require_function(answer, "hybrid_top1")
    for seed, query_class, constant, reveal in TOP1_PROBES:
        tried = f"hybrid_top1({seed}, {query_class!r}, {constant})"
        got = call(measure, "hybrid_top1", (seed, query_class, constant), tried)
        hints = [(lambda: hybrid_measure(seed, query_class, constant, first_position=1)[0],
                  "positions count from 0: the first place earns 1/c"),
                 (lambda: hybrid_measure(COURSE_SEED, query_class, constant)[0],
                  "your function measures the course seed's world: build everything from the seed it is given"),
                 (lambda: hybrid_measure(seed, query_class, constant)[1],
                  "that is target document@5; top1 asks whether the first fused result has the query's concept"),
                 (lambda: single_top1(seed, query_class, 1), "that is keyword search alone; fuse both rankings"),
                 (lambda: single_top1(seed, query_class, 2), "that is embedding search alone; fuse both rankings"),
                 (lambda: hybrid_measure(seed, query_class, CONSTANT)[0],
                  f"use the constant you are given, not {CONSTANT}")]
        expect_number(got, hybrid_measure(seed, query_class, constant)[0], tried, first_hint(got, hints,
                      "rank every query of the class by keyword and by embedding search over the searchable texts,"
                      " fuse the two rankings at the constant, and average whether the first result has the"
                      " query's concept"), reveal=reveal)
    value = hybrid_measure(COURSE_SEED, "document", 2)[0]
    return [f"hybrid_top1 matches the reference at {len(TOP1_PROBES)} settings, three seeds among them.",
            f"Document phrasing at constant 2, course seed: top1 {value:.4f} (constants 5 / 20 / 60: 0.4500 /"
            " 0.4000 / 0.4000; each search alone: 0.5000)."]


EXERCISES = ExerciseSet("06-hybrid-search", "Hybrid search", [
    Exercise("q1", "predict", "a constant of 1 on code queries", ("PREDICTED_TARGET",), check_constant_one),
    Exercise("q2", "build", "reciprocal rank fusion", ("rrf",), check_rrf),
    Exercise("q3", "measure", "document top1 at constant 2", ("hybrid_top1",), check_hybrid_top1),
])
check = EXERCISES.check
