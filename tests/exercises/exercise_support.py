"""What the exercise tests share: the notebooks' own answers, the master's solution lines, and two assertions.

The solutions and the blanks come from the notebooks themselves (the master and the committed
student version, check cells left out), so a test checks what a student actually gets.
"""
from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache

from ragcourse.exercises.framework import FAILED, is_lab_set, load_set
from ragcourse.exercises.notebooks import master_path, student_path


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
