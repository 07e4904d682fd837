"""Lesson 15's world for fine-tuning: validity stamps before and after a refresh, and the training set.

Every procedure (concept) carries a **validity stamp**. The fine-tuning snapshot holds the
stamps as they were (``y01a`` ... ``y20a``); since then a refresh has moved some of them to
a new version (``y03b``), each concept independently with probability ``REFRESH_SHARE``.
The corpus always carries the stamp in force: every paragraph chunk ends with
``effective <stamp>`` for its document's main concept.

The labelled training examples are the main concepts of documents drawn from the corpus,
one draw per example; example ``i`` depends only on ``seed`` and ``i``, so the first twelve
examples of a set of 48 are the same twelve as a set of twelve.

The fine-tuned model itself is ``ragcourse.llm.FineTunedModel``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ..toolkit.params import check_non_negative_int
from .concepts import Edition
from .corpus import Chunk, Document, paragraph_chunks
from .rng import make_rng

STAMP_STRIDE = 31
REFRESH_SHARE = 0.45
TRAINING_STRIDE = 65537
TRAINING_SIZE = 48
STAMP_MARKER = "effective"


@dataclass(frozen=True)
class ValidityStamps:
    """Stamps per concept key: ``trained`` as of the fine-tuning snapshot, ``current`` in force now."""

    trained: Mapping[str, str]
    current: Mapping[str, str]

    @property
    def stale(self) -> list[str]:
        """Concepts whose stamp changed after the snapshot, in axis order."""
        return [key for key in self.trained if self.trained[key] != self.current[key]]


def validity_stamps(seed: int, edition: Edition, refresh_share: float = REFRESH_SHARE) -> ValidityStamps:
    """The snapshot stamps and the stamps in force: concept ``i`` is refreshed when its draw < ``refresh_share``."""
    trained, current = {}, {}
    for i, key in enumerate(edition.keys):
        number = f"y{i + 1:02d}"
        trained[key] = number + "a"
        refreshed = make_rng(seed + STAMP_STRIDE * (i + 1))() < refresh_share
        current[key] = number + ("b" if refreshed else "a")
    return ValidityStamps(trained=trained, current=current)


def training_examples(seed: int, documents: Sequence[Document], n: int = TRAINING_SIZE) -> list[str]:
    """``n`` labelled examples: the main concept of one drawn document each, in draw order."""
    check_non_negative_int("n", n)
    if not documents:
        raise ValueError("training_examples needs at least one document")
    return [documents[int(make_rng(seed + TRAINING_STRIDE * (i + 1))() * len(documents))].main
            for i in range(n)]


def stamp_text(text: str, stamp: str, marker: str = STAMP_MARKER) -> str:
    """``text`` followed by ``<marker> <stamp>`` (what the refreshed corpus stores)."""
    return f"{text} {marker} {stamp}"


def read_stamp(text: str, marker: str = STAMP_MARKER) -> str | None:
    """The word after ``marker`` in ``text`` (None when the marker is missing or ends the text)."""
    words = text.split()
    if marker not in words:
        return None
    position = words.index(marker) + 1
    return words[position] if position < len(words) else None


def stamped_chunks(documents: Sequence[Document], edition: Edition,
                   current: Mapping[str, str]) -> list[Chunk]:
    """Paragraph chunks, each ending with the stamp in force for its document's main concept."""
    return [replace(chunk, text=stamp_text(chunk.text, current[chunk.main]))
            for chunk in paragraph_chunks(list(documents), edition)]
