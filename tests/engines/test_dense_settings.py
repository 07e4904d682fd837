"""The encoder's settings for bigger machines: batch size and device, checked with a clear error."""
from __future__ import annotations

import pytest

from ragcourse.engines.dense import BATCH_SIZE, encode_batch_size, encode_device


def test_batch_size_and_device_default_to_the_course_settings(monkeypatch):
    monkeypatch.delenv("RAGCOURSE_BATCH_SIZE", raising=False)
    monkeypatch.delenv("RAGCOURSE_DEVICE", raising=False)
    assert (encode_batch_size(), encode_device()) == (BATCH_SIZE, "cpu")
    monkeypatch.setenv("RAGCOURSE_BATCH_SIZE", "256")
    monkeypatch.setenv("RAGCOURSE_DEVICE", "cuda:1")
    assert (encode_batch_size(), encode_device()) == (256, "cuda:1")


@pytest.mark.parametrize("name, value", [("RAGCOURSE_BATCH_SIZE", "0"), ("RAGCOURSE_BATCH_SIZE", "lots"),
                                         ("RAGCOURSE_DEVICE", "gpu"), ("RAGCOURSE_DEVICE", "cuda:x")])
def test_a_bad_setting_names_itself_and_what_is_allowed(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        encode_batch_size() if name.endswith("BATCH_SIZE") else encode_device()
