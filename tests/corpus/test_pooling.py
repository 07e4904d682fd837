"""The judged questions' pooling record: complete, consistent with the questions, and used by them.

The pool of a question is the top ``depth`` pages of each pooled retriever. Lab 01's two
lexical retrievers are exact, so their whole top 10 must be judged; the dense retriever's
scores can move in the last float digits on another machine, so its top 8 is required
(a page at rank 9 or 10 may swap with its neighbour there).
"""
from __future__ import annotations

import pytest

from ragcourse.corpus.apidocs import load_corpus
from ragcourse.corpus.queries import judged_questions, pooled_relevant, pooling

RECORD = pooling()


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


def test_the_record_says_what_was_pooled_and_by_which_rule():
    assert RECORD["retrievers"] == ["lexical", "bm25", "dense"] and RECORD["depth"] == 10
    assert "relevant" in RECORD["rule"] and len(RECORD["rule"]) > 200
    assert set(RECORD["judgements"]) == {q.qid for q in judged_questions()}


def test_every_judgement_names_a_corpus_page_and_gives_a_reason(corpus):
    for qid, pages in RECORD["judgements"].items():
        for page, verdict in pages.items():
            assert page in corpus.by_id, (qid, page)
            assert isinstance(verdict["relevant"], bool) and verdict["why"].strip(), (qid, page)


def test_pooled_pages_are_not_pages_listed_by_hand():
    listed = {q.qid: set(q.relevant) for q in judged_questions(pooled=False)}
    for qid, pages in RECORD["judgements"].items():
        assert not set(pages) & listed[qid], qid


def test_the_questions_carry_exactly_the_pages_judged_relevant():
    by_hand = {q.qid: q.relevant for q in judged_questions(pooled=False)}
    for question in judged_questions():
        added = question.relevant[len(by_hand[question.qid]):]
        assert question.relevant[:len(by_hand[question.qid])] == by_hand[question.qid]
        assert added == pooled_relevant(question.qid)
        judged = RECORD["judgements"][question.qid]
        assert all(judged[p]["relevant"] for p in added)
        assert not {p for p, v in judged.items() if v["relevant"]} - set(added)


def test_known_gaps_of_the_hand_lists_are_closed():
    """Pages the review named as missing: multi_dot and einsum for matrix products, the smoothing windows."""
    relevant = {q.qid: set(q.relevant) for q in judged_questions()}
    assert {"numpy.linalg.multi_dot", "numpy.einsum"} <= relevant["j10"]
    assert {"numpy.hanning", "numpy.hamming", "numpy.bartlett", "numpy.blackman", "numpy.kaiser"} <= relevant["j26"]
    assert "numpy.block" in relevant["j01"] and "numpy.einsum" in relevant["j33"]


@pytest.mark.parametrize("retriever, required", [("lexical", 10), ("bm25", 10),
                                                 pytest.param("dense", 8, marks=pytest.mark.embeddings("questions", "lab 02"))])
def test_every_page_in_the_pool_is_judged(corpus, retriever, required):
    from ragcourse.engines.catalogue import answers

    questions = judged_questions(pooled=False)
    runs = answers(retriever, [q.text for q in questions], corpus, summaries=False)   # as pooled
    missing = []
    for question, hits in zip(questions, runs):
        judged = set(question.relevant) | set(RECORD["judgements"][question.qid])
        missing += [(question.qid, h.doc_id) for h in hits[:required] if h.doc_id not in judged]
    assert not missing, f"pooled pages never judged: {missing[:10]}"
