"""Lab 04's learned second stage, fitted and judged on ``dev`` by cross-validation over questions.

Reciprocal rank fusion adds ``1 / (k + rank)`` from each path and ignores everything else the
two paths know. ``rag.rerank.LearnedOrder`` weighs that evidence instead (``rag.rerank.FEATURES``
of every candidate chunk of either path); this module learns the weights with scikit-learn's
``LogisticRegression`` over standardised features, a candidate's label being whether its page
is a judged answer. A question's pages are ordered by their best chunk's score.

Fitting and scoring on the same questions would flatter the model, so it is judged by
cross-validation: the ``dev`` questions are dealt into folds (in the order of a hash of their
ids), each fold is ranked by weights fitted on the other folds only, and the ranked lists of
all folds together are compared, question by question, with the other settings on the same
questions. The weights the package ships (``rag.rerank.LEARNED_WEIGHTS``) are fitted once on
all of ``dev``. Nothing here reads ``test``.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from ..corpus.queries import Question
from ..rag.pipeline import Trace, distinct_pages
from ..rag.rerank import KEEP, LearnedOrder, LearnedWeights, candidate_features

FOLDS = 5


def folds_of(questions: Sequence[Question], folds: int = FOLDS) -> list[int]:
    """Each question's fold: questions ordered by a hash of their id, dealt round-robin."""
    if not isinstance(folds, int) or not 2 <= folds <= len(questions):
        raise ValueError(f"folds must be a whole number from 2 to the number of questions ({len(questions)}); "
                         f"got {folds!r}")
    order = sorted(range(len(questions)), key=lambda i: hashlib.sha256(questions[i].qid.encode()).hexdigest())
    fold = [0] * len(questions)
    for position, i in enumerate(order):
        fold[i] = position % folds
    return fold


def _examples(traces: Sequence[Trace], questions: Sequence[Question]):
    if len(traces) != len(questions):
        raise ValueError(f"traces and questions must pair up; got {len(traces)} traces, {len(questions)} questions")
    found = [candidate_features(t.question, t.candidates.full_text, t.candidates.dense, t.candidates.names)
             for t in traces]
    labels = [np.array([p.doc_id in q.relevant for p in passages], dtype=int) for (passages, _), q in zip(found, questions)]
    return [f for _, f in found], labels


def fit_standardised(x: np.ndarray, y: np.ndarray) -> tuple[tuple, tuple, tuple, float]:
    """(mean, scale, coef, intercept) of a logistic regression over standardised ``x`` with labels ``y``
    (a feature that never varies keeps scale 1)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    if len(set(y.tolist())) < 2:
        raise ValueError("the questions' candidates hold one class only (all judged or none); nothing to learn")
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    model = LogisticRegression(C=1.0, max_iter=1000).fit((x - scaler.mean_) / scale, y)
    return (tuple(float(v) for v in scaler.mean_), tuple(float(v) for v in scale),
            tuple(float(v) for v in model.coef_[0]), float(model.intercept_[0]))


def fit(traces: Sequence[Trace], questions: Sequence[Question]) -> LearnedWeights:
    """Weights fitted on every candidate of these questions (first-stage traces, e.g. without a second stage)."""
    features, labels = _examples(traces, questions)
    return LearnedWeights(*fit_standardised(np.vstack(features), np.concatenate(labels)))


def cross_validated_runs(traces: Sequence[Trace], questions: Sequence[Question], folds: int = FOLDS,
                         keep: int = KEEP, pages: int | None = None) -> dict[str, list[str]]:
    """qid -> pages of the ``keep`` best chunks, each question ranked by weights fitted without its fold.

    With ``pages``, the system's ranked list instead (``rag.pipeline.distinct_pages``: every candidate in
    order, each page once, to ``pages``), as the pipeline's ``Trace.pages`` ranks it; where the traces'
    candidates hold fewer pages the list is shorter (the pipeline would search deeper).
    """
    fold = folds_of(questions, folds)
    runs: dict[str, list[str]] = {}
    for held in range(folds):
        train = [i for i in range(len(questions)) if fold[i] != held]
        order = LearnedOrder(fit([traces[i] for i in train], [questions[i] for i in train]))
        for i in (i for i in range(len(questions)) if fold[i] == held):
            candidates = traces[i].candidates
            every = len({sp.passage.chunk_id for sp in (*candidates.full_text, *candidates.dense, *candidates.names)})
            depth = keep if pages is None else max(1, every)
            ranked = order.order(traces[i].question, candidates.full_text, candidates.dense, keep=depth,
                                 names=candidates.names).ranked
            runs[questions[i].qid] = (list(dict.fromkeys(sp.passage.doc_id for sp in ranked)) if pages is None
                                      else [sp.passage.doc_id for sp in distinct_pages(ranked, pages)[0]])
    return runs
