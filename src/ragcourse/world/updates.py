"""Lesson 10's fictional change stream: documents republished period by period.

The source does not stand still. Over ``PERIODS`` periods, each document is republished in a
period with probability ``CHANGE_RATE`` (one course draw per document and period, from a
generator seeded with ``seed + CHANGE_STRIDE * period``). A republication changes only the
document's **validity record**, ``Y00`` before any change, ``Y01`` after the first, and so
on; the body, and therefore the embedding, stays the same.

A chunk served from an index carries the record the index saw when it was last refreshed
(``served_text``). Which refresh policy decides that is the lesson's subject and lives in
the notebook; this module only holds the world: who changed when, and what the record is.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..toolkit.params import check_positive_int
from .rng import make_rng

PERIODS = 12
CHANGE_RATE = 0.10
CHANGE_STRIDE = 6007
RECORD_MARKER = "validity record"


@dataclass(frozen=True)
class ChangeStream:
    """Which documents were republished in each period, and the validity records that follow.

    ``changes[t - 1]`` holds the indices (ascending) of the documents republished in period
    ``t`` (periods run 1..``periods``); period 0 is the state the first index was built from.
    """

    n_documents: int
    changes: tuple[tuple[int, ...], ...]
    _counts: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        counts = []
        for document in range(self.n_documents):
            running, row = 0, [0]
            for republished in self.changes:
                running += document in republished
                row.append(running)
            counts.append(tuple(row))
        object.__setattr__(self, "_counts", tuple(counts))

    @property
    def periods(self) -> int:
        """Number of periods in the stream."""
        return len(self.changes)

    def republished_in(self, period: int) -> tuple[int, ...]:
        """Documents republished in ``period`` (1..periods)."""
        self._check_period(period, low=1)
        return self.changes[period - 1]

    def changed_between(self, after: int, upto: int) -> set[int]:
        """Documents republished at least once in periods ``after + 1`` .. ``upto``."""
        self._check_period(after)
        self._check_period(upto)
        return {document for period in range(after, upto) for document in self.changes[period]}

    def changes_of(self, document: int, period: int) -> int:
        """How many times ``document`` was republished in periods 1..``period``."""
        self._check_period(period)
        return self._counts[document][period]

    def record(self, document: int, period: int) -> str:
        """The validity record of ``document`` at the end of ``period`` (``Y00`` at period 0)."""
        return "Y%02d" % self.changes_of(document, period)

    @property
    def republications(self) -> int:
        """Republications summed over all periods (a document may count several times)."""
        return sum(len(republished) for republished in self.changes)

    def never_changed(self) -> int:
        """Documents never republished in the whole stream."""
        return sum(1 for row in self._counts if row[-1] == 0)

    def _check_period(self, period: int, low: int = 0) -> None:
        if not isinstance(period, int) or not low <= period <= self.periods:
            raise ValueError(f"period must be an integer from {low} to {self.periods}; got {period!r}")


def change_stream(seed: int, n_documents: int, periods: int = PERIODS,
                  rate: float = CHANGE_RATE) -> ChangeStream:
    """Draw the stream: in each period, every document is republished when its draw is below ``rate``."""
    check_positive_int("periods", periods)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be a number from 0 to 1; got {rate!r}")
    changes = []
    for period in range(1, periods + 1):
        draw = make_rng(seed + CHANGE_STRIDE * period)
        changes.append(tuple(d for d in range(n_documents) if draw() < rate))
    return ChangeStream(n_documents=n_documents, changes=tuple(changes))


def served_text(text: str, record: str) -> str:
    """A chunk as the index serves it: its text followed by ``validity record`` and the record."""
    return f"{text} {RECORD_MARKER} {record}"
