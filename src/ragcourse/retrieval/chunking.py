"""Lesson 09's chunker: token-budgeted windows over a document's words, and the relations they keep.

A document's **body** is its paragraphs joined and split into words. Chunk boundaries fall
between words; a window's size is counted in tokens (``ragcourse.world.text.tokenize``), so a
window takes words while their tokens still fit the budget. **Overlap** is counted in tokens
too: the next window starts by stepping back over the last words of the previous one while
their tokens fit the overlap budget. Every window holds at least one word, so a word longer
than the budget still gets a window of its own and the chunker always moves forward.

A **relation** is the stretch of a paragraph that carries its two concept surfaces together:
from the paragraph's first word to the last word of the document's main-concept form
(``reading check for note goes with reading routine``). All spans are ``(start, end)`` word
indices into the body, end exclusive.
"""
from __future__ import annotations

from typing import Sequence

from ..world.concepts import Edition
from ..world.corpus import Document
from ..world.text import tokenize

Span = tuple[int, int]


def body_words(document: Document) -> list[str]:
    """The words of the document's paragraphs, in order (the title is not part of the body)."""
    return " ".join(document.paragraphs).split()


def paragraph_spans(document: Document) -> list[Span]:
    """The word span of each paragraph in the body: the source's own boundaries."""
    spans, start = [], 0
    for paragraph in document.paragraphs:
        end = start + len(paragraph.split())
        spans.append((start, end))
        start = end
    return spans


def _last_occurrence_end(words: list[str], phrase: list[str]) -> int:
    for start in range(len(words) - len(phrase), -1, -1):
        if words[start:start + len(phrase)] == phrase:
            return start + len(phrase)
    raise ValueError(f"the phrase {' '.join(phrase)!r} is not in {' '.join(words)!r}")


def relation_spans(document: Document, edition: Edition) -> list[Span]:
    """The relation of each paragraph: from its first word to the end of the main-concept form."""
    main_form = edition.concept(document.main).document_form.split()
    spans = []
    for (start, _), paragraph in zip(paragraph_spans(document), document.paragraphs):
        spans.append((start, start + _last_occurrence_end(paragraph.split(), main_form)))
    return spans


def token_windows(words: Sequence[str], size: int, overlap: int = 0) -> list[Span]:
    """Word spans of windows of at most ``size`` tokens, each stepping back ``overlap`` tokens.

    Ends when a window reaches the last word; an empty ``words`` gives no window.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer (tokens); got {size!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
        raise ValueError(f"overlap must be a non-negative integer (tokens); got {overlap!r}")
    if not words:
        return []
    token_counts = [len(tokenize(word)) for word in words]
    spans, start = [], 0
    while True:
        end, used = start, 0
        while end < len(words) and used + token_counts[end] <= size:
            used += token_counts[end]
            end += 1
        end = max(end, start + 1)
        spans.append((start, end))
        if end >= len(words):
            return spans
        next_start, stepped_back = end, 0
        while next_start > start + 1 and stepped_back + token_counts[next_start - 1] <= overlap:
            next_start -= 1
            stepped_back += token_counts[next_start]
        start = next_start


def count_whole(relations: Sequence[Span], spans: Sequence[Span]) -> int:
    """How many relations lie entirely inside at least one of the chunk spans."""
    return sum(any(start <= first and last <= end for start, end in spans)
               for first, last in relations)
