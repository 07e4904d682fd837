"""The RAG pipeline over lab 04's PostgreSQL index, end to end, with a trace of every stage, and its settings.

question -> full text + dense (+ name channel) candidates (PostgreSQL) -> reciprocal rank fusion ->
second stage (orders every candidate; its best 8 chunks go on) -> context assembly (dedup,
overlap, passage and token limits) -> reader (the extractive reader's sentences, or the
generating reader's words, with ``source#ordinal`` citations, or an abstention).

Beside the context, the second stage's whole order is the system's ranked list of pages
(``RankedPages``, ``Trace.pages``): each page once, in rank order, to ``pages`` pages (10 by
default, the depth of MRR@10), searched deeper when the candidates hold fewer pages than that.
It is what ``search --retriever postgres`` prints and what lab 04 measures; the 8 chunks the
context reads are its first pages' chunks, so the answer does not depend on it.

``Pipeline.ask`` returns a ``Trace``: each stage's output and time, so a wrong answer can
be followed back from the reader to the rows it came from. Each stage is called through its
protocol (``engines.stages``). ``Setting`` names one configuration of the whole system and
builds its pipeline; ``DEFAULT_SETTING`` is the package's (what lab 04 kept on its ``dev``
questions, run by ``ask``, ``index`` and ``search --retriever postgres``), ``UNTUNED_SETTING``
the design lab 04 started from. ``PipelineRetriever`` is the pipeline's ranked list as a
``stages.Retriever``.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Collection, Sequence

import numpy as np

from ..engines.stages import Reader, SecondStage
from .context import AssembledContext, ContextBudget, assemble, drop_counts, token_counter
from .passages import ScoredPassage
from .reader import Answer, ExtractiveReader
from .rerank import KEEP, RerankResult, make_reranker
from .schema import check_names
from .search import (DEFAULT_LEXICAL, PER_PATH, RRF_CONSTANT, Candidates, PathMemo, candidates, check_lexical,
                     check_question)
from .store import DEFAULT_TENANT, PgIndex, check_tenant

STAGES = ("full text", "dense", "fused", "reranked", "admitted")
NAME_STAGE = "names"  # the name channel's rows (``Trace.stage``), not in STAGES: empty unless the channel ran
PAGES = 10            # pages the system ranks unless told otherwise: the depth of MRR@10 and of `search -k 10`
MAX_PER_PATH = 1000   # the deepest first stage a search for more pages runs (candidates a path)


def distinct_pages(ranked: Sequence[ScoredPassage], wanted: int, allowed: Collection[str] | None = None,
                   listed: Sequence[ScoredPassage] = ()) -> tuple[list[ScoredPassage], int, int, int]:
    """(pages, folded, filtered, left): ``ranked`` walked in rank order, each page once, until ``wanted`` pages.

    A page is listed with its first (best) chunk, re-ranked 1, 2, ... by page. ``listed`` are pages
    found before (a shallower search's): they stay first, and the walk only adds pages after them.
    ``folded`` counts the chunks passed over because their page was already listed, ``filtered``
    the pages passed over because ``allowed`` (page ids; None: every page) lacks them, both before
    the list was full; ``left`` the allowed pages of ``ranked`` the list had no room for.
    """
    from ..toolkit.params import check_positive_int

    wanted = check_positive_int("wanted", wanted)
    pages = [ScoredPassage(sp.passage, sp.score, rank) for rank, sp in enumerate(listed[:wanted], start=1)]
    seen, refused, beyond = {sp.passage.doc_id for sp in pages}, set(), set()
    folded = 0
    for sp in ranked:
        page = sp.passage.doc_id
        if page in seen:
            folded += len(pages) < wanted
        elif allowed is not None and page not in allowed:
            if len(pages) < wanted:
                refused.add(page)
        elif len(pages) < wanted:
            seen.add(page)
            pages.append(ScoredPassage(sp.passage, sp.score, len(pages) + 1))
        else:
            beyond.add(page)
    return pages, folded, len(refused), len(beyond)


def deeper_per_path(per_path: int, found: int, wanted: int) -> int:
    """Candidates a path for the next search, after ``per_path`` a path found ``found`` of ``wanted`` pages.

    Pages grow about in proportion to the candidates, so the next search asks for what that
    share predicts (``per_path * wanted / found``), at least twice ``per_path``, at most ``MAX_PER_PATH``.
    """
    projected = math.ceil(per_path * wanted / max(found, 1))
    return min(MAX_PER_PATH, max(2 * per_path, projected))


@dataclass(frozen=True)
class RankedPages:
    """The system's ranked list of pages for one question, and what making it passed over.

    ``hits`` are the pages, best first, each with the chunk that won it and that chunk's
    second-stage score (``rank``: the page's place). ``wanted`` is how many were asked for; fewer
    means the tenant's allowed pages ran out before ``MAX_PER_PATH`` candidates a path. ``folded``,
    ``filtered`` and ``left`` are ``distinct_pages``'s counts over the last (deepest) candidates
    ranked; ``per_path`` is that search's depth and ``searches`` the first-stage searches run (1
    unless the pipeline's candidates held fewer than ``wanted`` pages).
    """

    hits: tuple[ScoredPassage, ...]
    wanted: int
    folded: int
    filtered: int
    left: int
    per_path: int
    searches: int = 1

    @property
    def doc_ids(self) -> list[str]:
        """The pages' ids, best first."""
        return [sp.passage.doc_id for sp in self.hits]

    def line(self) -> str:
        """One line: how many pages, from what, and what was passed over."""
        deeper = "" if self.searches == 1 else f" after {self.searches} searches"
        return (f"pages: {len(self.hits)} of {self.wanted} wanted, from {self.per_path} candidates a path{deeper}; "
                f"passed over {self.folded} chunks of a page already listed, {self.filtered} pages filtered out; "
                f"{self.left} more pages ranked below")


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
    pages: RankedPages | None = None

    def stage(self, name: str) -> tuple[ScoredPassage, ...]:
        """The passages a stage ended with, best first (one of ``STAGES``, or ``NAME_STAGE``)."""
        lists = {"full text": self.candidates.full_text, "dense": self.candidates.dense,
                 "fused": self.candidates.fused, "reranked": self.reranked.ranked,
                 "admitted": self.context.admitted, NAME_STAGE: self.candidates.names}
        if name not in lists:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}; got {name!r}")
        return lists[name]

    def documents(self, name: str) -> list[str]:
        """The stage's source documents, best first, each once (``reranked``: the pages of the 8 chunks the
        context reads; the system's ranked list, deeper, is ``ranked_pages``)."""
        return list(dict.fromkeys(sp.passage.doc_id for sp in self.stage(name)))

    def ranked_pages(self) -> list[str]:
        """The system's ranked list of pages (``pages``), best first; its first pages are ``documents("reranked")``."""
        if self.pages is None:
            return self.documents("reranked")
        return self.pages.doc_ids

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
            **({"names": rows(self.candidates.names)} if self.candidates.name_channel else {}),
            "fused": rows(self.candidates.fused), "union_size": self.candidates.union_size,
            "reranker": {"name": self.reranked.name, "truncated": self.reranked.truncated,
                         "kept": rows(self.reranked.ranked)},
            **({} if self.pages is None else {"pages": {
                "ranked": [{"doc_id": sp.passage.doc_id, "citation": sp.passage.citation, "score": round(sp.score, 6)}
                           for sp in self.pages.hits],
                "wanted": self.pages.wanted, "folded": self.pages.folded, "filtered": self.pages.filtered,
                "left": self.pages.left, "per_path": self.pages.per_path, "searches": self.pages.searches}}),
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
               + (f"names: {len(c.names)}   " if c.name_channel else "") + f"fused union: {c.union_size}",
               *([f"dense search: {c.dense_search.line()}"]
                 if c.dense_search is not None and not c.dense_search.exact else []),
               f"reranker: {r.name}; scored {r.scored}, kept {len(r.ranked)}, "
               f"{r.truncated} cut at 2,000 characters"]
        for sp in r.ranked:
            out.append(f"  {sp.rank}. {sp.score:7.4f}  {sp.passage.citation}")
        if self.pages is not None:
            out.append(self.pages.line())
        drops = ", ".join(f"{n} {reason}" for reason, n in drop_counts(x).items() if n)
        out.append(f"context: {len(x.admitted)} admitted ({x.tokens} tokens, {x.characters} characters, "
                   f"{x.repeated_characters} repeated); dropped: {drops or 'none'}")
        for sp, reason in x.dropped:
            out.append(f"  dropped {sp.passage.citation}: {reason}")
        out.append("seconds: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in self.seconds.items()))
        return out


class Pipeline:
    """The whole pipeline over one index; every part can be swapped (second stage, budget, reader).

    The second stage orders every candidate; its first ``keep`` chunks go to the context, and the
    whole order, each page once, is the ranked list of ``pages`` pages (``RankedPages``).

    The second stage is any ``stages.SecondStage`` (the MiniLM re-scorer by default), the reader
    any ``stages.Reader`` (the extractive reader by default); each is called through its protocol.
    """

    def __init__(self, index: PgIndex, encoder, second_stage: SecondStage | None = None,
                 budget: ContextBudget | None = None, reader: Reader | None = None, per_path: int = PER_PATH,
                 constant: float = RRF_CONSTANT, exact: bool = True, keep: int = KEEP,
                 lexical: str = DEFAULT_LEXICAL, memo: PathMemo | None = None, pages: int = PAGES,
                 dense_weight: float = 1.0, names: bool = False):
        from ..retrieval.fusion import check_weight
        from ..toolkit.params import check_int

        self.index, self.encoder = index, encoder
        self.second_stage = second_stage or make_reranker(encoder)
        self.budget = budget or ContextBudget()
        self.reader = reader or ExtractiveReader(encoder)
        self.per_path = check_int("per_path", per_path, 1, MAX_PER_PATH)
        self.keep = check_int("keep", keep, 1, 100)
        self.pages = check_int("pages", pages, 1, MAX_PER_PATH)
        self.constant, self.exact = constant, exact
        self.lexical = check_lexical(lexical)
        self.dense_weight, self.names = check_weight("dense_weight", dense_weight), check_names(names)
        self.count_tokens = token_counter(encoder)
        self.memo = memo   # a PathMemo: first-stage rows asked before come from memory (see rag.search)

    def ask(self, question: str, tenant: str = DEFAULT_TENANT, vector: np.ndarray | None = None,
            session=None, allowed: Collection[str] | None = None) -> Trace:
        """Answer one question for ``tenant``; ValueError for an empty, NUL-holding or overlong question.

        ``allowed`` (page ids) applies to the ranked list of pages only (``Trace.pages``), before it is
        cut: the context and the answer do not depend on it."""
        question = check_question(question)
        check_tenant(tenant)
        started = time.perf_counter()
        if vector is None:
            vector = self.encoder.encode([question])[0]
        encoded = time.perf_counter()
        found = self.first_stage(question, vector, self.per_path, tenant, session)
        before_rerank = time.perf_counter()
        order = self.second_stage.reorder(question, found, max(1, found.union_size))
        # The order's first ``keep`` are what a call with ``keep`` returns: every second stage sorts, then cuts.
        reranked = RerankResult(order.ranked[:self.keep], order.truncated, order.scored, order.name)
        ranked = time.perf_counter()
        context = assemble(reranked.ranked, self.budget, self.count_tokens)
        assembled = time.perf_counter()
        answer = self.reader.answer(question, context)
        done = time.perf_counter()
        seconds = {"encode": encoded - started, **found.seconds, "rerank": ranked - before_rerank,
                   "assemble": assembled - ranked, "read": done - assembled}
        pages = self.rank_pages(question, tenant, vector, session, found, order, allowed)
        return Trace(question, tenant, found, reranked, context, answer, seconds, pages)

    def first_stage(self, question: str, vector: np.ndarray, per_path: int, tenant: str, session) -> Candidates:
        """``search.candidates`` at this pipeline's paths and fusion, ``per_path`` candidates a path."""
        return candidates(self.index, question, vector, per_path, tenant, self.exact, self.constant, session,
                          lexical=self.lexical, memo=self.memo, dense_weight=self.dense_weight, names=self.names)

    def rank_pages(self, question: str, tenant: str, vector: np.ndarray, session, found: Candidates,
                   order: RerankResult, allowed: Collection[str] | None = None) -> RankedPages:
        """The second stage's ``order`` of ``found`` as ``pages`` distinct pages; searched deeper while too few.

        While the pages found fall short of ``pages`` and a path came back full (it may hold more),
        the first stage runs again ``deeper_per_path`` candidates a path (at most ``MAX_PER_PATH``)
        and its order adds the pages not yet listed after those already listed, so a page's place
        never depends on the deeper search.
        """
        per_path, searches = self.per_path, 1
        hits, folded, filtered, left = distinct_pages(order.ranked, self.pages, allowed)
        while (len(hits) < self.pages and per_path < MAX_PER_PATH
               and max(len(found.full_text), len(found.dense), len(found.names)) >= per_path):
            per_path = deeper_per_path(per_path, len(hits), self.pages)
            found = self.first_stage(question, vector, per_path, tenant, session)
            order = self.second_stage.reorder(question, found, max(1, found.union_size))
            hits, folded, filtered, left = distinct_pages(order.ranked, self.pages, allowed, listed=hits)
            searches += 1
        return RankedPages(tuple(hits), self.pages, folded, filtered, left, per_path, searches)

    def ask_many(self, questions: Sequence[str], tenant: str = DEFAULT_TENANT,
                 allowed: Collection[str] | None = None) -> list[Trace]:
        """Several questions, their vectors encoded in one call (``allowed``: as for ``ask``)."""
        texts = [check_question(q) for q in questions]
        check_tenant(tenant)
        if not texts:
            return []
        vectors = self.encoder.encode(texts)
        # One read-only session for the batch; each question's queries are still timed on their own.
        with self.index.reader(tenant, exact=self.exact) as session:
            return [self.ask(text, tenant, vector, session, allowed) for text, vector in zip(texts, vectors)]


class PipelineRetriever:
    """The pipeline's ranked list as a ``stages.Retriever``: each question's pages (``Trace.pages``).

    A question's hits are the second stage's whole order, each page once, with the chunk that won it
    and that chunk's score, to the pipeline's ``pages`` (searched deeper when its candidates hold
    fewer). ``allowed`` (page ids) applies inside, before the list is cut, so a filter leaves
    ``pages`` pages whenever the tenant has that many allowed pages within ``MAX_PER_PATH``
    candidates a path; ``filtered_out`` counts the pages it passed over, ``folded`` the chunks of a
    page already listed, ``deepened`` the questions searched deeper and ``short`` those that got fewer
    than ``pages``, over every call.
    """

    name = "postgres"

    def __init__(self, pipeline: Pipeline, tenant: str = DEFAULT_TENANT):
        self.pipeline, self.tenant = pipeline, check_tenant(tenant)
        self.filtered_out = self.folded = self.deepened = self.short = 0

    def search_many(self, questions: Sequence[str], allowed=None) -> list[list]:
        """One list of ``DocumentHit`` per question (ValueError for an empty, NUL-holding or overlong one)."""
        from ..engines.retrievers import DocumentHit

        results = []
        for trace in self.pipeline.ask_many(questions, self.tenant, allowed):
            pages = trace.pages
            self.filtered_out += pages.filtered
            self.folded += pages.folded
            self.deepened += pages.searches > 1
            self.short += len(pages.hits) < pages.wanted
            results.append([DocumentHit(sp.passage.doc_id, sp.passage.ordinal, sp.score) for sp in pages.hits])
        return results


POLICIES = ("seed", "window", "recursive")
LATER_FIELDS = {"dense_weight": 1.0, "names": False}   # Setting's fields with their defaults, shown when changed
SECOND_STAGES = ("none", "re-scorer", "learned")


@dataclass(frozen=True)
class Setting:
    """One configuration of lab 04's system: what is indexed, how full text scores, fusion, second stage, budget.

    ``policy`` is ``"recursive"`` (lab 03's winning units: recursive chunks of 800 characters),
    ``"window"`` (sentences packed to the encoder's window) or ``"seed"`` (the RAG baseline
    design's policy, which lab 04 started from: sentences packed to 2,000 characters with 300 of overlap); ``summaries`` keeps
    each page's summary line in the indexed files; ``headers`` writes each chunk's page title and
    section in front of it. ``lexical`` is a full-text scoring (``search.LEXICAL``) or ``"none"`` (dense
    alone); ``dense_weight`` weighs the dense path's terms in fusion (1: plain RRF); ``names`` adds the
    name channel (``rag.schema``), fused as a third path. The defaults are the best design the course knew before lab 04
    (``UNTUNED_SETTING``); ``DEFAULT_SETTING`` is what lab 04's ladder kept from it, and what
    ``ask``, ``index`` and ``search --retriever postgres`` run.
    """

    policy: str = "recursive"
    summaries: bool = True
    headers: bool = True
    lexical: str = "bm25"
    per_path: int = 30
    constant: int = 60
    second_stage: str = "none"
    max_tokens: int = 1500
    dense_weight: float = 1.0
    names: bool = False

    def __post_init__(self):
        from ..retrieval.fusion import check_weight

        check_weight("dense_weight", self.dense_weight)
        check_names(self.names)
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {self.policy!r}")
        if self.second_stage not in SECOND_STAGES:
            raise ValueError(f"second_stage must be one of {', '.join(SECOND_STAGES)}; got {self.second_stage!r}")

    def __repr__(self) -> str:
        """The dataclass's repr, the fields added for lab 04's later rungs (``LATER_FIELDS``) only when not at their
        defaults, so that a setting printed before they existed prints as it did."""
        shown = [f"{name}={getattr(self, name)!r}" for name in self.__dataclass_fields__
                 if name not in LATER_FIELDS or getattr(self, name) != LATER_FIELDS[name]]
        return f"Setting({', '.join(shown)})"

    def chunk_policy(self, name: str = "sentences"):
        """The ``ChunkPolicy`` this setting indexes with."""
        from ..engines.chunking.policy import ChunkPolicy

        if self.policy == "recursive":
            return ChunkPolicy.recursive(headers=self.headers)
        if self.policy == "seed":
            base = ChunkPolicy.seed(name)
            return ChunkPolicy(name, base.size, base.overlap, unit="characters", headers=self.headers)
        return ChunkPolicy(name, headers=self.headers)

    @property
    def index_key(self) -> tuple[str, bool, bool]:
        """What decides the index: (policy, summaries, headers). Nothing else does: the full-text scoring, the
        fusion and the name channel (whose page names come from ``sources``) read any index of these."""
        return (self.policy, self.summaries, self.headers)

    def pipeline(self, index: PgIndex, encoder, reader=None, keep: int | None = None, max_passages: int = 6,
                 max_tokens: int | None = None, second_stage=None, pages: int = PAGES):
        """The whole pipeline at this setting over ``index`` (a ``Pipeline``), ranking ``pages`` pages.

        The second stage is the setting's (``second_stage``, a ``stages.SecondStage``, replaces it,
        e.g. a cross-encoder); ``max_tokens`` replaces the setting's budget.
        """
        from .rerank import FusedOrder, LearnedOrder

        if second_stage is None:
            second_stage = {"re-scorer": lambda: make_reranker(encoder), "learned": LearnedOrder,
                            "none": FusedOrder}[self.second_stage]()
        budget = ContextBudget(max_passages=max_passages, max_tokens=max_tokens or self.max_tokens)
        return Pipeline(index, encoder, second_stage=second_stage, budget=budget, reader=reader, per_path=self.per_path,
                        constant=self.constant, keep=keep or KEEP, lexical=self.lexical, pages=pages,
                        dense_weight=self.dense_weight, names=self.names)

    def changed(self, **changes) -> "Setting":
        from dataclasses import replace

        unknown = set(changes) - set(self.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown setting(s) {', '.join(sorted(unknown))}; "
                             f"allowed: {', '.join(self.__dataclass_fields__)}")
        return replace(self, **changes)


# The best design the course knew before lab 04 tuned it: lab 03's headed recursive chunks and
# hybrid in PostgreSQL (BM25 and dense, 30 candidates a path, RRF k = 60), no second stage,
# 1,500 tokens of context. Lab 04's ladder starts here.
UNTUNED_SETTING = Setting()
# What lab 04's ladder kept on its 319 dev questions (its section 4 prints the comparison): the package's
# default, which ``ask``, ``index`` and ``search --retriever postgres`` run.
DEFAULT_SETTING = UNTUNED_SETTING.changed(constant=10, dense_weight=3.0, second_stage="learned")
