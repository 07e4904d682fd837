"""Lab 04's second stage: re-score the fused candidates with a closer look, keep the best few.

Retrieval has to be cheap over the whole corpus, so it compares one vector (or one bag of
words) per chunk with the question. A second stage sees only the few dozen candidates
that came back and can afford more work per candidate. Every second stage is an
``engines.stages.SecondStage``: ``reorder(question, candidates, keep)`` takes the first
stage's ``Candidates`` and returns the ``keep`` best as a ``RerankResult``.

Any object with a ``name`` and a ``score(question, texts)`` method is a ``Reranker``; one
that also inherits ``ScoresFusedText`` is a second stage that scores the fused candidates'
text through ``rerank``, which cuts every candidate to its first ``INPUT_CHARS`` characters
(as the RAG baseline design does, and says how many it cut), asks for all scores in one
call, and keeps the ``KEEP`` best, ties in incoming order.

Two rerankers are provided:

- ``SentenceMaxSimReranker`` (the default, runs on the installed MiniLM): a candidate
  scores the best cosine between the question and any one of its sentences;
- ``CrossEncoderReranker``: a sentence-transformers cross-encoder read from a folder,
  for when such weights are available (none are installed here).

``LearnedOrder`` is a second stage of another kind: it reads no text, only the evidence the
two paths already computed (their scores and ranks, and whether the page's name is a word of
the question), weighed by a logistic regression that lab 04 fits on its ``dev`` questions.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..toolkit.params import check_int
from .passages import Passage, ScoredPassage
from .reader import SentenceSplitter

KEEP = 8
INPUT_CHARS = 2000
NO_SENTENCE_SCORE = -1.0


@runtime_checkable
class Reranker(Protocol):
    """A second stage: a ``name`` and one score per text for a question (higher is better)."""

    name: str

    def score(self, question: str, texts: list[str]) -> list[float]:
        """One score per text, in order."""
        ...


@dataclass(frozen=True)
class RerankResult:
    """The kept candidates (ranks 1..n, best first), how many were cut and scored, and by whom."""

    ranked: tuple[ScoredPassage, ...]
    truncated: int
    scored: int
    name: str


def rerank(reranker: Reranker, question: str, candidates: Sequence[Passage], keep: int = KEEP,
           input_chars: int = INPUT_CHARS) -> RerankResult:
    """The ``keep`` best candidates by ``reranker``, each scored on its first ``input_chars`` characters."""
    check_int("keep", keep, 1, 10_000)
    check_int("input_chars", input_chars, 1, 10 ** 7)
    texts = [c.text[:input_chars] for c in candidates]
    truncated = sum(len(c.text) > input_chars for c in candidates)
    scores = [float(s) for s in reranker.score(question, texts)] if texts else []
    if len(scores) != len(texts):
        raise RuntimeError(f"reranker {reranker.name!r} returned {len(scores)} scores for {len(texts)} texts")
    if not all(math.isfinite(s) for s in scores):
        raise RuntimeError(f"reranker {reranker.name!r} returned a score that is not a finite number")
    order = sorted(range(len(texts)), key=lambda i: -scores[i])[:keep]
    ranked = tuple(ScoredPassage(candidates[i], scores[i], rank) for rank, i in enumerate(order, start=1))
    return RerankResult(ranked, truncated, len(texts), reranker.name)


class ScoresFusedText:
    """A second stage (``stages.SecondStage``) for a ``Reranker``: it scores the fused candidates' text."""

    def reorder(self, question: str, candidates, keep: int = KEEP) -> RerankResult:
        """``rerank`` of ``candidates.fused`` (a ``rag.search.Candidates``), the ``keep`` best kept."""
        return rerank(self, question, [sp.passage for sp in candidates.fused], keep=keep)


class SentenceMaxSimReranker(ScoresFusedText):
    """A candidate's score is the highest cosine between the question and one of its sentences.

    This is a genuine second stage, not the first stage's vector again: MiniLM reads at
    most 256 tokens (about 1,000 characters), so a chunk's own embedding never saw the rest
    of a 2,000-character passage. Here every sentence of the first 2,000 characters gets
    its own vector, so a sentence near the end counts as much as one at the start, and one
    sentence that answers the question is not diluted by the others around it.

    It is still a bi-encoder, NOT a cross-encoder: question and sentences are embedded
    separately and only compared afterwards; no layer attends jointly to the question and
    the passage. All sentences and the question go to the encoder in one ``encode`` call,
    and its cache makes sentences seen before free.
    """

    name = "MiniLM sentence max-sim (bi-encoder re-scorer)"

    def __init__(self, encoder):
        self.encoder = encoder
        self.splitter = SentenceSplitter()

    def score(self, question: str, texts: list[str]) -> list[float]:
        """Per text, the best question-sentence cosine (-1.0 for a text with no sentence)."""
        split = [self.splitter(text) for text in texts]
        sentences = [sentence for found in split for sentence in found]
        vectors = np.asarray(self.encoder.encode([question, *sentences]), dtype=np.float32)
        cosines = vectors[1:] @ vectors[0]
        scores, start = [], 0
        for found in split:
            part = cosines[start:start + len(found)]
            scores.append(float(part.max()) if len(found) else NO_SENTENCE_SCORE)
            start += len(found)
        return scores


class FusedOrder(ScoresFusedText):
    """No second stage: every candidate scores 0, so ``rerank`` keeps the first ``keep`` in fused order.

    The RAG baseline design keeps this condition so that an experiment can remove the reranker.
    """

    name = "none (fused order)"

    def score(self, question: str, texts: list[str]) -> list[float]:
        return [0.0] * len(texts)


class CrossEncoderReranker(ScoresFusedText):
    """A sentence-transformers ``CrossEncoder`` from a local folder: question and passage read together."""

    def __init__(self, model_path: str):
        if not isinstance(model_path, (str, Path)) or not str(model_path).strip() or not Path(model_path).exists():
            raise ValueError(f"reranker model path {str(model_path)!r} does not exist: give a folder holding"
                             f" a sentence-transformers CrossEncoder")
        self.model_path = str(model_path)
        self.name = f"cross-encoder {self.model_path}"
        self.model = _load_cross_encoder(self.model_path)

    def score(self, question: str, texts: list[str]) -> list[float]:
        """The cross-encoder's relevance score of every (question, text) pair, each computed in a pass of
        pairs of its own exact length and a fixed size (``engines.batching``), so a score does not depend
        on the other candidates."""
        from ..engines.batching import preprocessed_lengths, run_fixed_shape
        from ..engines.dense import encode_batch_size

        pairs = [(question, t) for t in texts]
        if not pairs:
            return []
        size = encode_batch_size()

        def compute(batch: list) -> list[float]:
            predicted = self.model.predict(batch, batch_size=size, show_progress_bar=False)
            return [float(s) for s in np.asarray(predicted).reshape(len(batch), -1)[:, 0]]

        return run_fixed_shape(pairs, preprocessed_lengths(self.model, pairs), size, compute)


def _load_cross_encoder(model_path: str):
    import os

    from ..engines.dense import INSTALL_HINT, ModelUnavailable

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as missing:
        raise ModelUnavailable(INSTALL_HINT) from missing
    return CrossEncoder(model_path, device="cpu")


def make_reranker(encoder, model_path: str | None = None) -> Reranker:
    """The cross-encoder at ``model_path`` when one is given, otherwise the sentence max-sim default."""
    if model_path is not None:
        return CrossEncoderReranker(model_path)
    return SentenceMaxSimReranker(encoder)


# -- a learned combination of the first stage's evidence ---------------------------------------

FEATURES = ("full-text score", "full-text 1/rank", "cosine", "dense 1/rank", "page name in question")


def _name_in_question(doc_id: str, question: str) -> float:
    """1 when the page's last name part (``where`` of ``numpy.where``) is a word of the question."""
    last = doc_id.rsplit(".", 1)[-1].lower()
    return float(last in set(re.findall(r"[a-z0-9_]+", question.lower())))


def candidate_features(question: str, full_text: Sequence[ScoredPassage], dense: Sequence[ScoredPassage],
                       names: Sequence[ScoredPassage] = ()) -> tuple[list[Passage], np.ndarray]:
    """Every candidate chunk of any path, once, and its ``FEATURES`` (0 where a path did not return it;
    the lowest cosine returned where the dense path did not).

    The last feature is 1 when the page's last name part is a word of the question, else the best
    similarity the name channel (``names``: its rows, one chunk a page, scored by trigram similarity)
    gave the page, else 0; without the channel it is the word match alone."""
    by_text = {sp.passage.chunk_id: sp for sp in full_text}
    by_dense = {sp.passage.chunk_id: sp for sp in dense}
    by_name = {sp.passage.chunk_id: sp for sp in names}
    similar: dict[str, float] = {}
    for sp in names:
        similar[sp.passage.doc_id] = max(similar.get(sp.passage.doc_id, 0.0), float(sp.score))
    lowest = min((sp.score for sp in dense), default=0.0)
    passages, rows = [], []
    for chunk_id in dict.fromkeys([*by_text, *by_dense, *by_name]):
        f, d = by_text.get(chunk_id), by_dense.get(chunk_id)
        passage = (f or d or by_name[chunk_id]).passage
        passages.append(passage)
        rows.append([f.score if f else 0.0, 1 / f.rank if f else 0.0, d.score if d else lowest,
                     1 / d.rank if d else 0.0,
                     max(_name_in_question(passage.doc_id, question), similar.get(passage.doc_id, 0.0))])
    return passages, np.asarray(rows, dtype=float).reshape(-1, len(FEATURES))


@dataclass(frozen=True)
class LearnedWeights:
    """A standardised logistic regression over ``FEATURES``: ``intercept + sum(coef * (x - mean) / scale)``."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def __post_init__(self):
        for name in ("mean", "scale", "coef"):
            if len(getattr(self, name)) != len(FEATURES):
                raise ValueError(f"{name} must hold {len(FEATURES)} numbers, one per feature ({', '.join(FEATURES)})")
        if not all(s > 0 for s in self.scale):
            raise ValueError(f"scale must be positive; got {self.scale}")

    def agrees_with(self, other: "LearnedWeights", tolerance: float = 1e-3) -> bool:
        """Every number within ``tolerance`` of ``other``'s (a refit on another machine moves the last digits)."""
        mine = (*self.mean, *self.scale, *self.coef, self.intercept)
        theirs = (*other.mean, *other.scale, *other.coef, other.intercept)
        return all(abs(a - b) <= tolerance for a, b in zip(mine, theirs))

    def logits(self, features: np.ndarray) -> np.ndarray:
        return self.intercept + ((features - np.asarray(self.mean)) / np.asarray(self.scale)) @ np.asarray(self.coef)


# Fitted by lab 04 (section 4) on every real dev question (319), at the kept first stage (30 candidates
# a path, fusion constant 10, the dense path weighted 3), to six decimals; the lab refits them and prints
# whether they agree.
LEARNED_WEIGHTS = LearnedWeights(mean=(2.207960, 0.077883, 0.549664, 0.077883, 0.056041),
                                 scale=(2.134317, 0.159259, 0.093208, 0.159259, 0.230001),
                                 coef=(0.218366, 0.060313, 0.289911, 0.389137, 0.704649), intercept=-2.989122)


class LearnedOrder:
    """Orders every candidate of every path by a learned combination of their evidence (``LearnedWeights``).

    Unlike the rerankers above it reads the candidates' path scores and ranks, not their text:
    ``reorder`` hands ``order`` the paths' lists (the name channel's too, when it ran).
    """

    name = "learned combination of the first stage's evidence"

    def __init__(self, weights: LearnedWeights = LEARNED_WEIGHTS):
        self.weights = weights

    def order(self, question: str, full_text: Sequence[ScoredPassage], dense: Sequence[ScoredPassage],
              keep: int = KEEP, names: Sequence[ScoredPassage] = ()) -> RerankResult:
        """The ``keep`` best candidates by the weights' logit (ties in candidate order); ``names``: the name
        channel's rows, when it ran (``candidate_features``)."""
        check_int("keep", keep, 1, 10_000)
        passages, features = candidate_features(question, full_text, dense, names)
        logits = self.weights.logits(features).tolist() if passages else []
        order = sorted(range(len(passages)), key=lambda i: -logits[i])[:keep]
        ranked = tuple(ScoredPassage(passages[i], float(logits[i]), rank) for rank, i in enumerate(order, start=1))
        return RerankResult(ranked, 0, len(passages), self.name)

    def reorder(self, question: str, candidates, keep: int = KEEP) -> RerankResult:
        """``order`` over every path's list of ``candidates`` (a ``rag.search.Candidates``)."""
        return self.order(question, candidates.full_text, candidates.dense, keep=keep, names=candidates.names)
