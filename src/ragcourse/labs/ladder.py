"""Lab 04's measurements: scores after each stage, latencies, HNSW recall, the reader's threshold, the ladder.

Everything here reads ``Trace`` objects (``rag.pipeline``) or the index, so the notebook's
tables are a few calls each and the tests can check the arithmetic on small cases. The system
it measures, its ``Setting`` and the package's defaults live in ``rag.pipeline``; ``climb``
decides on ``dev`` which steps lab 04 keeps from ``rag.pipeline.UNTUNED_SETTING``.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..corpus.queries import Question
from ..rag.pipeline import STAGES, Setting, Trace
from ..rag.reader import Answer, citation_doc_id, copied_sentence
from ..rag.search import dense
from ..rag.store import PgIndex
from ..retrieval.metrics import hit_at_k, mean_measure, measure


def stage_runs(traces: Sequence[Trace], questions: Sequence[Question], stage: str) -> dict[str, list[str]]:
    """qid -> the stage's documents, best first."""
    return {q.qid: trace.documents(stage) for q, trace in zip(questions, traces)}


def stage_scores(traces: Sequence[Trace], questions: Sequence[Question]) -> dict[str, dict[str, float]]:
    """hit@1, Recall@1/5/10, MRR and nDCG@10 of documents after every stage (``STAGES``)."""
    judged = {q.qid: q.relevant for q in questions}
    scores = {}
    for stage in STAGES:
        runs = stage_runs(traces, questions, stage)
        scores[stage] = {**measure(runs, judged), "hit@1": mean_measure(runs, judged, hit_at_k, 1)}
    return scores


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
    judged_correct_strict: float = math.nan   # the same, the sentence being that page's own text (needs pages)


def cites_relevant(answer: Answer, relevant: Sequence[str], pages: Mapping[str, str] | None = None) -> bool:
    """Whether one of the answer's sentences (abstained or not) comes from a relevant page.

    With ``pages`` (doc id -> Markdown, as for ``reader.strict_citation_accuracy``) the
    sentence must also be that page's own text, not a See Also entry (``reader.copied_sentence``).
    """
    return any(citation_doc_id(citation) in relevant
               and (pages is None or not copied_sentence(sentence, citation, pages))
               for sentence, citation, _ in answer.evidence)


def threshold_sweep(judged: Sequence[tuple[Answer, Sequence[str]]], unanswerable: Sequence[Answer],
                    thresholds: Sequence[float], pages: Mapping[str, str] | None = None) -> list[ThresholdRow]:
    """The reader at other thresholds, from answers already given.

    The sentences a reader picks do not depend on the threshold, only the decision to
    answer does (best score at least the threshold), so each row is recomputed from the
    best scores without reading again. With ``pages`` each row also gives
    ``judged_correct_strict`` (``cites_relevant`` with ``pages``); without, it is NaN.
    """
    rows = []
    for t in thresholds:
        abstained = statistics.fmean(a.best_score < t for a in unanswerable)
        answered = [(a, rel) for a, rel in judged if a.best_score >= t]
        strict = (math.nan if pages is None
                  else sum(cites_relevant(a, rel, pages) for a, rel in answered) / len(judged))
        rows.append(ThresholdRow(t, abstained, len(answered) / len(judged),
                                 sum(cites_relevant(a, rel) for a, rel in answered) / len(judged), strict))
    return rows


def tenant_leaks(traces: Sequence[Trace]) -> int:
    """Passages, over every stage of every trace, whose tenant is not the trace's."""
    return sum(sp.passage.tenant != t.tenant for t in traces for stage in STAGES for sp in t.stage(stage))


# -- the ladder of settings, decided on dev ------------------------------------------------

# Every index the ladder's steps can reach from its start (``rag.pipeline.UNTUNED_SETTING``: recursive
# chunks with summary lines and headers): without headers, and the design's own chunks (2,000 characters,
# 300 of overlap, with headers); lab 03 measures the other chunkings, so lab 04 keeps only these.
LADDER_INDEXES = (Setting(headers=True), Setting(headers=False), Setting(policy="seed"))


@dataclass(frozen=True)
class Step:
    """A change to try on top of the best setting so far: its name and the settings it changes."""

    name: str
    changes: dict


@dataclass(frozen=True)
class Rung:
    """A step as measured: the setting tried, its runs and means, its paired comparison with the best so far, kept or not."""

    name: str
    setting: Setting
    runs: dict
    means: dict                 # measure -> mean over the questions
    comparison: object          # PairedComparison (tried - best so far) on the deciding measure; None for the start
    kept: bool


def climb(start: Setting, steps: Sequence[Step], run, questions: Sequence[Question], measure: str = "mrr",
          tie_break: str = "hit@5") -> list[Rung]:
    """Try each step on top of the best setting so far; keep it when its point estimate is not below.

    ``run(setting)`` returns qid -> documents, best first. A step is kept when its mean
    ``measure`` is at least the best setting's, or equal to it and its ``tie_break`` mean
    is not lower: a strong baseline keeps what does not hurt on ``dev``. No significance
    gate decides, since on a development set of a hundred questions almost no single step is
    significant; the paired interval and p-value (the course's ``compare``) are computed for
    each step all the same, so a reader sees how sure each choice is.
    """
    from ..labs.real_check import paired, scores

    def means(runs):
        return {m: sum(scores(runs, questions, m)) / len(questions)
                for m in dict.fromkeys(("hit@1", "hit@5", "mrr", measure, tie_break))}

    best_setting, best_runs = start, run(start)
    best_means = means(best_runs)
    rungs = [Rung("start", start, best_runs, best_means, None, True)]
    for step in steps:
        tried = best_setting.changed(**step.changes)
        runs = run(tried)
        tried_means = means(runs)
        comparison = paired(runs, best_runs, questions, measure, (step.name, "best so far"))
        # rounded, so that two sums of the same per-question values in another order still tie
        keep = ((round(tried_means[measure], 9), round(tried_means[tie_break], 9))
                >= (round(best_means[measure], 9), round(best_means[tie_break], 9)))
        rungs.append(Rung(step.name, tried, runs, tried_means, comparison, keep))
        if keep:
            best_setting, best_runs, best_means = tried, runs, tried_means
    return rungs


def final_setting(rungs: Sequence[Rung]) -> Setting:
    """The setting of the last kept rung."""
    return [r for r in rungs if r.kept][-1].setting
