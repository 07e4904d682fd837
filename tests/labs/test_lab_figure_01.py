"""Lab 01's figure describes itself from the values it plots (issue 53; CONTRIBUTING, "A figure describes itself").

The figure (cell "01-recall-and-chunks-by-max-chars") draws, left, Recall@K of IDF overlap for self-retrieval
and the judged questions against ``max_chars`` and, right, the number of chunks in the index. Every plotted
value is printed by the sweep cell above it, so the test reads them back from that cell's stored output (no
recomputation: the lab's numbers are the notebook's), rebuilds the description with the same calls the figure
cell makes, and checks that the stored description is that one and states no number that is not plotted.
"""
from __future__ import annotations

import ast
import json

from ragcourse.batch.notebooks import lab_notebooks
from ragcourse.toolkit.figures import describe_series, numbers_not_plotted
from support.notebooks import stored_figure_description

NOTEBOOK = lab_notebooks()[1]


def cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def code_with(phrase: str) -> dict:
    found = [c for c in cells() if c["cell_type"] == "code" and phrase in "".join(c["source"])]
    assert len(found) == 1, phrase
    return found[0]


def parameters() -> dict:
    """The literal values of the lab's parameters cell (the one tagged ``parameters``)."""
    cell = next(c for c in cells() if "parameters" in c["metadata"].get("tags", []))
    tree = ast.parse("".join(cell["source"]))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body}


def stored_sweep() -> list[list[float]]:
    """The sweep table as the lab printed it: max_chars, chunks, cut, self R@K, judged R@K, judged MRR."""
    cell = code_with("sweep.append((size, len(sized)")
    text = "".join("".join(o.get("text", "")) for o in cell["outputs"])
    rows = []
    for line in text.splitlines():
        words = line.split()
        if words and all(w.replace(".", "", 1).isdigit() for w in words):
            rows.append([float(w) if "." in w else int(w) for w in words])
    return rows



def described(rows: list[list[float]], k: int) -> str:
    """The description the figure cell writes, from the plotted values (the same calls)."""
    sizes = [row[0] for row in rows]
    recall_by_set = {"self-retrieval": [row[3] for row in rows], "judged questions": [row[4] for row in rows]}
    left = describe_series(f"Left: Recall@{k} of IDF overlap", "max_chars (log scale)", sizes, recall_by_set, fmt=".3f")
    right = ("Right: chunks in the index against max_chars (log scale): "
             + ", ".join(f"{row[1]} at {size}" for size, row in zip(sizes, rows)) + ".")
    return f"{left} {right}"


def test_the_sweep_table_holds_every_plotted_value():
    rows, p = stored_sweep(), parameters()
    assert [row[0] for row in rows] == p["MAX_CHARS_SWEEP"]
    assert all(len(row) == 6 for row in rows)


def test_the_figure_describes_itself_from_the_plotted_values():
    source = "".join(code_with("01-recall-and-chunks-by-max-chars")["source"])
    assert "show_figure(fig, " in source and "plt.show()" not in source and "table=" not in source  # the sweep prints them
    rows, k = stored_sweep(), parameters()["K"]
    text = stored_figure_description(cells())
    assert text == described(rows, k)
    plotted = [[row[0] for row in rows], [row[1] for row in rows], [row[3] for row in rows], [row[4] for row in rows]]
    assert numbers_not_plotted(text, plotted, ".3f", allowed=[k]) == []    # K: the axis label's Recall@5
    # What the caption below the figure reads off it: both sets highest at 800, the judged set lower on both sides.
    assert "(highest 0.641 at 800)" in text and "(highest 0.386 at 800)" in text
