"""Exhaustive search over a corpus: keyword overlap and embedding similarity.

Both rank every item, best first; ties are broken by index (corpus order), as in the course.
"""
from __future__ import annotations

from typing import Sequence

from ..world.embedding import EmbeddingModel, cosine
from ..world.text import tokenize
from .ranking import rank_by_score


class KeywordIndex:
    """Keyword matching: a query scores one point per distinct query token found in a text."""

    def __init__(self, texts: Sequence[str]):
        self.token_sets = [set(tokenize(t)) for t in texts]

    def scores(self, query: str) -> list[int]:
        """Shared distinct tokens between the query and each text."""
        query_tokens = set(tokenize(query))
        return [len(query_tokens & tokens) for tokens in self.token_sets]

    def rank(self, query: str) -> list[int]:
        """All texts, best keyword score first."""
        return rank_by_score(self.scores(query))


class EmbeddingIndex:
    """Embedding search: every text embedded once, queries ranked by cosine similarity."""

    def __init__(self, model: EmbeddingModel, texts: Sequence[str]):
        self.model = model
        self.vectors = model.embed_all(list(texts))

    def scores(self, query: str) -> list[float]:
        """Cosine similarity of the query's embedding with each stored vector."""
        query_vector = self.model.embed(query)
        return [cosine(query_vector, v) for v in self.vectors]

    def rank(self, query: str) -> list[int]:
        """All texts, most similar first."""
        return rank_by_score(self.scores(query))
