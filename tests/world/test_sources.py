"""Tests of lesson 08's raw source generator (ragcourse.world.sources)."""
from __future__ import annotations

import pytest

from ragcourse import COURSE_SEED
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_documents
from ragcourse.world.sources import (
    FORM_HEADER,
    PAGE_FOOTER,
    SPLIT_AFTER_WORDS,
    code_field,
    is_continuation,
    raw_sheet,
    raw_sources,
)


@pytest.fixture(scope="module")
def documents():
    return build_documents(COURSE_SEED, SECOND_EDITION)


@pytest.fixture(scope="module")
def sheets(documents):
    return raw_sources(documents, COURSE_SEED)


def merged(lines):
    """Continuation lines appended to the line before them (what preparation undoes)."""
    out = []
    for line in lines:
        if is_continuation(line) and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def test_course_seed_totals(documents, sheets):
    assert len(sheets) == 200
    assert sum(len(lines) for lines in sheets) == 1805
    assert sum(len(d.paragraphs) for d in documents) == 693
    assert sum(is_continuation(line) for lines in sheets for line in lines) == 1805 - 693 - 800


def test_course_seed_sample_sheet(documents, sheets):
    """The sheet lesson 08 prints: the first with two or more continuation lines and at most ten lines."""
    index = next(i for i, lines in enumerate(sheets)
                 if sum(is_continuation(line) for line in lines) >= 2 and len(lines) <= 10)
    assert documents[index].code == "SY003"
    assert sheets[index] == [
        "regional directorate field record sheet",
        "document code SY003 class meter",
        "reading routine procedure",
        "reading check for note goes",
        "  with reading routine and is filed",
        "meter swap for form goes with reading",
        "  routine and is filed",
        "reading",
        "  routine for task goes with reading routine and is filed",
        "for internal use only do not distribute",
    ]


def test_sheet_layout_and_merge_recovers_paragraphs(documents, sheets):
    for document, lines in zip(documents, sheets):
        assert lines[0] == FORM_HEADER and lines[-1] == PAGE_FOOTER
        assert lines[1] == code_field(document) == f"document code {document.code} class {document.label}"
        assert lines[2] == document.title
        assert merged(lines)[3:-1] == list(document.paragraphs)
        for before, line in zip(lines, lines[1:]):
            if is_continuation(line):
                assert len(before.split()) in SPLIT_AFTER_WORDS


def test_deterministic_and_seed_dependent(documents, sheets):
    assert raw_sources(documents, COURSE_SEED) == sheets
    assert raw_sheet(documents[5], COURSE_SEED, 5) == sheets[5]
    assert raw_sources(documents, COURSE_SEED + 1) != sheets


def test_split_share_extremes(documents):
    never = raw_sources(documents, COURSE_SEED, split_share=0)
    always = raw_sources(documents, COURSE_SEED, split_share=1.0)
    for document, none_split, all_split in zip(documents, never, always):
        assert len(none_split) == len(document.paragraphs) + 4
        assert not any(is_continuation(line) for line in none_split)
        assert len(all_split) == 2 * len(document.paragraphs) + 4


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.45", True, None])
def test_bad_split_share_is_refused(documents, bad):
    with pytest.raises(ValueError, match="split_share must be a number from 0 to 1"):
        raw_sheet(documents[0], COURSE_SEED, 0, bad)
