"""What the retrieval-augmented lessons share: instructions, hybrid retrieval, relevance.

The answer prompt of lessons 11-13 lives with the model that reads it (``world.prompts``).

Lessons 07-10 ask the model to link a request to one of the twenty concepts, with the
retrieved paragraphs pasted in front of the request (``link_instruction``, ``link_prompt``).
Lessons 11-13 keep every chunk with its vector and token bag (``index_chunks``), retrieve
with a hybrid score, cosine plus ``weight`` times the Jaccard overlap of token bags
(``CosineJaccardRetriever``) and call a chunk relevant when it names the query's concept in the
document language and carries the query's record word (``is_relevant``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..world.concepts import Edition
from ..world.corpus import Chunk, Query
from ..world.embedding import EmbeddingModel, cosine
from ..world.text import tokenize
from .ranking import rank_by_score

HYBRID_WEIGHT = 0.5


# ---- lessons 07-10: link a request to a concept -------------------------------------------

def link_instruction(edition: Edition, ask_for_record: bool = False) -> str:
    """The instruction that lists the concept keys; ``ask_for_record`` adds lesson 10's validity entry."""
    keys = " , ".join(edition.keys)
    if ask_for_record:
        return ("Link the request to one of these concepts and write down the validity entry of "
                "the source: " + keys + " . Reply with one concept and the entry . ")
    return "Link the request to one of these concepts: " + keys + " . Reply with one concept . "


def link_prompt(instruction: str, request: str, sources: Sequence[str] | None = None) -> str:
    """``instruction``, then (when given) ``Source: a . b . c .``, then ``Request: ...``."""
    if sources is None:
        return instruction + "Request: " + request
    return instruction + "Source: " + " . ".join(sources) + " . Request: " + request


# ---- lessons 11-13: coded chunks, hybrid retrieval, relevance -------------------------------

@dataclass(frozen=True, eq=False)
class IndexedChunk:
    """A paragraph chunk stored with its embedding and its set of tokens (compared by identity)."""

    code: str
    label: str
    main: str
    text: str
    vector: tuple[float, ...] = field(repr=False)
    bag: frozenset[str] = field(repr=False)


def index_chunks(chunks: Sequence[Chunk], model: EmbeddingModel) -> list[IndexedChunk]:
    """Embed every chunk once and keep its token bag beside the vector."""
    return [IndexedChunk(code=c.code, label=c.label, main=c.main, text=c.text,
                         vector=tuple(model.embed(c.text)), bag=frozenset(tokenize(c.text)))
            for c in chunks]


class CosineJaccardRetriever:
    """Score = cosine(query, chunk) + weight * Jaccard(query tokens, chunk tokens); ties by index."""

    def __init__(self, model: EmbeddingModel, chunks: Sequence[IndexedChunk],
                 weight: float = HYBRID_WEIGHT):
        self.model = model
        self.chunks = list(chunks)
        self.weight = weight

    def scores(self, query: str) -> list[float]:
        """The hybrid score of every stored chunk for ``query``."""
        query_vector, query_bag = self.model.embed(query), set(tokenize(query))
        weight = self.weight
        return [cosine(query_vector, chunk.vector)
                + weight * len(query_bag & chunk.bag) / len(query_bag | chunk.bag)
                for chunk in self.chunks]

    def retrieve(self, query: str, k: int = 5) -> list[IndexedChunk]:
        """The ``k`` chunks with the highest hybrid score, best first."""
        return [self.chunks[i] for i in rank_by_score(self.scores(query))[:k]]


def is_relevant(chunk: IndexedChunk | None, query: Query, edition: Edition) -> bool:
    """True when the chunk names the query's concept (document form) and holds its record word.

    The record word is the filler word that ends the original query (``query.filler``);
    pass the original ``Query`` even when the text sent to retrieval was rewritten.
    A missing chunk (``None``, e.g. after a context overflow) is not relevant.
    """
    if chunk is None:
        return False
    return edition.concept(query.concept).document_form in chunk.text and query.filler in chunk.bag
