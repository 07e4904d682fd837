"""Lab 01's failure table: every judged question the lexical retriever misses, with its cause.

A miss is a question none of whose relevant documents reaches the top ``k``. Its cause is
the first of these that applies:

- ``no answer at all``: no chunk shares a single token with the question, so the result
  is empty;
- ``word form``: the same scorer over Snowball stems ("sorting" and "sort" both become
  "sort") would have put a relevant page in the top ``k``: the words were there, in
  another form;
- ``common words win``: a relevant page shares tokens with the question, but other pages
  share more, or rarer, ones and keep it below ``k``;
- ``no shared word``: the relevant pages share no token with the question, while other
  pages do (the question is phrased in words the documentation does not use).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..corpus.queries import Question
from ..engines.chunking.text_chunks import TextChunk
from ..engines.lexical import LexicalIndex, lexical_tokens, stem
from ..engines.retrievers import DocumentHit, collapse

CAUSES = ("no answer at all", "word form", "common words win", "no shared word")


def stemmed_tokens(text: str) -> list[str]:
    """Lab 01's tokens, each replaced by its stem."""
    return [stem(t) for t in lexical_tokens(text)]


def stemmed_index(chunks: Sequence[TextChunk]) -> LexicalIndex:
    """The same scorer over stems: what ``word form`` asks of a miss."""
    return LexicalIndex(chunks, tokenize=stemmed_tokens)


@dataclass(frozen=True)
class Miss:
    """A missed question: rank of its first relevant page (None: not ranked), the top hit, cause, evidence."""

    question: Question
    first_relevant_rank: int | None
    top_hit: str | None
    cause: str
    evidence: str


def page_tokens(chunks: Sequence[TextChunk]) -> dict[str, frozenset[str]]:
    """Each document's lexical tokens, over all its chunks."""
    tokens: dict[str, set[str]] = {}
    for chunk in chunks:
        tokens.setdefault(chunk.doc_id, set()).update(lexical_tokens(chunk.text))
    return {doc_id: frozenset(t) for doc_id, t in tokens.items()}


def misses(questions: Sequence[Question], index: LexicalIndex, stemmed: LexicalIndex, k: int) -> list[Miss]:
    """Every question none of whose relevant pages is in the top ``k``, with its cause."""
    tokens = page_tokens(index.chunks)
    found = []
    for question in questions:
        hits: list[DocumentHit] = collapse((index.chunks[n], s) for n, s in index.ranked(question.text))
        ranked = [h.doc_id for h in hits]
        if set(ranked[:k]) & set(question.relevant):
            continue
        ranks = [ranked.index(d) + 1 for d in question.relevant if d in ranked]
        asked = set(lexical_tokens(question.text))
        shared = sorted({t for d in question.relevant for t in asked & tokens[d]})
        if not hits:
            cause, evidence = "no answer at all", "no chunk shares a token"
        else:
            rescued = [h.doc_id for h in collapse((stemmed.chunks[n], s) for n, s in stemmed.ranked(question.text))][:k]
            if set(rescued) & set(question.relevant):
                page_words = {t for d in question.relevant for t in tokens[d]}
                pairs = sorted({f"{t}~{w}" for t in asked - page_words for w in page_words if stem(w) == stem(t)})
                cause, evidence = "word form", "stems join " + ", ".join(pairs[:3])
            elif shared:
                cause, evidence = "common words win", "shares " + ", ".join(shared)
            else:
                cause, evidence = "no shared word", "shares nothing with the page"
        found.append(Miss(question, min(ranks) if ranks else None, ranked[0] if ranked else None, cause, evidence))
    return found


def count_by_cause(found: Sequence[Miss]) -> dict[str, int]:
    """How many misses each cause explains, in ``CAUSES`` order."""
    return {cause: sum(m.cause == cause for m in found) for cause in CAUSES}
