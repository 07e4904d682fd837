"""Lab 03's pipeline pieces: the naive RAG prompt, failure causes, small-to-big contexts, fusion.

- ``answer_prompt``: the context block of the naive pipeline, each chunk inside
  ``<doc id='...'>`` tags, then the question (no model reads it offline).
- ``failure_cause``: the first of five measurable rules that explains why a question's
  relevant pages missed the top ``k`` chunks (``CAUSES``, in the order they are tried). No rule
  claims an answer split across chunks: the judgements name pages, not the sentences that
  answer, so nothing here could show a split.
- ``parent_contexts`` and ``sentence_windows``: small units searched, bigger units returned.
- ``rrf``: reciprocal rank fusion over the top ``depth`` of each ranking (``depth=None``:
  the whole ranking, where it equals ``retrieval.fusion.fused_scores`` with
  ``first_position=1``), over any item numbers, so a filtered ranking can be fused too.
- ``ChunkSearch``: BM25 and dense over the same chunks, their full rankings kept per
  question, and page rankings for each path, fused or alone, with an optional permission
  filter applied inside the search.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Mapping, Sequence

from ..engines.chunking.text_chunks import TextChunk
from ..engines.retrievers import Bm25Retriever, DenseRetriever, DocumentHit, collapse
from ..retrieval.fusion import fuse_partial

INSTRUCTION = ("Answer from the documents below only. When they do not hold the answer, "
               "reply that they do not.")

CAUSES = ("exact term missed", "only the whole page matches", "ranked below k", "phrasing mismatch",
          "nothing relevant at all")
METHODS = ("bm25", "dense", "hybrid")


def answer_prompt(question: str, chunks: Sequence[TextChunk]) -> str:
    """The instruction, every chunk as ``<doc id='doc_id#position'>text</doc>``, then the question."""
    context = "\n\n".join(f"<doc id='{c.chunk_id}'>{c.text}</doc>" for c in chunks)
    return f"{INSTRUCTION}\n{context}\n\nQuestion: {question}"


def first_rank(ranked_doc_ids: Sequence[str], relevant: Collection[str]) -> int | None:
    """The 1-based position of the first relevant id in a list of ids (repeats allowed), or None."""
    for position, doc_id in enumerate(ranked_doc_ids, start=1):
        if doc_id in relevant:
            return position
    return None


@dataclass(frozen=True)
class Evidence:
    """What the rules read for one missed question.

    ``dense_rank``: position of the first chunk of a relevant page in the dense chunk ranking;
    ``bm25_hit``: BM25's top ``k`` chunks hold a relevant page; ``page_hit``: the dense
    model over whole pages puts a relevant page in its top ``k``; ``word_share``: the share
    of the question's stemmed words found in some relevant page; ``style``: the question's style.
    """

    dense_rank: int | None
    bm25_hit: bool
    page_hit: bool
    word_share: float
    style: str


def failure_cause(evidence: Evidence, k: int = 5, near: int = 20, share: float = 0.5) -> str:
    """The first rule that holds (the rules are in ``CAUSES`` order):

    1. exact term missed: the question names an object (``exact-name``) and BM25 finds it;
    2. only the whole page matches: the dense model over whole pages has a relevant page in its
       top ``k``, though no chunk of it is among the ``k`` best chunks. Judgements are per page, so
       this shows that the page read whole is nearer the question than any piece of it, not where
       the answer sits: it cannot tell an answer split across chunks from one diluted in a chunk;
    3. ranked below k: a relevant chunk ranks ``k + 1`` to ``near``;
    4. phrasing mismatch: fewer than ``share`` of the question's stems occur in a relevant page;
    5. nothing relevant at all: none of these.
    """
    if evidence.style == "exact-name" and evidence.bm25_hit:
        return CAUSES[0]
    if evidence.page_hit:
        return CAUSES[1]
    if evidence.dense_rank is not None and k < evidence.dense_rank <= near:
        return CAUSES[2]
    if evidence.word_share < share:
        return CAUSES[3]
    return CAUSES[4]


def word_share(question_words: Sequence[str], page_words: Collection[str]) -> float:
    """The share of distinct question words that occur in ``page_words`` (0 for a question without words)."""
    distinct = set(question_words)
    return len(distinct & set(page_words)) / len(distinct) if distinct else 0.0


@dataclass(frozen=True)
class Context:
    """One passage handed to the model: its page, its text and its size in tokens."""

    doc_id: str
    text: str
    tokens: int


def parent_contexts(ranked_children: Sequence[TextChunk], parent_of: Callable[[TextChunk], tuple],
                    parents: Mapping[tuple, Context], pages: int, budget: int) -> list[Context]:
    """Parents of the best children, each parent once, until ``pages`` pages or the token ``budget``.

    A parent that would take the total past ``budget`` is skipped and the next one tried.
    """
    seen: set[tuple] = set()
    pages_seen: list[str] = []
    chosen: list[Context] = []
    used = 0
    for child in ranked_children:
        key = parent_of(child)
        if key in seen:
            continue
        seen.add(key)
        parent = parents[key]
        if parent.doc_id in pages_seen or used + parent.tokens > budget:
            continue
        chosen.append(parent)
        pages_seen.append(parent.doc_id)
        used += parent.tokens
        if len(pages_seen) == pages:
            break
    return chosen


def sentence_windows(ranked: Sequence[int], units: Sequence[TextChunk], same_group: Callable[[int, int], bool],
                     neighbours: int, pages: int) -> list[tuple[str, list[int]]]:
    """The best sentence of each of the first ``pages`` pages, with ``neighbours`` sentences each side.

    ``ranked`` are unit numbers, best first; a neighbour is kept while ``same_group(hit,
    other)`` holds (same section of the same page). Returns ``(doc_id, unit numbers)``.
    """
    chosen: list[tuple[str, list[int]]] = []
    seen: set[str] = set()
    for hit in ranked:
        doc_id = units[hit].doc_id
        if doc_id in seen:
            continue
        seen.add(doc_id)
        low, high = hit, hit
        while low > 0 and hit - low < neighbours and same_group(hit, low - 1):
            low -= 1
        while high < len(units) - 1 and high - hit < neighbours and same_group(hit, high + 1):
            high += 1
        chosen.append((doc_id, list(range(low, high + 1))))
        if len(chosen) == pages:
            break
    return chosen


def rrf(rankings: Sequence[Sequence[int]], constant: float = 60, depth: int | None = None) -> list[tuple[int, float]]:
    """``(item, fused score)`` best first, ties by item; each list adds ``1 / (constant + rank)``, rank from 1.

    Only the first ``depth`` items of each ranking take part (``None``: all of them); this
    is the course's fusion (``retrieval.fusion.fuse_partial``) with ranks counted from 1.
    """
    return fuse_partial(rankings, constant, first_position=1, depth=depth)


class ChunkSearch:
    """BM25 and dense over the same chunks; page rankings per path, fused, or filtered inside the search."""

    def __init__(self, bm25: Bm25Retriever, dense: DenseRetriever):
        if bm25.chunks != dense.chunks:
            raise ValueError("both paths must index the same chunks")
        self.bm25, self.dense, self.chunks = bm25, dense, bm25.chunks
        self._rankings: dict[str, tuple[list[int], list[int]]] = {}

    def rankings(self, text: str) -> tuple[list[int], list[int]]:
        """(BM25's matched chunks, dense's full ranking) of a question, computed once."""
        if text not in self._rankings:
            self._rankings[text] = (self.bm25.matched_ranking(text), self.dense.full_ranking(text))
        return self._rankings[text]

    def pages(self, text: str, method: str = "hybrid", allowed: Collection[str] | None = None,
              constant: float = 60, depth: int | None = None) -> list[DocumentHit]:
        """Pages best first for ``method``; with ``allowed`` (page ids) other chunks never enter the search."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
        bm25, dense = self.rankings(text)
        if allowed is not None:
            bm25 = [n for n in bm25 if self.chunks[n].doc_id in allowed]
            dense = [n for n in dense if self.chunks[n].doc_id in allowed]
        if method == "hybrid":
            return collapse((self.chunks[n], s) for n, s in rrf([bm25, dense], constant, depth))
        ranking = bm25 if method == "bm25" else dense
        if depth is not None:
            ranking = ranking[:depth]
        return collapse((self.chunks[n], -position) for position, n in enumerate(ranking))
