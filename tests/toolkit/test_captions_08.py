"""Lesson 08's figure (what each preparation level stores, finds and answers, what the filter deletes).

The four levels and the threshold sweep are recomputed with the package as cells 6, 10, 12, 14 and 18
of the notebook compute them, at the course seed, and every claim the caption (and the lesson's reading
of the same numbers) makes about the three panels is checked against them. Each claim's key phrase is
looked up in the committed notebook, so that a changed caption makes this file fail until it is
updated too.
"""
import json

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import describe_bars, numbers_not_plotted
from ragcourse.retrieval.linking import run_linking
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, tag_chunk
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.sources import CODE_FIELD_PREFIX, FORM_HEADER, PAGE_FOOTER, is_continuation, raw_sources
from ragcourse.world.text import tokenize

NOTEBOOK = NOTEBOOKS_DIR / "08-document-preparation.ipynb"
FIGURE_NAME = '"08-preparation-levels"'
SEED, K, THRESHOLD, SPLIT_SHARE = 20260218, 3, 3, 0.45     # the notebook's parameter cell
LEVELS = ("raw block", "line-based", "repeat filter", "structure-aware")


def merge_continuations(lines):                              # cell 10
    merged = []
    for line in lines:
        if is_continuation(line) and merged:
            merged[-1] += " " + line.strip()
        else:
            merged.append(line)
    return merged


def figure_data(seed):
    """What cell 20 plots: chunks per level, success and generation per level, lost links per threshold."""
    world = build_world(seed, SECOND_EDITION)
    documents, queries, edition = world.documents, world.queries, world.edition
    sheets = raw_sources(documents, seed, SPLIT_SHARE)
    sheet_counts = {}
    for lines in sheets:
        for line in set(merge_continuations(lines)):
            sheet_counts[line] = sheet_counts.get(line, 0) + 1

    def prepare(level, threshold=THRESHOLD):                 # cell 12
        chunks, dropped = [], []
        for document, lines in zip(documents, sheets):
            if level == "raw block":
                texts = [" ".join(lines)]
            elif level == "line-based":
                texts = [line.strip() for line in lines]
            elif level == "repeat filter":
                merged = merge_continuations(lines)
                texts = [line for line in merged if sheet_counts[line] < threshold]
                dropped += [line for line in merged if sheet_counts[line] >= threshold]
            else:
                furniture = (FORM_HEADER, PAGE_FOOTER, document.title)
                texts = [line for line in merge_continuations(lines)
                         if line not in furniture and not line.startswith(CODE_FIELD_PREFIX)]
            chunks += [tag_chunk(document, text, edition) for text in texts]
        return chunks, dropped

    def links(chunks):
        return {(chunk.code, concept) for chunk in chunks for concept in chunk.concepts}

    model = EmbeddingModel(edition, projection_seed=seed)     # cell 14
    prepared = {level: prepare(level)[0] for level in LEVELS}
    runs = {level: run_linking(prepared[level], queries, model, seed, k=K) for level in LEVELS}
    stored = {level: sum(len(tokenize(chunk.text)) for chunk in prepared[level]) for level in LEVELS}
    full_links = links(prepared["structure-aware"])           # cell 18
    sweep = {}
    for threshold in sorted({max(THRESHOLD - 1, 2), THRESHOLD, THRESHOLD + 1}):
        kept, dropped = prepare("repeat filter", threshold)
        kept_links = links(kept)
        run = run_linking(kept, queries, model, seed, k=K)
        sweep[threshold] = {"lost": len(full_links - kept_links),
                            "no-main": sum((d.code, d.main) not in kept_links for d in documents),
                            "dropped tokens": sum(len(tokenize(line)) for line in dropped),
                            "recall": run.recall, "generation": run.generation}
    return {"chunks": {level: len(prepared[level]) for level in LEVELS}, "stored": stored,
            "runs": runs, "full_links": len(full_links), "sweep": sweep, "requests": len(queries)}


@pytest.fixture(scope="module")
def data():
    return figure_data(SEED)


def fold(cell):
    """A markdown cell's text with its whitespace folded to single spaces."""
    return " ".join("".join(cell["source"]).split())


@pytest.fixture(scope="module")
def text():
    """The figure's code, its introduction (markdown before), its caption (markdown after), the summary."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    index = next(i for i, cell in enumerate(cells)
                 if cell["cell_type"] == "code" and FIGURE_NAME in "".join(cell["source"]))
    before = next(c for c in reversed(cells[:index]) if c["cell_type"] == "markdown")
    after = next(c for c in cells[index + 1:] if c["cell_type"] == "markdown")
    summary = next(c for c in cells if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## Summary"))
    return {"code": "".join(cells[index]["source"]), "intro": fold(before), "caption": fold(after),
            "summary": fold(summary)}


def test_line_based_holds_by_far_the_most_vectors(data, text):
    assert "Left, the storage bill: line-based splitting holds by far the most vectors." in text["caption"]
    chunks = data["chunks"]
    others = sorted((n for level, n in chunks.items() if level != "line-based"), reverse=True)
    assert chunks["line-based"] > 2 * others[0]
    assert chunks == {"raw block": 200, "line-based": 1805, "repeat filter": 695, "structure-aware": 693}


def test_raw_block_has_the_best_success_bar_and_an_empty_generation_bar(data, text):
    assert "the raw block has the best success bar and an empty generation bar" in text["caption"]
    runs = data["runs"]
    assert all(runs["raw block"].recall > runs[level].recall for level in LEVELS[1:])
    assert runs["raw block"].generation == 0.0
    assert all(runs[level].generation > 0.0 for level in LEVELS[1:])


def test_only_the_raw_block_overflows_and_any_smaller_split_reaches_the_same_generation(data, text):
    assert "line-based splitting, which joins and removes nothing, gets it too" in text["summary"]
    assert "(overflow **0.00** against **1.00**)" in text["summary"]
    assert "of calls overflow" in text["code"]                # the figure writes the overflow on the bar
    runs = data["runs"]
    assert runs["raw block"].overflow == 1.0
    assert all(runs[level].overflow == 0.0 for level in LEVELS[1:])
    assert len({runs[level].generation for level in LEVELS[1:]}) == 1
    assert f"{runs['line-based'].generation:.4f}" == "0.9250"


def test_every_lost_link_bar_stays_under_the_dashed_line_of_all_links(data, text):
    assert "against the dashed line of all links in the clean corpus" in text["caption"]
    assert "labels also give the documents left without their main concept" in text["caption"]
    assert data["full_links"] == 568
    assert all(0 < row["lost"] < data["full_links"] for row in data["sweep"].values())
    assert [(row["lost"], row["no-main"]) for row in data["sweep"].values()] == [(283, 60), (96, 8), (17, 0)]


def test_the_damage_shrinks_as_the_threshold_rises(data, text):
    assert "Raise it to 4 and the damage shrinks to **17** links and no document" in text["intro"]
    assert "**283** links, half of the corpus's links" in text["intro"]
    assert "more than the 8985 the clean corpus stores" in text["intro"]
    sweep = data["sweep"]
    assert list(sweep) == [2, 3, 4]
    lost = [row["lost"] for row in sweep.values()]
    assert lost == sorted(lost, reverse=True) and len(set(lost)) == 3
    assert round(sweep[2]["lost"] / data["full_links"], 1) == 0.5
    assert sweep[2]["dropped tokens"] > data["stored"]["structure-aware"] == 8985


def test_success_and_generation_stay_the_same_at_all_three_thresholds(data, text):
    assert "Success and generation stay the same at all three thresholds." in text["caption"]
    sweep = data["sweep"]
    assert len(sweep) == 3
    assert len({row["recall"] for row in sweep.values()}) == 1
    assert len({row["generation"] for row in sweep.values()}) == 1


def stored_description():
    """The committed figure output's description: its text/plain, which is also the PNG's alt."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    described = [output for cell in cells if cell["cell_type"] == "code" for output in cell.get("outputs", [])
                 if output.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(described) == 1, "one described figure"
    text = "".join(described[0]["data"]["text/plain"])
    assert described[0]["metadata"]["image/png"]["alt"] == text
    return text


def description(data):
    """Cell 20's description, written the same way (the same describe_bars call) from the recomputed panels."""
    runs, sweep = data["runs"], data["sweep"]
    stored = "; ".join(f"{level} {data['chunks'][level]} ({data['stored'][level]} tokens)" for level in LEVELS)
    quality = describe_bars(f"Middle: bars of the share of {data['requests']} requests per level (top {K} chunks)", LEVELS,
                            {f"success@{K} (retrieval)": [runs[level].recall for level in LEVELS],
                             "generation": [runs[level].generation for level in LEVELS]}, fmt=".4f")
    overflow = "".join(f" Written on the {level} generation bar: {runs[level].overflow:.0%} of calls overflow."
                       for level in LEVELS if runs[level].overflow)
    loss = "; ".join(f"threshold {t}, {row['lost']} links and {row['no-main']} documents" for t, row in sweep.items())
    return (f"Left: bars of the stored chunks (one vector each) per preparation level: {stored}."
            f" {quality}{overflow} Right: bars of the concept-document links the repeat filter deletes"
            f" at each threshold (drop a line found on this many sheets), below a dashed line at all"
            f" {data['full_links']} links, with the documents left without their main concept: {loss}.")


def test_the_figure_describes_itself_from_the_plotted_values(data):
    stored = stored_description()
    assert stored == description(data)
    left, rest = stored.split(" Middle: ")
    middle, right = rest.split(" Right: ")
    runs, sweep = data["runs"], data["sweep"]
    assert numbers_not_plotted(left, [list(data["chunks"].values()), list(data["stored"].values())]) == []
    overflow_labels = [f"{runs[level].overflow:.0%}".rstrip("%") for level in LEVELS if runs[level].overflow]
    assert overflow_labels == ["100"]                         # the figure writes "100% of calls overflow"
    assert numbers_not_plotted(middle, [[runs[level].recall for level in LEVELS], [runs[level].generation for level in LEVELS]],
                               ".4f", allowed=[data["requests"], K, *overflow_labels]) == []
    assert numbers_not_plotted(right, [list(sweep), [row["lost"] for row in sweep.values()],
                                       [row["no-main"] for row in sweep.values()], data["full_links"]]) == []
