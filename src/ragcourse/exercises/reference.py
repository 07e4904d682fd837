"""The reference worlds the checks compare a student's work with, built once per seed.

Lessons 01-06: ``world`` (first edition), ``model`` and the documents' and queries' unit
vectors. Lessons 07-16: ``rag_world`` (second edition), its paragraph chunks
(``rag_chunks``), the in-domain embedding (``rag_model``), those chunks embedded
(``indexed_chunks``), the hybrid retriever over them (``hybrid_retriever``) and each
question's best chunks by it (``hybrid_candidates``). Each is built by the package's own
functions (``build_world``, ``paragraph_chunks``, ``EmbeddingModel``, ``index_chunks``,
``CosineJaccardRetriever``, ``candidate_lists``) and cached, because a check asks for the same seed
several times. Besides: the seeds a check tries besides the course seed (``OTHER_SEEDS``),
draws from the course generator (``uniform_draws``) and an order drawn from a seed
(``shuffled``).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from .. import COURSE_SEED
from ..retrieval.candidates import candidate_lists
from ..retrieval.pipeline import CosineJaccardRetriever, IndexedChunk, index_chunks
from ..world.concepts import FIRST_EDITION, SECOND_EDITION
from ..world.corpus import Chunk, World, build_world, paragraph_chunks
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


@lru_cache(maxsize=8)
def rag_world(seed: int) -> World:
    """The world of lessons 07-16 at ``seed`` (second edition)."""
    return build_world(seed, SECOND_EDITION)


@lru_cache(maxsize=8)
def rag_chunks(seed: int) -> tuple[Chunk, ...]:
    """The paragraph chunks of ``rag_world(seed)``."""
    current = rag_world(seed)
    return tuple(paragraph_chunks(current.documents, current.edition))


@lru_cache(maxsize=8)
def rag_model(seed: int) -> EmbeddingModel:
    """The in-domain embedding of lessons 07-16: projection seed ``seed``, ``DIM`` numbers."""
    return EmbeddingModel(rag_world(seed).edition, projection_seed=seed, dim=DIM)


@lru_cache(maxsize=8)
def indexed_chunks(seed: int) -> tuple[IndexedChunk, ...]:
    """``rag_chunks(seed)`` embedded by ``rag_model(seed)``, each with its token bag."""
    return tuple(index_chunks(rag_chunks(seed), rag_model(seed)))


@lru_cache(maxsize=8)
def hybrid_retriever(seed: int) -> CosineJaccardRetriever:
    """The hybrid retriever of lessons 11-13 over ``indexed_chunks(seed)``."""
    return CosineJaccardRetriever(rag_model(seed), indexed_chunks(seed))


@lru_cache(maxsize=16)
def hybrid_candidates(seed: int, depth: int) -> tuple[tuple[IndexedChunk, ...], ...]:
    """Each question's ``depth`` best chunks by ``hybrid_retriever(seed)``, best first."""
    return tuple(tuple(candidates) for candidates in
                 candidate_lists(hybrid_retriever(seed), rag_world(seed).queries, depth))


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
