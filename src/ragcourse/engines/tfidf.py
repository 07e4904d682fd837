"""Lab 02's TF-IDF index, written out: sublinear term frequency, smoothed IDF, unit vectors.

A unit's weight for term ``t`` is ``(1 + log tf) * idf(t)`` with
``idf(t) = log((1 + N) / (1 + df)) + 1`` (``N`` indexed units, ``df`` units containing
``t``), and every vector is scaled to length 1 so that a dot product is a cosine. These
are scikit-learn's ``TfidfVectorizer(sublinear_tf=True, smooth_idf=True, norm="l2")``
weights; ``tests/engines/test_tfidf.py`` shows the two equal. Lab 02 prints this module's
``tfidf_tokens`` and ``TfidfIndex`` with ``inspect.getsource``, so the code a student reads there
is this code, and the test covers it.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Callable, Sequence

from .lexical import lexical_tokens


def tfidf_tokens(text: str) -> list[str]:
    """The lexical tokens of lab 01 with single-character tokens dropped as well."""
    return [t for t in lexical_tokens(text) if len(t) > 1]


class TfidfIndex:
    """Sparse TF-IDF vectors of some texts, an inverted index, and cosine search."""

    tokenize = staticmethod(tfidf_tokens)   # the default, also for an index assembled without __init__

    def __init__(self, texts: Sequence[str], tokenize: Callable[[str], list[str]] = tfidf_tokens):
        self.tokenize = tokenize   # the same for units and queries (e.g. ``lexical.full_strength``)
        term_counts = [Counter(tokenize(text)) for text in texts]
        df: Counter = Counter()            # units holding each term
        for counts in term_counts:
            df.update(counts.keys())
        units = len(term_counts)
        self.idf = {term: math.log((1 + units) / (1 + holding)) + 1.0 for term, holding in df.items()}
        self.vectors = [self.vector(counts) for counts in term_counts]
        self.postings: dict[str, list[int]] = {}
        for number, counts in enumerate(term_counts):
            for term in counts:
                self.postings.setdefault(term, []).append(number)

    def vector(self, counts: Counter) -> dict[str, float]:
        """Unit-length TF-IDF weights of a term count (terms never indexed weigh idf 1)."""
        weights = {term: (1 + math.log(tf)) * self.idf.get(term, 1.0) for term, tf in counts.items()}
        length = math.sqrt(sum(weight * weight for weight in weights.values())) or 1.0
        return {term: weight / length for term, weight in weights.items()}

    def embed(self, text: str) -> dict[str, float]:
        """A query's TF-IDF vector, built like a unit's."""
        return self.vector(Counter(self.tokenize(text)))

    def scores(self, text: str) -> dict[int, float]:
        """Cosine with every unit that shares a term with ``text`` (the others score 0)."""
        query = self.embed(text)
        candidates = sorted({n for t in query for n in self.postings.get(t, ())})
        return {n: sum(w * self.vectors[n].get(t, 0.0) for t, w in query.items()) for n in candidates}

    def search(self, text: str) -> list[tuple[int, float]]:
        """``(unit number, cosine)`` of the candidate units, best first, ties by unit number."""
        return sorted(self.scores(text).items(), key=lambda item: (-item[1], item[0]))
