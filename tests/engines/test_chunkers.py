"""Chunker invariants: limits kept (truncations aside), ids and positions, text rebuilt."""
from __future__ import annotations

import pytest

from ragcourse.corpus.apidocs import load_corpus
from ragcourse.engines.chunking.text_chunks import PARAGRAPH_BREAK, chunk_corpus, pack_paragraphs, word_windows


@pytest.fixture(scope="module")
def documents():
    return load_corpus().documents


@pytest.mark.parametrize("max_chars", [200, 800, 3200])
def test_paragraph_packing_keeps_the_limit_and_rebuilds_the_text(documents, max_chars):
    for document in documents:
        chunks = pack_paragraphs(document.doc_id, document.text, max_chars)
        assert [c.position for c in chunks] == list(range(len(chunks)))
        assert all(c.doc_id == document.doc_id and len(c.text) <= max_chars for c in chunks)
        if not any(c.truncated for c in chunks):
            assert PARAGRAPH_BREAK.join(c.text for c in chunks) == document.text
        for chunk in chunks:   # whole paragraphs, except a truncated one
            if not chunk.truncated:
                assert all(p in document.text.split(PARAGRAPH_BREAK) for p in chunk.text.split(PARAGRAPH_BREAK))


def test_only_an_overlong_paragraph_is_truncated():
    text = "short one\n\n" + "x" * 30 + "\n\nlast"
    chunks = pack_paragraphs("d", text, max_chars=20)
    assert [(c.text, c.truncated) for c in chunks] == [("short one", False), ("x" * 20, True), ("last", False)]
    assert [c.chunk_id for c in chunks] == ["d#0", "d#1", "d#2"]
    assert [c.text for c in pack_paragraphs("d", "a\n\nb\n\nc", max_chars=4)] == ["a\n\nb", "c"]


def test_word_windows_overlap_and_cover_every_word(documents):
    for document in documents:
        words = document.text.split()
        chunks = word_windows(document.doc_id, document.text, 60, 20)
        assert all(len(c.text.split()) <= 60 for c in chunks)
        rebuilt = chunks[0].text.split()
        for chunk in chunks[1:]:
            assert chunk.text.split()[:20] == rebuilt[-20:]
            rebuilt += chunk.text.split()[20:]
        assert rebuilt == words
    assert len(word_windows("d", "one two three", 60, 20)) == 1


def test_chunker_parameters_are_checked():
    with pytest.raises(ValueError, match="overlap"):
        word_windows("d", "a b c", 10, 10)
    with pytest.raises(ValueError, match="max_chars"):
        pack_paragraphs("d", "a", 0)


def test_corpus_chunk_counts(documents):
    assert len(chunk_corpus(documents, pack_paragraphs)) == 1546   # 1311 before the corpus grew from 527 to 686 pages
    assert len(chunk_corpus(documents, word_windows)) == 3409   # 2960 before
