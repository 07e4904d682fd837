"""Retrievers over chunks that answer with documents, and the measurement of a query set.

Every retriever ranks chunks, then collapses them to documents by each document's best
chunk (``collapse``, as the minimal TF-IDF pipeline that lab 02 follows does): without it one
long page could fill the top five on its own. What comes back is a list of ``DocumentHit``: a document id,
the chunk that won it, a score.

Each is a ``stages.Retriever``: ``search_many(questions, allowed=None)`` answers a batch.
``allowed`` (page ids) keeps only those pages; the lexical, TF-IDF and dense retrievers rank
every chunk, so keeping the allowed pages of their finished list is the same as filtering
inside the search; the hybrid filters inside, before each path's candidates are cut.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Sequence

import numpy as np

from ..corpus.queries import Question
from ..retrieval.fusion import fuse_partial
from ..retrieval.metrics import measure  # noqa: F401  (labs 01-03 import it from here)
from .bm25 import Bm25Index
from ..engines.chunking.text_chunks import TextChunk
from .dense import DenseEncoder, dense_ranking
from .lexical import LexicalIndex, lexical_tokens
from .stages import Retriever
from .tfidf import TfidfIndex, tfidf_tokens

RRF_CONSTANT = 60


@dataclass(frozen=True)
class DocumentHit:
    """A retrieved document: its id, the position of its best chunk, and that chunk's score."""

    doc_id: str
    chunk: int
    score: float


def only(hits: list[DocumentHit], allowed: Collection[str] | None) -> list[DocumentHit]:
    """The hits whose page is in ``allowed`` (every hit when ``allowed`` is None), in their order."""
    return hits if allowed is None else [hit for hit in hits if hit.doc_id in allowed]


class OneAtATime:
    """``search_many`` for a retriever whose ``search(text)`` ranks every chunk: each question in turn."""

    def search_many(self, questions: Sequence[str], allowed: Collection[str] | None = None) -> list[list[DocumentHit]]:
        """One list of hits per question; ``allowed`` keeps those pages of the full ranking."""
        return [only(self.search(text), allowed) for text in questions]


def collapse(ranked: Iterable[tuple[TextChunk, float]]) -> list[DocumentHit]:
    """Chunks best first -> documents best first, each represented by its first (best) chunk."""
    seen: set[str] = set()
    hits = []
    for chunk, score in ranked:
        if chunk.doc_id not in seen:
            seen.add(chunk.doc_id)
            hits.append(DocumentHit(chunk.doc_id, chunk.position, float(score)))
    return hits


class LexicalRetriever(OneAtATime):
    """Lab 01's IDF-weighted overlap scorer."""

    name = "lexical"

    def __init__(self, chunks: Sequence[TextChunk]):
        self.index = LexicalIndex(chunks)
        self.chunks = self.index.chunks

    def search(self, text: str) -> list[DocumentHit]:
        return collapse((self.chunks[n], score) for n, score in self.index.ranked(text))


class Bm25Retriever(OneAtATime):
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


class TfidfRetriever(OneAtATime):
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

    def search_many(self, questions: Sequence[str], allowed: Collection[str] | None = None) -> list[list[DocumentHit]]:
        """Several questions, encoded in one call; ``allowed`` keeps those pages of each full ranking."""
        return [only(self.search_vector(v), allowed) for v in self.encoder.encode(list(questions))]

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

    def search_many(self, questions: Sequence[str], allowed: Collection[str] | None = None) -> list[list[DocumentHit]]:
        """``search`` for each question in turn, ``allowed`` applied inside each search."""
        return [self.search(text, allowed) for text in questions]


def run_questions(retriever: Retriever, questions: Sequence[Question]) -> dict[str, list[str]]:
    """qid -> ranked document ids, for every question (one ``search_many`` call)."""
    results = retriever.search_many([q.text for q in questions])
    return {q.qid: [hit.doc_id for hit in hits] for q, hits in zip(questions, results)}
