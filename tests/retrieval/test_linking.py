"""Tests of the retrieve-then-link measurement of lessons 08 and 09 (ragcourse.retrieval.linking)."""
from __future__ import annotations

import pytest

from ragcourse import COURSE_SEED
from ragcourse.retrieval.linking import retrieve_top_k, run_linking
from ragcourse.retrieval.search import EmbeddingIndex
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel

WORLD = build_world(COURSE_SEED, SECOND_EDITION)
MODEL = EmbeddingModel(SECOND_EDITION, COURSE_SEED)
CHUNKS = paragraph_chunks(WORLD.documents, SECOND_EDITION)


def test_course_seed_paragraph_chunks():
    run = run_linking(CHUNKS, WORLD.queries, MODEL, COURSE_SEED, k=3)
    assert (run.recall, run.precision, run.label) == (0.95, 0.95, 0.95)
    assert (run.generation, run.overflow, run.tokens) == (0.925, 0.0, 4848)
    assert run.n == 40 and all(len(o.retrieved) == 3 for o in run.outcomes)
    assert run.outcomes[36].response.status == "rate_limit"    # the 37th call of a fresh linker


def test_runs_repeat_and_window_overflows():
    first = run_linking(CHUNKS, WORLD.queries, MODEL, COURSE_SEED)
    assert run_linking(CHUNKS, WORLD.queries, MODEL, COURSE_SEED) == first
    tight = run_linking(CHUNKS, WORLD.queries, MODEL, COURSE_SEED, window=80)
    assert tight.overflow == 1.0 and tight.generation == 0.0


def test_retrieval_equals_the_exhaustive_index():
    texts = [c.text for c in CHUNKS]
    shortcut = retrieve_top_k(MODEL, texts, [q.text for q in WORLD.queries[:5]], 40)
    index = EmbeddingIndex(MODEL, texts)
    assert shortcut == [index.rank(q.text)[:40] for q in WORLD.queries[:5]]


def test_bad_k_is_refused():
    with pytest.raises(ValueError, match="k must be a positive integer"):
        retrieve_top_k(MODEL, ["a"], ["b"], 0)
