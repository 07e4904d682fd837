"""Masters and student versions: where they live, how one is made from the other, how a notebook is recognised.

A **master** (``exercises/masters/NN-name.ipynb``, outside ``notebooks/`` so it is never
mistaken for student material) holds the exercises, their solutions and their checks. The
**student version** (``notebooks/exercises/NN-name.ipynb``) is made from it by three rules.
A lab's set lives one folder down on both sides: ``exercises/masters/labs/labNN-name.ipynb``
becomes ``notebooks/exercises/labs/labNN-name.ipynb``. The rules:

* a code line ending in ``# SOLUTION`` of the form ``NAME = value  # SOLUTION`` becomes ``NAME = ...``;
* the lines from ``# BEGIN SOLUTION`` to ``# END SOLUTION`` become one ``...`` at the marker's
  indentation (a function body, say);
* a cell tagged ``master-only`` is left out.

Outputs and execution counts are cleared; the notebook metadata says which exercise set the
notebook holds and whether it is the master or the student version. A student version that
still contains the word SOLUTION is refused, so a misspelt marker cannot leak an answer.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from .framework import EXERCISE_SETS, is_lab_set, set_number

PROJECT_ROOT = Path(__file__).resolve().parents[3]
MASTERS_DIR = PROJECT_ROOT / "exercises" / "masters"
STUDENT_DIR = PROJECT_ROOT / "notebooks" / "exercises"
METADATA_KEY = "ragcourse"
MASTER, STUDENT = "master", "student"
MASTER_ONLY_TAG = "master-only"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

_BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION\s*$")
_END = re.compile(r"^\s*# END SOLUTION\s*$")
_LINE = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)\s*=.*#\s*SOLUTION\s*$")


class MasterError(ValueError):
    """A master notebook that cannot be turned into a student version."""


LABS_FOLDER = "labs"   # the labs' masters and student versions sit in a folder of this name


def master_notebooks(folder: Path = MASTERS_DIR) -> dict[str, Path]:
    """Exercise set name -> master path: every ``NN-name.ipynb`` in ``folder``, then every
    ``labNN-name.ipynb`` in its ``labs`` folder, that names a known set (lessons first, then labs)."""
    found = [*sorted(folder.glob("[0-9][0-9]-*.ipynb")), *sorted((folder / LABS_FOLDER).glob("lab[0-9][0-9]-*.ipynb"))]
    return {path.stem: path for path in found if path.stem in EXERCISE_SETS}


def master_path(name: str, folder: Path = MASTERS_DIR) -> Path:
    """Where the master of exercise set ``name`` is kept (a lab's in the ``labs`` folder)."""
    return (folder / LABS_FOLDER if is_lab_set(name) else folder) / f"{name}.ipynb"


def student_path(name: str, folder: Path = STUDENT_DIR) -> Path:
    """Where the student version of exercise set ``name`` is committed (a lab's in the ``labs`` folder)."""
    return (folder / LABS_FOLDER if is_lab_set(name) else folder) / f"{name}.ipynb"


def exercise_metadata(nb: Any) -> dict[str, Any]:
    """The notebook's ``ragcourse`` metadata (empty when it has none)."""
    data = nb.get("metadata", {}).get(METADATA_KEY, {}) if isinstance(nb, dict) else {}
    return dict(data) if isinstance(data, dict) else {}


def _source(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def student_source(source: str, where: str = "a cell") -> str:
    """The student version of one code cell's source (see the module's rules)."""
    lines, out, block = source.split("\n"), [], None
    for number, line in enumerate(lines, 1):
        if block is not None:
            if _END.match(line):
                block = None
            elif _BEGIN.match(line):
                raise MasterError(f"{where}, line {number}: BEGIN SOLUTION inside another solution block")
            continue
        begin = _BEGIN.match(line)
        if begin:
            block = number
            out.append(f"{begin.group(1)}...")
            continue
        if _END.match(line):
            raise MasterError(f"{where}, line {number}: END SOLUTION without BEGIN SOLUTION")
        single = _LINE.match(line)
        out.append(f"{single.group(1)}{single.group(2)} = ..." if single else line)
    if block is not None:
        raise MasterError(f"{where}, line {block}: BEGIN SOLUTION is never closed by END SOLUTION")
    result = "\n".join(out)
    if "SOLUTION" in result:
        raise MasterError(f"{where}: the word SOLUTION is left in the student version (a misspelt marker?)")
    return result


def student_version(master: Any) -> Any:
    """The student version of a master notebook (an nbformat node), unexecuted: no outputs, no counts."""
    meta = exercise_metadata(master)
    name = meta.get("exercise_set")
    if name not in EXERCISE_SETS or meta.get("version") != MASTER:
        raise MasterError(f"not a master notebook: its metadata says {meta!r}")
    nb = copy.deepcopy(master)
    cells = []
    for index, cell in enumerate(nb["cells"], 1):
        tags = list(cell.get("metadata", {}).get("tags", []))
        if MASTER_ONLY_TAG in tags:
            continue
        cell["metadata"] = {"tags": tags} if tags else {}
        if cell["cell_type"] == "code":
            cell["source"] = student_source(_source(cell), f"{name}, cell {index}")
            cell["outputs"] = []
            cell["execution_count"] = None
        elif "SOLUTION" in _source(cell) or cell.get("attachments"):
            raise MasterError(f"{name}, cell {index}: a markdown or raw cell mentions SOLUTION or has attachments")
        cells.append(cell)
    nb["cells"] = cells
    nb["metadata"] = {"kernelspec": dict(KERNELSPEC), METADATA_KEY: {"exercise_set": name, "version": STUDENT}}
    return nb


def cleared(nb: Any) -> Any:
    """A copy with every output and execution count removed (what a master is stored as)."""
    nb = copy.deepcopy(nb)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def sources(nb: Any) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(cell id, type, source, tags) of every cell: what a student version must agree on with its master."""
    return [(str(cell.get("id", "")), cell["cell_type"], _source(cell), tuple(cell.get("metadata", {}).get("tags", [])))
            for cell in nb["cells"]]


def describe_notebook(nb: Any) -> tuple[str | None, str]:
    """(exercise set name or None, what the notebook is, in words) for the grader's report."""
    meta = exercise_metadata(nb)
    name = meta.get("exercise_set")
    if isinstance(name, str) and name in EXERCISE_SETS:
        return name, f"exercise set {name} ({meta.get('version', 'unknown')} version)"
    cells = nb.get("cells", []) if isinstance(nb, dict) else []
    title = next((_source(c).strip().split("\n")[0] for c in cells if c.get("cell_type") == "markdown"), "")
    if isinstance(name, str) and name:
        return None, f"the exercises of {name}, for which this course has no exercise set"
    lesson = re.match(r"#\s*(Lesson|Lab exercises|Lab|Exercises)\s+(\d+)", title)
    if lesson and lesson.group(1) in ("Exercises", "Lab exercises"):
        lab = lesson.group(1) == "Lab exercises"
        known = [n for n in EXERCISE_SETS if is_lab_set(n) == lab and set_number(n) == int(lesson.group(2))]
        if known:
            return known[0], f"exercise set {known[0]} (recognised by its title; its metadata is missing)"
        return None, (f"exercises of {'lab' if lab else 'lesson'} {int(lesson.group(2)):02d}, for which this course"
                      " has no exercise set")
    if lesson:
        kind = "lesson" if lesson.group(1) == "Lesson" else "Part 3 lab"
        return None, f"{kind} {int(lesson.group(2)):02d}'s notebook, not an exercise notebook"
    return None, "a notebook that is not one of the course's exercise notebooks"
