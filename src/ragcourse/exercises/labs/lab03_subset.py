"""Lab 03's exercise subset, built once per process: its pages, chunks, encoder and searches.

The pages the judged and the real ``dev`` questions need, plus ``SUBSET_MODULES`` as neighbours;
each page whole (``subset_pages``), in recursive chunks (``recursive``), and with headers
(``headed``); the dense model, BM25 and both paths over each (``dense``, ``bm25``, ``search``).
The checks of ``lab03`` and the notebook read the same objects.
"""
from __future__ import annotations

from functools import lru_cache

from ...corpus.queries import Question, answerable_in, real_questions
from ...engines.chunking.text_chunks import TextChunk
from ...engines.dense import DenseEncoder
from ...engines.retrievers import Bm25Retriever, DenseRetriever
from ...engines.chunking.splitters import recursive_chunks, with_header
from ...labs.practice import ChunkSearch
from .shared import corpus, judged

SUBSET_MODULES = ("numpy.linalg", "numpy.fft")
LAB_CHARS = 800           # the lab's RECURSIVE_CHARS


@lru_cache(maxsize=1)
def dev() -> tuple[Question, ...]:
    """The real ``dev`` questions the corpus can answer (``test`` is never read by an exercise)."""
    return tuple(answerable_in(corpus(), real_questions("dev")))


@lru_cache(maxsize=1)
def subset_documents() -> tuple:
    """Every page a judged or ``dev`` question needs, and the pages of ``SUBSET_MODULES``, in corpus order."""
    wanted = {r for q in judged() + dev() for r in q.relevant}
    return tuple(d for d in corpus().documents if d.doc_id in wanted or d.module in SUBSET_MODULES)


def subset_ids() -> frozenset[str]:
    """The ids of the subset's pages (what a question of your own may name as relevant)."""
    return frozenset(d.doc_id for d in subset_documents())


@lru_cache(maxsize=1)
def subset_pages() -> tuple[TextChunk, ...]:
    """Each subset page as one unit, its summary line kept (as every index of the lab keeps it)."""
    return tuple(TextChunk(d.doc_id, 0, d.searched_text()) for d in subset_documents())


@lru_cache(maxsize=4)
def recursive(chars: int) -> tuple:
    """The subset's recursive chunks of ``chars`` characters (the lab's splitter, each page's summary line kept)."""
    return tuple(c for d in subset_documents() for c in recursive_chunks(d, chars, summary=True))


@lru_cache(maxsize=1)
def headed() -> tuple:
    """The lab's recursive chunks with the page title and heading path written in front."""
    by_id = corpus().by_id
    return tuple(with_header(c, by_id[c.doc_id].title) for c in recursive(LAB_CHARS))


@lru_cache(maxsize=1)
def encoder() -> DenseEncoder:
    """The lab's encoder behind the shared embedding cache."""
    return DenseEncoder()


UNITS = {"pages": subset_pages, "recursive": lambda: recursive(LAB_CHARS), "headed": headed}


@lru_cache(maxsize=4)
def dense(unit: str) -> DenseRetriever:
    """The dense model over one of ``UNITS``."""
    return DenseRetriever(list(UNITS[unit]()), encoder())


@lru_cache(maxsize=4)
def bm25(unit: str) -> Bm25Retriever:
    """BM25 over one of ``UNITS``."""
    return Bm25Retriever(list(UNITS[unit]()))


@lru_cache(maxsize=4)
def search(unit: str) -> ChunkSearch:
    """Both paths over one of ``UNITS`` (the reference of q3)."""
    return ChunkSearch(bm25(unit), dense(unit))
