"""What the exercise tests share: the notebooks' own answers, the master's solution lines, two assertions, and
the grader's command line.

The solutions and the blanks come from the notebooks themselves (the master and the committed
student version, check cells left out), so a test checks what a student actually gets.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

import nbformat

from ragcourse.batch.notebooks import PROJECT_ROOT
from ragcourse.exercises.framework import FAILED, is_lab_set, load_set
from ragcourse.exercises.grading import CSV_COLUMNS
from ragcourse.exercises.notebooks import master_path, student_path

SET = "01-what-is-an-embedding"   # the set the grader's hostile and stopped runs hand in, a cell added
JOBS = "2"  # two kernels at a time: the runs take half as long on two cores


def code_cells(path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


@lru_cache(maxsize=None)
def namespace(folder: str, name: str) -> dict:
    """What the notebook's cells define, check cells left out (``masters`` or ``students``)."""
    path = master_path(name) if folder == "masters" else student_path(name)
    names: dict = {}
    for source in code_cells(path):
        if "exercises.check(" not in source:
            exec(compile(source, f"{path.name}", "exec"), names)
    return names


def short(name: str) -> str:
    """A set's name as a test id: ``01`` for a lesson's, ``lab01`` for a lab's."""
    return name[:5] if is_lab_set(name) else name[:2]


def answers(folder: str, name: str, key: str) -> list:
    question = load_set(name).question(key)
    return [namespace(folder, name)[n] for n in question.names]


def solution_lines(name: str) -> list[str]:
    """The lines between the solution markers of a master: what no message may show."""
    lines, inside = [], False
    for source in code_cells(master_path(name)):
        for line in source.split("\n"):
            if "# BEGIN SOLUTION" in line:
                inside = True
            elif "# END SOLUTION" in line:
                inside = False
            elif inside and len(line.strip()) > 20:
                lines.append(line.strip())
    return lines


def assert_mistake_rejected(name: str, key: str, mistake: str, wrong, hint: str) -> None:
    """A wrong answer fails with what was tried, expected and got, a hint naming the mistake, and no solution line."""
    verdict = load_set(name).verdict(key, wrong)
    text = verdict.text()
    assert verdict.status == FAILED and verdict.points == 0, text
    for part in ("tried:", "expected:", "got:", "hint:"):
        assert part in text, f"{mistake}: no {part!r} in\n{text}"
    assert hint in text.split("hint:")[1], f"{mistake}: the hint does not name the mistake:\n{text}"
    assert not [line for line in solution_lines(name) if line in text], f"{mistake}: the message shows the solution"


def assert_every_build_rejects_two(sets: list[str], mutations: list[tuple]) -> None:
    """Every build-it question of ``sets`` has at least two mutations, and every lesson has a build-it question."""
    builds = {(name, q.key) for name in sets for q in load_set(name).questions if q.kind == "build"}
    counted = Counter((name, key) for name, key, _, _, _ in mutations)
    assert builds == set(counted) and min(counted.values()) >= 2, counted
    assert {name for name, _ in builds} == set(sets), "every lesson has a build-it exercise"


# ---------------------------------------------------------------- the grader's command line

def grade(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragcourse", "grade", *arguments], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=600)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        return list(reader)


def notebook(base: str, extra: str, folder: Path, name: str) -> Path:
    """Lesson 01's master or student version with ``extra`` as a code cell after its first three."""
    nb = nbformat.read(master_path(SET) if base == "master" else student_path(SET), as_version=4)
    position = 4 if "keyword_score" not in extra else next(
        i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.startswith("def keyword_score"))
    nb.cells.insert(position, nbformat.v4.new_code_cell(extra))
    path = folder / name
    nbformat.write(nb, path)
    return path
