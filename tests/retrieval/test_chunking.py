"""Tests of lesson 09's token-window chunker and relation spans (ragcourse.retrieval.chunking)."""
from __future__ import annotations

import pytest

from ragcourse import COURSE_SEED
from ragcourse.retrieval.chunking import (
    body_words,
    count_whole,
    paragraph_spans,
    relation_spans,
    token_windows,
)
from ragcourse.world.concepts import FIRST_EDITION, SECOND_EDITION
from ragcourse.world.corpus import build_documents
from ragcourse.world.text import tokenize


@pytest.fixture(scope="module")
def documents():
    return build_documents(COURSE_SEED, SECOND_EDITION)


def kept(documents, size, overlap):
    """Relations kept whole and chunks made over the corpus at one size and overlap."""
    whole = chunks = 0
    for document in documents:
        spans = token_windows(body_words(document), size, overlap)
        whole += count_whole(relation_spans(document, SECOND_EDITION), spans)
        chunks += len(spans)
    return whole, chunks


def test_paragraph_and_relation_spans_of_the_second_edition(documents):
    for document in documents:
        n = len(document.paragraphs)
        assert paragraph_spans(document) == [(11 * t, 11 * t + 11) for t in range(n)]
        assert relation_spans(document, SECOND_EDITION) == [(11 * t, 11 * t + 8) for t in range(n)]
        assert len(body_words(document)) == 11 * n
    first = documents[0]
    start, end = relation_spans(first, SECOND_EDITION)[0]
    text = " ".join(body_words(first)[start:end])
    assert text.startswith(first.paragraphs[0].split()[0])
    assert text.endswith(SECOND_EDITION.concept(first.main).document_form)


def test_relation_spans_follow_the_template_in_the_first_edition():
    document = build_documents(COURSE_SEED, FIRST_EDITION)[0]
    for (start, end), paragraph in zip(relation_spans(document, FIRST_EDITION), document.paragraphs):
        assert " ".join(body_words(document)[start:end]) == paragraph   # main form ends the paragraph


def test_token_windows_by_hand():
    words = ["alpha", "betagamma", "c", "d"]   # tokens 1, 2, 1, 1
    assert token_windows(words, 3) == [(0, 2), (2, 4)]
    assert token_windows(words, 3, overlap=2) == [(0, 2), (1, 3), (2, 4)]
    assert token_windows(words, 1) == [(0, 1), (1, 2), (2, 3), (3, 4)]   # a too-long word still moves on
    assert token_windows(words, 100, overlap=50) == [(0, 4)]
    assert token_windows([], 5) == []


def test_windows_respect_the_budget_and_move_forward(documents):
    for size, overlap in [(8, 0), (20, 8), (12, 11), (5, 20)]:
        for document in documents[:40]:
            words = body_words(document)
            spans = token_windows(words, size, overlap)
            assert spans[0][0] == 0 and spans[-1][1] == len(words)
            for (start, end), (next_start, _) in zip(spans, spans[1:]):
                assert start < next_start <= end
            for start, end in spans:
                assert end - start == 1 or len(tokenize(" ".join(words[start:end]))) <= size


def test_course_seed_relation_counts(documents):
    relations = sum(len(d.paragraphs) for d in documents)
    assert relations == 693
    assert kept(documents, 8, 0) == (53, 1217)       # relation recall 0.0765
    assert kept(documents, 20, 0) == (443, 555)      # 0.6392
    assert kept(documents, 80, 0) == (691, 203)      # 0.9971
    assert kept(documents, 20, 8) == (668, 718)      # 0.9639
    assert kept(documents, 20, 12) == (693, 897)     # 1.0000
    assert round(443 / relations, 4) == 0.6392


def test_count_whole():
    assert count_whole([(0, 8), (11, 19)], [(0, 10), (10, 20)]) == 2
    assert count_whole([(0, 8), (11, 19)], [(0, 5), (5, 15), (15, 20)]) == 0
    assert count_whole([(3, 5)], []) == 0


@pytest.mark.parametrize("size, overlap, message", [
    (0, 0, "size must be a positive integer"), (True, 0, "size must be a positive integer"),
    (8, -1, "overlap must be a non-negative integer"), (8, 1.5, "overlap must be a non-negative integer"),
])
def test_bad_settings_are_refused(size, overlap, message):
    with pytest.raises(ValueError, match=message):
        token_windows(["a", "b"], size, overlap)
