"""Exercises of lesson 01: the recall ceiling at ten, the keyword score, cosine similarity, recall at k.

q1 (predict) asks for the recall ceiling at K = 10; q2 and q3 (build) have the student write
the two scoring functions the lesson's comparison rests on, check them on generated inputs
at three seeds and reproduce the lesson's precisions with them; q4 (measure) runs the
embedding search at a depth the lesson did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

from ...retrieval.metrics import recall_ceiling, retrieval_scores
from ...retrieval.ranking import rank_by_score
from ...retrieval.search import EmbeddingIndex, KeywordIndex
from ...world.embedding import dot, length
from ...world.text import tokenize
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, call, check_estimate, expect_number,
                        first_hint, likely_hint, require_function, shown)
from ..reference import K, OTHER_SEEDS, model, uniform_draws, world

SEEDS = (COURSE_SEED, *OTHER_SEEDS)
DEEPER_K = 10


# ---------------------------------------------------------------- q1: predict the ceiling at ten

def check_ceiling(prediction: Any) -> list[str]:
    """PREDICTED_CEILING within 0.05 of the recall ceiling at K = 10 (course seed)."""
    course = world(COURSE_SEED)
    truth = recall_ceiling(course.queries, course.relevant, DEEPER_K)
    return check_estimate(
        prediction, "PREDICTED_CEILING", truth, 0.05,
        f"recall ceiling {truth:.4f} for ten documents (0.4904 for five)",
        ["A query's ceiling is the share of its relevant documents that K slots can hold at best.",
         "Five slots against about eleven relevant documents cap every query below one half; ten slots",
         "hold all of them for a concept with ten or fewer documents, and most of them for the rest.",
         "So doubling K nearly doubles the ceiling. Whether the search gets close to it is what q4 measures."])


# ---------------------------------------------------------------- q2: build the keyword score

MADE_UP_PAIRS = (
    ("meter meter reading form", "reading procedure , meter check form and another meter reading"),
    ("form note form note", "note written for a form , note and note again"),
    ("Tier Threshold, Band", "tier threshold procedure , band band band"),
    ("pressure drop", "weak flow region"),
    ("AR002 numbered document", "AR002 pressure drop procedure numbered"),
)


def keyword_pairs() -> list[tuple[str, str]]:
    """Query and document texts from three seeds, then made-up pairs with repeats, capitals and commas."""
    pairs = []
    for seed in SEEDS:
        current = world(seed)
        for query_number in (0, 13, 27):
            for document_number in (0, 57, 131, 199):
                pairs.append((current.queries[query_number].text, current.documents[document_number].text))
    return pairs + list(MADE_UP_PAIRS)


def reference_keyword_score(query_text: str, document_text: str) -> int:
    """The package's keyword score of one pair (KeywordIndex over a single document)."""
    return KeywordIndex([document_text]).scores(query_text)[0]


def keyword_hints(query_text: str, document_text: str) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the keyword score and what to say when the student's matches one."""
    query_tokens, document_tokens = tokenize(query_text), tokenize(document_text)
    return [
        (lambda: sum(token in set(document_tokens) for token in query_tokens),
         "a token that appears twice in the query was counted twice; count each distinct query token once"),
        (lambda: sum(document_tokens.count(token) for token in set(query_tokens)),
         "a token scores one point whether the document holds it once or five times"),
        (lambda: len(set(query_text.lower().split()) & set(document_text.lower().split())),
         "split with tokenize: the course cuts words into five-character pieces ('threshold' is 'thres' + 'hold')"),
        (lambda: len(set(query_text.split()) & set(document_text.split())),
         "split with tokenize: it also lower-cases, and it cuts words into five-character pieces"),
        (lambda: len(set(query_tokens) & set(document_tokens)) / len(set(query_tokens) | set(document_tokens)),
         "the score is a count of shared tokens, not a share: do not divide"),
    ]


def precision_by_keyword_score(score: Callable[[str, str], Any], seed: int) -> float:
    """Keyword search's precision of the top K at ``seed`` when documents are ranked by ``score``."""
    current = world(seed)

    def rank(query):
        return rank_by_score([score(query.text, d.text) for d in current.documents])

    return retrieval_scores(rank, current.queries, current.documents, current.relevant, K).precision


@lru_cache(maxsize=4)
def keyword_precision(seed: int) -> float:
    """The lesson's keyword precision at ``seed`` (0.0800 at the course seed)."""
    current = world(seed)
    index = KeywordIndex([d.text for d in current.documents])
    return retrieval_scores(lambda q: index.rank(q.text), current.queries, current.documents,
                            current.relevant, K).precision


def check_keyword_score(answer: Any) -> list[str]:
    """keyword_score equals the package's on every pair; ranking by it gives the lesson's precision."""
    score = require_function(answer, "keyword_score")
    pairs = keyword_pairs()
    for query_text, document_text in pairs:
        tried = f"keyword_score({shown(query_text, 40)}, {shown(document_text, 40)})"
        got = call(score, "keyword_score", (query_text, document_text), tried)
        expected = reference_keyword_score(query_text, document_text)
        if isinstance(got, bool) or got != expected:
            raise Mismatch(tried, shown(expected), shown(got), likely_hint(
                score, got, (query_text, document_text), MADE_UP_PAIRS, keyword_hints,
                "the score is the number of distinct query tokens (from tokenize) found among the document's tokens"))
    expected = keyword_precision(COURSE_SEED)
    expect_number(precision_by_keyword_score(score, COURSE_SEED), expected,
                  f"keyword search ranked by your keyword_score, 40 queries at the course seed, top {K}",
                  "rank every document by your score with rank_by_score (ties: the earlier document first)",
                  tolerance=1e-12)
    return [f"keyword_score agrees with the package on {len(pairs)} query-document pairs (three seeds and"
            f" {len(MADE_UP_PAIRS)} made-up ones),",
            f"and ranking by it reproduces lesson 01's keyword precision {expected:.4f} at the course seed."]


# ---------------------------------------------------------------- q3: build cosine similarity

def vector_pairs() -> list[tuple[list[float], list[float]]]:
    """Hand-picked pairs, random pairs of 2 to 32 numbers at several lengths, and raw model vectors."""
    pairs = [([1.0, 0.0], [0.0, 2.0]), ([3.0, 4.0], [6.0, 8.0]), ([1.0, -2.0, 0.5], [-2.0, 4.0, -1.0])]
    draws = iter(uniform_draws(COURSE_SEED + 3, 4 * 2 * 2 * 32 + 16))
    for dim in (2, 3, 8, 32):
        for _ in range(2):
            scale_u, scale_v = 0.5 + 6 * next(draws), 0.5 + 6 * next(draws)
            pairs.append(([scale_u * (2 * next(draws) - 1) for _ in range(dim)],
                          [scale_v * (2 * next(draws) - 1) for _ in range(dim)]))
    for seed in SEEDS[:2]:
        current, embedding = world(seed), model(seed)
        for query_number, document_number in ((0, 0), (5, 17), (31, 140)):
            pairs.append((embedding.raw(current.queries[query_number].text),
                          embedding.raw(current.documents[document_number].text)))
    return pairs


def reference_cosine(u, v) -> float:
    """Dot product over the product of the two lengths."""
    return dot(u, v) / (length(u) * length(v))


def cosine_hints(u, v) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of cosine similarity and what to say about each."""
    return [
        (lambda: dot(u, v), "that is the plain dot product: divide it by the lengths of both vectors"),
        (lambda: dot(u, v) / (dot(u, u) * dot(v, v)),
         "divide by the lengths, not by their squares: a length is the square root of the sum of squares"),
        (lambda: dot(u, v) / length(u), "divide by the length of both vectors, not only the first"),
        (lambda: dot(u, v) / length(v), "divide by the length of both vectors, not only the second"),
        (lambda: sum((a - b) ** 2 for a, b in zip(u, v)) ** 0.5,
         "that is the distance between the two points; cosine measures the angle between the vectors"),
        (lambda: abs(reference_cosine(u, v)), "keep the sign: vectors pointing opposite ways have cosine -1"),
    ]


def precision_by_cosine(similarity: Callable[[Any, Any], Any], seed: int) -> float:
    """Embedding search's precision at ``seed`` when raw (unnormalised) vectors are ranked by ``similarity``."""
    current, embedding = world(seed), model(seed)
    raw_documents = [embedding.raw(d.text) for d in current.documents]

    def rank(query):
        query_vector = embedding.raw(query.text)
        return rank_by_score([similarity(query_vector, v) for v in raw_documents])

    return retrieval_scores(rank, current.queries, current.documents, current.relevant, K).precision


@lru_cache(maxsize=8)
def embedding_index(seed: int) -> EmbeddingIndex:
    """The exhaustive embedding search of lesson 01 at ``seed`` (32 dimensions)."""
    return EmbeddingIndex(model(seed), [d.text for d in world(seed).documents])


@lru_cache(maxsize=16)
def embedding_scores(seed: int, k: int):
    """The four retrieval scores of the embedding search of the top ``k`` at ``seed``."""
    current, index = world(seed), embedding_index(seed)
    return retrieval_scores(lambda q: index.rank(q.text), current.queries, current.documents, current.relevant, k)


def check_cosine(answer: Any) -> list[str]:
    """cosine_similarity matches the reference on every pair; ranking raw vectors by it gives 0.4700."""
    similarity = require_function(answer, "cosine_similarity")
    pairs = vector_pairs()
    for u, v in pairs:
        tried = f"cosine_similarity({shown(list(u), 34)}, {shown(list(v), 34)})  ({len(u)} numbers each)"
        got = call(similarity, "cosine_similarity", (list(u), list(v)), tried)
        expected = reference_cosine(u, v)
        expect_number(got, expected, tried, first_hint(got, cosine_hints(u, v),
                      "cosine similarity is the dot product divided by the product of the two vectors' lengths"),
                      tolerance=1e-9)
    expected = embedding_scores(COURSE_SEED, K).precision
    expect_number(precision_by_cosine(similarity, COURSE_SEED), expected,
                  f"raw (unnormalised) vectors ranked by your cosine_similarity, 40 queries, course seed, top {K}",
                  "your function must not depend on how long the vectors are, only on their directions",
                  tolerance=1e-12)
    return [f"cosine_similarity agrees with the reference on {len(pairs)} pairs of vectors (2 to 32 numbers,"
            " raw model vectors included),",
            f"and ranking the raw vectors by it reproduces the embedding search's precision {expected:.4f}"
            " at the course seed: length no longer matters."]


# ---------------------------------------------------------------- q4: measure recall at ten

RECALL_PROBES = ((COURSE_SEED + 1, DEEPER_K, True), (7, 3, True), (COURSE_SEED, K, True),
                 (COURSE_SEED, DEEPER_K, False))


def check_embedding_recall(answer: Any) -> list[str]:
    """embedding_recall(seed, k) equals the reference at other seeds and depths, then at the asked one."""
    measure = require_function(answer, "embedding_recall")
    for seed, k, reveal in RECALL_PROBES:
        tried = f"embedding_recall({seed}, {k})"
        got = call(measure, "embedding_recall", (seed, k), tried)
        current = world(seed)
        hints = [(lambda: embedding_scores(seed, k).precision,
                  "that is precision: recall divides the relevant documents found by the number of relevant"
                  " documents of the query's concept, not by k"),
                 (lambda: recall_ceiling(current.queries, current.relevant, k),
                  "that is the recall ceiling, the best any search could reach; measure the embedding search itself"),
                 (lambda: embedding_scores(COURSE_SEED, k).recall,
                  "your function measures the course seed's world: build the world and the model from the seed"
                  " it is given"),
                 (lambda: embedding_scores(seed, K).recall, f"return the recall of the top k, not of the top {K}")]
        expected = embedding_scores(seed, k).recall
        expect_number(got, expected, tried, first_hint(got, hints,
                      "build the world and the in-domain model (projection seed = seed, 32 dimensions) from the seed,"
                      " rank every document for each query, and average recall over the 40 queries"),
                      reveal=reveal)
    value = embedding_scores(COURSE_SEED, DEEPER_K).recall
    return [f"embedding_recall matches the reference at {len(RECALL_PROBES)} settings, three seeds among them.",
            f"Recall of the top {DEEPER_K} at the course seed: {value:.4f} (top {K}: 0.2258). Set it beside the"
            " ceiling you predicted in q1."]


EXERCISES = ExerciseSet("01-what-is-an-embedding", "What is an embedding", [
    Exercise("q1", "predict", "the recall ceiling at K = 10", ("PREDICTED_CEILING",), check_ceiling),
    Exercise("q2", "build", "the keyword score", ("keyword_score",), check_keyword_score),
    Exercise("q3", "build", "cosine similarity", ("cosine_similarity",), check_cosine),
    Exercise("q4", "measure", "embedding recall at another depth", ("embedding_recall",), check_embedding_recall),
])
check = EXERCISES.check
