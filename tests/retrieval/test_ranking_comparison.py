"""Measures that compare rankers: distinct top sets, top-set divergence, mean value over the top k.

Exact values are those the course prints at its seed (lessons 02 and 03).
"""
import pytest

from ragcourse.retrieval.metrics import distinct_top_sets, mean_top_value, top_set_divergence
from ragcourse.retrieval.ranking import rank_by_score
from ragcourse.retrieval.search import EmbeddingIndex, KeywordIndex
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel, cosine, dot, length, unit
from ragcourse.world.text import tokenize

COURSE_SEED = 20260218
K = 5


@pytest.fixture(scope="module")
def world():
    return build_world(COURSE_SEED, FIRST_EDITION)


@pytest.fixture(scope="module")
def texts(world):
    return [d.text for d in world.documents]


def index_ranker(index):
    return lambda query: index.rank(query.text)


def raw_rankers(model, texts):
    """Cosine and dot-product rankers over the raw vectors of ``model`` (as lesson 03 builds them)."""
    raw_vectors = [model.raw(t) for t in texts]
    unit_vectors = [unit(v) for v in raw_vectors]

    def by_cosine(query):
        query_vector = unit(model.raw(query.text))
        return rank_by_score([cosine(query_vector, v) for v in unit_vectors])

    def by_dot(query):
        query_vector = model.raw(query.text)
        return rank_by_score([dot(query_vector, v) for v in raw_vectors])

    return by_cosine, by_dot


# ---- distinct_top_sets (lesson 02, "sets" column)

def test_distinct_top_sets_course_values(world, texts):
    model = EmbeddingModel(FIRST_EDITION, COURSE_SEED)
    counts = [distinct_top_sets(index_ranker(index), world.queries, K) for index in (
        KeywordIndex(texts),
        EmbeddingIndex(model, texts),
        EmbeddingIndex(model.with_settings(projection_seed=COURSE_SEED + 1), texts),
        EmbeddingIndex(model.with_settings(in_domain=False), texts),
    )]
    assert counts == [7, 17, 17, 1]


def test_distinct_top_sets_ignores_order_within_the_top():
    queries = ["a", "b", "c"]
    rankings = {"a": [0, 1, 2, 3], "b": [1, 0, 2, 3], "c": [0, 2, 1, 3]}
    assert distinct_top_sets(rankings.__getitem__, queries, 2) == 2
    assert distinct_top_sets(rankings.__getitem__, queries, 3) == 1
    assert distinct_top_sets(rankings.__getitem__, queries, 1) == 2


def test_distinct_top_sets_rejects_k_below_one():
    with pytest.raises(ValueError, match="k must be at least 1"):
        distinct_top_sets(lambda q: [0], ["q"], 0)


# ---- top_set_divergence (lesson 03, "first three results diverge")

def test_top_set_divergence_course_values(world, texts):
    model = EmbeddingModel(FIRST_EDITION, COURSE_SEED)
    diverged = [top_set_divergence(*raw_rankers(m, texts), world.queries, 3)
                for m in (model, model.with_settings(projection_seed=COURSE_SEED + 1))]
    assert diverged == [30, 25]


def test_unit_stored_vectors_make_the_query_length_irrelevant(world, texts):
    model = EmbeddingModel(FIRST_EDITION, COURSE_SEED)
    by_cosine, _ = raw_rankers(model, texts)
    stored = model.embed_all(texts)

    def raw_query_on_unit_documents(query):
        query_vector = model.raw(query.text)
        return rank_by_score([dot(query_vector, v) for v in stored])

    assert top_set_divergence(by_cosine, raw_query_on_unit_documents, world.queries, 3) == 0


def test_top_set_divergence_counts_sets_not_order():
    a = {"x": [0, 1, 2, 9], "y": [0, 1, 2, 9]}
    b = {"x": [2, 1, 0, 8], "y": [0, 1, 3, 9]}
    assert top_set_divergence(a.__getitem__, b.__getitem__, ["x", "y"], 3) == 1
    assert top_set_divergence(a.__getitem__, a.__getitem__, ["x", "y"], 3) == 0
    assert top_set_divergence(a.__getitem__, b.__getitem__, ["x", "y"], 4) == 2


def test_top_set_divergence_rejects_depth_below_one():
    with pytest.raises(ValueError, match="depth must be at least 1"):
        top_set_divergence(lambda q: [0], lambda q: [0], ["q"], 0)


# ---- mean_top_value (lesson 03, mean tokens and longest-quarter share)

def test_mean_top_value_course_values(world, texts):
    token_counts = [len(tokenize(t)) for t in texts]
    model = EmbeddingModel(FIRST_EDITION, COURSE_SEED)
    by_cosine, by_dot = raw_rankers(model, texts)
    assert f"{mean_top_value(by_cosine, world.queries, token_counts, K):.1f}" == "57.7"
    assert f"{mean_top_value(by_dot, world.queries, token_counts, K):.1f}" == "66.2"
    longest = set(rank_by_score(token_counts)[:len(texts) // 4])
    in_longest = [1 if i in longest else 0 for i in range(len(texts))]
    assert mean_top_value(by_cosine, world.queries, in_longest, K) == pytest.approx(0.15, abs=1e-12)
    assert f"{mean_top_value(by_dot, world.queries, in_longest, K):.4f}" == "0.2950"


def test_mean_top_value_divides_by_k_and_queries():
    rankings = {"x": [0, 1, 2], "y": [2, 1, 0]}
    values = [10, 20, 60]
    # x: (10 + 20) / 2 = 15 ; y: (60 + 20) / 2 = 40 ; mean 27.5
    assert mean_top_value(rankings.__getitem__, ["x", "y"], values, 2) == 27.5


def test_mean_top_value_rejects_bad_input():
    with pytest.raises(ValueError, match="k must be at least 1"):
        mean_top_value(lambda q: [0], ["q"], [1.0], 0)
    with pytest.raises(ValueError, match="queries must not be empty"):
        mean_top_value(lambda q: [0], [], [1.0], 1)


# ---- the relation lesson 03 checks: dot product = cosine * both lengths

def test_dot_product_is_cosine_times_lengths(world):
    model = EmbeddingModel(FIRST_EDITION, COURSE_SEED)
    query, document = world.queries[0], world.documents[0]
    raw_q, raw_d = model.raw(query.text), model.raw(document.text)
    similarity = cosine(model.embed(query.text), model.embed(document.text))
    assert f"{dot(raw_q, raw_d):.6f}" == "-0.218248"
    assert f"{similarity:.6f}" == "-0.011168"
    assert f"{similarity * length(raw_q) * length(raw_d):.6f}" == "-0.218248"
