"""The chunkers of labs 01 and 02: whole paragraphs packed to a size, and word windows with overlap.

Every chunk keeps its document id and its position in the document, so that a hit can be
cited as ``doc_id#position`` and checked later.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...toolkit.params import check_int

PARAGRAPH_BREAK = "\n\n"


@dataclass(frozen=True)
class TextChunk:
    """A passage of one document: its id, position (0, 1, ...), text, and whether it was cut short."""

    doc_id: str
    position: int
    text: str
    truncated: bool = False

    @property
    def chunk_id(self) -> str:
        """The address of the chunk: ``doc_id#position``."""
        return f"{self.doc_id}#{self.position}"


def pack_paragraphs(doc_id: str, text: str, max_chars: int = 800) -> list[TextChunk]:
    """Whole paragraphs packed until the next one would cross ``max_chars`` (lab 01).

    Paragraphs are separated by a blank line and rejoined by one. A paragraph longer than
    ``max_chars`` on its own becomes a chunk cut at ``max_chars``: the only place a chunk
    can end mid-sentence (``truncated`` is True there).
    """
    check_int("max_chars", max_chars, 1, 10 ** 9)
    chunks: list[TextChunk] = []
    current: list[str] = []

    def close(pieces: list[str]) -> None:
        chunks.append(TextChunk(doc_id, len(chunks), PARAGRAPH_BREAK.join(pieces)))

    for paragraph in (p for p in text.split(PARAGRAPH_BREAK) if p.strip()):
        if len(paragraph) > max_chars:
            if current:
                close(current)
                current = []
            chunks.append(TextChunk(doc_id, len(chunks), paragraph[:max_chars], truncated=True))
            continue
        if current and len(PARAGRAPH_BREAK.join(current + [paragraph])) > max_chars:
            close(current)
            current = []
        current.append(paragraph)
    if current:
        close(current)
    return chunks


def word_windows(doc_id: str, text: str, size: int = 60, overlap: int = 20) -> list[TextChunk]:
    """Windows of ``size`` words, each starting ``size - overlap`` words after the last (lab 02).

    A text of at most ``size`` words is one chunk; the last window ends at the last word.
    """
    check_int("size", size, 1, 10 ** 6)
    check_int("overlap", overlap, 0, size - 1)
    words = text.split()
    stride = size - overlap
    chunks = []
    start = 0
    while True:
        chunks.append(TextChunk(doc_id, len(chunks), " ".join(words[start:start + size])))
        if start + size >= len(words):
            return chunks
        start += stride


def chunk_corpus(documents: Sequence, chunker, **settings) -> list[TextChunk]:
    """Every document's chunks, in document order (``documents`` carry ``doc_id`` and ``text``)."""
    return [chunk for d in documents for chunk in chunker(d.doc_id, d.text, **settings)]
