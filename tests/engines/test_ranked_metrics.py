"""Recall@k, MRR and nDCG@10 of ranked id lists equal trec_eval's (through pytrec_eval), to 1e-12."""
from __future__ import annotations

import pytest
import pytrec_eval

from ragcourse.corpus.apidocs import load_corpus
from ragcourse.engines.chunking.text_chunks import chunk_corpus, pack_paragraphs
from ragcourse.corpus.queries import judged_questions, judgements, self_retrieval
from ragcourse.engines.retrievers import Bm25Retriever, LexicalRetriever, run_questions
from ragcourse.retrieval.metrics import mean_measure, ndcg_at_k, recall_at_k, reciprocal_rank

MEASURES = {"recall_1", "recall_5", "recall_10", "recip_rank", "ndcg_cut_10"}


def trec_run(runs):
    """Scores strictly falling with rank, so trec_eval's own tie-break (by docno) never applies."""
    return {q: {doc: float(len(ranked) - rank) for rank, doc in enumerate(ranked)} for q, ranked in runs.items()}


def ours(runs, judged):
    return {"recall_1": mean_measure(runs, judged, recall_at_k, 1),
            "recall_5": mean_measure(runs, judged, recall_at_k, 5),
            "recall_10": mean_measure(runs, judged, recall_at_k, 10),
            "recip_rank": mean_measure(runs, judged, reciprocal_rank),
            "ndcg_cut_10": mean_measure(runs, judged, ndcg_at_k, 10)}


def theirs(runs, judged):
    qrels = {q: {doc: 1 for doc in relevant} for q, relevant in judged.items()}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(trec_run(runs))
    # trec_eval averages over the queries it has judgements for; a query with no result scores 0
    return {m: sum(per_query.get(q, {}).get(m, 0.0) for q in judged) / len(judged) for m in MEASURES}


@pytest.fixture(scope="module")
def setups():
    corpus = load_corpus()
    chunks = chunk_corpus(corpus.documents, pack_paragraphs)
    questions = {"judged": judged_questions(corpus), "self": self_retrieval(corpus)}
    return {(name, retriever.name): (run_questions(retriever, qs), judgements(qs))
            for retriever in (LexicalRetriever(chunks), Bm25Retriever(chunks)) for name, qs in questions.items()}


@pytest.mark.parametrize("setup", [("judged", "lexical"), ("judged", "bm25"), ("self", "lexical"), ("self", "bm25")])
def test_equal_to_trec_eval(setups, setup):
    runs, judged = setups[setup]
    mine, reference = ours(runs, judged), theirs(runs, judged)
    for measure in MEASURES:
        assert abs(mine[measure] - reference[measure]) <= 1e-12, measure


def test_by_hand():
    assert recall_at_k(["a", "b", "c"], {"b", "z"}, 2) == 0.5
    assert reciprocal_rank(["a", "b", "c"], {"c"}) == pytest.approx(1 / 3)
    assert reciprocal_rank([], {"c"}) == 0.0
    assert ndcg_at_k(["x", "a"], {"a"}, 10) == pytest.approx(1 / 1.5849625007211563)
    with pytest.raises(ValueError, match="k must be at least 1"):
        recall_at_k(["a"], {"a"}, 0)


def test_an_off_by_one_rank_would_be_caught(setups):
    runs, judged = setups[("judged", "bm25")]
    shifted = {q: ["padding"] + ranked for q, ranked in runs.items()}
    assert abs(ours(shifted, judged)["recip_rank"] - theirs(runs, judged)["recip_rank"]) > 1e-3
