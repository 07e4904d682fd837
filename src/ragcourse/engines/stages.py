"""One interface per stage of the course's retrieval-augmented pipeline, each a ``typing.Protocol``.

A class implements a stage by having its members, not by inheriting from anything here. The
protocols are ``runtime_checkable``: ``isinstance(thing, Retriever)`` checks that the members
exist (not their signatures), and ``tests/rag/test_stage_protocols.py`` then calls every
implementation through its protocol on a small case.

- ``Retriever``: a batch of questions in (and, optionally, the page ids it may return); per
  question, document hits best first out (``engines.retrievers.DocumentHit``). The in-memory
  retrievers of ``engines.retrievers`` and the PostgreSQL pipeline's ranked list
  (``rag.pipeline.PipelineRetriever``) are retrievers.
- ``SecondStage``: one question's first-stage candidates in (``rag.search.Candidates``: both
  paths' lists and their fusion), the ``keep`` best of them in a new order out
  (``rag.rerank.RerankResult``). The re-scorers of ``rag.rerank`` score the fused candidates'
  text; ``rag.rerank.LearnedOrder`` weighs both paths' scores and ranks instead.
- ``Reader``: a question and its assembled context in (``rag.context.AssembledContext``), an
  ``rag.reader.Answer`` with its citations out: ``rag.reader.ExtractiveReader`` copies sentences,
  ``rag.generator.GeneratingReader`` has a language model write them.

The protocols sit in ``engines``, the lowest layer that every caller can import (``rag`` may use
``engines``, never the reverse); the ``rag`` types they exchange are named here in words only.
"""
from __future__ import annotations

from typing import Any, Collection, Protocol, Sequence, runtime_checkable


@runtime_checkable
class Retriever(Protocol):
    """Ranked document hits for a batch of questions."""

    name: str

    def search_many(self, questions: Sequence[str], allowed: Collection[str] | None = None) -> list[list]:
        """One list of ``DocumentHit`` per question, best first; with ``allowed`` (page ids) only those pages.

        Each implementation says whether ``allowed`` applies inside its search (before a candidate list
        is cut) or to its finished list."""
        ...


@runtime_checkable
class SecondStage(Protocol):
    """Re-orders one question's first-stage candidates and keeps the best few."""

    name: str

    def reorder(self, question: str, candidates: Any, keep: int) -> Any:
        """The ``keep`` best of ``candidates`` (a ``rag.search.Candidates``) as a ``rag.rerank.RerankResult``."""
        ...


@runtime_checkable
class Reader(Protocol):
    """Turns a question and its passages into an answer with citations."""

    def answer(self, question: str, context: Any) -> Any:
        """The ``rag.reader.Answer`` to ``question`` from ``context`` (a ``rag.context.AssembledContext``) only."""
        ...
