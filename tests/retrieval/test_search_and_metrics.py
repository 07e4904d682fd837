import pytest

from ragcourse.retrieval.metrics import mean_relevant, overlap_recall, recall_ceiling, retrieval_scores
from ragcourse.retrieval.ranking import rank_by_score, top_k
from ragcourse.retrieval.search import EmbeddingIndex, KeywordIndex
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel

SEED = 20260218


def test_rank_by_score_breaks_ties_by_index():
    assert rank_by_score([1, 3, 3, 0, 3]) == [1, 2, 4, 0, 3]
    assert top_k([0.5, 0.9, 0.9], 2) == [1, 2]


def test_keyword_index_counts_distinct_shared_tokens():
    index = KeywordIndex(["tier threshold note", "note note", "valve"])
    assert index.scores("note tier tier") == [2, 1, 0]
    assert index.rank("valve") == [2, 0, 1]


@pytest.fixture(scope="module")
def world():
    return build_world(SEED, FIRST_EDITION)


def test_lesson_one_numbers(world):
    documents, queries, relevant = world.documents, world.queries, world.relevant
    model = EmbeddingModel(FIRST_EDITION, SEED)
    texts = [d.text for d in documents]
    keyword, embedding = KeywordIndex(texts), EmbeddingIndex(model, texts)
    kw = retrieval_scores(lambda q: keyword.rank(q.text), queries, documents, relevant, 5)
    em = retrieval_scores(lambda q: embedding.rank(q.text), queries, documents, relevant, 5)
    assert [f"{x:.4f}" for x in kw.as_tuple()] == ["0.0800", "0.0363", "0.0250", "0.1000"]
    assert [f"{x:.4f}" for x in em.as_tuple()] == ["0.4700", "0.2258", "0.5000", "1.0000"]
    assert f"{recall_ceiling(queries, relevant, 5):.4f}" == "0.4904"
    assert f"{mean_relevant(queries, relevant):.3f}" == "10.825"


def test_recall_ceiling_is_one_when_k_covers_everything(world):
    assert recall_ceiling(world.queries, world.relevant, 200) == 1.0


def test_overlap_recall():
    assert overlap_recall([1, 2, 3], [3, 4]) == 0.5
