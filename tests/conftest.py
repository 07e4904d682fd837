"""Shared fixtures: where the project's notebooks and documented blocks live."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR, PROJECT_ROOT, lesson_notebooks

DOCUMENTED_DIR = Path(__file__).parent / "documented"
ALL_LESSONS = list(range(1, 17))


def documented_blocks(lesson: int) -> list[str]:
    """The course's printed blocks for one lesson, in order."""
    return [p.read_text() for p in sorted(DOCUMENTED_DIR.glob(f"{lesson:02d}-*.txt"))]


def stored_stdout(path: Path) -> str:
    """Everything the stored code cells of a notebook printed to stdout, in order."""
    nb = json.loads(path.read_text())
    parts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stdout":
                text = output["text"]
                parts.append("".join(text) if isinstance(text, list) else text)
    return "".join(parts)


def normalise_block(text: str) -> str:
    """Trailing spaces dropped per line, leading and trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def blocks_in_order(haystack: str, blocks: list[str]) -> list[bool]:
    """For each block, whether it appears as whole lines after the previous block's match."""
    text = "\n" + normalise_block(haystack) + "\n"
    found, position = [], 0
    for block in blocks:
        needle = "\n" + normalise_block(block) + "\n"
        at = text.find(needle, position)
        found.append(at >= 0)
        if at >= 0:
            position = at + len(needle) - 1
    return found


@pytest.fixture(scope="session")
def notebooks() -> dict[int, Path]:
    return lesson_notebooks()


def lesson_notebook(lesson: int) -> Path:
    """The lesson's notebook; all sixteen exist, so a missing one fails the test."""
    path = lesson_notebooks().get(lesson)
    if path is None:
        pytest.fail(f"lesson {lesson:02d} has no notebook notebooks/{lesson:02d}-*.ipynb")
    return path


__all__ = ["ALL_LESSONS", "DOCUMENTED_DIR", "NOTEBOOKS_DIR", "PROJECT_ROOT", "blocks_in_order",
           "documented_blocks", "normalise_block", "lesson_notebook", "stored_stdout"]


# Every text the labs embed is embedded once, before the first test that needs it (``python -m ragcourse
# prepare``), so no test pays another's cold cost. ``make test`` runs the command itself and sets
# RAGCOURSE_PREPARED; a plain ``pytest`` run that selects the labs runs it here. Under pytest-xdist the
# workers do not (two would embed the same texts side by side): run ``prepare`` first, as make test does.
NEEDS_EMBEDDINGS = ("notebooks/labs/", "test_lab_runs_in_jupyterlab", "tests/labs/test_dense_numbers.py",
                    "tests/cli/test_search_command.py", "tests/rag/")


def pytest_collection_finish(session):
    import os
    import sys

    if os.environ.get("RAGCOURSE_PREPARED") or hasattr(session.config, "workerinput") or not any(
            any(marker in item.nodeid for marker in NEEDS_EMBEDDINGS) for item in session.items):
        return
    from ragcourse.cli.main import main

    status = main(["prepare"])
    if status:
        sys.exit(f"python -m ragcourse prepare failed with status {status}")
    os.environ["RAGCOURSE_PREPARED"] = "1"
