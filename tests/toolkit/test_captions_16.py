"""Lesson 16's figure caption against the plotted data, recomputed with the package at the course seed.

The figure (cell "16-table-chunking") draws, left, success@K and answerability of the five chunking modes
side by side and, right, the tokens per request of each mode with its stored tokens written above the bar.
Each test recomputes what cells 6-11 compute, draws the figure cell on that data (Agg backend, nothing
saved), asserts one claim of the caption or of the prose that reads the same numbers, and checks that the
committed notebook still makes the claim, so that a changed caption updates the test.
The figure's description (its output's text and alt, see ``show_figure``) is recomputed from the same data.
"""
from __future__ import annotations

import ast
import json
import warnings
from functools import lru_cache

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ragcourse.batch.notebooks import lesson_notebooks  # noqa: E402
from ragcourse.toolkit.figures import PALETTE, describe_bars, numbers_not_plotted, save_figure  # noqa: E402
from ragcourse.retrieval.search import EmbeddingIndex  # noqa: E402
from ragcourse.world.concepts import SECOND_EDITION  # noqa: E402
from ragcourse.world.corpus import build_world  # noqa: E402
from ragcourse.world.embedding import EmbeddingModel  # noqa: E402
from ragcourse.world.table_source import CELL_SEPARATOR, build_tables  # noqa: E402
from ragcourse.world.text import tokenize  # noqa: E402

NOTEBOOK = lesson_notebooks()[16]
CHUNKING = {"row": lambda t: list(t.rows),
            "block": lambda t: [t.head + " ; " + " ; ".join(t.rows)],
            "row + header": lambda t: [t.head + " ; " + row for row in t.rows],
            "visual": lambda t: [""],
            "visual + description": lambda t: [t.head]}


def cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def markdown_with(phrase: str) -> str:
    """The one markdown cell that contains ``phrase`` (fails if the notebook no longer says it)."""
    found = ["".join(c["source"]) for c in cells() if c["cell_type"] == "markdown" and phrase in "".join(c["source"])]
    assert len(found) == 1, f"the committed notebook no longer says {phrase!r} (in exactly one markdown cell)"
    return found[0]


def code_cell(phrase: str) -> dict:
    found = [c for c in cells() if c["cell_type"] == "code" and phrase in "".join(c["source"])]
    assert len(found) == 1, phrase
    return found[0]


def parameters() -> dict:
    """The literal values of the notebook's parameters cell."""
    tree = ast.parse("".join(code_cell("SEED = 2")["source"]))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body}


@lru_cache(maxsize=None)
def plotted(seed: int | None = None) -> dict:
    """Per mode, as cells 6, 8 and 10 compute it: per-question found / readable / tokens, and the index size."""
    p = parameters()
    seed = p["SEED"] if seed is None else seed
    world = build_world(seed, SECOND_EDITION)
    queries, edition = world.queries, world.edition
    tables = build_tables(seed, world.documents, edition)
    model = EmbeddingModel(edition, projection_seed=seed, dim=p["DIM"])
    out = {}
    for mode, chunker in CHUNKING.items():
        texts = [text for table in tables for text in chunker(table)]
        index = EmbeddingIndex(model, texts)
        found, readable, tokens = [], [], []
        for query in queries:
            top = [texts[i] for i in index.rank(query.text)[:p["K"]]]
            name = edition.concept(query.concept).document_form
            found.append(any(name in text for text in top))
            readable.append(any(name in text and CELL_SEPARATOR in text for text in top))
            tokens.append(sum(len(tokenize(text)) for text in top))
        n = len(queries)
        out[mode] = {"found": found, "readable": readable, "recall": sum(found) / n, "answerable": sum(readable) / n,
                     "chunks": len(texts), "stored": sum(len(tokenize(text)) for text in texts),
                     "per_request": sum(tokens) / n}
    return out


@lru_cache(maxsize=None)
def drawn() -> dict:
    """Run the notebook's figure cell on the recomputed data and read back what it drew."""
    p, data = parameters(), plotted()
    table_results = {mode: {k: v for k, v in r.items() if k not in ("found", "readable")} for mode, r in data.items()}
    shown = []
    namespace = {"plt": plt, "PALETTE": PALETTE, "save_figure": save_figure, "FIGURES_DIR": None, "K": p["K"],
                 "describe_bars": describe_bars,
                 "show_figure": lambda fig, description, **kwargs: shown.append((description, kwargs)),
                 "table_results": table_results, "queries": [None] * len(data["row"]["found"])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec("".join(code_cell("16-table-chunking")["source"]), namespace)
    assert len(shown) == 1, "the figure cell shows its figure once, with show_figure"
    fig = namespace["fig"]
    left, right = fig.axes[:2]
    success, answerable = left.containers
    (tokens,) = right.containers
    out = {"left_ticks": [t.get_text() for t in left.get_xticklabels()],
           "success": [(r.get_x() + r.get_width() / 2, r.get_height()) for r in success],
           "answerable": [(r.get_x() + r.get_width() / 2, r.get_height()) for r in answerable],
           "legend": [t.get_text() for t in left.get_legend().get_texts()],
           "tokens": [(r.get_x() + r.get_width() / 2, r.get_height()) for r in tokens],
           "token_labels": [(a.xy, a.get_text()) for a in right.texts], "left_ylabel": left.get_ylabel(),
           "description": shown[0][0], "show_kwargs": shown[0][1]}
    plt.close(fig)
    return out


def test_the_recomputed_numbers_are_what_the_notebook_printed():
    printed = "".join("".join(o.get("text", "")) for o in code_cell("for mode in CHUNKING:\n    report(mode)")["outputs"])
    for mode, r in plotted().items():
        assert (f"{mode:<21} {r['recall']:>6.4f} {r['answerable']:>10.4f} {r['chunks']:>12}"
                f" {r['stored']:>13} {r['per_request']:>18.1f}") in printed, mode


def test_left_panel_success_and_answerability_per_mode_side_by_side():
    markdown_with("Left: success and answerability per mode;")
    d = drawn()
    assert [t.replace("\n", " ") for t in d["left_ticks"]] == list(CHUNKING)
    assert d["legend"] == [f"success@{parameters()['K']} (recall)", "answerable"]
    for i, mode in enumerate(CHUNKING):
        (x_success, h_success), (x_answer, h_answer) = d["success"][i], d["answerable"][i]
        assert x_success < x_answer                                   # success left, answerability right of it
        assert (h_success, h_answer) == (plotted()[mode]["recall"], plotted()[mode]["answerable"])


def test_the_gap_between_the_bars_is_a_table_found_but_not_readable():
    markdown_with("the gap between the two bars is a table found but not readable")
    for mode, r in plotted().items():
        assert all(found for found, readable in zip(r["found"], r["readable"]) if readable), mode
        found_not_readable = sum(found and not readable for found, readable in zip(r["found"], r["readable"]))
        assert r["recall"] - r["answerable"] == found_not_readable / len(r["found"]), mode
    gaps = {mode: r["recall"] - r["answerable"] for mode, r in plotted().items()}
    assert [mode for mode, gap in gaps.items() if gap] == ["visual + description"]
    assert (plotted()["visual + description"]["recall"], plotted()["visual + description"]["answerable"]) == (0.95, 0.0)


def test_right_panel_tokens_per_request_with_stored_tokens_above_each_bar():
    markdown_with("Right: tokens per request, with the tokens stored in the index written above each bar.")
    d = drawn()
    assert [h for _, h in d["tokens"]] == [plotted()[mode]["per_request"] for mode in CHUNKING]
    assert len(d["token_labels"]) == len(CHUNKING)
    for (x, h), (xy, text), mode in zip(d["tokens"], d["token_labels"], CHUNKING):
        assert xy == (x, h)                                           # anchored on the top of its own bar
        assert text == f"{plotted()[mode]['per_request']:.1f}\nstored {plotted()[mode]['stored']}"


def test_only_the_empty_images_put_fewer_tokens_into_the_prompt_than_rows():
    markdown_with("only the empty images put fewer into the prompt")
    per_request = {mode: r["per_request"] for mode, r in plotted().items()}
    assert sorted(per_request, key=per_request.get)[:2] == ["visual", "row"]
    assert per_request["visual"] == 0.0


def test_block_costs_most_per_request_over_five_times_the_row_mode():
    markdown_with("88.7 tokens per request, over five times the row mode")
    per_request = {mode: r["per_request"] for mode, r in plotted().items()}
    assert max(per_request, key=per_request.get) == "block"
    assert 5 < per_request["block"] / per_request["row"] < 6


def test_row_plus_header_stores_more_and_puts_fewer_tokens_into_a_request_on_average():
    markdown_with("Row + header puts fewer tokens into a request on average")
    markdown_with("Storage goes up while the per-request cost goes down")
    block, with_header = plotted()["block"], plotted()["row + header"]
    assert with_header["stored"] > block["stored"]
    assert max(plotted(), key=lambda mode: plotted()[mode]["stored"]) == "row + header"
    assert f"{block['per_request'] - with_header['per_request']:.1f}" == "50.2"


def test_a_description_lifts_success_not_answerability():
    markdown_with("a description lifted success from 0.0000 to 0.9500 while answerability stayed at 0.0000")
    visual, described = plotted()["visual"], plotted()["visual + description"]
    assert (visual["recall"], described["recall"]) == (0.0, 0.95)
    assert visual["answerable"] == described["answerable"] == 0.0


def described_output() -> dict:
    """The committed figure cell's output whose metadata gives the PNG its alt text (exactly one)."""
    found = [o for o in code_cell("16-table-chunking")["outputs"] if o.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(found) == 1, "the figure cell ends with show_figure(fig, description)"
    return found[0]


def expected_description() -> str:
    """The figure's description, written from the recomputed data with the notebook's describe call."""
    data, k, modes = plotted(), parameters()["K"], list(CHUNKING)
    success, answerable = [data[m]["recall"] for m in modes], [data[m]["answerable"] for m in modes]
    tokens, stored = [data[m]["per_request"] for m in modes], [data[m]["stored"] for m in modes]
    found_not_read = [m for m, s, a in zip(modes, success, answerable) if f"{s:.4f}" != f"{a:.4f}"]
    return (describe_bars(f"Left: share of {len(data['row']['found'])} questions, top {k}", modes,
                          {f"success@{k}": success, "answerable": answerable}, fmt=".4f")
            + (f" Only {' and '.join(found_not_read)} finds a table it cannot read." if found_not_read
               else " No mode finds a table it cannot read.")
            + " Right: tokens per request, with the tokens stored in the index above each bar: "
            + "; ".join(f"{m} {t:.1f} (stored {s})" for m, t, s in zip(modes, tokens, stored))
            + f". Most per request: {modes[tokens.index(max(tokens))]}; most stored: {modes[stored.index(max(stored))]}.")


def test_the_figure_describes_itself_from_the_plotted_values():
    output = described_output()
    description = "".join(output["data"]["text/plain"])
    assert output["metadata"]["image/png"]["alt"] == description
    # (b) each panel states only numbers that panel draws, as the notebook prints them: rates .4f, tokens
    # per request .1f, stored tokens as integers; the left panel's axis label gives the question count and K.
    d, k, questions = drawn(), parameters()["K"], len(plotted()["row"]["found"])
    left_text, right_text = description.split(" Right: ")
    assert d["left_ylabel"] == f"share of {questions} questions, top {k}"
    assert numbers_not_plotted(left_text, [[h for _, h in d["success"]], [h for _, h in d["answerable"]]], ".4f",
                               allowed=[questions, k]) == []
    assert numbers_not_plotted(right_text, [[h for _, h in d["tokens"]], [plotted()[m]["stored"] for m in CHUNKING]],
                               ".1f") == []
    # (a) it is the description recomputed from the data, and the figure cell writes the same from it
    assert description == expected_description() == d["description"]
    assert "Only visual + description finds a table it cannot read." in description
    assert "Most per request: block; most stored: row + header." in description
    # the plotted values are printed as a table above (cell 11), so no values table follows the figure
    assert d["show_kwargs"] == {} and len(code_cell("16-table-chunking")["outputs"]) == 1
