"""``python -m ragcourse grade --solutions``: every master, lessons' and labs', passes every question.

One run of the command line, two notebooks at a time, in a file of its own: under
``make test`` (pytest-xdist, whole files per worker) it runs on one worker while
``test_exercise_grading.py`` grades the student versions and the odd submissions on the
other, instead of the two runs waiting for each other in one file (issue 38, item 3).
"""
from __future__ import annotations

import pytest

from ragcourse.exercises.framework import EXERCISE_SETS, load_set
from support.exercises import JOBS, grade, rows

# kernels run, every master (labs 02-04's read the embeddings, lab 04's starts PostgreSQL) for about a minute
pytestmark = [pytest.mark.notebooks, pytest.mark.slow, pytest.mark.embeddings("all"), pytest.mark.database]


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    table = tmp_path_factory.mktemp("grades") / "solutions.csv"
    return grade("--solutions", "--csv", str(table), "--jobs", JOBS), rows(table)


def test_every_master_passes_every_question(solutions):
    done, table = solutions
    assert done.returncode == 0, done.stderr
    expected = sum(len(load_set(name).questions) for name in EXERCISE_SETS)
    assert len(table) == expected and all(row["passed"] == "true" for row in table), done.stdout
    assert all(row["points"] == row["max_points"] != "0" for row in table)
    assert "every master passes every question" in done.stdout
    assert f"{len(EXERCISE_SETS)} notebooks graded, 0 not graded" in done.stdout
