"""Lab 04's figure describes itself: its stored description is written from the values it plots.

The figure (section 13, "04-stages-and-reader") draws, left, Recall@5 of pages after each stage of the starting
design (the R@5 column of section 4's table) and, right, the reader's threshold sweep (section 7's table: the
unanswerable questions abstained on, the judged questions answered, and those answered citing a relevant page's
own text). Those values come from dense retrieval, so the test does not recompute them: it reads them back from
the tables the notebook itself printed (``.3f``), writes the description again with the figure cell's describe
calls, and checks it is the stored one and that it states no number the figure does not plot.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from ragcourse.batch.notebooks import lab_notebooks
from ragcourse.toolkit.figures import describe_bars, describe_series, numbers_not_plotted
from ragcourse.rag.pipeline import STAGES
from support.notebooks import stored_figure_description

NOTEBOOK = lab_notebooks()[4]
FIGURE = '"04-stages-and-reader"'


def cells(notebook: Path | None = None) -> list[dict]:
    return json.loads((notebook or NOTEBOOK).read_text(encoding="utf-8"))["cells"]


def code_with(phrase: str, notebook: Path | None = None) -> dict:
    found = [c for c in cells(notebook) if c["cell_type"] == "code" and phrase in "".join(c["source"])]
    assert len(found) == 1, phrase
    return found[0]


def printed(phrase: str, notebook: Path | None = None) -> str:
    """The text a code cell printed (its stream outputs)."""
    return "".join("".join(o.get("text", "")) for o in code_with(phrase, notebook)["outputs"])



def plotted(notebook: Path | None = None) -> dict:
    """What the figure cell plots, read back from the notebook's own printed tables."""
    stages = {}
    for line in printed("scores = stage_scores(traces, judged)", notebook).splitlines():
        words = line.split()
        if len(words) > 5 and all(re.fullmatch(r"\d+\.\d+", w) for w in words[-5:]):
            stages[" ".join(words[:-5])] = float(words[-3])          # columns hit@1, R@1, R@5, MRR, passages
    sweep_text = printed("sweep = threshold_sweep(", notebook)
    sweep = [[float(w) for w in line.split()] for line in sweep_text.splitlines()
             if re.fullmatch(r"(\s*\d+\.\d+){5}\s*", line)]                 # threshold, abstain, answered, strict, loose
    counts = re.search(r"unanswerable abstained \d+ of (\d+); judged abstained \d+ of (\d+)", sweep_text)
    source = next("".join(c["source"]) for c in cells(notebook) if "parameters" in c["metadata"].get("tags", []))
    parameters = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(source).body}
    return {"stages": stages, "sweep": sweep, "unanswerable": int(counts.group(1)), "judged": int(counts.group(2)),
            "threshold": parameters["THRESHOLD"]}


def described(data: dict) -> str:
    """The description the figure cell writes, with the same describe calls, from ``data``."""
    values = [data["stages"][stage] for stage in STAGES]
    best_stage = STAGES[max(range(len(STAGES)), key=lambda i: values[i])]
    left = (describe_bars("Left: bars, Recall@5 of pages after each stage of the starting design", list(STAGES),
                          {f"{data['judged']} judged questions": values})
            + f" The highest bar is {best_stage}.")
    right = (describe_series(f"Right: share of the {data['unanswerable']} unanswerable or {data['judged']} judged questions",
                             "the reader's threshold", [row[0] for row in data["sweep"]],
                             {"unanswerable abstained": [row[1] for row in data["sweep"]],
                              "judged answered": [row[2] for row in data["sweep"]],
                              "judged citing a relevant page's own text": [row[3] for row in data["sweep"]]},
                             fmt=".3f", x_fmt=".2f")
             + f" Dotted vertical line: the lab's threshold, {data['threshold']:.2f}.")
    return f"{left} {right}"


def check(notebook: Path | None = None) -> None:
    code = "".join(code_with(FIGURE, notebook)["source"])
    assert "show_figure(fig, " in code and "plt.show()" not in code
    # The plotted lists are the printed columns: R@5 of section 4's table, the sweep's first four columns.
    assert 'values = [scores[stage]["recall@5"] for stage in STAGES]' in code
    assert "print_table([[r.threshold, r.unanswerable_abstained, r.judged_answered, r.judged_correct_strict," in \
        "".join(code_with("sweep = threshold_sweep(", notebook)["source"])
    for field in ("unanswerable_abstained", "judged_answered", "judged_correct_strict"):
        assert f"[r.{field} for r in sweep]" in code
    data = plotted(notebook)
    assert list(data["stages"]) == list(STAGES) and len(data["sweep"]) == 9
    assert data["threshold"] in [row[0] for row in data["sweep"]]
    text = stored_figure_description(cells(notebook))
    assert text == described(data)
    values = [list(data["stages"].values()), *([row[i] for row in data["sweep"]] for i in (1, 2, 3)),
              [f"{row[0]:.2f}" for row in data["sweep"]]]                   # the x ticks, printed as .2f
    # Also in the figure: the 5 of "Recall@5" (y label), the question counts of the legend.
    labels = [5, data["unanswerable"], data["judged"]]
    assert numbers_not_plotted(text, values, ".3f", allowed=labels) == []


def test_the_figure_describes_itself_from_the_plotted_values():
    check()
    text = stored_figure_description(cells())
    assert "The highest bar is dense." in text
    assert "unanswerable abstained and judged answered cross between 0.50 and 0.55" in text
