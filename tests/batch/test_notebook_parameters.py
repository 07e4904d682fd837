"""notebook_parameters: what the prepare step reads from the labs' parameters cells."""
from __future__ import annotations

import json

import pytest

from ragcourse.batch.notebooks import lab_notebooks, lesson_notebooks, notebook_parameters


def test_reads_the_literals_a_papermill_run_would_override():
    lab02 = notebook_parameters(lab_notebooks()[2])
    assert (lab02["WINDOW"], lab02["OVERLAP"], lab02["KS"], lab02["FIGURES_DIR"]) == (60, 20, [1, 5, 10], None)
    assert notebook_parameters(lesson_notebooks()[1])["SEED"] == 20260218


@pytest.mark.parametrize("tagged", [0, 2])
def test_a_notebook_without_exactly_one_parameters_cell_is_named(tagged, tmp_path):
    cell = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": ["X = 1\n"], "outputs": [],
            "execution_count": None}
    path = tmp_path / "07-example.ipynb"
    path.write_text(json.dumps({"cells": [cell] * tagged, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with pytest.raises(ValueError, match=f"07-example.ipynb must have exactly one cell tagged parameters, found {tagged}"):
        notebook_parameters(path)
