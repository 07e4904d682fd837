"""Lab 04's chunkers as exact character spans: every chunk is a slice ``text[start:end]`` of its file.

- ``fixed_spans``: windows of ``size`` characters, each starting ``size - overlap`` after the last;
- ``sentence_spans``: whole sentences (``sentence_bounds``) packed up to ``size``, the next chunk
  starting with the sentences that cover the last ``overlap``; sizes in characters, or in any
  measure of a span (``TokenRuler``: the encoder's tokens, from one pass of its tokenizer);
- ``heading_spans``: one chunk per Markdown heading and the text under it (any length);
- ``recursive_spans``: lab 03's recursive splitter (``splitters.recursive_split``: section,
  paragraph, sentence, word, character, merged up to ``size`` characters, no overlap), each
  piece located in the file so that it stays an exact slice.

``ChunkSpan`` is one chunk with its ordinal and, when headers are on, ``header_of``: the file's
title and the section the chunk starts in. Which chunker and sizes an index uses is a
``policy.ChunkPolicy``.
"""
from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Callable

from ...toolkit.params import check_int

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
HEADING_LINE = re.compile(r"^#{1,6} ", re.MULTILINE)
TITLE_LINE = re.compile(r"^# (.+)$", re.MULTILINE)
SECTION_LINE = re.compile(r"^## (.+)$", re.MULTILINE)
FENCE_LINE = re.compile(r"^```", re.MULTILINE)
RECURSIVE_SIZE = 800          # lab 03's winning chunk size, in characters
DEFAULT_SIZE = 2000           # the RAG baseline design's policy, in characters
DEFAULT_OVERLAP = 300

Spans = list[tuple[int, int]]
Length = Callable[[int, int], int]


@dataclass(frozen=True)
class ChunkSpan:
    """One chunk of a source: its ordinal, character span, text and sha256 of the text."""

    ordinal: int
    start: int
    end: int
    text: str
    header: str = ""

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def indexed_text(self) -> str:
        """What is embedded and indexed for full text: the header (when there is one), a new line, the text."""
        return f"{self.header}\n{self.text}" if self.header else self.text


def header_of(text: str, start: int) -> str:
    """A chunk's header: the file's ``# `` title and the ``## `` section the chunk starts in, joined by `` > ``."""
    title = TITLE_LINE.search(text)
    sections = [m.group(1).strip() for m in SECTION_LINE.finditer(text) if m.start() <= start]
    parts = ([title.group(1).strip()] if title else []) + sections[-1:]
    return " > ".join(parts)


def fixed_spans(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP) -> Spans:
    """Windows of ``size`` characters starting every ``size - overlap`` characters; the last one may be shorter."""
    _check_sizes(size, overlap)
    spans, start = [], 0
    while True:
        end = min(start + size, len(text))
        spans.append((start, end))
        if end == len(text):
            return spans
        start = end - overlap


def sentence_bounds(text: str) -> Spans:
    """The spans of the sentences of ``text``: cut after ``.``, ``!`` or ``?`` and at blank lines."""
    bounds, start = [], 0
    for match in SENTENCE_END.finditer(text):
        if match.start() > start:
            bounds.append((start, match.start()))
        start = match.end()
    if start < len(text):
        bounds.append((start, len(text)))
    return [(a, b) for a, b in bounds if text[a:b].strip()]


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` by ``sentence_bounds``' rule, as strings."""
    return [text[a:b] for a, b in sentence_bounds(text)]


def sentence_spans(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP,
                   length: Length | None = None, windows: Callable[[int, int], Spans] | None = None) -> Spans:
    """Whole sentences packed up to ``size``; each chunk after the first repeats about ``overlap``.

    ``length(start, end)`` measures a span (characters by default); a sentence longer than
    ``size`` is cut by ``windows(start, end)`` (fixed windows of characters by default).
    """
    _check_sizes(size, overlap)
    if length is None:
        length = lambda a, b: b - a  # noqa: E731
    if windows is None:
        windows = lambda a, b: [(a + x, a + y) for x, y in fixed_spans(text[a:b], size, overlap)]  # noqa: E731
    pieces: Spans = []
    for start, end in sentence_bounds(text):
        if length(start, end) <= size:
            pieces.append((start, end))
        else:
            pieces.extend(windows(start, end))
    spans: Spans = []
    first = 0
    while first < len(pieces):
        last = first
        while last + 1 < len(pieces) and length(pieces[first][0], pieces[last + 1][1]) <= size:
            last += 1
        spans.append((pieces[first][0], pieces[last][1]))
        if last == len(pieces) - 1:
            break
        following = last + 1
        while following - 1 > first and length(pieces[following - 1][0], pieces[last][1]) <= overlap:
            following -= 1
        while following <= last and length(pieces[following][0], pieces[last + 1][1]) > size:
            following += 1  # the overlap must leave room for the next new sentence
        first = following
    return spans


class TokenRuler:
    """Token counts of any span of one text, from a single pass of a tokenizer with offsets.

    A token counts towards ``[start, end)`` when it lies wholly inside it, so a span that
    starts and ends at white space counts what the tokenizer would count for its text alone
    (special tokens excluded). ``windows`` cuts a span into fixed windows of whole tokens.
    """

    def __init__(self, text: str, tokenizer, size: int, overlap: int):
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False,
                            verbose=False)
        offsets = [(a, b) for a, b in encoded["offset_mapping"] if b > a]
        self.starts = [a for a, _ in offsets]
        self.ends = [b for _, b in offsets]
        self.size, self.overlap = size, overlap

    def __call__(self, start: int, end: int) -> int:
        return max(0, bisect_right(self.ends, end) - bisect_left(self.starts, start))

    def windows(self, start: int, end: int) -> Spans:
        first, stop = bisect_left(self.starts, start), bisect_right(self.ends, end)
        if stop <= first:
            return [(start, end)]
        spans, step = [], self.size - self.overlap
        for a in range(first, stop, step):
            b = min(a + self.size, stop)
            spans.append((self.starts[a], self.ends[b - 1]))
            if b == stop:
                break
        return spans


def heading_spans(text: str) -> Spans:
    """One span per Markdown heading (outside code fences) and the text under it; text before the first too."""
    fences = [m.start() for m in FENCE_LINE.finditer(text)]

    def in_fence(position: int) -> bool:
        return sum(1 for f in fences if f < position) % 2 == 1

    starts = [0] + [m.start() for m in HEADING_LINE.finditer(text) if m.start() > 0 and not in_fence(m.start())]
    ends = starts[1:] + [len(text)]
    return [(a, b) for a, b in zip(starts, ends) if text[a:b].strip()]


def recursive_spans(text: str, size: int = RECURSIVE_SIZE) -> Spans:
    """Lab 03's recursive chunks of ``text`` (no overlap), each found where it sits in ``text``.

    The splitter strips white space from each piece, so the pieces are searched for in order;
    only the white space between them is left out of every span.
    """
    from .splitters import recursive_split

    spans: Spans = []
    cursor = 0
    for piece in recursive_split(text, size):
        start = text.find(piece, cursor)
        if start < 0:   # cannot happen for a stripped piece of text taken in order; say so if it does
            raise RuntimeError(f"recursive chunk not found in its text after position {cursor}")
        spans.append((start, start + len(piece)))
        cursor = start + len(piece)
    return spans or [(0, len(text))]


def _check_sizes(size: int, overlap: int) -> None:
    check_int("size", size, 1, 10 ** 7)
    check_int("overlap", overlap, 0, size - 1)
