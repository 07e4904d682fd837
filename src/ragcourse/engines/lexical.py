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
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from ..engines.chunking.text_chunks import TextChunk

TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS: frozenset[str] = frozenset(ENGLISH_STOP_WORDS)


# Lucene's default English stop set (Elasticsearch's ``_english_`` too): 33 function words. scikit-learn's
# list of 318 also holds words that name numpy objects (``where``, ``all``, ``any``, ``empty``, ``take``)
# and words questions depend on (``down`` in "turn a matrix upside down").
SHORT_STOPWORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split())


def lexical_tokens(text: str) -> list[str]:
    """Lowercased ``[a-z0-9]+`` runs, stopwords (scikit-learn's English list) removed."""
    return [t for t in TOKEN.findall(text.lower()) if t not in STOPWORDS]


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=None)
def stem(word: str) -> str:
    """The Snowball (Porter 2) English stem of a word."""
    return _stemmer().stemWord(word)


def name_tokens(names: Iterable[str]) -> frozenset[str]:
    """The names that are one word: the last part of each dotted name when it is a single token
    (``numpy.where`` gives ``where``, ``numpy.linalg.inv`` gives ``inv``; ``numpy.logical_and`` gives
    nothing, or a stop list would have to keep ``and``). A stop list must keep these: a question
    that names ``np.where`` must be able to find it by that word."""
    found = set()
    for name in names:
        tokens = TOKEN.findall(name.rsplit(".", 1)[-1].lower())
        if len(tokens) == 1:
            found.add(tokens[0])
    return frozenset(found)


def document_names(documents: Iterable) -> frozenset[str]:
    """``name_tokens`` of every page's name and aliases: the words a stop list must keep for this corpus."""
    return name_tokens(name for d in documents for name in (d.doc_id, *getattr(d, "aliases", ())))


def full_strength(documents: Iterable) -> "Analyzer":
    """Lexical retrieval as a practitioner would run it on ``documents`` (lab 01's last step): Lucene's
    short stop list, never a word that names a page, and Snowball stems for chunks and questions alike."""
    return Analyzer(SHORT_STOPWORDS, keep=document_names(documents), stemming=True)


class Analyzer:
    """Tokens for lexical retrieval, the same for chunks and questions: lowercased ``[a-z0-9]+``
    runs, minus a stop list (never a word in ``keep``), each optionally replaced by its Snowball stem."""

    def __init__(self, stopwords: Iterable[str] = STOPWORDS, keep: Iterable[str] = (), stemming: bool = False):
        self.stopwords = frozenset(stopwords) - frozenset(keep)
        self.stemming = bool(stemming)

    def __call__(self, text: str) -> list[str]:
        tokens = [t for t in TOKEN.findall(text.lower()) if t not in self.stopwords]
        return [stem(t) for t in tokens] if self.stemming else tokens

    def __repr__(self) -> str:
        return f"Analyzer({len(self.stopwords)} stopwords, stemming={self.stemming})"


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
