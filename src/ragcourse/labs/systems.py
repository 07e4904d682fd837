"""Lab 04's systems by setting: one index per way of chunking, one run per setting and question set.

The ladder (``ladder.climb``) asks for many settings on the same questions, and the last
section asks for a few of them again on ``test``; ``SettingRuns`` builds each index the first
time a setting needs it (one schema per ``Setting.index_key``, its embeddings read from
``prepare``'s cache) and runs each (setting, question set) once, so that asking twice costs
nothing and nothing is scored from a different run.

Beside the system, the conditions the reading of a RAG baseline needs, each with the same
reader and budget (``conditions``): **no retrieval** (the reader is given nothing),
**oracle** (the reader is given the judged pages' own chunks, best page first), and the
system with **a larger budget**. Retrieval and reading are scored apart: the pages admitted
to the context (hit@5, MRR), and what the reader did with them (answered, and answered with
a citation whose sentence is a relevant page's own text: ``ladder.cites_relevant`` with
the pages).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..corpus.queries import Question
from ..rag.pipeline import PAGES, Pipeline, Setting, Trace
from ..rag.context import AssembledContext, ContextBudget, assemble, token_counter
from ..rag.passages import Passage, ScoredPassage
from ..rag.reader import Answer, ExtractiveReader
from ..rag.rerank import KEEP, make_reranker
from ..rag.search import PathMemo
from ..rag.store import DEFAULT_TENANT, PgIndex
from .ladder import cites_relevant

PREFETCH_SESSIONS = 2   # reader sessions ``SettingRuns.prefetch`` reads from at once (the machine has two cores)


class SettingRuns:
    """Indexes and runs of lab 04's settings over one exported history (``histories[summaries]``)."""

    def __init__(self, database, encoder, histories: Mapping[bool, Path], reader: ExtractiveReader,
                 keep: int = KEEP, max_passages: int = 6, prefix: str = "lab04", report=print):
        self.database, self.encoder, self.histories = database, encoder, dict(histories)
        self.reader, self.keep, self.max_passages, self.prefix = reader, keep, max_passages, prefix
        self.report = report
        self.indexes: dict[tuple, PgIndex] = {}
        self._rescorer = None
        self._traces: dict[tuple, list[Trace]] = {}
        self.memo = PathMemo()   # the indexes are built once, so each path's rows for a question are fetched once

    def schema(self, setting: Setting) -> str:
        """The schema of a setting's index: the prefix, the policy, and what the files and chunks hold."""
        policy, summaries, headers = setting.index_key
        return f"{self.prefix}_{policy}{'' if summaries else '_nosummary'}{'_headers' if headers else ''}"

    def index(self, setting: Setting) -> PgIndex:
        """The setting's index, built on first use (embeddings from the cache)."""
        key = setting.index_key
        if key not in self.indexes:
            if setting.summaries not in self.histories:
                raise ValueError(f"no history {'with' if setting.summaries else 'without'} summary lines was given")
            built = PgIndex(self.database, self.schema(setting), setting.chunk_policy(), self.encoder)
            built.drop()
            report = built.refresh(self.histories[setting.summaries])
            if self.report is not None:
                self.report(f"{self.schema(setting)}: {report.chunks_written} chunks ({built.policy.version}), "
                            f"{report.embedded} texts embedded")
            self.indexes[key] = built
        return self.indexes[key]

    def baseline(self, setting: Setting, max_tokens: int | None = None, remember: bool = False) -> Pipeline:
        """The whole pipeline at ``setting`` (its budget, unless ``max_tokens`` is given); one re-scorer for all.

        With ``remember`` its first stage shares the runs' ``memo``: the runs of the ladder and of
        ``test`` fetch each path's rows for a question once (their stage timings then measure
        memory, so a pipeline built for timing leaves it off)."""
        reranker = None
        if setting.second_stage == "re-scorer":
            if self._rescorer is None:
                self._rescorer = make_reranker(self.encoder)
            reranker = self._rescorer
        pipeline = setting.pipeline(self.index(setting), self.encoder, reader=self.reader, keep=self.keep,
                                    max_passages=self.max_passages, max_tokens=max_tokens, second_stage=reranker)
        pipeline.memo = self.memo if remember else None
        return pipeline

    def traces(self, setting: Setting, questions: Sequence[Question], name: str) -> list[Trace]:
        """Every question of the set ``name`` through the setting's pipeline, run once."""
        key = (setting, name)
        if key not in self._traces:
            pipeline = self.baseline(setting, remember=True)
            texts = [q.text for q in questions]
            self.prefetch(pipeline, texts)
            self._traces[key] = pipeline.ask_many(texts)
        return self._traces[key]

    def prefetch(self, pipeline: Pipeline, texts: Sequence[str], sessions: int = PREFETCH_SESSIONS) -> int:
        """Put each question's first-stage rows in the memo, read from ``sessions`` reader sessions at once
        (each on its own connection, in its own thread); the statements run.

        PostgreSQL answers each statement in a server process of its own, so two sessions keep two cores
        busy where one question at a time leaves the server waiting for Python and Python for the server.
        The rows are the statements' own, kept under the keys ``candidates`` keeps them under, so the run
        that follows is the run without ``prefetch`` (``tests/rag/test_path_memo.py`` compares them)."""
        from concurrent.futures import ThreadPoolExecutor

        from ..rag.search import candidates

        if not pipeline.exact or pipeline.memo is not self.memo or not texts:
            return 0
        distinct = list(dict.fromkeys(texts))
        work = list(zip(distinct, self.encoder.encode(distinct)))
        parts = [work[n::sessions] for n in range(min(sessions, len(work)))]
        index = pipeline.index

        def read(part) -> PathMemo:
            twin, memo = PgIndex(index.database, index.schema, index.policy, index.encoder), self.memo.fork()
            try:
                with twin.reader(DEFAULT_TENANT, exact=True) as session:
                    for text, vector in part:
                        candidates(twin, text, vector, pipeline.per_path, DEFAULT_TENANT, True, session=session,
                                   lexical=pipeline.lexical, memo=memo)
            finally:
                twin.close()
            return memo

        with ThreadPoolExecutor(len(parts)) as pool:
            filled = list(pool.map(read, parts))
        for memo in filled:
            self.memo.join(memo)
        return sum(memo.fetched for memo in filled)

    def run(self, setting: Setting, questions: Sequence[Question], name: str, stage: str = "reranked") -> dict:
        """qid -> the stage's pages, best first (``reranked``: the system's ranked list, ``Trace.ranked_pages``:
        the second stage's order, each page once, to 10 pages, as ``search --retriever postgres`` returns it)."""
        traces = self.traces(setting, questions, name)
        if stage == "reranked":
            return {q.qid: t.ranked_pages() for q, t in zip(questions, traces)}
        return {q.qid: t.documents(stage) for q, t in zip(questions, traces)}

    def dev_run(self, setting: Setting, questions: Sequence[Question], name: str) -> dict:
        """``run``, except that a learned second stage is judged by cross-validation over ``questions``
        (``learned.cross_validated_runs`` on the setting's first-stage traces), never by the shipped weights."""
        if setting.second_stage != "learned":
            return self.run(setting, questions, name)
        from .learned import cross_validated_runs

        first_stage = self.traces(setting.changed(second_stage="none"), questions, name)
        return cross_validated_runs(first_stage, questions, pages=PAGES)

    def close(self) -> None:
        for index in self.indexes.values():
            index.close()


def oracle_context(index: PgIndex, question: Question, budget: ContextBudget, count_tokens,
                   tenant: str = DEFAULT_TENANT) -> AssembledContext:
    """The judged pages' own chunks (best page first, each in file order), assembled under ``budget``."""
    paths = [f"{page}.md" for page in question.relevant]
    with index.reader(tenant) as connection:
        rows = connection.execute(index.sql(
            "SELECT c.chunk_id, s.path, c.ordinal, c.start_char, c.end_char, c.text, c.tenant "
            "FROM {s}.chunks c JOIN {s}.sources s USING (source_id) WHERE s.path = ANY(%s) "
            "ORDER BY array_position(%s, s.path), c.ordinal"), [paths, paths]).fetchall()
    ranked = [ScoredPassage(Passage(int(cid), path, int(n), int(a), int(b), text, owner), 1.0, rank)
              for rank, (cid, path, n, a, b, text, owner) in enumerate(rows, start=1)]
    return assemble(ranked, budget, count_tokens)


@dataclass(frozen=True)
class ConditionRow:
    """One condition on one question set: retrieval (pages admitted) and reading, apart."""

    name: str
    admitted_hit5: float      # a relevant page among the first five admitted pages
    admitted_mrr: float
    tokens: float             # rendered context, on average
    answered: float           # share of questions the reader answered
    strict: float             # share answered with a citation whose sentence is a relevant page's own text


def reading_row(name: str, contexts: Sequence[AssembledContext], answers: Sequence[Answer],
                questions: Sequence[Question], pages: Mapping[str, str]) -> ConditionRow:
    """Score one condition: the admitted pages against the judged ones, then the reader's answers."""
    from ..retrieval.metrics import hit_at_k, reciprocal_rank

    hits, ranks = [], []
    for context, q in zip(contexts, questions):
        admitted = list(dict.fromkeys(sp.passage.doc_id for sp in context.admitted))
        hits.append(hit_at_k(admitted, set(q.relevant), 5))
        ranks.append(reciprocal_rank(admitted, set(q.relevant)))
    n = len(questions)
    answered = sum(not a.abstained for a in answers) / n
    strict = sum((not a.abstained) and cites_relevant(a, q.relevant, pages) for a, q in zip(answers, questions)) / n
    return ConditionRow(name, statistics.fmean(hits), statistics.fmean(ranks),
                        statistics.fmean(c.tokens for c in contexts), answered, strict)


def conditions(runs: SettingRuns, setting: Setting, questions: Sequence[Question], name: str,
               pages: Mapping[str, str], budgets: Sequence[int] = (2, 4)) -> list[ConditionRow]:
    """No retrieval, the system, the system with ``budgets`` times its token budget, and the oracle."""
    reader, count = runs.reader, token_counter(runs.encoder)
    empty = assemble([], ContextBudget(max_passages=runs.max_passages, max_tokens=setting.max_tokens), count)
    rows = [reading_row("no retrieval", [empty] * len(questions),
                        [reader.answer(q.text, empty) for q in questions], questions, pages)]
    traces = runs.traces(setting, questions, name)
    rows.append(reading_row(f"system, {setting.max_tokens:,} tokens", [t.context for t in traces],
                            [t.answer for t in traces], questions, pages))
    for times in budgets:
        larger = runs.baseline(setting, max_tokens=times * setting.max_tokens, remember=True)
        bigger = larger.ask_many([q.text for q in questions])
        rows.append(reading_row(f"system, {times * setting.max_tokens:,} tokens", [t.context for t in bigger],
                                [t.answer for t in bigger], questions, pages))
    budget = ContextBudget(max_passages=runs.max_passages, max_tokens=setting.max_tokens)
    oracle = [oracle_context(runs.index(setting), q, budget, count) for q in questions]
    rows.append(reading_row(f"oracle, {setting.max_tokens:,} tokens", oracle,
                            [reader.answer(q.text, c) for q, c in zip(questions, oracle)], questions, pages))
    return rows
