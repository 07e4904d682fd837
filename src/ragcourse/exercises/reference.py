"""The package's reference pieces, built once per seed, that the checks compare a student's work with.

Everything here is what a lesson computes, called through the package's own functions
(``build_world``, ``EmbeddingModel``, ``EmbeddingIndex``, ``build_bucket_index``,
``reciprocal_rank_fusion``...), cached because a check asks for the same seed several times.
The seeds a check tries besides the course seed are ``OTHER_SEEDS``.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from .. import COURSE_SEED
from ..world.concepts import FIRST_EDITION
from ..world.corpus import World, build_world
from ..world.embedding import EmbeddingModel
from ..world.rng import make_rng

OTHER_SEEDS = (COURSE_SEED + 1, 7)
DIM = 32
K = 5


@lru_cache(maxsize=8)
def world(seed: int) -> World:
    """The world of lessons 01-06 at ``seed``."""
    return build_world(seed, FIRST_EDITION)


@lru_cache(maxsize=16)
def model(seed: int, dim: int = DIM, projection_seed: int | None = None, in_domain: bool = True) -> EmbeddingModel:
    """The embedding model of the lessons: projection seed ``seed`` unless given, ``dim`` numbers."""
    return EmbeddingModel(world(seed).edition, projection_seed=seed if projection_seed is None else projection_seed,
                          dim=dim, in_domain=in_domain)


@lru_cache(maxsize=16)
def document_vectors(seed: int, dim: int = DIM) -> tuple[tuple[float, ...], ...]:
    """Unit embeddings of the documents (model of ``seed``)."""
    embedding = model(seed, dim)
    return tuple(tuple(embedding.embed(d.text)) for d in world(seed).documents)


@lru_cache(maxsize=16)
def query_vectors(seed: int, dim: int = DIM) -> tuple[tuple[float, ...], ...]:
    """Unit embeddings of the forty queries (model of ``seed``)."""
    embedding = model(seed, dim)
    return tuple(tuple(embedding.embed(q.text)) for q in world(seed).queries)


def uniform_draws(seed: int, count: int) -> list[float]:
    """``count`` draws in [0, 1) from the course generator: the generated inputs of a check."""
    draw = make_rng(seed)
    return [draw() for _ in range(count)]


def shuffled(items: Sequence[int], seed: int) -> list[int]:
    """``items`` in an order drawn from ``seed`` (a Fisher-Yates shuffle on the course generator)."""
    order, draw = list(items), make_rng(seed)
    for i in range(len(order) - 1, 0, -1):
        j = int(draw() * (i + 1))
        order[i], order[j] = order[j], order[i]
    return order
