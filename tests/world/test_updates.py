"""Tests of lesson 10's change stream (ragcourse.world.updates)."""
from __future__ import annotations

import pytest

from ragcourse import COURSE_SEED
from ragcourse.world.rng import make_rng
from ragcourse.world.updates import (
    CHANGE_RATE,
    CHANGE_STRIDE,
    PERIODS,
    RECORD_MARKER,
    ChangeStream,
    change_stream,
    served_text,
)


def course_changes(seed: int, n: int = 200) -> list[list[int]]:
    """The course's loop, written out: one draw per document and period."""
    changes = []
    for period in range(1, PERIODS + 1):
        draw = make_rng(seed + CHANGE_STRIDE * period)
        changes.append([i for i in range(n) if draw() < CHANGE_RATE])
    return changes


@pytest.fixture(scope="module")
def stream() -> ChangeStream:
    return change_stream(COURSE_SEED, 200)


def test_course_seed_totals_match_the_course(stream):
    assert stream.periods == 12
    assert stream.republications == 254
    assert stream.never_changed() == 51
    assert [len(stream.republished_in(t)) for t in range(1, 13)] == \
        [23, 27, 22, 21, 21, 23, 21, 18, 16, 23, 20, 19]
    assert stream.republished_in(1)[:5] == (17, 27, 51, 65, 67)


@pytest.mark.parametrize("seed", [COURSE_SEED, 1, 4242, 3000000000])
def test_stream_and_records_equal_the_course_formula(seed):
    changes = course_changes(seed)
    stream = change_stream(seed, 200)
    assert [list(c) for c in stream.changes] == changes
    for document in range(0, 200, 7):
        for period in range(PERIODS + 1):
            expected = "Y%02d" % sum(document in changes[u] for u in range(period))
            assert stream.record(document, period) == expected


def test_records_start_at_zero_and_never_go_down(stream):
    for document in range(200):
        counts = [stream.changes_of(document, t) for t in range(PERIODS + 1)]
        assert counts[0] == 0 and counts == sorted(counts)
    assert [stream.record(0, t) for t in (0, 6, 7, 12)] == ["Y00", "Y00", "Y01", "Y01"]
    assert stream.record(7, 12) == "Y04"


def test_changed_between_is_the_union_of_the_periods(stream):
    assert stream.changed_between(3, 3) == set()
    assert stream.changed_between(0, 1) == set(stream.republished_in(1))
    changes = course_changes(COURSE_SEED)
    for after, upto in [(0, 12), (2, 4), (8, 12)]:
        assert stream.changed_between(after, upto) == {i for u in range(after, upto) for i in changes[u]}
    assert len(stream.changed_between(0, 12)) == 200 - 51


def test_rate_extremes_and_other_lengths():
    assert change_stream(5, 30, rate=0.0).republications == 0
    everything = change_stream(5, 30, periods=3, rate=1.0)
    assert everything.republications == 90 and everything.record(29, 3) == "Y03"
    assert change_stream(5, 30, periods=3).periods == 3


def test_deterministic_and_seed_dependent(stream):
    assert change_stream(COURSE_SEED, 200) == stream
    assert change_stream(COURSE_SEED + 1, 200).changes != stream.changes


def test_bad_arguments_are_refused(stream):
    with pytest.raises(ValueError, match="period must be an integer from 0 to 12"):
        stream.record(0, 13)
    with pytest.raises(ValueError, match="period must be an integer from 1 to 12"):
        stream.republished_in(0)
    with pytest.raises(ValueError, match="rate must be a number from 0 to 1"):
        change_stream(1, 10, rate=1.5)
    with pytest.raises(ValueError, match="periods must be a positive integer"):
        change_stream(1, 10, periods=0)


def test_served_text_puts_the_record_after_the_marker():
    text = served_text("line leak for note goes with line leak and is filed", "Y03")
    assert text.endswith(" validity record Y03")
    assert text.split(RECORD_MARKER + " ")[1].split()[0] == "Y03"
