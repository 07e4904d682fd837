"""The fictional embedding simulator, cosine similarity and the dot product.

An embedding is made in two steps. The text is first read as a weight per
concept (the document-side form always counts; the query-side form counts only
for an in-domain model; an out-of-domain model gets a small weight on every
concept from each filler word instead). The concept weights are then projected
to ``dim`` dimensions by a seeded random matrix and, for ``embed``, brought to
unit length. Models of one family differ only in the projection seed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from .concepts import Edition
from .rng import make_rng

PROJECTION_WIDTH = 64
PROJECTION_STRIDE = 2654435761
FILLER_WEIGHT = 0.05


@lru_cache(maxsize=32)
def projection_matrix(projection_seed: int, n_concepts: int) -> tuple[tuple[float, ...], ...]:
    """One row of 64 values in [-1, 1) per concept, drawn from the projection seed."""
    rows = []
    for i in range(n_concepts):
        draw = make_rng(projection_seed ^ (i + 1) * PROJECTION_STRIDE)
        rows.append(tuple(draw() * 2 - 1 for _ in range(PROJECTION_WIDTH)))
    return tuple(rows)


def dot(a: list[float], b: list[float]) -> float:
    """Dot product, summed left to right as the course does."""
    return sum(x * y for x, y in zip(a, b))


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two unit vectors (their dot product)."""
    return dot(a, b)


def length(v: list[float]) -> float:
    """Euclidean length of a vector."""
    return sum(x * x for x in v) ** 0.5


def unit(v: list[float]) -> list[float]:
    """The vector scaled to length one (a zero vector is returned as it is)."""
    n = length(v)
    return [x / n for x in v] if n else v


@dataclass(frozen=True)
class EmbeddingModel:
    """A simulated embedding model: concept axis, projection seed, dimension and domain fit."""

    edition: Edition
    projection_seed: int
    dim: int = 32
    in_domain: bool = True

    def with_settings(self, **changes: Any) -> "EmbeddingModel":
        """The same model family with other settings (dim, in_domain or projection_seed)."""
        return replace(self, **changes)

    def concept_weights(self, text: str) -> list[float]:
        """Step one: the weight the model reads for each concept in ``text``."""
        weights = [0.0] * len(self.edition.concepts)
        padded = " " + text.lower() + " "
        for i, concept in enumerate(self.edition.concepts):
            if concept.document_form in padded:
                weights[i] += 1.0
            if self.in_domain and concept.query_form in padded:
                weights[i] += 1.0
        if not self.in_domain:
            for filler in self.edition.filler_words:
                if " " + filler + " " in padded:
                    for i in range(len(weights)):
                        weights[i] += FILLER_WEIGHT
        return weights

    def raw(self, text: str) -> list[float]:
        """Step two without normalising: concept weights projected to ``dim`` dimensions."""
        matrix = projection_matrix(self.projection_seed, len(self.edition.concepts))
        vector = [0.0] * self.dim
        for weight, row in zip(self.concept_weights(text), matrix):
            if weight:
                for j in range(self.dim):
                    vector[j] += weight * row[j % PROJECTION_WIDTH]
        return vector

    def embed(self, text: str) -> list[float]:
        """The unit-length embedding of ``text``; the same text always gives the same vector."""
        return unit(self.raw(text))

    def embed_all(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of several texts, in order."""
        return [self.embed(t) for t in texts]
