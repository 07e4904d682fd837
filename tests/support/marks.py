"""What running a lab's notebook, or checking a set of exercises, costs: the markers of ``pyproject.toml``, said once.

A test that runs a lab (nbval, JupyterLab) or checks a set of exercises for each of several labs takes
these marks with its parameters (``pytest.param(2, marks=lab_marks(2))``, ``by_exercise_set(rows)``);
nbval's items for the notebooks themselves get theirs from ``notebook_marks`` (in conftest's
``pytest_collection_modifyitems``: a notebook has no Python to write a marker in).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ragcourse.exercises.framework import is_lab_set, set_number

# The groups of ``python -m ragcourse prepare``'s plan that a lab's notebook reads (``embeddings``): lab 01
# embeds nothing; lab 02 the questions and its own texts; lab 03 every group (its bake-off); lab 04 every group
# too, as it ends by comparing its final system with every retriever of the search command (labs 01-03's).
LAB_GROUPS = {1: (), 2: ("questions", "lab 02"), 3: ("all",), 4: ("all",)}
# ... and that a lab's set of exercises reads: lab 02's a subset of lab 02's windows, lab 04's its questions
# and lab 04's texts.
EXERCISE_GROUPS = {1: (), 2: ("questions", "lab 02"), 3: ("all",), 4: ("questions", "lab 04")}


def lab_marks(number: int) -> list[pytest.MarkDecorator]:
    """Running lab ``number``'s notebook: each runs for more than ten seconds warm (22 s to 110 s in
    ``make test``); labs 03 and 04 generate answers with the language model, and lab 04 starts PostgreSQL."""
    marks = [pytest.mark.slow]
    if LAB_GROUPS[number]:
        marks.append(pytest.mark.embeddings(*LAB_GROUPS[number]))
    if number == 3:
        marks.append(pytest.mark.generator)   # lab 03's naive RAG answers are written by the language model
    if number == 4:
        marks += [pytest.mark.database, pytest.mark.generator]
    return marks


def exercise_marks(name: str) -> list[pytest.MarkDecorator]:
    """Checking the set of exercises ``name`` (in this process or in a kernel): nothing for a lesson's set;
    lab 04's checks build their scratch indexes in PostgreSQL."""
    if not is_lab_set(name):
        return []
    number = set_number(name)
    marks = [pytest.mark.embeddings(*EXERCISE_GROUPS[number])] if EXERCISE_GROUPS[number] else []
    if number == 4:
        marks.append(pytest.mark.database)
    return marks


def by_exercise_set(rows: list) -> list:
    """A parametrize's ``rows`` (each a set's name, or a tuple that starts with one), each marked with what
    checking its set costs (``exercise_marks``); ids are the parametrize's own."""
    params = []
    for row in rows:
        values = row if isinstance(row, tuple) else (row,)
        params.append(pytest.param(*values, marks=exercise_marks(values[0])))
    return params


def notebook_marks(path: Path) -> list[pytest.MarkDecorator]:
    """The marks of a notebook that nbval runs: ``notebooks``, with a lab's costs (``notebooks/labs/NN-*``)
    or a lab exercise set's (``notebooks/exercises/labs/labNN-*``)."""
    marks = [pytest.mark.notebooks]
    if path.parent.name == "labs" and path.parent.parent.name == "exercises":
        marks += exercise_marks(path.stem)
    elif path.parent.name == "labs":
        marks += lab_marks(int(path.stem[:2]))
    return marks
