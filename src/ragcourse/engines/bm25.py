"""BM25 through the ``bm25s`` library: the practitioners' lexical baseline beside lab 01's scorer.

It indexes the same chunks with the same tokens as ``lexical.LexicalIndex``, so the two
differ only in how they weigh a shared token (BM25 adds term frequency saturation and
length normalisation to IDF).
"""
from __future__ import annotations

from typing import Callable, Sequence

from .lexical import lexical_tokens


class Bm25Index:
    """``bm25s.BM25`` (Lucene's variant, k1 = 1.5, b = 0.75) over the tokens of some texts."""

    def __init__(self, texts: Sequence[str], tokenize: Callable[[str], list[str]] = lexical_tokens):
        import bm25s

        self.tokenize = tokenize
        self.size = len(texts)
        self.model = bm25s.BM25(dtype="float64")
        self.model.index([tokenize(t) for t in texts], show_progress=False)
        self.vocabulary = set(self.model.vocab_dict)

    def scores(self, text: str) -> list[float]:
        """The BM25 score of every text for ``text`` (0 where no query token occurs)."""
        tokens = [t for t in self.tokenize(text) if t in self.vocabulary]
        if not tokens:
            return [0.0] * self.size
        return [float(s) for s in self.model.get_scores(tokens)]

    def search(self, text: str) -> list[tuple[int, float]]:
        """``(text number, score)`` of the texts scoring above 0, best first, ties by number."""
        scored = [(n, s) for n, s in enumerate(self.scores(text)) if s > 0]
        return sorted(scored, key=lambda item: (-item[1], item[0]))
