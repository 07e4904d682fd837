"""Lab 03's figure describes itself from the values it plots (issue 53, CONTRIBUTING "A figure describes itself").

The figure (the cell that saves "03-bake-off-and-steps") draws two panels of horizontal bars of Recall@K on the
judged questions: left, the chunking bake-off (the ``R@5`` column of the bake-off table); right, the steps on the
recursive chunks (the ``R@5`` column of the steps table). Both tables are printed by the notebook itself, so the
plotted values are read back from its stored outputs, not recomputed (that needs the embeddings). The test checks
that the stored description is the figure's text and its alt, that it is the one the cell's describe call writes
from those values, and that it states no number the figure does not show.
"""
from __future__ import annotations

import ast
import html
import json
import re

from ragcourse.batch.notebooks import lab_notebooks
from ragcourse.toolkit.figures import describe_bars, numbers_not_plotted
from support.notebooks import described_figure

NOTEBOOK = lab_notebooks()[3]
FIGURE_CELL = '"03-bake-off-and-steps"'


def cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def code_with(phrase: str) -> dict:
    found = [c for c in cells() if c["cell_type"] == "code" and phrase in "".join(c["source"])]
    assert len(found) == 1, f"exactly one code cell should contain {phrase!r}"
    return found[0]


def stdout(cell: dict) -> str:
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def parameters() -> dict:
    cell = next(c for c in cells() if "parameters" in c.get("metadata", {}).get("tags", []))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse("".join(cell["source"])).body}


def printed_column(phrase: str, first_heading: str, column: str) -> dict[str, float]:
    """``name -> value`` of ``column`` in the table that the cell containing ``phrase`` printed.

    The table starts at the line beginning with ``first_heading``; a row is a name (which may hold spaces and
    commas) followed by as many cells as the header has headings after the first one."""
    lines = stdout(code_with(phrase)).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_heading + " "))
    headings = lines[start][len(first_heading):].split()
    rows = {}
    for line in lines[start + 1:]:
        parts = line.rsplit(None, len(headings))
        if len(parts) != len(headings) + 1 or not re.fullmatch(r"\d+\.\d+", parts[1 + headings.index(column)]):
            break
        rows[parts[0].strip()] = float(parts[1 + headings.index(column)])
    assert rows, f"no rows under {first_heading!r}"
    return rows


def plotted() -> tuple[dict[str, float], dict[str, float]]:
    """The bars of the left and right panels, as the notebook printed them (three decimals)."""
    k = parameters()["K"]
    bakeoff = printed_column("bakeoff[name] = (", "chunking", f"R@{k}")
    steps = printed_column("step_scores = {name:", "step (recursive chunks)", f"R@{k}")
    return bakeoff, steps


def judged_count() -> int:
    match = re.search(r"(\d+) judged questions", stdout(code_with("judged = judged_questions(corpus)")))
    assert match
    return int(match.group(1))



def described(bakeoff: dict[str, float], steps: dict[str, float], k: int, judged: int) -> str:
    """The description the figure cell writes (the same describe_bars calls), from the printed values."""
    def panel(title: str, values: dict[str, float], by: str) -> str:
        def printed_as(extreme) -> str:
            return " and ".join(n for n, v in values.items() if f"{v:.3f}" == f"{extreme(values.values()):.3f}")
        return (describe_bars(title, list(values), {by: list(values.values())})
                + f" Highest: {printed_as(max)}; lowest: {printed_as(min)}.")
    return (f"Horizontal bars of Recall@{k} on {judged} judged questions, on an axis from 0 to 1, listed top to "
            "bottom. " + panel("Left, chunking bake-off with the dense model", bakeoff, "by chunking")
            + " " + panel("Right, step by step on the recursive chunks", steps, "by step"))


def test_the_figure_cell_shows_its_figure_with_a_description():
    source = "".join(code_with(FIGURE_CELL)["source"])
    assert "show_figure(fig, " in source and "plt.show()" not in source
    assert "axis.set_xlim(0, 1)" in source and "axis.invert_yaxis()" in source   # "from 0 to 1", "top to bottom"
    output = described_figure(cells())
    assert output in code_with(FIGURE_CELL)["outputs"]
    assert "table=" not in source, "both panels' values are printed as tables above: no values table"


def test_the_figure_describes_itself_from_the_plotted_values():
    output = described_figure(cells())
    text = "".join(output["data"]["text/plain"])
    assert output["metadata"]["image/png"]["alt"] == text
    assert f'alt="{html.escape(text, quote=True)}"' in "".join(output["data"]["text/html"])
    bakeoff, steps = plotted()
    k, judged = parameters()["K"], judged_count()
    assert len(bakeoff) == 3 and len(steps) == 8
    assert text == described(bakeoff, steps, k, judged)
    # Also in the figure: the k and the question count of the axis labels, the axis ends, the 800 of a bar's label.
    labels = [k, judged, 0, 1, parameters()["RECURSIVE_CHARS"]]
    assert numbers_not_plotted(text, [list(bakeoff.values()), list(steps.values())], ".3f", allowed=labels) == []
    # What the markdown around the figure reads from it: the recursive chunks win the bake-off, and the
    # headed dense path has the highest Recall@5 of the steps.
    assert "Highest: recursive 800 chars;" in text and "Highest: headers, dense only;" in text
    assert len(text.split()) <= 2 * 60
