"""Lesson 13's figure captions against the plotted data, recomputed with the package at the course seed.

The figure (cell "13-generation-by-position") draws, left, the grounded-answer rate of the three layouts
against the number ``j`` of irrelevant chunks (hollow markers: the second run at ``SEED + 1``) and, right,
success@k, the grounded-answer rate and the refused share against ``k``, with the dashed budget line.
Each test recomputes what the notebook's cells compute, asserts one claim of the caption (the markdown
above the figure, the one below it, and the table reading that describes the same left-panel values), and
checks that the committed notebook still makes the claim, so that a changed caption updates the test.
"""
from __future__ import annotations

import ast
import colorsys
import json
from functools import lru_cache

import pytest

from ragcourse.batch.notebooks import lesson_notebooks
from ragcourse.toolkit.figures import PALETTE, describe_series, numbers_not_plotted
from ragcourse.retrieval.candidates import candidate_lists, generation_share, recall_at
from ragcourse.retrieval.pipeline import CosineJaccardRetriever, index_chunks, is_relevant
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.llm import ChunkAnswerer
from ragcourse.world.prompts import ANSWER_INSTRUCTION
from ragcourse.world.text import tokenize
from support.notebooks import stored_figure_description

NOTEBOOK = lesson_notebooks()[13]
LAYOUTS = ("head", "middle", "tail")


def cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def markdown_with(phrase: str) -> str:
    """The one markdown cell that contains ``phrase`` (fails if the caption no longer says it)."""
    found = ["".join(c["source"]) for c in cells() if c["cell_type"] == "markdown" and phrase in "".join(c["source"])]
    assert len(found) == 1, f"the committed notebook no longer says {phrase!r} (in exactly one markdown cell)"
    return found[0]


def code_with(phrase: str) -> str:
    found = ["".join(c["source"]) for c in cells() if c["cell_type"] == "code" and phrase in "".join(c["source"])]
    assert len(found) == 1, phrase
    return found[0]


def parameters() -> dict:
    """The literal values of the notebook's parameters cell."""
    tree = ast.parse(code_with("SEED = 2"))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body}


@lru_cache(maxsize=None)
def plotted(seed: int | None = None) -> dict:
    """The figure's data, computed as cells 6-18 compute it (``seed`` replaces the course seed)."""
    p = parameters()
    seed = p["SEED"] if seed is None else seed
    world = build_world(seed, SECOND_EDITION)
    queries, edition = world.queries, world.edition
    embedding = EmbeddingModel(edition, seed)
    chunks = index_chunks(paragraph_chunks(world.documents, edition), embedding)
    pool = candidate_lists(CosineJaccardRetriever(embedding, chunks), queries, max(p["POOL"], max(p["CHUNK_COUNTS"])))

    # Right panel: cells 8, 10 and 12.
    per_chunk = sum(len(tokenize(f"[{c.code}] {c.text} .")) for c in chunks) / len(chunks)
    per_query = sum(len(tokenize(q.text)) for q in queries) / len(queries)
    budget = (p["WINDOW"] - len(tokenize(ANSWER_INSTRUCTION)) - per_query) / per_chunk
    by_k = {}
    for k in p["CHUNK_COUNTS"]:
        model = ChunkAnswerer(edition, seed, temperature=p["TEMPERATURE"], window=p["WINDOW"])
        contexts = [candidates[:k] for candidates in pool]
        cited = [model.answer(q.text, context).chunk for q, context in zip(queries, contexts)]
        by_k[k] = {"success": recall_at(contexts, queries, edition, k),
                   "generation": generation_share(cited, queries, edition),
                   "overflow": cited.count(None) / len(queries)}

    # Left panel: cells 16 and 18 (the generation shares only; the re-seeded head does not enter the plot).
    relevant_first = [next((c for c in cands[:p["POOL"]] if is_relevant(c, q, edition)), None)
                      for q, cands in zip(queries, pool)]
    irrelevant = [[c for c in cands[:p["POOL"]] if not is_relevant(c, q, edition)] for q, cands in zip(queries, pool)]

    def layout_generation(j: int, model_seed: int) -> dict[str, float]:
        model = ChunkAnswerer(edition, model_seed, temperature=p["TEMPERATURE"], window=p["WINDOW"])
        cited = {name: [] for name in LAYOUTS}
        for q, good, others in zip(queries, relevant_first, irrelevant):
            others, split = others[:j], j // 2
            orders = {"head": [good] + others, "middle": others[:split] + [good] + others[split:],
                      "tail": others + [good]}
            for name in LAYOUTS:
                cited[name].append(None if good is None else model.answer(q.text, orders[name]).chunk)
        return {name: generation_share(cited[name], queries, edition) for name in LAYOUTS}

    return {"queries": len(queries), "budget": budget, "by_k": by_k,
            "by_j": {j: layout_generation(j, seed) for j in p["IRRELEVANT_COUNTS"]},
            "second": layout_generation(p["REPEAT_IRRELEVANT"], seed + 1)}


def stored_rows(phrase: str) -> list[list[float]]:
    """The numeric rows a code cell printed (header and text lines skipped)."""
    cell = next(c for c in cells() if c["cell_type"] == "code" and phrase in "".join(c["source"]))
    rows = []
    for line in "".join("".join(o.get("text", "")) for o in cell["outputs"]).splitlines():
        words = line.replace("|", " ").split()
        if words and all(w.replace(".", "", 1).isdigit() for w in words):
            rows.append([float(w) for w in words])
    return rows


def test_the_recomputed_data_is_what_the_notebook_printed():
    data = plotted()
    assert [[k, round(r["success"], 4), round(r["generation"], 4)] for k, r in data["by_k"].items()] == \
        [[row[0], row[4], row[5]] for row in stored_rows("by_count = {k: run_chunk_count(k)")]
    assert [[j] + [round(r[name], 4) for name in LAYOUTS] for j, r in data["by_j"].items()] == \
        [row[:4] for row in stored_rows("by_layout = {j: layout_experiment(j, SEED)")]


def hls(colour: str) -> tuple[float, float, float]:
    return colorsys.rgb_to_hls(*(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)))


def test_left_panel_is_a_share_of_the_forty_questions():
    markdown_with("as a share of the 40 questions")
    markdown_with("Hollow markers: the second run at `SEED + 1`")
    data = plotted()
    assert data["queries"] == 40
    values = [data["by_j"][j][name] for j in data["by_j"] for name in LAYOUTS]
    values += list(data["second"].values())
    assert all(0.0 <= v <= 1.0 for v in values)
    assert "REPEAT_IRRELEVANT], [second_run" in code_with("13-generation-by-position")


def check_middle_far_below(data: dict) -> None:
    """Together at j = 0; from the first pair (j = 2) on, the middle at least 0.25 below both others."""
    assert len({data["by_j"][0][name] for name in LAYOUTS}) == 1
    rows = [row for j, row in data["by_j"].items() if j >= 2] + [data["second"]]
    assert rows and min(j for j in data["by_j"] if j > 0) == 2
    for row in rows:
        assert min(row["head"], row["tail"]) - row["middle"] >= 0.25, row


def test_middle_line_far_below_the_other_two_from_the_first_irrelevant_pair_on():
    markdown_with("the middle line far below the other two from the first irrelevant pair on")
    check_middle_far_below(plotted())


def test_head_falls_with_j_beyond_the_second_run_while_the_middle_does_not():
    text = markdown_with("The head falls at each step (0.8250, 0.7750, 0.6500)")
    assert "so this one run does not show it falling" in text
    data, repeat = plotted(), parameters()["REPEAT_IRRELEVANT"]
    shift = {name: abs(data["second"][name] - data["by_j"][repeat][name]) for name in LAYOUTS}
    head = [data["by_j"][j]["head"] for j in data["by_j"] if j >= 2]
    middle = [data["by_j"][j]["middle"] for j in data["by_j"] if j >= 2]
    assert all(a - b > shift["head"] for a, b in zip(head, head[1:]))
    assert data["by_j"][4]["tail"] - data["by_j"][2]["tail"] > shift["tail"]
    assert all(abs(a - b) <= shift["middle"] + 1e-12 for a, b in zip(middle, middle[1:]))
    assert [round(v, 4) for v in head] == [0.8250, 0.7750, 0.6500]


def test_success_and_generation_part_ways_long_before_the_bars():
    markdown_with("the light-blue success line and the orange generation line part ways long before the grey bars")
    markdown_with("Right: success and generation against the number of chunks in the prompt")
    by_k = plotted()["by_k"]
    ks = list(by_k)
    assert by_k[ks[0]]["success"] == by_k[ks[0]]["generation"]              # the two lines start together
    apart = next(i for i, k in enumerate(ks) if by_k[k]["success"] != by_k[k]["generation"])
    first_bar = next(i for i, k in enumerate(ks) if by_k[k]["overflow"] > 0)
    assert first_bar - apart >= 3                                          # three or more ticks earlier
    assert all(by_k[k]["success"] > by_k[k]["generation"] for k in ks[apart:])
    last_clear = ks[first_bar - 1]
    assert by_k[last_clear]["success"] - by_k[last_clear]["generation"] >= 0.3


def test_the_bars_start_before_the_dashed_budget_line():
    markdown_with("the bars start before the dashed budget line")
    data = plotted()
    first_bar = next(k for k, row in data["by_k"].items() if row["overflow"] > 0)
    assert first_bar < data["budget"]
    assert round(data["budget"], 1) == 13.4
    assert 'linestyle="--"' in code_with("by_k.axvline(chunks_that_fit")


def test_the_title_success_up_grounded_answers_down():
    by_k = plotted()["by_k"]
    first, last = by_k[min(by_k)], by_k[max(by_k)]
    assert last["success"] > first["success"] and last["generation"] < first["generation"]
    assert "success up, grounded answers down" in code_with("13-generation-by-position")


@pytest.mark.parametrize("role, label, hue_range, light", [
    ("second", "success@k", (180, 220), True),       # light blue
    ("keyword", "generation", (25, 50), None),      # orange
])
def test_the_named_colours(role, label, hue_range, light):
    markdown_with("the light-blue success line and the orange generation line")
    code = code_with("13-generation-by-position")
    assert f'color=PALETTE["{role}"]' in code and f'label="{label}"' in code
    hue, lightness, saturation = hls(PALETTE[role])
    assert hue_range[0] <= hue * 360 <= hue_range[1] and saturation > 0.5
    if light:
        assert lightness > 0.55
    grey_hue, grey_lightness, grey_saturation = hls(PALETTE["neutral"])
    assert grey_saturation == 0.0 and 'color=PALETTE["neutral"], alpha=0.45, label="requests over the window"' in code



def described(data: dict, p: dict) -> str:
    """The description the figure cell writes, from the recomputed plotted values (the same describe calls)."""
    js, ks, n = p["IRRELEVANT_COUNTS"], p["CHUNK_COUNTS"], data["queries"]
    layout = {name: [data["by_j"][j][name] for j in js] for name in LAYOUTS}
    success = [data["by_k"][k]["success"] for k in ks]
    generation = [data["by_k"][k]["generation"] for k in ks]
    refused = [(k, data["by_k"][k]["overflow"]) for k in ks if data["by_k"][k]["overflow"] > 0]
    middle_lowest = [j for j, head, middle, tail in zip(js, *layout.values()) if middle < min(head, tail)]
    equal = [k for k, s, g in zip(ks, success, generation) if f"{s:.4f}" == f"{g:.4f}"]
    left = (describe_series(f"Left: share of {n} questions answered from the relevant chunk at the head, middle or tail,",
                            "irrelevant chunks added (j)", js, layout, fmt=".4f")
            + (f" The middle line is the lowest at j = {', '.join(map(str, middle_lowest))}." if middle_lowest else "")
            + f" Hollow markers, seed {p['SEED'] + 1} at j = {p['REPEAT_IRRELEVANT']}: "
            + ", ".join(f"{name} {data['second'][name]:.4f}" for name in LAYOUTS) + ".")
    right = (describe_series(f"Right: share of {n} questions", "chunks in the prompt (k)", ks,
                             {"success@k": success, "generation": generation}, fmt=".4f")
             + (f" The two lines are equal only at k = {', '.join(map(str, equal))}." if equal else "")
             + (f" Grey bars, requests over the window, at k = {', '.join(str(k) for k, _ in refused)}: "
                + ", ".join(f"{share:.4f}" for _, share in refused) + "."
                if refused else " No request is over the window (no grey bars).")
             + f" Dashed vertical line: the budget, {data['budget']:.1f} chunks.")
    return f"{left} {right}"


def test_the_figure_describes_itself_from_the_plotted_values():
    code = code_with("13-generation-by-position")
    assert "show_figure(fig, " in code and "plt.show()" not in code
    data, p = plotted(), parameters()
    text = stored_figure_description(cells())
    assert text == described(data, p)
    values = [p["IRRELEVANT_COUNTS"], p["CHUNK_COUNTS"], [data["second"][name] for name in LAYOUTS]]
    values += [[data["by_j"][j][name] for j in data["by_j"]] for name in LAYOUTS]
    values += [[row[key] for row in data["by_k"].values()] for key in ("success", "generation", "overflow")]
    # Also in the figure: the 40 of the axis labels, the second run's seed (legend), the budget (annotation).
    labels = [data["queries"], p["SEED"] + 1, f"{data['budget']:.1f}"]
    assert numbers_not_plotted(text, values, ".4f", allowed=labels) == []
    assert "The middle line is the lowest at j = 2, 4, 8." in text       # the caption's "far below ... from the first pair on"
    assert "The two lines are equal only at k = 1." in text               # "part ways long before the grey bars"
