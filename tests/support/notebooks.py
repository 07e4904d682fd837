"""The committed notebooks as the tests read them: documented blocks, printed stdout, figure descriptions."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcourse.batch.notebooks import lesson_notebooks

DOCUMENTED_DIR = Path(__file__).resolve().parents[1] / "documented"
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


def lesson_notebook(lesson: int) -> Path:
    """The lesson's notebook; all sixteen exist, so a missing one fails the test."""
    path = lesson_notebooks().get(lesson)
    if path is None:
        pytest.fail(f"lesson {lesson:02d} has no notebook notebooks/{lesson:02d}-*.ipynb")
    return path


def described_figure(cells: list[dict]) -> dict:
    """The one stored output whose PNG carries an ``alt`` (a figure shown with ``show_figure``); its alt must
    equal its text, the description."""
    found = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])
             if "alt" in o.get("metadata", {}).get("image/png", {})]
    assert len(found) == 1, "the figure cell no longer shows one described figure (show_figure)"
    assert found[0]["metadata"]["image/png"]["alt"] == "".join(found[0]["data"]["text/plain"])
    return found[0]


def stored_figure_description(cells: list[dict]) -> str:
    """The committed figure's description, as a screen reader gets it."""
    return "".join(described_figure(cells)["data"]["text/plain"])
