"""``python -m ragcourse grade``: shipped student versions pass nothing, odd submissions are named, loops stop.

Two runs of the command line do the work for most tests (module fixtures): the committed
student versions together with a folder of submissions a class really hands in (a partly
done notebook that raises, a lesson notebook, a text file), and a notebook that loops beside
one that does not. Each kernel starts fresh, so the runs take a few seconds per notebook.
The masters' run (``--solutions``) is in ``test_grading_masters.py``, a file of its own so
that the two long runs can go to different workers.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import nbformat
import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR, PROJECT_ROOT
from ragcourse.exercises.framework import EXERCISE_SETS, load_set
from ragcourse.exercises.notebooks import STUDENT_DIR, student_path
from support.exercises import JOBS, grade, rows

LOOP_SECONDS = 5


def with_cell(name: str, source: str, at: int, answers: dict[str, str]):
    """The shipped student version with one extra code cell and some answer cells filled in."""
    nb = nbformat.read(student_path(name), as_version=4)
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    for cell in nb.cells:
        for start, text in answers.items():
            if cell.cell_type == "code" and cell.source.startswith(start):
                cell.source = text
    return nb


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    """The shipped student versions, a text file, a lesson notebook, and a partly done notebook that raises."""
    folder = tmp_path_factory.mktemp("class")
    (folder / "notes.txt").write_text("my answers are in my head\n")
    shutil.copy(NOTEBOOKS_DIR / "07-retrieval-augmented-generation.ipynb", folder / "07-lesson-instead.ipynb")
    nbformat.write(with_cell("03-similarity-metrics", "1 / 0", 7, {
        "PREDICTED_CHANGES": 'PREDICTED_CHANGES = "a"',
        "def diverging_queries": "def diverging_queries(a, b, depth):\n"
                                 "    return sum(set(x[:depth]) != set(y[:depth]) for x, y in zip(a, b))"}),
        folder / "alice-03.ipynb")
    table = folder.parent / "class.csv"
    done = grade(str(STUDENT_DIR.relative_to(PROJECT_ROOT)), str(folder), "--csv", str(table), "--jobs", JOBS)
    return done, rows(table)


@pytest.fixture(scope="module")
def looping(tmp_path_factory):
    """A notebook that loops, then one that does not: the first is stopped, the second still graded."""
    folder = tmp_path_factory.mktemp("loops")
    nbformat.write(with_cell("05-metadata-filtering", "while True:\n    pass", 7, {}), folder / "bob-05.ipynb")
    nbformat.write(with_cell("01-what-is-an-embedding", "", 7, {"PREDICTED_CEILING": "PREDICTED_CEILING = 0.9"}),
                   folder / "carol-01.ipynb")
    table = folder.parent / "loops.csv"
    return grade(str(folder), "--csv", str(table), "--timeout", str(LOOP_SECONDS), "--jobs", JOBS), rows(table)


def sections(stdout: str) -> dict[str, str]:
    """The report's block per notebook, by file name."""
    blocks = {}
    for block in stdout.split("\n\n"):
        head = block.split(":", 1)[0].strip()
        if head.endswith((".ipynb", ".txt")):
            blocks[Path(head).name] = block
    return blocks


@pytest.mark.notebooks
@pytest.mark.slow
@pytest.mark.embeddings("all")
@pytest.mark.database
def test_the_shipped_student_versions_pass_nothing(submissions):
    done, table = submissions
    assert done.returncode == 0, done.stderr
    shipped = [row for row in table if row["notebook"].startswith("notebooks/exercises/")]
    assert len(shipped) == sum(len(load_set(name).questions) for name in EXERCISE_SETS)
    assert all(row["passed"] == "false" and row["points"] == "0" and row["max_points"] != "0" for row in shipped)
    blocks = sections(done.stdout)
    for name in EXERCISE_SETS:
        assert blocks[f"{name}.ipynb"].count("not done yet") == len(load_set(name).questions), blocks[f"{name}.ipynb"]


@pytest.mark.notebooks
@pytest.mark.slow
@pytest.mark.embeddings("all")
@pytest.mark.database
def test_odd_submissions_are_named_and_the_rest_graded(submissions):
    done, table = submissions
    by_file: dict[str, list] = {}
    for row in table:
        by_file.setdefault(Path(row["notebook"]).name, []).append(row)
    assert [(r["question"], r["points"], r["max_points"], r["passed"]) for r in by_file["notes.txt"]] == \
        [("", "0", "0", "false")]
    blocks = sections(done.stdout)
    assert "NOT GRADED: not a notebook" in blocks["notes.txt"]
    assert "NOT GRADED: lesson 07's notebook, not an exercise notebook" in blocks["07-lesson-instead.ipynb"]
    assert len(by_file["07-lesson-instead.ipynb"]) == 1
    assert "code cell 5 raised ZeroDivisionError" in blocks["alice-03.ipynb"], "a raising cell is reported"
    assert [(r["question"], r["passed"]) for r in by_file["alice-03.ipynb"]] == \
        [("q1", "true"), ("q2", "true"), ("q3", "false")], "and what ran is graded"
    assert f"{len(EXERCISE_SETS) + 1} notebooks graded, 2 not graded" in done.stdout


@pytest.mark.timed   # --timeout 5 for both notebooks: the one that does not loop must be graded within it
@pytest.mark.notebooks
def test_a_looping_notebook_is_stopped_and_the_next_one_graded(looping):
    done, table = looping
    assert done.returncode == 0, done.stderr
    blocks = sections(done.stdout)
    assert f"did not finish within {LOOP_SECONDS} s: code cell 5 was still running" in blocks["bob-05.ipynb"]
    assert [(r["question"], r["passed"]) for r in table if "bob" in r["notebook"]] == \
        [("q1", "false"), ("q2", "false"), ("q3", "false")]
    assert [(r["question"], r["passed"]) for r in table if "carol" in r["notebook"]] == \
        [("q1", "true"), ("q2", "false"), ("q3", "false"), ("q4", "false")]


@pytest.fixture
def parser():
    from ragcourse.cli import grade as grading

    command = argparse.ArgumentParser(prog="python -m ragcourse grade")
    grading.add_arguments(command)
    return command


@pytest.mark.parametrize("arguments, message", [
    ([], "give at least one PATH"),
    (["--solutions", "notebooks/exercises"], "--solutions grades the masters"),
])
def test_bad_combinations_exit_2(parser, capsys, monkeypatch, arguments, message):
    from ragcourse.cli import grade as grading

    monkeypatch.chdir(PROJECT_ROOT)
    assert grading.run(parser.parse_args(arguments)) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("arguments, message", [
    (["no/such/folder"], "does not exist"),
    (["notebooks/exercises", "--csv", "notebooks"], "is a folder"),
    (["notebooks/exercises", "--csv", "no/such/folder/grades.csv"], "does not exist"),
    (["notebooks/exercises", "--timeout", "0"], "--timeout"),
    (["notebooks/exercises", "--timeout", "soon"], "--timeout"),
    (["notebooks/exercises", "--jobs", "0"], "--jobs"),
])
def test_bad_arguments_exit_2(parser, capsys, monkeypatch, arguments, message):
    monkeypatch.chdir(PROJECT_ROOT)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(arguments)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_the_command_line_knows_grade():
    done = grade("notebooks/exercises", "--frobnicate")
    assert done.returncode == 2 and "unrecognized arguments: --frobnicate" in done.stderr
    done = grade()
    assert done.returncode == 2 and "give at least one PATH" in done.stderr and done.stderr.count("\n") == 1


def test_the_csv_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """write_csv writes beside the file and renames: a failure half-way leaves the old table and no part file."""
    from ragcourse.exercises import grading
    from ragcourse.exercises.framework import PASSED, Verdict

    table = tmp_path / "grades.csv"
    table.write_text("the old table\n")
    graded = grading.Graded(tmp_path / "a.ipynb", "exercise set", "01-what-is-an-embedding",
                            [Verdict("q1", "predict", "t", PASSED, 1, 1, ()), Verdict("q2", "build", "t", PASSED, 3, 3, ())])

    class Breaks:
        def __init__(self, handle, **options):
            self.rows = 0

        def writerow(self, row):
            self.rows += 1
            if self.rows > 2:
                raise OSError("disk full")

    with monkeypatch.context() as patched:
        patched.setattr(grading.csv, "writer", Breaks)
        with pytest.raises(OSError):
            grading.write_csv([graded], table)
    assert table.read_text() == "the old table\n" and sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv"]
    grading.write_csv([graded], table)
    assert rows(table)[1]["points"] == "3" and sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv"]
