"""The dense encoder: real MiniLM vectors, cached on disk so that a second run embeds nothing."""
from __future__ import annotations

import numpy as np
import pytest

from ragcourse.engines.dense import DIMENSION, DenseEncoder, EmbeddingCache, dense_ranking
from ragcourse.retrieval.ranking import rank_by_score

TEXTS = ["Join a sequence of arrays along an existing axis.", "Compute the inverse of a matrix.",
         "Join a sequence of arrays along an existing axis.", "Draw samples from a normal distribution."]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return DenseEncoder(EmbeddingCache(tmp_path_factory.mktemp("cache") / "embeddings.sqlite"))


@pytest.mark.embeddings
def test_unit_vectors_and_meaning(encoder):
    vectors = encoder.encode(TEXTS)
    assert vectors.shape == (4, DIMENSION)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[2])
    query = encoder.encode(["how do I glue two arrays end to end"])[0]
    assert int(np.argmax(vectors @ query)) == 0


@pytest.mark.embeddings
def test_a_second_run_embeds_nothing_and_a_new_text_only_itself(encoder):
    first = encoder.encode(TEXTS)
    assert encoder.last.embedded == 0 and encoder.last.distinct == 3
    fresh = DenseEncoder(EmbeddingCache(encoder.cache.path))   # another process would open the same file
    again = fresh.encode(TEXTS + ["a text never seen before"])
    assert fresh.last.embedded == 1
    assert np.array_equal(again[:4], first)
    assert fresh._model is not None   # it had to load the model for the new text only


def test_cache_keys_include_model_and_revision(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache.put("m", "r1", {"k": np.ones(3)})
    assert cache.get("m", "r2", ["k"]) == {} and list(cache.get("m", "r1", ["k"])) == ["k"]


@pytest.mark.embeddings
def test_token_counts_see_the_window(encoder):
    short, long = encoder.token_counts(["one two", "word " * 400])
    assert short == 4 and long > encoder.max_tokens == 256


def test_dense_ranking_orders_like_rank_by_score():
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.6, 0.8]])
    order, scores = dense_ranking(vectors, np.array([1.0, 0.0]))
    assert order.tolist() == rank_by_score((vectors @ np.array([1.0, 0.0])).tolist()) == [0, 2, 3, 1]


def test_token_counts_are_the_tokenizers_and_each_text_is_tokenised_once(tmp_path):
    encoder = DenseEncoder(EmbeddingCache(tmp_path / "c.sqlite"))   # the tokenizer alone: no model is loaded
    texts = ["one two", "Join a sequence of arrays.", "one two", "np.concatenate((a, b), axis=0)"]
    direct = [len(ids) for ids in encoder.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]
    asked: list[list[str]] = []
    real = encoder._tokenizer

    def counting(batch, **options):
        asked.append(list(batch))
        return real(batch, **options)

    encoder._tokenizer = counting
    assert encoder.token_counts(texts) == direct
    assert encoder.token_counts(["Join a sequence of arrays.", "a new text"])[0] == direct[1]
    assert asked == [["one two", "Join a sequence of arrays.", "np.concatenate((a, b), axis=0)"], ["a new text"]]
