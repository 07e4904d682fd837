"""Lab 04's conventional RAG baseline end to end, with a trace of every stage.

question -> full text + dense candidates (PostgreSQL) -> reciprocal rank fusion ->
reranker (keeps 8) -> context assembly (dedup, overlap, passage and token limits) ->
extractive reader (sentences with ``source#ordinal`` citations, or an abstention).

``Baseline.ask`` returns a ``Trace``: each stage's output and time, so a wrong answer can
be followed back from the reader to the rows it came from.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from ..engines.stages import Reader, SecondStage
from .context import AssembledContext, ContextBudget, assemble, drop_counts, token_counter
from .passages import ScoredPassage
from .reader import Answer, ExtractiveReader
from .rerank import KEEP, RerankResult, make_reranker
from .search import (DEFAULT_LEXICAL, PER_PATH, RRF_CONSTANT, Candidates, PathMemo, candidates, check_lexical,
                     check_question)
from .store import DEFAULT_TENANT, PgIndex, check_tenant

STAGES = ("full text", "dense", "fused", "reranked", "admitted")


@dataclass(frozen=True)
class Trace:
    """One question through every stage: candidates, fusion, reranking, context, answer, timings."""

    question: str
    tenant: str
    candidates: Candidates
    reranked: RerankResult
    context: AssembledContext
    answer: Answer
    seconds: dict = field(default_factory=dict)

    def stage(self, name: str) -> tuple[ScoredPassage, ...]:
        """The passages a stage ended with, best first (one of ``STAGES``)."""
        lists = {"full text": self.candidates.full_text, "dense": self.candidates.dense,
                 "fused": self.candidates.fused, "reranked": self.reranked.ranked,
                 "admitted": self.context.admitted}
        if name not in lists:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}; got {name!r}")
        return lists[name]

    def documents(self, name: str) -> list[str]:
        """The stage's source documents, best first, each once."""
        return list(dict.fromkeys(sp.passage.doc_id for sp in self.stage(name)))

    def to_dict(self) -> dict:
        """The trace as plain JSON-ready data (with ``dense_search`` when the dense path was approximate)."""
        def rows(stage):
            return [{"citation": sp.passage.citation, "score": round(sp.score, 6), "rank": sp.rank}
                    for sp in stage]

        search = self.candidates.dense_search
        approximate = {} if search is None or search.exact else {"dense_search": asdict(search)}
        return {
            "question": self.question, "tenant": self.tenant,
            "answer": {"text": self.answer.text, "citations": list(self.answer.citations),
                       "abstained": self.answer.abstained,
                       "best_score": None if math.isnan(self.answer.best_score) else round(self.answer.best_score, 6)},
            "full_text": rows(self.candidates.full_text), "dense": rows(self.candidates.dense),
            "fused": rows(self.candidates.fused), "union_size": self.candidates.union_size,
            "reranker": {"name": self.reranked.name, "truncated": self.reranked.truncated,
                         "kept": rows(self.reranked.ranked)},
            "context": {"admitted": rows(self.context.admitted),
                        "dropped": [{"citation": sp.passage.citation, "reason": reason}
                                    for sp, reason in self.context.dropped],
                        "tokens": self.context.tokens, "characters": self.context.characters,
                        "repeated_characters": self.context.repeated_characters},
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            **approximate,
        }

    def lines(self) -> list[str]:
        """The trace as text, stage by stage."""
        c, r, x = self.candidates, self.reranked, self.context
        out = [f"question: {self.question}  (tenant {self.tenant})",
               f"full text: {len(c.full_text)} candidates   dense: {len(c.dense)}   "
               f"fused union: {c.union_size}",
               *([f"dense search: {c.dense_search.line()}"]
                 if c.dense_search is not None and not c.dense_search.exact else []),
               f"reranker: {r.name}; scored {r.scored}, kept {len(r.ranked)}, "
               f"{r.truncated} cut at 2,000 characters"]
        for sp in r.ranked:
            out.append(f"  {sp.rank}. {sp.score:7.4f}  {sp.passage.citation}")
        drops = ", ".join(f"{n} {reason}" for reason, n in drop_counts(x).items() if n)
        out.append(f"context: {len(x.admitted)} admitted ({x.tokens} tokens, {x.characters} characters, "
                   f"{x.repeated_characters} repeated); dropped: {drops or 'none'}")
        for sp, reason in x.dropped:
            out.append(f"  dropped {sp.passage.citation}: {reason}")
        out.append("seconds: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in self.seconds.items()))
        return out


class Baseline:
    """The whole pipeline over one index; every part can be swapped (second stage, budget, reader).

    The second stage is any ``stages.SecondStage`` (the MiniLM re-scorer by default), the reader
    any ``stages.Reader`` (the extractive reader by default); each is called through its protocol.
    """

    def __init__(self, index: PgIndex, encoder, second_stage: SecondStage | None = None,
                 budget: ContextBudget | None = None, reader: Reader | None = None, per_path: int = PER_PATH,
                 constant: float = RRF_CONSTANT, exact: bool = True, keep: int = KEEP,
                 lexical: str = DEFAULT_LEXICAL, memo: PathMemo | None = None):
        from ..lesson.params import check_int

        self.index, self.encoder = index, encoder
        self.second_stage = second_stage or make_reranker(encoder)
        self.budget = budget or ContextBudget()
        self.reader = reader or ExtractiveReader(encoder)
        self.per_path = check_int("per_path", per_path, 1, 1000)
        self.keep = check_int("keep", keep, 1, 100)
        self.constant, self.exact = constant, exact
        self.lexical = check_lexical(lexical)
        self.count_tokens = token_counter(encoder)
        self.memo = memo   # a PathMemo: first-stage rows asked before come from memory (see rag.search)

    def ask(self, question: str, tenant: str = DEFAULT_TENANT, vector: np.ndarray | None = None,
            session=None) -> Trace:
        """Answer one question for ``tenant``; ValueError for an empty, NUL-holding or overlong question."""
        question = check_question(question)
        check_tenant(tenant)
        started = time.perf_counter()
        if vector is None:
            vector = self.encoder.encode([question])[0]
        encoded = time.perf_counter()
        found = candidates(self.index, question, vector, self.per_path, tenant, self.exact, self.constant, session,
                           lexical=self.lexical, memo=self.memo)
        before_rerank = time.perf_counter()
        reranked = self.second_stage.reorder(question, found, self.keep)
        ranked = time.perf_counter()
        context = assemble(reranked.ranked, self.budget, self.count_tokens)
        assembled = time.perf_counter()
        answer = self.reader.answer(question, context)
        done = time.perf_counter()
        seconds = {"encode": encoded - started, **found.seconds, "rerank": ranked - before_rerank,
                   "assemble": assembled - ranked, "read": done - assembled}
        return Trace(question, tenant, found, reranked, context, answer, seconds)

    def ask_many(self, questions: Sequence[str], tenant: str = DEFAULT_TENANT) -> list[Trace]:
        """Several questions, their vectors encoded in one call."""
        texts = [check_question(q) for q in questions]
        check_tenant(tenant)
        if not texts:
            return []
        vectors = self.encoder.encode(texts)
        # One read-only session for the batch; each question's queries are still timed on their own.
        with self.index.reader(tenant, exact=self.exact) as session:
            return [self.ask(text, tenant, vector, session) for text, vector in zip(texts, vectors)]


class PipelineRetriever:
    """The pipeline's ranked list as a ``stages.Retriever``: each question's pages in its second stage's order.

    A question's hits are the ``reranked`` stage's chunks collapsed to their pages (each page once,
    with the chunk that won it and that chunk's score). ``allowed`` (page ids) applies to that finished
    list, since the pipeline's search does not filter by page, so fewer than ``keep`` pages can remain:
    ``filtered_out`` counts the hits it removed, over every call.
    """

    name = "postgres"

    def __init__(self, pipeline: Baseline, tenant: str = DEFAULT_TENANT):
        self.pipeline, self.tenant = pipeline, check_tenant(tenant)
        self.filtered_out = 0

    def search_many(self, questions: Sequence[str], allowed=None) -> list[list]:
        """One list of ``DocumentHit`` per question (ValueError for an empty, NUL-holding or overlong one)."""
        from ..engines.retrievers import DocumentHit

        results = []
        for trace in self.pipeline.ask_many(questions, self.tenant):
            seen, hits = set(), []
            for sp in trace.stage("reranked"):
                if sp.passage.doc_id not in seen:
                    seen.add(sp.passage.doc_id)
                    hits.append(DocumentHit(sp.passage.doc_id, sp.passage.ordinal, sp.score))
            kept = hits if allowed is None else [hit for hit in hits if hit.doc_id in allowed]
            self.filtered_out += len(hits) - len(kept)
            results.append(kept)
        return results
