"""Lab 03's chunkers: the written-out recursive splitter equals langchain's, sections, sentences."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse.engines.chunking.splitters import (RECURSIVE_SEPARATORS, markdown_text, recursive_split, section_chunks,
                                      sentence_units, with_header)

SAMPLE = ("numpy.demo(a, axis=None)\n\n## Parameters\n\na : array_like\n    Input data. It is long enough. "
          "Another sentence here.\n\naxis : int, optional\n    The axis.\n\n## Notes\n\n"
          + "word " * 120 + "\n\n## See Also\n\nother : a thing")


def langchain(text: str, chunk_size: int, chunk_overlap: int = 0) -> list[str]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(separators=list(RECURSIVE_SEPARATORS), chunk_size=chunk_size,
                                              chunk_overlap=chunk_overlap)
    return splitter.split_text(text)


@pytest.mark.parametrize("chunk_size", [20, 60, 150, 400, 2000])
def test_recursive_split_equals_langchain_on_a_page(chunk_size):
    assert recursive_split(SAMPLE, chunk_size) == langchain(SAMPLE, chunk_size)


@pytest.mark.parametrize("chunk_size,overlap", [(60, 10), (150, 40)])
def test_recursive_split_equals_langchain_with_overlap(chunk_size, overlap):
    assert recursive_split(SAMPLE, chunk_size, chunk_overlap=overlap) == langchain(SAMPLE, chunk_size, overlap)


ALPHABET = st.sampled_from(["a", "b", " ", ".", ". ", "\n\n", "\n\n## ", "x" * 7, "\n"])


@settings(max_examples=150, deadline=None)
@given(st.lists(ALPHABET, max_size=60).map("".join), st.integers(1, 40))
def test_recursive_split_equals_langchain_on_random_texts(text, chunk_size):
    assert recursive_split(text, chunk_size) == langchain(text, chunk_size)


def test_recursive_split_keeps_every_chunk_within_the_size():
    assert all(len(c) <= 60 for c in recursive_split(SAMPLE, 60))


def test_recursive_split_rejects_a_bad_size():
    with pytest.raises(ValueError, match="chunk_size"):
        recursive_split(SAMPLE, 0)


class Page:
    doc_id = "numpy.demo"
    title = "Demonstrate things."

    class S:
        def __init__(self, heading, text):
            self.heading, self.text = heading, text

    sections = (S("Parameters", "a : array_like\n    Input data. Second one."), S("Notes", "Short note."))
    text = "numpy.demo(a)\n\nParameters\n\na : array_like\n    Input data. Second one.\n\nNotes\n\nShort note."


def test_section_chunks_and_headers():
    chunks = section_chunks(Page)
    assert [c.heading_path for c in chunks] == ["numpy.demo > Signature", "numpy.demo > Parameters",
                                                "numpy.demo > Notes"]
    assert chunks[0].text == "numpy.demo(a)"
    headed = with_header(chunks[2], Page.title)
    assert headed.text == "Demonstrate things.\nnumpy.demo > Notes\n\nShort note."
    assert markdown_text(Page).startswith("numpy.demo(a)\n\n## Parameters\n\na : array_like")


def test_sentence_units_know_their_parent_section():
    units = sentence_units(Page, lambda text: [s + "." for s in text.split(". ") if s.rstrip(".")] or [text])
    assert [(u.section, u.text) for u in units][0] == (0, "numpy.demo(a).")
    assert {u.section for u in units} == {0, 1, 2}
    assert [u.position for u in units] == list(range(len(units)))


def test_the_summary_line_joins_the_first_section_and_only_when_asked():
    plain, kept = section_chunks(Page), section_chunks(Page, summary=True)
    assert kept[0].text == "numpy.demo(a)\n\nDemonstrate things." and plain[0].text == "numpy.demo(a)"
    assert [c.text for c in kept[1:]] == [c.text for c in plain[1:]]
    sentences = [u.text for u in sentence_units(Page, lambda text: text.split(". "), summary=True)]
    assert "Demonstrate things." in sentences
    assert "Demonstrate things." not in [u.text for u in sentence_units(Page, lambda text: text.split(". "))]


def test_recursive_split_equals_langchain_on_real_pages():
    from ragcourse.corpus.apidocs import load_corpus

    documents = load_corpus().documents
    for document in documents[::25]:
        text = markdown_text(document)
        for chunk_size in (300, 800):
            assert recursive_split(text, chunk_size) == langchain(text, chunk_size), document.doc_id
