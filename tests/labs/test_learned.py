"""Lab 04's learned second stage: its features, its weights against scikit-learn, and cross-validation that
never lets a question's own judgement rank it."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ragcourse.corpus.queries import Question
from ragcourse.labs.learned import cross_validated_runs, fit, folds_of
from ragcourse.rag.passages import Passage, ScoredPassage
from ragcourse.rag.rerank import FEATURES, LEARNED_WEIGHTS, LearnedOrder, LearnedWeights, candidate_features


def passage(chunk_id: int, page: str) -> Passage:
    return Passage(chunk_id, f"{page}.md", 0, 0, 10, f"text of {page}")


def trace(question: str, full: list[tuple[int, str, float]], dense: list[tuple[int, str, float]],
          names: list[tuple[int, str, float]] = ()):
    """A stand-in for ``Trace`` with only what the learned stage reads: the question and the paths."""
    def scored(rows):
        return tuple(ScoredPassage(passage(c, p), s, rank) for rank, (c, p, s) in enumerate(rows, start=1))
    return SimpleNamespace(question=question, candidates=SimpleNamespace(full_text=scored(full), dense=scored(dense),
                                                                         names=scored(names)))


def test_every_candidate_of_either_path_once_with_zeros_where_a_path_missed_it():
    t = trace("how does numpy where pick", [(1, "numpy.where", 7.0), (2, "numpy.select", 3.0)],
              [(2, "numpy.select", 0.8), (3, "numpy.choose", 0.5)])
    passages, x = candidate_features(t.question, t.candidates.full_text, t.candidates.dense)
    assert [p.chunk_id for p in passages] == [1, 2, 3]
    assert x.shape == (3, len(FEATURES))
    assert x[0].tolist() == [7.0, 1.0, 0.5, 0.0, 1.0]       # dense missed it: the lowest cosine, no rank
    assert x[1].tolist() == [3.0, 0.5, 0.8, 1.0, 0.0]
    assert x[2].tolist() == [0.0, 0.0, 0.5, 0.5, 0.0]       # full text missed it: zeros


def test_the_name_channel_adds_its_pages_and_their_similarity_to_the_name_feature():
    t = trace("how to use np.linespace", [(1, "numpy.where", 7.0)], [(2, "numpy.select", 0.8)],
              names=[(5, "numpy.linspace", 0.6), (2, "numpy.select", 0.31)])
    passages, x = candidate_features(t.question, t.candidates.full_text, t.candidates.dense, t.candidates.names)
    assert [p.chunk_id for p in passages] == [1, 2, 5]              # a page only the channel found joins, last
    assert x[2].tolist() == [0.0, 0.0, 0.8, 0.0, 0.6]                # its similarity is its name feature
    assert x[1][4] == 0.31                                           # a page both found keeps its similarity
    without = candidate_features(t.question, t.candidates.full_text, t.candidates.dense)[1]
    assert without[:, 4].tolist() == [0.0, 0.0]                      # without the channel: the word match alone
    exact = trace("numpy select or where", [(1, "numpy.where", 7.0)], [], names=[(1, "numpy.where", 0.4)])
    assert candidate_features(exact.question, exact.candidates.full_text, (), exact.candidates.names)[1][0][4] == 1.0
    order = LearnedOrder().order(t.question, t.candidates.full_text, t.candidates.dense, keep=3, names=t.candidates.names)
    assert {sp.passage.chunk_id for sp in order.ranked} == {1, 2, 5}


def synthetic(n: int = 40, seed: int = 0):
    """Questions whose judged page has the higher cosine but often the lower BM25 score."""
    rng = np.random.default_rng(seed)
    traces, questions = [], []
    for i in range(n):
        right, wrong = f"numpy.right{i}", f"numpy.wrong{i}"
        traces.append(trace(f"question {i}", [(2 * i, wrong, 5 + rng.random()), (2 * i + 1, right, 4 + rng.random())],
                            [(2 * i + 1, right, 0.7 + 0.1 * rng.random()), (2 * i, wrong, 0.5 + 0.1 * rng.random())]))
        questions.append(Question(f"q{i}", f"question {i}", frozenset({right}), "synthetic"))
    return traces, questions


def test_fitted_weights_are_scikit_learns_and_put_the_judged_page_first():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    traces, questions = synthetic()
    weights = fit(traces, questions)
    x = np.vstack([candidate_features(t.question, t.candidates.full_text, t.candidates.dense)[1] for t in traces])
    y = np.array([p % 2 for p in range(x.shape[0])])                      # every second candidate is judged
    theirs = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000)).fit(x, y)
    assert np.allclose(weights.logits(x), theirs.decision_function(x), atol=1e-9)
    ranked = LearnedOrder(weights).order("question 0", traces[0].candidates.full_text, traces[0].candidates.dense)
    assert ranked.ranked[0].passage.doc_id == "numpy.right0"
    assert weights.coef[FEATURES.index("cosine")] > 0


def test_cross_validation_never_lets_a_questions_own_judgement_rank_it():
    traces, questions = synthetic()
    honest = cross_validated_runs(traces, questions)
    flipped = list(questions)
    flipped[0] = Question("q0", "question 0", frozenset({"numpy.wrong0"}), "synthetic")   # relabel one question
    assert cross_validated_runs(traces, flipped)["q0"] == honest["q0"]
    assert honest["q0"][0] == "numpy.right0"


def test_cross_validated_pages_are_the_whole_order_each_page_once_after_the_kept_chunks_pages():
    traces, questions = synthetic()
    extra = trace("question 0", [(900, "numpy.right0", 3.0), *[(c.passage.chunk_id, c.passage.doc_id, c.score)
                                                                for c in traces[0].candidates.full_text]],
                  [(c.passage.chunk_id, c.passage.doc_id, c.score) for c in traces[0].candidates.dense])
    traces[0] = extra                                   # a second chunk of the judged page
    kept = cross_validated_runs(traces, questions, keep=1)
    ranked = cross_validated_runs(traces, questions, keep=1, pages=10)
    assert all(len(kept[q.qid]) == 1 for q in questions)
    assert all(ranked[q.qid] == [kept[q.qid][0], *({f"numpy.right{i}", f"numpy.wrong{i}"} - set(kept[q.qid]))]
               for i, q in enumerate(questions)), "both pages, each once, the kept chunk's page first"
    assert cross_validated_runs(traces, questions, pages=1) == kept


def test_folds_are_fixed_balanced_and_checked():
    questions = synthetic(23)[1]
    fold = folds_of(questions, 5)
    assert fold == folds_of(list(questions), 5)
    assert sorted(fold.count(k) for k in range(5)) == [4, 4, 5, 5, 5]
    for bad in (1, 24, 2.5):
        with pytest.raises(ValueError, match="folds must be a whole number from 2"):
            folds_of(questions, bad)


def test_weights_are_checked_and_compared_within_a_tolerance():
    with pytest.raises(ValueError, match="coef must hold 5 numbers"):
        LearnedWeights((0,) * 5, (1,) * 5, (0,) * 4, 0.0)
    with pytest.raises(ValueError, match="scale must be positive"):
        LearnedWeights((0,) * 5, (1, 1, 0, 1, 1), (0,) * 5, 0.0)
    moved = LearnedWeights(LEARNED_WEIGHTS.mean, LEARNED_WEIGHTS.scale, LEARNED_WEIGHTS.coef,
                           LEARNED_WEIGHTS.intercept + 5e-4)
    assert LEARNED_WEIGHTS.agrees_with(moved) and not LEARNED_WEIGHTS.agrees_with(moved, tolerance=1e-4)


def test_the_cross_encoder_in_the_learned_order_reads_the_name_channel_as_a_pipeline_hands_it():
    """``reorder`` (what ``Pipeline`` calls) hands ``order`` the channel's rows: the combined order takes them too."""
    from ragcourse.rag.cross_encoder.combined import CombinedWeights, CrossEncoderInLearnedOrder

    class Scorer:   # scores a text by its length: enough to order by
        def score_many(self, items):
            return [[float(len(t)) for t in texts] for _, texts in items]

    combined = CombinedWeights.of([0.0] * 6, [1.0] * 6, [0.0] * 5 + [1.0], 0.0)
    t = trace("how to use np.linespace", [(1, "numpy.where", 7.0)], [(2, "numpy.select", 0.8)],
              names=[(5, "numpy.linspace", 0.6)])
    order = CrossEncoderInLearnedOrder(LEARNED_WEIGHTS, combined, Scorer(), depth=3)
    ranked = order.reorder(t.question, t.candidates, keep=3).ranked
    assert {sp.passage.chunk_id for sp in ranked} == {1, 2, 5}
