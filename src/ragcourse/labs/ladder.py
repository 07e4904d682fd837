"""Lab 04's measurements: scores after each stage, latencies, HNSW recall, the reader's threshold.

Everything here reads ``Trace`` objects (``baseline.py``) or the index, so the notebook's
tables are a few calls each and the tests can check the arithmetic on small cases.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..corpus.queries import Question
from ..rag.baseline import STAGES, Trace
from ..rag.reader import Answer, citation_doc_id
from ..rag.search import dense
from ..rag.store import PgIndex
from ..retrieval.metrics import measure


def stage_runs(traces: Sequence[Trace], questions: Sequence[Question], stage: str) -> dict[str, list[str]]:
    """qid -> the stage's documents, best first."""
    return {q.qid: trace.documents(stage) for q, trace in zip(questions, traces)}


def stage_scores(traces: Sequence[Trace], questions: Sequence[Question]) -> dict[str, dict[str, float]]:
    """Recall@1/5/10, MRR and nDCG@10 of documents after every stage (``STAGES``)."""
    judged = {q.qid: q.relevant for q in questions}
    return {stage: measure(stage_runs(traces, questions, stage), judged) for stage in STAGES}


def mean_passages(traces: Sequence[Trace], stage: str) -> float:
    """How many passages the stage hands on, on average."""
    return statistics.fmean(len(t.stage(stage)) for t in traces)


def mean_tokens(traces: Sequence[Trace]) -> float:
    """Tokens of the rendered context, on average."""
    return statistics.fmean(t.context.tokens for t in traces)


@dataclass(frozen=True)
class Spread:
    """Median and 95th percentile of a sample (for latencies, in milliseconds)."""

    median: float
    p95: float


def spread(values: Sequence[float]) -> Spread:
    """The median and the 95th percentile (linear interpolation, numpy's default)."""
    if not values:
        raise ValueError("spread needs at least one value")
    array = np.asarray(values, dtype=float)
    return Spread(float(np.median(array)), float(np.percentile(array, 95)))


def stage_latency(traces: Sequence[Trace]) -> dict[str, Spread]:
    """Milliseconds per stage (the keys of ``Trace.seconds``)."""
    names = list(traces[0].seconds)
    return {name: spread([t.seconds[name] * 1000 for t in traces]) for name in names}


def hnsw_recall(index: PgIndex, vectors: np.ndarray, k: int = 30, tenant: str = "public",
                exact_lists: Sequence[Sequence[int]] | None = None) -> float:
    """Mean share of the exact top ``k`` chunks that the HNSW search also returns.

    ``exact_lists`` (chunk ids, one list per vector) saves the exhaustive searches when
    they were already run, for example by the ladder's traces.
    """
    shares = []
    for number, vector in enumerate(vectors):
        if exact_lists is None:
            exact = {sp.passage.chunk_id for sp in dense(index, vector, k, tenant, exact=True)}
        else:
            exact = set(exact_lists[number][:k])
        approximate = {sp.passage.chunk_id for sp in dense(index, vector, k, tenant, exact=False)}
        shares.append(len(exact & approximate) / len(exact) if exact else 1.0)
    return statistics.fmean(shares)


@dataclass(frozen=True)
class ThresholdRow:
    """The reader at one abstention threshold."""

    threshold: float
    unanswerable_abstained: float
    judged_answered: float
    judged_correct: float   # answered, with at least one citation of a relevant page


def cites_relevant(answer: Answer, relevant: Sequence[str]) -> bool:
    """Whether one of the answer's sentences (abstained or not) comes from a relevant page."""
    return any(citation_doc_id(citation) in relevant for _, citation, _ in answer.evidence)


def threshold_sweep(judged: Sequence[tuple[Answer, Sequence[str]]], unanswerable: Sequence[Answer],
                    thresholds: Sequence[float]) -> list[ThresholdRow]:
    """The reader at other thresholds, from answers already given.

    The sentences a reader picks do not depend on the threshold, only the decision to
    answer does (best score at least the threshold), so each row is recomputed from the
    best scores without reading again.
    """
    rows = []
    for t in thresholds:
        abstained = statistics.fmean(a.best_score < t for a in unanswerable)
        answered = [(a, rel) for a, rel in judged if a.best_score >= t]
        rows.append(ThresholdRow(t, abstained, len(answered) / len(judged),
                                 sum(cites_relevant(a, rel) for a, rel in answered) / len(judged)))
    return rows


def tenant_leaks(traces: Sequence[Trace]) -> int:
    """Passages, over every stage of every trace, whose tenant is not the trace's."""
    return sum(sp.passage.tenant != t.tenant for t in traces for stage in STAGES for sp in t.stage(stage))
