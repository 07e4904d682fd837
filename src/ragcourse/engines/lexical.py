"""Lab 01's lexical retrieval: a tag index, then IDF-weighted token overlap with a stable tie-break.

The scorer in four steps: tokenise (``[a-z0-9]+`` over lowercased text, stopwords dropped);
keep the chunks that share at least one token with the query; add ``log(1 + N / df)`` for
each distinct shared token, ``N`` the number of chunks and ``df`` how many contain it;
sort by ``(-score, doc_id, position)``. A chunk that shares nothing is never scored, so an
empty result is a real outcome.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from .chunkers import TextChunk

TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS: frozenset[str] = frozenset(ENGLISH_STOP_WORDS)


def lexical_tokens(text: str) -> list[str]:
    """Lowercased ``[a-z0-9]+`` runs, stopwords (scikit-learn's English list) removed."""
    return [t for t in TOKEN.findall(text.lower()) if t not in STOPWORDS]


def tag_index(tagged: Iterable[tuple[str, Iterable[str]]]) -> dict[str, list[str]]:
    """key -> sorted ids of the items that carry it, from ``(id, keys)`` pairs."""
    index: dict[str, set[str]] = {}
    for item_id, keys in tagged:
        for key in keys:
            index.setdefault(key, set()).add(item_id)
    return {key: sorted(ids) for key, ids in sorted(index.items())}


@dataclass(frozen=True)
class LexicalHit:
    """A scored chunk and the query tokens it shares."""

    score: float
    chunk: TextChunk
    shared: tuple[str, ...]


class LexicalIndex:
    """Inverse-document-frequency weighted overlap over a list of chunks."""

    def __init__(self, chunks: Sequence[TextChunk], tokenize: Callable[[str], list[str]] = lexical_tokens):
        self.chunks = list(chunks)
        self.tokenize = tokenize
        self.token_sets = [frozenset(tokenize(c.text)) for c in self.chunks]
        self.postings: dict[str, list[int]] = {}
        for number, tokens in enumerate(self.token_sets):
            for token in sorted(tokens):
                self.postings.setdefault(token, []).append(number)
        self.weights = {t: math.log(1 + len(self.chunks) / len(ids)) for t, ids in self.postings.items()}
        by_address = sorted(range(len(self.chunks)), key=lambda n: (self.chunks[n].doc_id, self.chunks[n].position))
        self.address_rank = [0] * len(self.chunks)
        for rank, number in enumerate(by_address):
            self.address_rank[number] = rank

    def weight(self, token: str) -> float:
        """``log(1 + N / df)`` for a token some chunk contains (0 for one none contains)."""
        return self.weights.get(token, 0.0)

    def ranked(self, query: str) -> list[tuple[int, float]]:
        """``(chunk number, score)`` of every chunk sharing a token, by ``(-score, doc_id, position)``.

        A chunk's score is the sum of its shared tokens' weights, added in sorted token
        order (token by token over the postings: the same left-to-right sum).
        """
        scores: dict[int, float] = {}
        for token in sorted(set(self.tokenize(query))):
            weight = self.weights.get(token)
            for number in self.postings.get(token, ()):
                scores[number] = scores.get(number, 0.0) + weight
        rank = self.address_rank
        return sorted(scores.items(), key=lambda item: (-item[1], rank[item[0]]))

    def search(self, query: str, top_k: int | None = None) -> list[LexicalHit]:
        """Chunks sharing a token with ``query``, best first, with the tokens they share; ``top_k`` cuts."""
        query_tokens = sorted(set(self.tokenize(query)))
        ranked = self.ranked(query)
        return [LexicalHit(score, self.chunks[n], tuple(t for t in query_tokens if t in self.token_sets[n]))
                for n, score in (ranked if top_k is None else ranked[:top_k])]
