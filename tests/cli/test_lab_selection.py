"""Choosing lessons and labs on the command line: ``3``, ``2-6``, ``lab1``, ``lab1-2``, ``labs``."""
from __future__ import annotations

import pytest

from ragcourse.cli.main import UsageError, main, parse_selection

LESSONS = {n: f"{n:02d}" for n in range(1, 17)}
LABS = {1: "lab 1", 2: "lab 2"}


def test_no_argument_means_the_sixteen_lessons():
    assert parse_selection([], LESSONS, LABS) == (list(range(1, 17)), [])


@pytest.mark.parametrize("values, expected", [
    (["labs"], ([], [1, 2])), (["lab2"], ([], [2])), (["lab01-2", "3"], ([3], [1, 2])),
    (["2-3", "lab1", "lab1"], ([2, 3], [1])),
])
def test_lessons_and_labs(values, expected):
    assert parse_selection(values, LESSONS, LABS) == expected


def test_a_missing_lab_names_itself():
    with pytest.raises(UsageError, match="no notebook for lab 7 .*'lab7'.*available: 01, 02"):
        parse_selection(["lab7"], LESSONS, LABS)


def test_the_sweep_refuses_labs(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--seeds", "1", "lab1"])
    assert stop.value.code == 2 and "take no SEED" in capsys.readouterr().err
