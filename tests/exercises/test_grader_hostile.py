"""The grader against submissions that try to cheat it, hang it, or change someone else's grade (issue 39).

Every hostile notebook is lesson 01's exercise set with one cell added: the master (which
earns 9/9) where the cheat should change nothing, the student version (0/9) where it tries
to turn nothing into full marks. One grading run of the command line, real kernels, honest
masters beside the cheats, does the work for most tests; the survivor has a run of its own,
because what it attacks is the CSV after the grader has exited. Each test states the verdict
the grader must give; today's grader (verdicts made in the student's kernel, files read when
their turn comes, nbclient collecting output) gave each of them a different one.
"""
from __future__ import annotations

import csv
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from ragcourse.batch.notebooks import PROJECT_ROOT
from ragcourse.exercises.notebooks import student_path
from support.exercises import SET, notebook

pytestmark = [pytest.mark.notebooks, pytest.mark.timed, pytest.mark.slow]  # grading runs, with deadlines

TIMEOUT = 20           # --timeout: per notebook and per question
SLOW = 3600            # seconds the slow answer would sleep

REPLACE_GRADER = """
import json
import ragcourse.exercises.framework as framework
def fake(name, namespace, seconds=None):
    rows = [{"question": q, "kind": "build", "title": "x", "status": "passed", "points": 100, "max_points": 1,
             "lines": []} for q in ("q1", "q2", "q3", "q4")]
    print(framework.GRADE_MARKER + json.dumps(rows))
framework.grade_in_kernel = fake
"""
PATCH_VERDICT = """
from ragcourse.exercises.framework import ExerciseSet, Verdict, PASSED
def always(self, key, *answers):
    q = self.question(key)
    return Verdict(q.key, q.kind, q.title, PASSED, q.max_points, q.max_points, ())
ExerciseSet.verdict = always
"""
SWAP_CHECKS = """
from dataclasses import replace
exercises.EXERCISES.questions = tuple(replace(q, check=lambda *answers: ["fine"])
                                      for q in exercises.EXERCISES.questions)
"""
REWRITE_NEIGHBOURS = """
from pathlib import Path
for neighbour in [*Path.cwd().glob("*.ipynb"), *Path.cwd().parent.glob("*/*.ipynb")]:
    if "aaa-" not in neighbour.name:
        neighbour.write_text(open(r"{student}").read())
"""
FLOOD = 'for _ in range(50):\n    print("x" * 1_000_000)'
SLOW_ANSWER = f"""
import time
_fast_keyword_score = keyword_score
def keyword_score(query_text, document_text):
    time.sleep({SLOW})
    return _fast_keyword_score(query_text, document_text)
"""
SURVIVOR = """
import subprocess, sys
subprocess.Popen([sys.executable, "-c", '''
import time, pathlib
token = {token!r}
for _ in range(240):
    time.sleep(0.25)
    path = pathlib.Path({csv!r})
    if path.exists():
        path.write_text("notebook,question,points,max_points,passed\\\\nme,q1,9,9,true\\\\n")
'''], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""


COPY_REFERENCE = {   # the student's answer cells replaced by the package's code: what README.md says passes
    "def keyword_score": "from ragcourse.retrieval.search import KeywordIndex\n\n"
                         "def keyword_score(query_text, document_text):\n"
                         "    return KeywordIndex([document_text]).scores(query_text)[0]",
    "def cosine_similarity": "from ragcourse.exercises.part1.lesson01 import reference_cosine as cosine_similarity",
}


def copied(folder: Path, name: str) -> Path:
    """Lesson 01's student version with its two build-it answers taken from the package."""
    nb = nbformat.read(student_path(SET), as_version=4)
    for cell in nb.cells:
        for start, source in COPY_REFERENCE.items():
            if cell.cell_type == "code" and cell.source.startswith(start):
                cell.source = source
    path = folder / name
    nbformat.write(nb, path)
    return path


def grade(*arguments: str, timeout: float = 600, tmpdir: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """``python -m ragcourse grade``; with ``tmpdir``, its temporary folders (and its kernels' files) go there."""
    env = dict(os.environ, TMPDIR=str(tmpdir)) if tmpdir else None
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ragcourse", "grade", *arguments], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)
    return done, time.monotonic() - started


def points(table: Path) -> dict[str, dict[str, int]]:
    """Notebook file name -> question -> points, from the CSV."""
    found: dict[str, dict[str, int]] = {}
    with table.open(newline="") as handle:
        for row in csv.DictReader(handle):
            found.setdefault(Path(row["notebook"]).name, {})[row["question"]] = int(row["points"])
    return found


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Cheats and honest masters in one folder, graded with --timeout 20, two at a time."""
    folder = tmp_path_factory.mktemp("hostile")
    student = student_path(SET)
    notebook("student", REPLACE_GRADER, folder, "bad-replace-grader.ipynb")
    notebook("student", PATCH_VERDICT, folder, "bad-patch-verdict.ipynb")
    notebook("student", SWAP_CHECKS, folder, "bad-swap-checks.ipynb")
    notebook("student", REWRITE_NEIGHBOURS.replace("{student}", str(student)), folder, "aaa-rewrites.ipynb")
    notebook("master", FLOOD, folder, "flood.ipynb")
    notebook("master", SLOW_ANSWER, folder, "slow-q2.ipynb")
    notebook("master", "", folder, "zzz-honest.ipynb")
    copied(folder, "copies-the-package.ipynb")
    table = folder.parent / "hostile.csv"
    runtime = folder.parent / "runtime"   # this run's own TMPDIR: another test's grading runs beside it (-n 2)
    runtime.mkdir()
    done, seconds = grade(str(folder), "--csv", str(table), "--timeout", str(TIMEOUT), "--jobs", "2", tmpdir=runtime)
    return done, points(table), seconds, folder


@pytest.mark.parametrize("name", ["bad-replace-grader.ipynb", "bad-patch-verdict.ipynb", "bad-swap-checks.ipynb"])
def test_a_cheat_in_the_kernel_changes_no_verdict(hostile, name):
    """Replacing the grading function, the verdict method or the checks in the kernel: the blank still scores 0."""
    done, table, _, _ = hostile
    assert done.returncode == 0, done.stderr
    assert table[name] == {"q1": 0, "q2": 0, "q3": 0, "q4": 0}, done.stdout
    assert "not done yet" in done.stdout.split(name)[1].split("total")[0]


def test_a_submission_cannot_rewrite_its_neighbour(hostile):
    done, table, _, folder = hostile
    assert table["zzz-honest.ipynb"] == {"q1": 1, "q2": 3, "q3": 3, "q4": 2}, done.stdout
    assert table["aaa-rewrites.ipynb"] == {"q1": 0, "q2": 0, "q3": 0, "q4": 0}


def test_an_output_flood_neither_stalls_the_grader_nor_costs_points(hostile):
    done, table, seconds, _ = hostile
    assert table["flood.ipynb"] == {"q1": 1, "q2": 3, "q3": 3, "q4": 2}, done.stdout
    assert seconds < 240, f"the run took {seconds:.0f} s"


def test_a_slow_answer_costs_only_its_question(hostile):
    done, table, _, _ = hostile
    assert table["slow-q2.ipynb"] == {"q1": 1, "q2": 0, "q3": 3, "q4": 2}, done.stdout
    block = done.stdout.split("slow-q2.ipynb")[1].split("total")[0]
    assert "did not finish" not in block and "not passed yet" in block.split("q2")[1].split("\n")[0], block


def test_nothing_is_left_behind(hostile):
    """No kernel and no temporary folder of the run outlive it."""
    done, _, _, folder = hostile
    runtime = str(folder.parent / "runtime")
    assert not [p for p in psutil.process_iter(["cmdline"]) if "ipykernel_launcher" in " ".join(p.info["cmdline"] or [])
                and any(runtime in part for part in p.info["cmdline"] or [])]
    assert not list(Path(runtime).glob("ragcourse-grade-*"))


def test_a_survivor_cannot_rewrite_the_csv(tmp_path):
    """A process started in a new session by a cell is killed with its kernel: the CSV stays what the report says."""
    token = secrets.token_hex(8)
    table = tmp_path / "grades.csv"
    notebook("student", SURVIVOR.format(token=token, csv=str(table)), tmp_path, "fork.ipynb")
    notebook("master", "", tmp_path, "honest.ipynb")
    done, _ = grade(str(tmp_path), "--csv", str(table), "--timeout", str(TIMEOUT))
    assert done.returncode == 0, done.stderr
    written = table.read_text()
    time.sleep(3)
    assert table.read_text() == written, "something rewrote the CSV after the grader exited"
    assert points(table) == {"fork.ipynb": {"q1": 0, "q2": 0, "q3": 0, "q4": 0},
                             "honest.ipynb": {"q1": 1, "q2": 3, "q3": 3, "q4": 2}}
    assert not [p for p in psutil.process_iter(["cmdline"]) if token in " ".join(p.info["cmdline"] or [])]


def test_copying_the_packages_code_passes(hostile):
    """What README.md says it does not guarantee: build-it answers taken from the package pass (the checks judge
    what a function returns, not who wrote it)."""
    done, table, _, _ = hostile
    assert table["copies-the-package.ipynb"] == {"q1": 0, "q2": 3, "q3": 3, "q4": 0}, done.stdout
