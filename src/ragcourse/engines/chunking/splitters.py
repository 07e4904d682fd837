"""The chunkers of lab 03: recursive splitting, one chunk per section, sentences.

- ``recursive_split``: written out here, it tries the separators in order (section,
  paragraph, sentence, word, character) and merges the pieces up to ``chunk_size``
  characters; it is the algorithm of langchain's ``RecursiveCharacterTextSplitter`` with
  ``keep_separator=True`` (a separator stays at the start of the piece that follows it) and
  ``strip_whitespace=True``, and ``tests/labs/test_lab03_splitters.py`` holds the two equal.
- ``section_chunks``: one chunk per numpydoc section, plus one for the name and signature;
  each keeps its heading path ``doc_id > Section`` as metadata.
- ``sentence_units``: pysbd's sentences of every paragraph, with the section they sit in.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from ...toolkit.params import check_int
from .text_chunks import TextChunk

SECTION_MARK = "\n\n## "
RECURSIVE_SEPARATORS: tuple[str, ...] = (SECTION_MARK, "\n\n", ". ", " ", "")
HEAD_HEADING = "Signature"

@dataclass(frozen=True)
class HeadedChunk(TextChunk):
    """A chunk that knows the section it comes from (``heading``) and that section's number."""

    heading: str = ""
    section: int = 0

    @property
    def heading_path(self) -> str:
        """Where the chunk sits: ``doc_id > Section``."""
        return f"{self.doc_id} > {self.heading}"


def page_head(document, summary: bool = False) -> str:
    """A page's name and signature, then, with ``summary``, its summary line (as in ``ApiDocument.searched_text``)."""
    return document.text.split("\n\n", 1)[0] + (f"\n\n{document.title}" if summary and document.title else "")


def markdown_text(document, summary: bool = False) -> str:
    """A page as the recursive splitter reads it: ``page_head``, then ``## Heading`` per section."""
    return page_head(document, summary) + "".join(f"{SECTION_MARK}{s.heading}\n\n{s.text}" for s in document.sections)


def _split_keeping(text: str, separator: str) -> list[str]:
    """``text`` cut before every ``separator`` (which stays at the start of its piece); no empty pieces."""
    if not separator:
        return list(text)
    parts = re.split(f"({re.escape(separator)})", text)
    pieces = [parts[0]] + [parts[i] + parts[i + 1] for i in range(1, len(parts) - 1, 2)]
    return [p for p in pieces if p]


def _merge(pieces: Sequence[str], chunk_size: int, chunk_overlap: int, length: Callable[[str], int]) -> list[str]:
    """Consecutive pieces joined while they fit in ``chunk_size``; the tail of one chunk may start the next."""
    chunks: list[str] = []
    current: list[str] = []
    total = 0
    for piece in pieces:
        size = length(piece)
        if total + size > chunk_size and current:
            joined = "".join(current).strip()
            if joined:
                chunks.append(joined)
            while total > chunk_overlap or (total + size > chunk_size and total > 0):
                total -= length(current[0])
                current = current[1:]
        current.append(piece)
        total += size
    joined = "".join(current).strip()
    if joined:
        chunks.append(joined)
    return chunks


def recursive_split(text: str, chunk_size: int, separators: Sequence[str] = RECURSIVE_SEPARATORS,
                    chunk_overlap: int = 0, length: Callable[[str], int] = len) -> list[str]:
    """Pieces of at most ``chunk_size`` (by ``length``) cut at the first separator that occurs.

    A piece still too long is split again with the separators after the one used; pieces
    that fit are merged back, in order, up to ``chunk_size``. The empty separator cuts
    between characters, so with it last no chunk is longer than ``chunk_size``.
    """
    check_int("chunk_size", chunk_size, 1, 10 ** 9)
    check_int("chunk_overlap", chunk_overlap, 0, chunk_size)
    return _recursive(text, list(separators), chunk_size, chunk_overlap, length)


def _recursive(text: str, separators: list[str], chunk_size: int, chunk_overlap: int,
               length: Callable[[str], int]) -> list[str]:
    separator, rest = separators[-1], []
    for number, candidate in enumerate(separators):
        if not candidate:
            separator = candidate
            break
        if candidate in text:
            separator, rest = candidate, separators[number + 1:]
            break
    chunks: list[str] = []
    fitting: list[str] = []
    for piece in _split_keeping(text, separator):
        if length(piece) < chunk_size:
            fitting.append(piece)
            continue
        if fitting:
            chunks += _merge(fitting, chunk_size, chunk_overlap, length)
            fitting = []
        chunks += _recursive(piece, rest, chunk_size, chunk_overlap, length) if rest else [piece]
    if fitting:
        chunks += _merge(fitting, chunk_size, chunk_overlap, length)
    return chunks


def recursive_chunks(document, chunk_size: int = 800, summary: bool = False) -> list[HeadedChunk]:
    """A page's recursive chunks (``markdown_text``, the course's separators, no overlap); with
    ``summary`` the page's summary line is indexed too, after its name and signature.

    Each chunk carries, as its ``heading``, the headings of the sections it overlaps, joined
    by commas (``Signature`` when it holds only the name and signature), found by locating
    the chunk in the page's text; ``section`` is the first of them.
    """
    text = markdown_text(document, summary)
    bounds = [(0, HEAD_HEADING, 0)]
    cursor = 0
    for number, section in enumerate(document.sections, start=1):
        cursor = text.index(f"{SECTION_MARK}{section.heading}\n\n", cursor)
        bounds.append((cursor + 2, section.heading, number))
        cursor += 1
    ends = [start for start, _, _ in bounds[1:]] + [len(text)]
    chunks = []
    cursor = 0
    for position, piece in enumerate(recursive_split(text, chunk_size)):
        found = text.find(piece, cursor)
        at = found if found >= 0 else cursor
        touched = [(name, number) for (start, name, number), end in zip(bounds, ends)
                   if start < at + len(piece) and at < end]
        if len(touched) > 1 and touched[0][1] == 0:
            touched = touched[1:]
        chunks.append(HeadedChunk(document.doc_id, position, piece, heading=", ".join(n for n, _ in touched),
                                  section=touched[0][1]))
        cursor = at + 1
    return chunks


def section_chunks(document, summary: bool = False) -> list[HeadedChunk]:
    """One chunk for the name and signature, then one per section (heading in the metadata only).

    With ``summary`` the page's summary line follows the name and signature in the first chunk,
    as in ``ApiDocument.searched_text``."""
    chunks = [HeadedChunk(document.doc_id, 0, page_head(document, summary), heading=HEAD_HEADING, section=0)]
    for number, section in enumerate(document.sections, start=1):
        chunks.append(HeadedChunk(document.doc_id, number, section.text, heading=section.heading, section=number))
    return chunks


def with_header(chunk: HeadedChunk, title: str) -> HeadedChunk:
    """The chunk with its page's title and heading path written in front of its text."""
    text = f"{title}\n{chunk.heading_path}\n\n{chunk.text}"
    return HeadedChunk(chunk.doc_id, chunk.position, text, heading=chunk.heading, section=chunk.section)


def sentence_units(document, segment: Callable[[str], list[str]], summary: bool = False) -> list[HeadedChunk]:
    """Every sentence of a page, in order; ``section`` says which ``section_chunks`` parent holds it.

    The lines of a paragraph are joined by spaces first (numpydoc wraps its text), then
    ``segment`` (pysbd in the lab) cuts the paragraph into sentences. ``summary`` as in
    ``section_chunks``.
    """
    units: list[HeadedChunk] = []
    for parent in section_chunks(document, summary):
        for paragraph in parent.text.split("\n\n"):
            flat = " ".join(line.strip() for line in paragraph.splitlines() if line.strip())
            for sentence in segment(flat) if flat else []:
                sentence = sentence.strip()
                if sentence:
                    units.append(HeadedChunk(document.doc_id, len(units), sentence,
                                             heading=parent.heading, section=parent.section))
    return units


def pysbd_segmenter() -> Callable[[str], list[str]]:
    """pysbd's English sentence segmenter, text left as it is (``clean=False``)."""
    import pysbd

    return pysbd.Segmenter(language="en", clean=False).segment
