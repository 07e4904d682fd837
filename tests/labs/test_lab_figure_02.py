"""Lab 02's figure describes itself from the values it plots (issue 53; CONTRIBUTING, "A figure describes itself").

The figure (cell "02-recall-at-k-four-setups") draws Recall@k for k = 1 ... CURVE_DEPTH: left, self-retrieval
(TF-IDF on whole pages and on windows, dense on whole pages), right, the judged questions with the summary line
kept (all four setups). The lab prints those curves only at the k of ``KS``, so the figure cell passes them as a
values table; the test reads the plotted values back from that stored table (dense numbers are not recomputed:
``test_dense_numbers.py`` does that), checks them against what the lab printed at ``KS``, rebuilds the
description with the same calls the figure cell makes, and checks that it states no number that is not plotted.
"""
from __future__ import annotations

import ast
import html
import json
import re

from ragcourse.batch.notebooks import lab_notebooks
from ragcourse.toolkit.figures import VALUES_CLASS, describe_series, numbers_not_plotted
from support.notebooks import stored_figure_description

NOTEBOOK = lab_notebooks()[2]
SETUPS = [("tfidf", "whole"), ("tfidf", "chunked"), ("dense", "whole"), ("dense", "chunked")]
NAMES = {setup: f"{'TF-IDF' if setup[0] == 'tfidf' else 'dense'} {setup[1]}" for setup in SETUPS}


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


def stdout(phrase: str) -> str:
    return "".join("".join(o.get("text", "")) for o in code_with(phrase)["outputs"] if o.get("name") == "stdout")


def figure_outputs() -> tuple[dict, dict]:
    """The figure cell's two outputs: the described figure and its values table."""
    outputs = code_with("02-recall-at-k-four-setups")["outputs"]
    assert len(outputs) == 2, [list(o.get("data", {})) for o in outputs]
    figure, values = outputs
    assert "alt" in figure["metadata"]["image/png"]
    assert VALUES_CLASS in "".join(values["data"]["text/html"])
    return figure, values



def stored_table() -> tuple[list[int], dict[str, dict[tuple[str, str], list[float]]]]:
    """The values table under the figure, read from its stored HTML: the depths, and panel -> setup -> curve."""
    markup = "".join(figure_outputs()[1]["data"]["text/html"])
    header = [html.unescape(t) for t in re.findall(r'<th scope="col">(.*?)</th>', markup)]
    rows = [[html.unescape(t) for t in re.findall(r"<td>(.*?)</td>", row)] for row in re.findall(r"<tr>(.*?)</tr>", markup)]
    rows = [row for row in rows if row]          # the header row holds <th> only
    assert header[0] == "k" and all(len(row) == len(header) for row in rows)
    depths = [int(row[0]) for row in rows]
    curves = {"self": {}, "judged": {}}
    for column, title in enumerate(header[1:], start=1):
        panel, name = title.split(", ")
        setup = next(s for s in SETUPS if NAMES[s] == name)
        curves["judged" if panel == "judged" else "self"][setup] = [float(row[column]) for row in rows]
        assert panel in ("self-retrieval", "judged")
    return depths, curves


def described(depths: list[int], curves: dict, summaries: int, judged: int) -> str:
    """The description the figure cell writes, from the plotted values (the same calls)."""
    self_curves, judged_curves = curves["self"], curves["judged"]
    lowest = [s for s, curve in self_curves.items()
              if all(curve[i] < min(c[i] for t, c in self_curves.items() if t != s) for i in range(len(depths)))]
    left = describe_series(f"Left: Recall@k of self-retrieval ({summaries} summaries)", "k (pages returned)", depths,
                           {NAMES[s]: curve for s, curve in self_curves.items()}, fmt=".3f")
    if lowest:
        left += f" {NAMES[lowest[0]]} is the lowest at every k."

    def curve_ends(curve: list[float]) -> str:
        first, last = f"{curve[0]:.3f}", f"{curve[-1]:.3f}"
        return f"rises from {first} to {last}" if last != first else f"stays at {first}"

    dense_ahead = [k for i, k in enumerate(depths) if min(judged_curves["dense", u][i] for u in ("whole", "chunked"))
                   > max(judged_curves["tfidf", u][i] for u in ("whole", "chunked"))]
    right = (f"Right: Recall@k of the judged questions ({judged}), summary kept, against k (pages returned), "
             f"from 1 to {depths[-1]}: "
             + "; ".join(f"{NAMES[s]} {curve_ends(c)}" for s, c in judged_curves.items())
             + ". Both dense curves are above both TF-IDF curves "
             + ("at every k." if dense_ahead == depths
                else f"at k = {', '.join(map(str, dense_ahead))}." if dense_ahead else "at no k."))
    return f"{left} {right}"


def counts() -> tuple[int, int]:
    """The panel titles' counts, as the lab printed them: self-retrieval queries (one per page) and judged questions."""
    pages = int(re.search(r"units: (\d+) whole pages", stdout("searched_windows = chunk_corpus(")).group(1))
    judged = {int(n) for n in re.findall(r"^\S.*?\s+judged\s+(\d+)\s", stdout("print_measures(report_runs"), flags=re.M)}
    assert len(judged) == 1
    return pages, judged.pop()


def test_the_table_is_the_curves_the_lab_printed_at_its_cut_offs():
    depths, curves = stored_table()
    p = parameters()
    assert depths == list(range(1, p["CURVE_DEPTH"] + 1))
    assert list(curves["self"]) == SETUPS[:3] and list(curves["judged"]) == SETUPS
    # Self-retrieval: the lab's "whole-document / chunked recall@k=..." lines, TF-IDF's two then dense's one.
    printed = stdout("print_layout(\"tfidf\")") + stdout("print_layout(\"dense\")")
    lines = re.findall(r"^(?:whole-document|chunked)\s+(.*)$", printed, flags=re.M)
    for setup, line in zip(SETUPS[:3], lines, strict=True):
        values = dict(re.findall(r"recall@(\d+)=([0-9.]+)", line))
        assert [f"{curves['self'][setup][k - 1]:.3f}" for k in p["KS"]] == [values[str(k)] for k in p["KS"]], setup
    # Judged: the R@k columns of the "kept" rows of the judged table.
    table = stdout("JUDGED_COLUMNS = [")
    for (embedding, unit), curve in curves["judged"].items():
        row = re.search(rf"^{embedding}\s+{unit}\s+kept\s+(.*)$", table, flags=re.M).group(1).split()
        assert [f"{curve[k - 1]:.3f}" for k in p["KS"]] == row[1:1 + len(p["KS"])], (embedding, unit)


def test_the_figure_describes_itself_from_the_plotted_values():
    source = "".join(code_with("02-recall-at-k-four-setups")["source"])
    assert "show_figure(fig, " in source and "table=" in source and "plt.show()" not in source
    depths, curves = stored_table()
    summaries, judged = counts()
    text = stored_figure_description(cells())
    assert text == "".join(figure_outputs()[0]["data"]["text/plain"])
    assert text == described(depths, curves, summaries, judged)
    plotted = [depths, *curves["self"].values(), *curves["judged"].values()]
    # Also in the figure: the counts in the two panel titles.
    assert numbers_not_plotted(text, plotted, ".3f", allowed=[summaries, judged]) == []
    # What the caption below the figure reads off it.
    assert "TF-IDF chunked is the lowest at every k." in text                    # "TF-IDF on windows is lowest"
    assert "TF-IDF whole and dense whole cross between 5 and 6." in text          # "passes the dense model between 5 and 10"
    assert text.endswith("Both dense curves are above both TF-IDF curves at every k.")
