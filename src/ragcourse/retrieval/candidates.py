"""Candidate lists retrieved once, and the measures lessons 12 and 13 read from their heads.

The hybrid retriever's ranking is a total order (score, then chunk index), so the top ``k``
for any ``k`` is the first ``k`` of a deeper list. Lessons 12 and 13 ask for many different
``k`` (and for candidate pools to rerank or to draw irrelevant chunks from); retrieving once
per query at the largest depth and slicing gives exactly what separate calls would.

Measures follow the course's arithmetic: recall is a count divided by the number of
queries; precision is the left-to-right sum of per-query shares (relevant among the first
``k``, divided by ``k``), divided by the number of queries.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..toolkit.params import check_positive_int
from ..world.concepts import Edition
from ..world.corpus import Query
from .pipeline import CosineJaccardRetriever, IndexedChunk, is_relevant


def _check_pairs(lists: Sequence[Any], queries: Sequence[Query], what: str) -> None:
    if not queries:
        raise ValueError("queries must not be empty")
    if len(lists) != len(queries):
        raise ValueError(f"{what} must hold one entry per query: {len(lists)} for {len(queries)} queries")


def candidate_lists(retriever: CosineJaccardRetriever, queries: Sequence[Query],
                    depth: int) -> list[list[IndexedChunk]]:
    """Each query's ``depth`` best chunks, best first, from one retrieval per query."""
    check_positive_int("k", depth)
    return [retriever.retrieve(query.text, depth) for query in queries]


def target_set_sizes(chunks: Sequence[IndexedChunk], queries: Sequence[Query],
                     edition: Edition) -> list[int]:
    """How many stored chunks are relevant to each query (its target set)."""
    return [sum(is_relevant(chunk, query, edition) for chunk in chunks) for query in queries]


def recall_at(lists: Sequence[Sequence[IndexedChunk]], queries: Sequence[Query],
              edition: Edition, k: int) -> float:
    """Share of queries with at least one relevant chunk among the first ``k`` of their list."""
    check_positive_int("k", k)
    _check_pairs(lists, queries, "lists")
    found = sum(any(is_relevant(chunk, query, edition) for chunk in chunks[:k])
                for chunks, query in zip(lists, queries))
    return found / len(queries)


def precision_at(lists: Sequence[Sequence[IndexedChunk]], queries: Sequence[Query],
                 edition: Edition, k: int) -> float:
    """Mean over queries of (relevant chunks among the first ``k``) / ``k``."""
    check_positive_int("k", k)
    _check_pairs(lists, queries, "lists")
    return sum(sum(is_relevant(chunk, query, edition) for chunk in chunks[:k]) / k
               for chunks, query in zip(lists, queries)) / len(queries)


def generation_share(chosen: Sequence[IndexedChunk | None], queries: Sequence[Query],
                     edition: Edition) -> float:
    """Share of queries whose answer was written from a relevant chunk (None, no answer, counts wrong)."""
    _check_pairs(chosen, queries, "chosen")
    return sum(is_relevant(chunk, query, edition) for chunk, query in zip(chosen, queries)) / len(queries)


def changed_share(picked: Sequence[object], baseline: Sequence[object]) -> float:
    """Share of positions where ``picked`` holds another object than ``baseline`` (compared with ``is``)."""
    if not baseline:
        raise ValueError("baseline must not be empty")
    if len(picked) != len(baseline):
        raise ValueError(f"picked and baseline differ in length: {len(picked)} and {len(baseline)}")
    return sum(new is not old for new, old in zip(picked, baseline)) / len(baseline)
