"""The encoder's onnxruntime route against PyTorch's: the same vectors to a cosine of 0.9999, keyed apart."""
from __future__ import annotations

import numpy as np
import pytest

from ragcourse.engines.dense import DenseEncoder, EmbeddingCache, encode_route

TEXTS = ["fft", "Compute the one-dimensional discrete Fourier Transform.",
         "Return a new array of given shape and type, filled with zeros. " * 3,
         "Solve a linear matrix equation, or system of linear scalar equations. " * 40]   # past the window


def encoder(monkeypatch, tmp_path, route: str) -> DenseEncoder:
    monkeypatch.setenv("RAGCOURSE_ENCODER_ROUTE", route)
    return DenseEncoder(EmbeddingCache(tmp_path / f"{route}.sqlite"))


@pytest.mark.embeddings
def test_the_onnx_route_agrees_with_torch_and_is_cached_apart(monkeypatch, tmp_path):
    onnx, torch = encoder(monkeypatch, tmp_path, "onnx"), encoder(monkeypatch, tmp_path, "torch")
    assert onnx.route == "onnx" and torch.route == "torch"
    assert onnx.revision == torch.revision + ";onnxruntime==" + onnx.revision.rsplit("==", 1)[1]
    assert len(set(onnx.encoded_lengths(TEXTS))) == len(TEXTS)   # four lengths, one of them cut to the window
    fast, reference = onnx.encode(TEXTS), torch.encode(TEXTS)
    cosines = np.sum(fast.astype(np.float64) * reference, axis=1) / (
        np.linalg.norm(fast.astype(np.float64), axis=1) * np.linalg.norm(reference.astype(np.float64), axis=1))
    print(f"onnx against torch: min cosine {cosines.min():.8f}, max |diff| {np.abs(fast - reference).max():.2e}")
    assert cosines.min() >= 0.9999 and np.abs(fast - reference).max() < 1e-4
    assert not np.array_equal(fast[:, 0], np.zeros(len(TEXTS)))
    assert np.array_equal(onnx.encode(TEXTS[::-1])[::-1], fast)   # from the cache, in any order


def test_the_route_defaults_to_torch_the_route_of_the_stored_outputs(monkeypatch):
    monkeypatch.delenv("RAGCOURSE_ENCODER_ROUTE", raising=False)
    for device in ("cpu", "cuda"):
        monkeypatch.setenv("RAGCOURSE_DEVICE", device)
        assert encode_route() == "torch"
    monkeypatch.setenv("RAGCOURSE_DEVICE", "cpu")
    monkeypatch.setenv("RAGCOURSE_ENCODER_ROUTE", "onnx")
    assert encode_route() == "onnx"


@pytest.mark.parametrize("route, device", [("tensorrt", "cpu"), ("onnx", "cuda:0")])
def test_a_bad_route_names_itself_and_what_is_allowed(monkeypatch, route, device):
    monkeypatch.setenv("RAGCOURSE_ENCODER_ROUTE", route)
    monkeypatch.setenv("RAGCOURSE_DEVICE", device)
    with pytest.raises(ValueError, match="RAGCOURSE_ENCODER_ROUTE"):
        encode_route()
