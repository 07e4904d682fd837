"""A read-only embedding cache (the grader's, seen from a submission's kernel run as another user): the encoder
still answers, keeps what it embedded in memory, and says how many vectors it could not store."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from ragcourse.engines.dense import MODEL_NAME, DenseEncoder, EmbeddingCache, text_key


def fake_vectors(missing: dict[str, str], progress) -> dict[str, np.ndarray]:
    """A unit vector per text, without the model: the text's length in the first place."""
    out = {}
    for key, text in missing.items():
        vector = np.zeros(384, dtype=np.float32)
        vector[0], vector[1] = len(text), 1.0
        out[key] = vector / np.linalg.norm(vector)
    return out


def read_only(cache: EmbeddingCache) -> EmbeddingCache:
    """The same file, opened read-only (root may write any file, so a chmod would prove nothing here)."""
    cache.connection.close()
    cache.connection = sqlite3.connect(f"file:{cache.path}?mode=ro", uri=True)
    return cache


def test_put_on_a_read_only_file_stores_nothing_and_says_so(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    assert cache.put(MODEL_NAME, "r", {"a": np.ones(3, dtype=np.float32)}) is True
    read_only(cache)
    assert cache.put(MODEL_NAME, "r", {"b": np.ones(3, dtype=np.float32)}) is False
    assert cache.count() == 1 and set(cache.get(MODEL_NAME, "r", ["a", "b"])) == {"a"}


def test_another_database_error_is_not_taken_for_a_read_only_file(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    cache.connection.execute("DROP TABLE vectors")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        cache.put(MODEL_NAME, "r", {"b": np.ones(3, dtype=np.float32)})


def test_the_encoder_answers_from_a_read_only_cache_and_counts_what_it_could_not_store(tmp_path, monkeypatch):
    writable = EmbeddingCache(tmp_path / "embeddings.sqlite")
    encoder = DenseEncoder(cache=writable)
    monkeypatch.setattr(encoder, "_embed", fake_vectors)
    known = encoder.encode(["stored before"])
    assert encoder.last.embedded == 1 and encoder.last.unstored == 0

    shared = DenseEncoder(cache=read_only(EmbeddingCache(tmp_path / "embeddings.sqlite")))
    monkeypatch.setattr(shared, "_embed", fake_vectors)
    with pytest.warns(UserWarning, match=r"read-only: 2 vector\(s\) embedded here were not stored"):
        vectors = shared.encode(["stored before", "new one", "another new one", "new one"])
    assert shared.last.embedded == 2 and shared.last.unstored == 2
    assert np.array_equal(vectors[0], known[0]) and np.array_equal(vectors[1], vectors[3])
    assert writable.count() == 1 and text_key("new one") not in shared.cache.get(MODEL_NAME, shared.revision,
                                                                                   [text_key("new one")])
    again = shared.encode(["new one"])        # kept in memory for the session: not embedded twice
    assert shared.last.embedded == 0 and np.array_equal(again[0], vectors[1])
