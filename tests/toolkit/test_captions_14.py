"""Lesson 14's figure caption against the plotted data, recomputed with the package at the course seed.

The figure (cell "14-contingency") draws one 2 x 2 grid of box counts per setup: the no-retrieval
baseline, then the ``COMPARED`` context sizes, each titled with its single number (answer accuracy).
Each test recomputes the box counts as the notebook's cells do, asserts one claim of the caption or of
the prose that reads the same boxes, and checks that the committed notebook still makes the claim.
"""
from __future__ import annotations

import ast
import json
from functools import lru_cache

from ragcourse.batch.notebooks import lesson_notebooks
from ragcourse.toolkit.figures import numbers_not_plotted
from ragcourse.retrieval.search import EmbeddingIndex
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.llm import ClassPriorGenerator
from support.notebooks import stored_figure_description

NOTEBOOK = lesson_notebooks()[14]
BOXES = ("right+right", "right+wrong", "wrong+right", "wrong+wrong")


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
    """Per setup drawn (0, then COMPARED): each question's box, as cells 6, 8 and 12 compute it."""
    p = parameters()
    seed = p["SEED"] if seed is None else seed
    world = build_world(seed, SECOND_EDITION)
    queries, edition = world.queries, world.edition
    chunks = paragraph_chunks(world.documents, edition)
    index = EmbeddingIndex(EmbeddingModel(edition, projection_seed=seed, dim=p["DIM"]), [c.text for c in chunks])
    deepest = max(p["CHUNK_COUNTS"] + p["COMPARED"])
    ranked = [[chunks[i] for i in index.rank(q.text)[:deepest]] for q in queries]
    boxes = {}
    for k in (0, *p["COMPARED"]):
        generator = ClassPriorGenerator(edition, seed, temperature=p["TEMPERATURE"])
        row = []
        for q, best in zip(queries, ranked):
            context = best[:k]
            got_chunk = any(edition.concept(q.concept).document_form in c.text for c in context)
            got_answer = generator.generate(q.text, [c.text for c in context]).concept == q.concept
            row.append(BOXES[(0 if got_chunk else 2) + (0 if got_answer else 1)])
        boxes[k] = row
    return boxes


def counts(row: list[str]) -> dict[str, int]:
    return {box: row.count(box) for box in BOXES}


def single_number(row: list[str]) -> float:
    return (row.count("right+right") + row.count("wrong+right")) / len(row)


def test_the_recomputed_boxes_are_what_the_notebook_printed():
    printed = {}
    for line in "".join("".join(o.get("text", "")) for o in code_cell("first_run = {k: run_setup")["outputs"]).splitlines():
        words = line.split()
        if words[:2] == ["no", "retrieval"]:
            printed[0] = [int(w) for w in words[2:6]]
        elif words[:1] == ["k"]:
            printed[int(words[2])] = [int(w) for w in words[3:7]]
    for k, row in plotted().items():
        assert [counts(row)[box] for box in BOXES] == printed[k], k


def test_one_grid_per_setup_baseline_first_then_compared():
    markdown_with("The no-retrieval baseline is drawn first for reference; the others are the `COMPARED` context sizes.")
    markdown_with("One 2 × 2 grid per setup: rows say whether the right chunk arrived, columns whether the answer")
    code = "".join(code_cell("14-contingency")["source"])
    assert "panels = [0, *COMPARED]" in code
    assert 'grid = [[counts[k]["right+right"], counts[k]["right+wrong"]],' in code
    assert '[counts[k]["wrong+right"], counts[k]["wrong+wrong"]]]' in code
    assert list(plotted()) == [0, *parameters()["COMPARED"]]
    assert all(len(row) == 40 for row in plotted().values())          # each question in exactly one box


def test_equal_single_numbers_in_the_titles_different_cells_below():
    markdown_with("Equal single numbers in the titles, different cells below them.")
    compared = [plotted()[k] for k in parameters()["COMPARED"]]
    titles = {f"{single_number(row):.3f}" for row in compared}
    assert len(titles) == 1, titles
    assert len({tuple(counts(row).values()) for row in compared}) == len(compared)


def test_baseline_right_answers_are_all_lucky_guesses():
    markdown_with("Fifteen right answers, and every one of them sits in the *wrong+right* box.")
    markdown_with("the table puts all fifteen in the lucky-guess box")
    assert counts(plotted()[0]) == {"right+right": 0, "right+wrong": 0, "wrong+right": 15, "wrong+wrong": 25}
    assert '["lucky guess", "retrieval fault"]' in "".join(code_cell("14-contingency")["source"])


def test_the_same_two_misses_move_from_wrong_wrong_to_right_wrong():
    text = markdown_with("the same two misses move to *right+wrong*")
    assert "With three chunks the two misses are *wrong+wrong*" in text
    few, many = plotted()[3], plotted()[5]
    assert counts(few) == {"right+right": 38, "right+wrong": 0, "wrong+right": 0, "wrong+wrong": 2}
    assert counts(many) == {"right+right": 38, "right+wrong": 2, "wrong+right": 0, "wrong+wrong": 0}
    missed_few = [i for i, box in enumerate(few) if box != "right+right"]
    assert missed_few == [i for i, box in enumerate(many) if box != "right+right"]
    assert '[["pipeline worked", "generation fault"]' in "".join(code_cell("14-contingency")["source"])



MEANING = (("pipeline worked", "generation fault"), ("lucky guess", "retrieval fault"))


def described(boxes: dict[int, list[str]], compared: tuple[int, ...]) -> str:
    """The description the figure cell writes, from the recomputed grids (the same f-strings)."""
    panels = []
    for k, row in boxes.items():
        c = counts(row)
        grid = [[c["right+right"], c["right+wrong"]], [c["wrong+right"], c["wrong+wrong"]]]
        title = "no retrieval" if k == 0 else f"{k} chunks"
        panels.append(f"{title[0].upper()}{title[1:]}, single number {single_number(row):.4f}: "
                      + ", ".join(f"{MEANING[r][col]} {grid[r][col]}" for r in range(2) for col in range(2)) + ".")
    n = len(next(iter(boxes.values())))
    text = (f"One grid per setup, counting the {n} questions. Rows: right chunk, no right chunk; columns:"
            f" answer right, answer wrong; the boxes, row by row: {', '.join(MEANING[0] + MEANING[1])}. "
            + " ".join(panels))
    if (len(compared) > 1 and len({f"{single_number(boxes[k]):.4f}" for k in compared}) == 1
            and len({tuple(counts(boxes[k]).values()) for k in compared}) > 1):
        text += f" {' and '.join(f'{k} chunks' for k in compared)} have the same single number, with different counts in the boxes."
    return text


def test_the_figure_describes_itself_from_the_plotted_values():
    code = "".join(code_cell("14-contingency")["source"])
    assert "show_figure(fig, description)" in code and "plt.show()" not in code
    assert 'BOX_MEANING = [["pipeline worked", "generation fault"], ["lucky guess", "retrieval fault"]]' in code
    boxes, compared = plotted(), parameters()["COMPARED"]
    text = stored_figure_description(cells())
    assert text == described(boxes, compared)
    values = [[counts(row)[box] for box in BOXES] + [single_number(row)] for row in boxes.values()]
    # Also in the figure: the 40 of the title and the context sizes of the panel titles.
    assert numbers_not_plotted(text, values, ".4f", allowed=[40, *compared]) == []
    assert "3 chunks and 5 chunks have the same single number, with different counts in the boxes." in text
