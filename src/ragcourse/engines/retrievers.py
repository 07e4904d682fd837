"""Retrievers over chunks that answer with documents, and the measurement of a query set.

Every retriever ranks chunks, then collapses them to documents by each document's best
chunk (seed 004's collapse): without it one long page could fill the top five on its own.
What comes back is a list of ``DocumentHit``: a document id, the chunk that won it, a score.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Sequence

import numpy as np

from ..corpus.queries import Question
from ..retrieval.fusion import fuse_partial
from ..retrieval.metrics import measure  # noqa: F401  (labs 01-03 import it from here)
from .bm25 import Bm25Index
from .chunkers import TextChunk
from .dense import DenseEncoder, dense_ranking
from .lexical import LexicalIndex, lexical_tokens
from .tfidf import TfidfIndex, tfidf_tokens

RRF_CONSTANT = 60


@dataclass(frozen=True)
class DocumentHit:
    """A retrieved document: its id, the position of its best chunk, and that chunk's score."""

    doc_id: str
    chunk: int
    score: float


def collapse(ranked: Iterable[tuple[TextChunk, float]]) -> list[DocumentHit]:
    """Chunks best first -> documents best first, each represented by its first (best) chunk."""
    seen: set[str] = set()
    hits = []
    for chunk, score in ranked:
        if chunk.doc_id not in seen:
            seen.add(chunk.doc_id)
            hits.append(DocumentHit(chunk.doc_id, chunk.position, float(score)))
    return hits


class LexicalRetriever:
    """Lab 01's IDF-weighted overlap scorer."""

    name = "lexical"

    def __init__(self, chunks: Sequence[TextChunk]):
        self.index = LexicalIndex(chunks)
        self.chunks = self.index.chunks

    def search(self, text: str) -> list[DocumentHit]:
        return collapse((self.chunks[n], score) for n, score in self.index.ranked(text))


class Bm25Retriever:
    """BM25 (``bm25s``) over the same tokens (or those of ``tokenize``, e.g. a stemming ``lexical.Analyzer``)."""

    name = "bm25"

    def __init__(self, chunks: Sequence[TextChunk], tokenize: Callable[[str], list[str]] = lexical_tokens):
        self.chunks = list(chunks)
        self.index = Bm25Index([c.text for c in self.chunks], tokenize)

    def search(self, text: str) -> list[DocumentHit]:
        return collapse((self.chunks[n], s) for n, s in self.index.search(text))

    def matched_ranking(self, text: str) -> list[int]:
        """The chunks the question matched (BM25 score above zero), best first, ties by number.

        A chunk that shares no term with the question has no BM25 rank: it takes no part in a
        fusion (ranking such chunks in chunk order would hand them reciprocal-rank credit).
        """
        scores = np.asarray(self.index.scores(text))
        order = np.argsort(-scores, kind="stable")
        return order[scores[order] > 0].tolist()


class TfidfRetriever:
    """Lab 02's hand-written TF-IDF cosine."""

    name = "tfidf"

    def __init__(self, chunks: Sequence[TextChunk], tokenize: Callable[[str], list[str]] = tfidf_tokens):
        self.chunks = list(chunks)
        self.index = TfidfIndex([c.text for c in self.chunks], tokenize)

    def search(self, text: str) -> list[DocumentHit]:
        return collapse((self.chunks[n], s) for n, s in self.index.search(text))


class DenseRetriever:
    """all-MiniLM-L6-v2 cosine over every chunk (exhaustive, ties by chunk order)."""

    name = "dense"

    def __init__(self, chunks: Sequence[TextChunk], encoder: DenseEncoder):
        self.chunks = list(chunks)
        self.encoder = encoder
        self.vectors = encoder.encode([c.text for c in self.chunks])

    def search(self, text: str) -> list[DocumentHit]:
        return self.search_vector(self.encoder.encode([text])[0])

    def search_vector(self, query: np.ndarray) -> list[DocumentHit]:
        order, scores = dense_ranking(self.vectors, query)
        return collapse((self.chunks[n], s) for n, s in zip(order.tolist(), scores.tolist()))

    def search_many(self, texts: Sequence[str]) -> list[list[DocumentHit]]:
        """Several questions, encoded in one call."""
        return [self.search_vector(v) for v in self.encoder.encode(list(texts))]

    def full_ranking(self, text: str) -> list[int]:
        """Every chunk number, most similar first, ties by number."""
        order, _ = dense_ranking(self.vectors, self.encoder.encode([text])[0])
        return order.tolist()


class HybridRetriever:
    """BM25 and dense over the same chunks, fused by reciprocal rank fusion (ranks from 1).

    ``constant`` is RRF's k; ``depth`` (None: the whole ranking) is how many chunks each path
    hands to the fusion. ``search(text, allowed)`` drops the chunks of pages outside ``allowed``
    from both rankings before the cut, so a filter inside the search keeps ``depth`` candidates
    a path (``practice.ChunkSearch`` does the same).
    """

    name = "hybrid"

    def __init__(self, bm25: Bm25Retriever, dense: DenseRetriever, constant: float = RRF_CONSTANT,
                 depth: int | None = None):
        if bm25.chunks != dense.chunks:
            raise ValueError("hybrid fusion needs both retrievers over the same chunks")
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
            raise ValueError(f"depth must be None or a whole number of at least 1; got {depth!r}")
        self.bm25, self.dense, self.constant, self.depth = bm25, dense, constant, depth
        self.chunks = bm25.chunks

    def search(self, text: str, allowed: Collection[str] | None = None) -> list[DocumentHit]:
        """RRF of the chunks BM25 matched and every chunk by dense similarity (an unmatched chunk gets dense's term only),
        each list cut to ``depth`` after the chunks of pages outside ``allowed`` (page ids; None: all) are dropped."""
        rankings = [self.bm25.matched_ranking(text), self.dense.full_ranking(text)]
        if allowed is not None:
            rankings = [[n for n in ranking if self.chunks[n].doc_id in allowed] for ranking in rankings]
        fused = fuse_partial(rankings, self.constant, first_position=1, depth=self.depth)
        return collapse((self.chunks[n], score) for n, score in fused)


def run_questions(retriever, questions: Sequence[Question]) -> dict[str, list[str]]:
    """qid -> ranked document ids, for every question."""
    if hasattr(retriever, "search_many"):
        results = retriever.search_many([q.text for q in questions])
    else:
        results = [retriever.search(q.text) for q in questions]
    return {q.qid: [hit.doc_id for hit in hits] for q, hits in zip(questions, results)}
