"""The cross-encoder's score as one more feature of the learned combination (``rag.rerank.LearnedOrder``).

The learned combination weighs five numbers the first stage already has for every candidate chunk of either
path (``rag.rerank.FEATURES``). Reading every one of those candidates (about a hundred a question at the kept
setting) with the cross-encoder would cost seconds a question, so this order works in two steps: the five
features pick and order the candidates as ``LearnedOrder`` does, then the first ``depth`` of them are scored
by the cross-encoder and ordered again by a second logistic regression over the five features and that
score (``COMBINED_FEATURES``); the candidates past ``depth`` follow, in the first step's order.

``CrossEncoderInLearnedOrder`` is a ``LearnedOrder`` (``Pipeline`` hands it both paths' lists, as it does
``LearnedOrder``) built by composition: the first step's ``LearnedWeights``, the second step's
``CombinedWeights`` and the scorer (``reranker.TrainedCrossEncoder``) are given to it; ``labs.second_stage``
fits both sets of weights, by cross-validation on ``dev``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...toolkit.params import check_int
from ..passages import ScoredPassage
from ..rerank import FEATURES, INPUT_CHARS, KEEP, LearnedOrder, LearnedWeights, RerankResult, candidate_features
from .reranker import DEPTH

COMBINED_FEATURES = (*FEATURES, "cross-encoder score")


@dataclass(frozen=True)
class CombinedWeights:
    """A standardised logistic regression over ``COMBINED_FEATURES``, held as the five features' part (a
    ``LearnedWeights``, with the intercept) and the cross-encoder score's part: the logit is
    ``five.logits(x[:, :5]) + coef * (x[:, 5] - mean) / scale``."""

    five: LearnedWeights
    mean: float
    scale: float
    coef: float

    def __post_init__(self):
        if not self.scale > 0:
            raise ValueError(f"scale must be positive; got {self.scale}")

    @classmethod
    def of(cls, mean: Sequence[float], scale: Sequence[float], coef: Sequence[float], intercept: float) -> "CombinedWeights":
        """From one fit over all six features (``labs.learned.fit_standardised``'s order)."""
        if not len(mean) == len(scale) == len(coef) == len(COMBINED_FEATURES):
            raise ValueError(f"mean, scale and coef must hold {len(COMBINED_FEATURES)} numbers each, one per feature "
                             f"({', '.join(COMBINED_FEATURES)})")
        return cls(LearnedWeights(tuple(mean[:-1]), tuple(scale[:-1]), tuple(coef[:-1]), intercept),
                   mean[-1], scale[-1], coef[-1])

    def logits(self, features: np.ndarray) -> np.ndarray:
        return self.five.logits(features[:, :-1]) + self.coef * (features[:, -1] - self.mean) / self.scale


def first_step(first: LearnedWeights, question: str, full_text: Sequence[ScoredPassage],
               dense: Sequence[ScoredPassage], depth: int, names: Sequence[ScoredPassage] = ()):
    """Every candidate (``candidate_features``), its features, its first-step logit, and the positions of the
    ``depth`` best by that logit (ties in candidate order)."""
    passages, features = candidate_features(question, full_text, dense, names)
    logits = first.logits(features).tolist() if passages else []
    order = sorted(range(len(passages)), key=lambda i: -logits[i])
    return passages, features, logits, order[:depth], order[depth:]


class CrossEncoderInLearnedOrder(LearnedOrder):
    """The learned combination with the cross-encoder's score as a sixth feature, over the first step's ``depth``."""

    def __init__(self, first: LearnedWeights, combined: CombinedWeights, scorer, depth: int = DEPTH):
        super().__init__(first)
        self.combined, self.scorer = combined, scorer
        self.depth = check_int("depth", depth, 1, 10_000)
        self.name = f"learned combination with the cross-encoder's score (first {self.depth} candidates)"
        self.last_unscored = 0

    def order(self, question: str, full_text: Sequence[ScoredPassage], dense: Sequence[ScoredPassage],
              keep: int = KEEP, names: Sequence[ScoredPassage] = ()) -> RerankResult:
        """The ``keep`` best candidates: the first step's ``depth`` reordered by the combined logit, then the rest
        (``names``: the name channel's rows, when it ran, as for ``LearnedOrder``)."""
        check_int("keep", keep, 1, 10_000)
        passages, features, logits, top, rest = first_step(self.weights, question, full_text, dense, self.depth, names)
        self.last_unscored = len(rest)
        if not top:
            return RerankResult((), 0, 0, self.name)
        scores = self.scorer.score_many([(question, [passages[i].text[:INPUT_CHARS] for i in top])])[0]
        combined = self.combined.logits(np.column_stack([features[top], np.asarray(scores)])).tolist()
        second = sorted(range(len(top)), key=lambda j: -combined[j])
        ranked = [(top[j], combined[j]) for j in second]
        floor = min(combined) - 1.0
        ranked += [(i, floor - n * 1e-6) for n, i in enumerate(rest, start=1)]
        kept = tuple(ScoredPassage(passages[i], float(s), rank) for rank, (i, s) in enumerate(ranked[:keep], start=1))
        return RerankResult(kept, sum(len(passages[i].text) > INPUT_CHARS for i in top), len(top), self.name)
