"""``rag.search.PathMemo``: a first stage answered from memory is the first stage the database returns.

Lab 04's runs share one memo (``labs.systems.SettingRuns``), so the ladder and the test cell
fetch each path's rows for a question once, at a depth of 60, and hand shallower settings a
prefix. These tests hold that to the database on real numpy pages and real dev questions:
every scoring (``LEXICAL``) and the exhaustive dense path, at depths below, at and above the
memo's, and the HNSW path, which the memo must not keep.
"""
from __future__ import annotations

import pytest

from ragcourse.corpus.apidocs import export_markdown, load_corpus
from ragcourse.corpus.queries import real_questions
from ragcourse.engines.chunking.policy import ChunkPolicy
from ragcourse.rag.search import LEXICAL, PathMemo, candidates
from ragcourse.rag.store import PgIndex
from support.database import FakeEncoder

MODULES = ("numpy.linalg", "numpy.fft", "numpy.random")


@pytest.fixture(scope="module")
def index(database, tmp_path_factory):
    corpus = load_corpus()
    folder = tmp_path_factory.mktemp("memo") / "history"
    export_markdown(corpus, folder, summaries=True)
    for path in folder.iterdir():   # a few hundred chunks: enough for ties and for lists longer than 60
        if not path.name.startswith(MODULES) and not path.name.startswith("numpy.s"):
            path.unlink()
    built = PgIndex(database, schema="t_path_memo", policy=ChunkPolicy.recursive(headers=True),
                    encoder=FakeEncoder())
    built.drop()
    built.refresh(folder)
    yield built
    built.drop()
    built.close()


@pytest.fixture(scope="module")
def questions():
    return [q.text for q in real_questions("dev")][:40]


def ids(passages) -> list[tuple[int, float, int]]:
    return [(sp.passage.chunk_id, sp.score, sp.rank) for sp in passages]


@pytest.mark.parametrize("lexical", LEXICAL)
def test_a_remembered_first_stage_equals_the_database_at_every_depth(index, questions, lexical):
    encoder, memo = FakeEncoder(), PathMemo(floor=60)
    vectors = encoder.encode(questions)
    deepest = 0
    for depth in (60, 30, 5, 60, 90, 30):   # below, at and above the memo's depth, in an awkward order
        for question, vector in zip(questions, vectors):
            direct = candidates(index, question, vector, depth, lexical=lexical)
            remembered = candidates(index, question, vector, depth, lexical=lexical, memo=memo)
            assert ids(remembered.full_text) == ids(direct.full_text), (lexical, depth, question)
            assert ids(remembered.dense) == ids(direct.dense), (lexical, depth, question)
            assert ids(remembered.fused) == ids(direct.fused), (lexical, depth, question)
            deepest = max(deepest, len(direct.full_text))
    assert deepest > 30, "no question matched more than 30 chunks: the prefix was never tested"
    # two paths a question at depth 60, then again for 90 only where 60 did not hold every row
    assert memo.fetched <= 4 * len(questions) and memo.served >= 8 * len(questions)


def test_an_approximate_dense_search_is_never_remembered(index, questions):
    index.create_hnsw(m=16, ef_construction=64)
    encoder, memo = FakeEncoder(), PathMemo()
    vector = encoder.encode([questions[0]])[0]
    for _ in range(3):
        candidates(index, questions[0], vector, 30, exact=False, memo=memo)
    assert memo.fetched == 1 and memo.served == 2   # the full-text rows only


@pytest.mark.parametrize("lexical", ["bm25", "none"])
def test_rows_prefetched_from_two_sessions_are_the_rows_one_session_reads(database, index, questions, lexical):
    """``SettingRuns.prefetch`` fills the runs' memo from two connections at once; every question is then
    answered from memory, with the rows, scores and ranks the database gives one question at a time."""
    from types import SimpleNamespace

    from ragcourse.labs.systems import SettingRuns

    runs = SettingRuns(database, FakeEncoder(), {}, reader=None, report=None)
    pipeline = SimpleNamespace(index=index, per_path=30, lexical=lexical, exact=True, memo=runs.memo)
    # two paths a question (with no full text, the memo keeps its empty list), a repeated question once
    assert runs.prefetch(pipeline, questions[3:] + questions) == 2 * len(questions)
    fetched = runs.memo.fetched
    vectors = FakeEncoder().encode(questions)
    for question, vector in zip(questions, vectors):
        direct = candidates(index, question, vector, 30, lexical=lexical)
        remembered = candidates(index, question, vector, 30, lexical=lexical, memo=runs.memo)
        assert ids(remembered.full_text) == ids(direct.full_text) and ids(remembered.dense) == ids(direct.dense)
    assert runs.memo.fetched == fetched and runs.memo.served == 2 * len(questions)   # nothing fetched again
    assert runs.prefetch(pipeline, questions) == 0                                    # and nothing prefetched again
    approximate = SimpleNamespace(index=index, per_path=30, lexical=lexical, exact=False, memo=runs.memo)
    assert runs.prefetch(approximate, ["another question"]) == 0                      # HNSW rows are never kept


def test_a_fork_starts_from_what_the_memo_holds_and_a_join_takes_its_rows_back():
    memo = PathMemo(floor=5)
    memo.rows(("a",), 5, lambda depth: list(range(depth)))
    fork = memo.fork()
    assert fork.rows(("a",), 3, lambda depth: pytest.fail("asked again")) == [0, 1, 2]
    fork.rows(("b",), 2, lambda depth: ["x"] * depth)
    assert memo.rows(("b",), 1, lambda depth: ["fetched"]) == ["fetched"]   # the fork's rows are its own until joined
    memo = PathMemo(floor=5)
    memo.rows(("a",), 5, lambda depth: list(range(depth)))
    memo.join(fork)
    assert memo.rows(("b",), 5, lambda depth: pytest.fail("asked again")) == ["x"] * 5
    assert memo.fetched == 2 and fork.floor == 5


def test_a_bad_floor_is_refused():
    with pytest.raises(ValueError, match="limit"):
        PathMemo(floor=0)
