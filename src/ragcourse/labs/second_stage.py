"""Lab 04's second stages side by side on ``dev``, and what the course's cross-encoder learns and costs.

Four second stages over the same first stage (the kept setting's two paths, fused), each scored on its
ranked list of ``PAGES`` pages (every candidate in the stage's order, each page once, cut at ``PAGES``:
``rag.pipeline.distinct_pages``, as ``Trace.ranked_pages`` and ``search --retriever postgres`` rank them):

- ``none``: the fused order (the traces' own ranked list, ``Trace.ranked_pages``);
- ``learned``: today's learned combination, judged as lab 04 judges it, by 5-fold cross-validation over the
  questions (``learned.cross_validated_runs``);
- ``cross-encoder``: the course's cross-encoder (``rag.cross_encoder``) over the first ``depth`` fused
  candidates, through ``rag.rerank.rerank`` as ``Pipeline`` would run it (the candidates past ``depth``
  follow in fused order);
- ``learned + cross-encoder``: the learned combination's first ``depth`` candidates reordered with the
  cross-encoder's score as a sixth feature (``rag.cross_encoder.combined``), both steps' weights fitted on
  the other folds only, so no question is ranked by weights that saw it.

A list can hold fewer than ``PAGES`` pages where a question's candidates hold fewer pages (the pipeline
would search deeper); ``SecondStages.short`` counts those lists by system.
``compare_second_stages`` returns each system's runs, its means and a ``significance.Family`` of paired
comparisons (each system against today's learned combination, on hit@1, hit@5 and MRR@10, Holm-adjusted).
``learning_curve`` gives the loss of every training step and MRR@10 of the reranked first stage at the
training's checkpoints, on a fixed subset of the questions; ``cost_per_query`` times the scoring of one
question's candidates with nothing cached. The cross-encoder never sees a question while it trains; ``dev``
is only where it is measured, and nothing here reads ``test``.
"""
from __future__ import annotations

import hashlib
import statistics
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..corpus.queries import Question
from ..rag.pipeline import PAGES, Trace, distinct_pages
from ..rag.cross_encoder.combined import CombinedWeights, CrossEncoderInLearnedOrder, first_step
from ..rag.cross_encoder.reranker import TrainedCrossEncoder
from ..rag.rerank import INPUT_CHARS, LearnedWeights, rerank
from ..retrieval.significance import Family
from .learned import FOLDS, cross_validated_runs, fit, fit_standardised, folds_of

MEASURES = ("hit@1", "hit@5", "mrr@10")
SYSTEMS = ("none", "learned", "cross-encoder", "learned + cross-encoder")
BASELINE = "learned"
CURVE_QUESTIONS = 40


def pages_of(ranked, pages: int = PAGES) -> list[str]:
    """The ranked list of ``pages`` pages of ranked passages: best first, each page once (``distinct_pages``)."""
    return [sp.passage.doc_id for sp in distinct_pages(ranked, pages)[0]]


def fused_texts(trace: Trace, depth: int) -> list[str]:
    """The texts a reranker reads for the first ``depth`` fused candidates (cut as ``rerank`` cuts them)."""
    return [sp.passage.text[:INPUT_CHARS] for sp in trace.candidates.fused[:depth]]


def cross_encoder_runs(traces: Sequence[Trace], questions: Sequence[Question], scorer: TrainedCrossEncoder,
                       pages: int = PAGES, progress: bool = False) -> dict[str, list[str]]:
    """qid -> the ranked list of ``pages`` pages of each question's fused candidates in the cross-encoder's
    order (its first ``depth`` reordered, the rest after them in fused order)."""
    scorer.score_many([(t.question, fused_texts(t, scorer.depth)) for t in traces], progress=progress)
    return {q.qid: pages_of(rerank(scorer, t.question, [sp.passage for sp in t.candidates.fused],
                                   keep=max(1, len(t.candidates.fused))).ranked, pages)
            for q, t in zip(questions, traces)}


def _top_texts(trace: Trace, first: LearnedWeights, depth: int) -> list[str]:
    passages, _, _, top, _ = first_step(first, trace.question, trace.candidates.full_text, trace.candidates.dense, depth)
    return [passages[i].text[:INPUT_CHARS] for i in top]


def fit_combined(traces: Sequence[Trace], questions: Sequence[Question], first: LearnedWeights,
                 scorer: TrainedCrossEncoder) -> CombinedWeights:
    """The second step's weights: a logistic regression over the five features and the cross-encoder's score
    of each question's first ``scorer.depth`` candidates by ``first``, labelled by whether the page is judged."""
    xs, ys = [], []
    for trace, question in zip(traces, questions):
        c = trace.candidates
        passages, features, _, top, _ = first_step(first, trace.question, c.full_text, c.dense, scorer.depth)
        if not top:
            continue
        scores = scorer.score_many([(trace.question, [passages[i].text[:INPUT_CHARS] for i in top])])[0]
        xs.append(np.column_stack([features[top], np.asarray(scores)]))
        ys.append(np.array([passages[i].doc_id in question.relevant for i in top], dtype=int))
    return CombinedWeights.of(*fit_standardised(np.vstack(xs), np.concatenate(ys)))


def cross_validated_combined_runs(traces: Sequence[Trace], questions: Sequence[Question], scorer: TrainedCrossEncoder,
                                  folds: int = FOLDS, pages: int = PAGES, progress: bool = False) -> dict[str, list[str]]:
    """qid -> the ranked list of ``pages`` pages by the learned combination with the cross-encoder's score
    (every candidate in that order, each page once), each question ranked by both steps' weights fitted
    without its fold (``learned.folds_of``)."""
    fold = folds_of(questions, folds)
    firsts = []
    for held in range(folds):
        train = [i for i in range(len(questions)) if fold[i] != held]
        firsts.append(fit([traces[i] for i in train], [questions[i] for i in train]))
    # every pair any fold's first step hands on, scored together before the folds are run
    scorer.score_many([(t.question, _top_texts(t, first, scorer.depth)) for first in firsts for t in traces],
                      progress=progress)
    runs: dict[str, list[str]] = {}
    for held, first in enumerate(firsts):
        train = [i for i in range(len(questions)) if fold[i] != held]
        combined = fit_combined([traces[i] for i in train], [questions[i] for i in train], first, scorer)
        order = CrossEncoderInLearnedOrder(first, combined, scorer, scorer.depth)
        for i in (i for i in range(len(questions)) if fold[i] == held):
            c = traces[i].candidates
            every = max(1, len({sp.passage.chunk_id for sp in (*c.full_text, *c.dense)}))
            runs[questions[i].qid] = pages_of(order.order(traces[i].question, c.full_text, c.dense, keep=every).ranked,
                                              pages)
    return runs


def fitted_runs(train_traces: Sequence[Trace], train: Sequence[Question], traces: Sequence[Trace],
                questions: Sequence[Question], scorer: TrainedCrossEncoder, pages: int = PAGES) -> dict[str, dict]:
    """The two cross-encoder systems on other questions (``questions``, e.g. held out), fitted on ``train`` only:
    ``cross-encoder`` (nothing to fit) and ``learned + cross-encoder``, whose two steps' weights are fitted on
    every ``train`` question (``fit``, then ``fit_combined``); system -> qid -> ranked list of ``pages`` pages."""
    first = fit(train_traces, train)
    combined = fit_combined(train_traces, train, first, scorer)
    order = CrossEncoderInLearnedOrder(first, combined, scorer, scorer.depth)
    scorer.score_many([(t.question, _top_texts(t, first, scorer.depth)) for t in traces])
    runs = {}
    for q, t in zip(questions, traces):
        c = t.candidates
        every = max(1, len({sp.passage.chunk_id for sp in (*c.full_text, *c.dense)}))
        runs[q.qid] = pages_of(order.order(t.question, c.full_text, c.dense, keep=every).ranked, pages)
    return {"cross-encoder": cross_encoder_runs(traces, questions, scorer, pages), "learned + cross-encoder": runs}


@dataclass(frozen=True)
class SecondStages:
    """The four second stages on the same questions: runs, means by measure, the paired family, and by
    system the questions whose list holds fewer than ``pages`` pages (``short``)."""

    runs: dict
    means: dict
    family: Family
    questions: int
    depth: int
    pages: int = PAGES
    short: dict = field(default_factory=dict)

    def lines(self) -> list[str]:
        """A table of the means, then the family's comparisons."""
        shorts = ", ".join(f"{name} {n}" for name, n in self.short.items() if n) or "none"
        out = [f"{self.questions} questions, each system's ranked list of {self.pages} pages; the cross-encoder "
               f"reads the first {self.depth} candidates; lists shorter than {self.pages} pages: {shorts}",
               f"{'second stage':<26}" + "".join(f"{m:>8}" for m in MEASURES)]
        for name, means in self.means.items():
            out.append(f"{name:<26}" + "".join(f"{means[m]:8.3f}" for m in MEASURES))
        return out + ["", str(self.family)]


def compare_second_stages(traces: Sequence[Trace], questions: Sequence[Question], scorer: TrainedCrossEncoder,
                          folds: int = FOLDS, pages: int = PAGES, progress: bool = False) -> SecondStages:
    """The four second stages (``SYSTEMS``) over first-stage ``traces`` (the kept setting without its second
    stage), each scored on its ranked list of ``pages`` pages, each against today's learned combination in
    one ``Family``."""
    from ..toolkit.params import check_int
    from .real_check import scores

    check_int("pages", pages, 1, 10_000)
    if len(traces) != len(questions):
        raise ValueError(f"traces and questions must pair up; got {len(traces)} traces, {len(questions)} questions")
    runs = {"none": {q.qid: t.ranked_pages()[:pages] for q, t in zip(questions, traces)},
            "learned": cross_validated_runs(traces, questions, folds, pages=pages),
            "cross-encoder": cross_encoder_runs(traces, questions, scorer, pages, progress),
            "learned + cross-encoder": cross_validated_combined_runs(traces, questions, scorer, folds, pages, progress)}
    means = {name: {m: statistics.fmean(scores(r, questions, m)) for m in MEASURES} for name, r in runs.items()}
    family = Family(f"each second stage against today's learned combination ({len(questions)} questions)")
    for name in SYSTEMS:
        if name != BASELINE:
            for m in MEASURES:
                family.add(f"{m:<6} {name}", scores(runs[name], questions, m), scores(runs[BASELINE], questions, m),
                           (name, BASELINE))
    short = {name: sum(len(r[q.qid]) < pages for q in questions) for name, r in runs.items()}
    return SecondStages(runs, means, family, len(questions), scorer.depth, pages, short)


def curve_subset(questions: Sequence[Question], count: int = CURVE_QUESTIONS) -> list[int]:
    """Positions of a fixed subset of ``count`` questions: the first in the order of a hash of their ids."""
    if not isinstance(count, int) or not 1 <= count <= len(questions):
        raise ValueError(f"count must be a whole number from 1 to {len(questions)}; got {count!r}")
    order = sorted(range(len(questions)), key=lambda i: hashlib.sha256(questions[i].qid.encode()).hexdigest())
    return sorted(order[:count])


@dataclass(frozen=True)
class Curve:
    """How the cross-encoder learned: the loss of every step and pairs seen after it, and MRR@10 of the
    reranked first stage on ``questions`` questions at each checkpoint (pairs seen -> MRR@10; 0 is the
    untrained head), beside the fused order's MRR@10 on the same questions."""

    losses: tuple[float, ...]
    pairs_seen: tuple[int, ...]
    mrr: dict
    fused_mrr: float
    questions: int


def learning_curve(scorer: TrainedCrossEncoder, traces: Sequence[Trace], questions: Sequence[Question],
                   count: int = CURVE_QUESTIONS, progress: bool = False) -> Curve:
    """The training's loss by step, and MRR@10 on a fixed subset (``curve_subset``) after 0 pairs, at every
    checkpoint and at the end; each checkpoint's scores are cached under ``<key>@<pairs>``."""
    from ..rag.cross_encoder.reranker import quiet_loading
    from ..rag.cross_encoder.training import load_checkpoint, new_model
    from .real_check import scores

    log = scorer.log
    if log is None:
        raise ValueError("scorer must carry its training log (a model from train_or_load)")
    chosen = curve_subset(questions, count)
    picked_traces, picked = [traces[i] for i in chosen], [questions[i] for i in chosen]
    final = max(log.checkpoints)
    mrr = {}
    for pairs in [0, *sorted(log.checkpoints)]:
        if pairs == final:
            model_scorer = scorer
        else:
            with quiet_loading():
                model = (new_model(log.trained_with) if pairs == 0
                         else load_checkpoint(scorer.folder, pairs, log.trained_with))
            model_scorer = TrainedCrossEncoder(scorer.folder, f"{scorer.key}@{pairs}", scorer.depth, scorer.cache, model,
                                               headers=scorer.headers)
        runs = cross_encoder_runs(picked_traces, picked, model_scorer, progress=progress)
        mrr[pairs] = statistics.fmean(scores(runs, picked, "mrr@10"))
    fused = {q.qid: t.ranked_pages() for q, t in zip(picked, picked_traces)}
    return Curve(tuple(log.losses), tuple(log.pairs_seen), mrr, statistics.fmean(scores(fused, picked, "mrr@10")),
                 len(picked))


@dataclass(frozen=True)
class Cost:
    """Scoring one question's candidates with nothing cached: pairs a question, median and 95th percentile
    milliseconds (wall) and median CPU milliseconds, over ``questions`` questions."""

    questions: int
    pairs: float
    median_ms: float
    p95_ms: float
    cpu_ms: float


def cost_per_query(scorer: TrainedCrossEncoder, traces: Sequence[Trace], count: int = 10) -> Cost:
    """Time ``scorer.compute`` (no cache) on the first ``depth`` fused candidates of the first ``count`` traces,
    one question at a time, as a question arriving alone would be scored."""
    if not isinstance(count, int) or not 1 <= count <= len(traces):
        raise ValueError(f"count must be a whole number from 1 to {len(traces)}; got {count!r}")
    scorer.compute([(traces[0].question, scorer.as_read(fused_texts(traces[0], 1))[0])])   # load and warm up first
    wall, cpu, pairs = [], [], []
    for trace in traces[:count]:
        texts = scorer.as_read(fused_texts(trace, scorer.depth))
        started, cpu_started = time.perf_counter(), time.process_time()
        scorer.compute([(trace.question, t) for t in texts])
        wall.append(1000 * (time.perf_counter() - started))
        cpu.append(1000 * (time.process_time() - cpu_started))
        pairs.append(len(texts))
    return Cost(count, statistics.fmean(pairs), statistics.median(wall), float(np.percentile(wall, 95)),
                statistics.median(cpu))
