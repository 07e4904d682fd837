"""Tests of the candidate lists and head measures shared by lessons 12 and 13 (ragcourse.retrieval.candidates)."""
from __future__ import annotations

import pytest

from ragcourse import COURSE_SEED
from ragcourse.retrieval.candidates import (
    candidate_lists,
    changed_share,
    generation_share,
    precision_at,
    recall_at,
    target_set_sizes,
)
from ragcourse.retrieval.pipeline import CosineJaccardRetriever, IndexedChunk, index_chunks, is_relevant
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import Query, build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.llm import ChunkAnswerer
from ragcourse.world.text import tokenize

ED = SECOND_EDITION


def paragraph(code: str, text: str) -> IndexedChunk:
    """A hand-made fault/leak chunk with its token bag (no vector needed here)."""
    return IndexedChunk(code, "fault", "leak", text, (), frozenset(tokenize(text)))


@pytest.fixture(scope="module")
def course():
    """World, indexed chunks and retriever at the course seed."""
    world = build_world(COURSE_SEED, ED)
    model = EmbeddingModel(ED, COURSE_SEED)
    indexed = index_chunks(paragraph_chunks(world.documents, ED), model)
    return world, indexed, CosineJaccardRetriever(model, indexed)


@pytest.fixture(scope="module")
def world(course):
    return course[0]


@pytest.fixture(scope="module")
def indexed(course):
    return course[1]


@pytest.fixture(scope="module")
def retriever(course):
    return course[2]


@pytest.fixture(scope="module")
def lists(world, retriever):
    return candidate_lists(retriever, world.queries, 48)


def test_one_deep_retrieval_gives_every_shorter_top_k(world, retriever, lists):
    assert [len(chunks) for chunks in lists] == [48] * len(world.queries)
    for query, chunks in list(zip(world.queries, lists))[:8]:
        for k in (1, 3, 13, 40):
            assert retriever.retrieve(query.text, k) == chunks[:k]


def test_course_numbers_of_single_stage_retrieval(world, indexed, lists):
    """Lesson 12 block 1 at the course seed: target sets and recall/precision at k."""
    queries = world.queries
    sizes = target_set_sizes(indexed, queries, ED)
    assert sum(sizes) == 356 and "%.1f" % (sum(sizes) / 40) == "8.9"
    table = {k: ("%.4f" % recall_at(lists, queries, ED, k), "%.4f" % precision_at(lists, queries, ED, k))
             for k in (1, 3, 5, 10, 20, 40)}
    assert table == {1: ("0.7750", "0.7750"), 3: ("0.7750", "0.4167"), 5: ("0.8000", "0.2700"),
                     10: ("0.9750", "0.2425"), 20: ("1.0000", "0.2425"), 40: ("1.0000", "0.1831")}


def test_precision_keeps_the_course_order_of_additions(world, lists):
    queries = world.queries
    by_hand = 0
    for query, chunks in zip(queries, lists):
        by_hand += sum(is_relevant(c, query, ED) for c in chunks[:5]) / 5
    assert precision_at(lists, queries, ED, 5) == by_hand / 40      # same bits, 0.2700000000000001


def test_generation_share_of_the_single_stage_pipeline(world, lists):
    answerer = ChunkAnswerer(ED, COURSE_SEED)
    chosen = [answerer.answer(q.text, chunks[:3]).chunk for q, chunks in zip(world.queries, lists)]
    assert generation_share(chosen, world.queries, ED) == 0.7          # lesson 12, 3 candidates
    assert generation_share([None] * 40, world.queries, ED) == 0.0      # overflow counts wrong


def test_small_hand_made_case():
    query = Query("water escaping note", "fault", "leak")
    right = paragraph("AR001", "line leak for note goes with line leak and is filed")
    wrong_record = paragraph("AR002", "line leak for form goes with line leak and is filed")
    wrong_concept = paragraph("AR003", "pressure drop for note goes with pressure drop and is filed")
    lists = [[wrong_record, right, wrong_concept]]
    assert recall_at(lists, [query], ED, 1) == 0.0
    assert recall_at(lists, [query], ED, 2) == 1.0
    assert precision_at(lists, [query], ED, 3) == 1 / 3
    assert precision_at(lists, [query], ED, 6) == 1 / 6          # a short list still divides by k
    assert target_set_sizes(lists[0], [query], ED) == [1]
    assert generation_share([right], [query], ED) == 1.0


def test_changed_share_compares_identity():
    first, twin = paragraph("AR001", "line leak"), paragraph("AR001", "line leak")
    assert changed_share([first, twin, None, first], [first, first, None, None]) == 0.5
    assert changed_share([first], [first]) == 0.0


@pytest.mark.parametrize("call, message", [
    (lambda: recall_at([[]], [Query("a b", "fault", "leak")], ED, 0), "k must be a positive integer"),
    (lambda: precision_at([[]], [Query("a b", "fault", "leak")], ED, True), "k must be a positive integer"),
    (lambda: recall_at([], [], ED, 3), "queries must not be empty"),
    (lambda: precision_at([[], []], [Query("a b", "fault", "leak")], ED, 3), "one entry per query"),
    (lambda: generation_share([None], [], ED), "queries must not be empty"),
    (lambda: changed_share([], []), "baseline must not be empty"),
    (lambda: changed_share([1], [1, 2]), "differ in length"),
])
def test_errors_say_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_candidate_lists_refuses_a_bad_depth(world, retriever):
    with pytest.raises(ValueError, match="k must be a positive integer"):
        candidate_lists(retriever, world.queries, 0)
