"""The fresh set is frozen: its file is the one committed with its hash, before anything was scored on it.

It also holds what a confirmatory set must: real questions none of the other sets has, ids that are
pages of the corpus, and for each an excerpt of its first judged page that a chunk of that page holds."""
from __future__ import annotations

import hashlib
import json
import re

import pytest

from ragcourse.corpus.apidocs import load_corpus
from ragcourse.corpus.queries import (FRESH_SHA256, Question, fresh_file_bytes, fresh_questions, judged_questions,
                                      passage_chunks, real_questions, unanswerable_questions)
from ragcourse.engines.chunking.splitters import recursive_chunks

MINIMUM = 200


def words(text: str) -> str:
    """A title as compared: case, question marks, spacing and a leading "Python:" or "numpy:" tag aside."""
    flat = " ".join(text.lower().replace("?", "").split())
    return re.sub(r"^(python|numpy|python numpy|numpy python)\s*[:-]\s*", "", flat)


def address(url: str) -> str:
    """A page's address as compared: scheme, ``www.``, query, fragment and a trailing slash aside."""
    bare = re.sub(r"^https?://(www\.)?", "", url.strip()).split("?")[0].split("#")[0]
    return bare.rstrip("/").lower()


def test_the_file_is_the_one_frozen_by_its_hash():
    assert hashlib.sha256(fresh_file_bytes()).hexdigest() == FRESH_SHA256, (
        "data/fresh_questions.json changed after it was frozen: the fresh set must not be edited once systems "
        "have been scored on it (restore it with git, or freeze a new set in a commit of its own)")


def test_the_set_is_large_distinct_and_new():
    fresh = fresh_questions()
    assert len(fresh) >= MINIMUM
    assert len({q.qid for q in fresh}) == len(fresh)
    assert len({words(q.text) for q in fresh}) == len(fresh), "a title appears twice"
    assert len({address(q.source) for q in fresh}) == len(fresh), "a page appears twice"
    older = real_questions("all") + judged_questions() + unanswerable_questions()
    assert not {words(q.text) for q in fresh} & {words(q.text) for q in older}
    assert not {address(q.source) for q in fresh} & {address(q.source) for q in older if q.source}
    assert all(q.source.startswith(("https://", "http://")) and q.style in ("real", "real-doubtful") for q in fresh)


def test_every_id_is_a_page_and_every_passage_is_its_own_text():
    corpus = load_corpus()
    pages = corpus.by_id
    raw = json.loads(fresh_file_bytes())["questions"]
    for row in raw:
        assert 1 <= len(row["relevant"]) <= 3, row["qid"]
        assert all(r in pages for r in row["relevant"]), row["qid"]
        assert row["passage"] in pages[row["relevant"][0]].markdown(summary=True), row["qid"]
    resolved = fresh_questions(corpus)
    assert [q.relevant for q in resolved] == [tuple(r["relevant"]) for r in raw]


def test_a_chunk_of_the_judged_page_holds_each_passage():
    """Under lab 03's recursive chunking (800 characters, with the summary line) every passage is found in a
    chunk of its page: whole, or its longest piece where a cut split it."""
    corpus = load_corpus()
    pages = corpus.by_id
    split = 0
    for question in fresh_questions():
        chunks = [c.text for c in recursive_chunks(pages[question.relevant[0]], 800, summary=True)]
        found = passage_chunks(question.passage, chunks)
        assert found, question.qid
        split += not any(" ".join(question.passage.split()) in " ".join(chunks[i].split()) for i in found)
    assert split <= len(fresh_questions()) // 10   # a cut splits few passages of 5 to 40 words


def test_passage_chunks_finds_whole_and_split_passages():
    chunks = ["Join a sequence of arrays\nalong an existing axis.", "The arrays must have the same shape,",
              "except in the dimension corresponding to axis."]
    assert passage_chunks("Join a sequence of arrays along an existing axis.", chunks) == (0,)
    assert passage_chunks("same shape, except in the dimension corresponding to axis.", chunks) == (2,)
    assert passage_chunks("nothing like it at all, not in any chunk whatever", chunks) == ()
    assert isinstance(fresh_questions()[0], Question)


@pytest.mark.parametrize("field", ["question", "url", "relevant", "passage", "note", "doubtful", "qid", "site"])
def test_every_row_has_every_field(field):
    assert all(field in row for row in json.loads(fresh_file_bytes())["questions"])
