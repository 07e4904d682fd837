"""Lesson 09's figure (relation recall against stored tokens) says what its plotted data shows.

The grid is recomputed with the package as cells 6, 19, 23 and 24 of the notebook compute it, at the
course seed, and every claim of the caption (and of the figure's introduction and title) is checked
against it. Each claim's key phrase is looked up in the committed notebook, so that a changed caption
makes this file fail until it is updated too.
"""
import json

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import numbers_not_plotted
from ragcourse.retrieval.chunking import body_words, count_whole, paragraph_spans, relation_spans, token_windows
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.text import tokenize

NOTEBOOK = NOTEBOOKS_DIR / "09-chunking-strategies.ipynb"
FIGURE_NAME = '"09-relation-recall-vs-storage"'
SEED, SIZE, OVERLAP = 20260218, 20, 8           # the notebook's parameter cell
OVERLAPS = (0, 2, 4, 6, 8, 10, 12)


def figure_data(seed):
    """What cell 24 plots: per size, (fold, relation recall) at each overlap; the star; the windows."""
    world = build_world(seed, SECOND_EDITION)
    bodies = [body_words(document) for document in world.documents]
    relations = [relation_spans(document, world.edition) for document in world.documents]
    n_relations = sum(len(spans) for spans in relations)
    source_tokens = sum(len(tokenize(" ".join(words))) for words in bodies)

    def measure(spans_per_document):
        whole = sum(count_whole(rels, spans) for rels, spans in zip(relations, spans_per_document))
        stored = sum(len(tokenize(" ".join(words[first:last])))
                     for words, spans in zip(bodies, spans_per_document) for first, last in spans)
        return stored / source_tokens, whole / n_relations

    sizes = sorted({12, 20, 32, SIZE})
    lines = {size: [measure([token_windows(words, size, overlap) for words in bodies]) for overlap in OVERLAPS]
             for size in sizes}
    star = measure([paragraph_spans(document) for document in world.documents])   # chunk text = joined words
    return {"sizes": sizes, "lines": lines, "star": star, "bodies": bodies, "source_tokens": source_tokens}


@pytest.fixture(scope="module")
def data():
    return figure_data(SEED)


@pytest.fixture(scope="module")
def text():
    """The figure's code, its introduction (markdown before) and its caption (markdown after)."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    index = next(i for i, cell in enumerate(cells)
                 if cell["cell_type"] == "code" and FIGURE_NAME in "".join(cell["source"]))
    before = next(c for c in reversed(cells[:index]) if c["cell_type"] == "markdown")
    after = next(c for c in cells[index + 1:] if c["cell_type"] == "markdown")
    return {"code": "".join(cells[index]["source"]), "intro": "".join(before["source"]),
            "caption": " ".join("".join(after["source"]).split())}


def folds(line):
    return [fold for fold, _ in line]


def recalls(line):
    return [relation for _, relation in line]


def test_each_line_walks_from_1x_at_overlap_0_rightwards_to_overlap_12(data, text):
    assert "walks from overlap 0 (left, at 1x, the source size) to overlap 12 (right)" in text["caption"]
    for line in data["lines"].values():
        assert folds(line)[0] == 1.0
        assert all(a < b for a, b in zip(folds(line), folds(line)[1:]))


def test_three_window_sizes(data, text):
    assert "three window sizes (plus `SIZE`, if it is not one of them)" in text["intro"]
    assert data["sizes"] == [12, 20, 32]


def test_the_star_sits_at_the_top_left(data, text):
    assert "The star sits at the top left: everything kept, nothing duplicated." in text["caption"]
    assert "the paragraph break gets them free" in text["code"]
    fold, relation = data["star"]
    assert fold == 1.0 and relation == 1.0
    assert fold <= min(f for line in data["lines"].values() for f in folds(line))
    assert relation >= max(r for line in data["lines"].values() for r in recalls(line))


def test_larger_windows_start_higher_and_stay_higher(data, text):
    assert "Larger windows start higher and stay higher" in text["caption"]
    assert "the 32-token line lies above the 20-token one at every overlap up to 10" in text["caption"]
    line12, line20, line32 = (recalls(data["lines"][size]) for size in (12, 20, 32))
    assert all(b > a for a, b in zip(line12, line20))
    assert all(b > a for overlap, a, b in zip(OVERLAPS, line20, line32) if overlap <= 10)


def test_20_and_32_first_reach_full_relation_recall_at_overlap_12(data, text):
    assert "Both first reach 1.0000 at overlap 12" in text["caption"]
    assert "1.30 times the source against 1.91" in text["caption"]
    for size in (20, 32):
        line = recalls(data["lines"][size])
        assert line[-1] == 1.0 and max(line[:-1]) < 1.0
    assert f"{folds(data['lines'][32])[-1]:.2f}" == "1.30"
    assert f"{folds(data['lines'][20])[-1]:.2f}" == "1.91"


def test_the_12_token_line_zigzags_and_tops_out(data, text):
    assert "the line zigzags" in text["caption"]
    assert "stores the corpus 7.53 times over" in text["caption"]
    assert "without ever passing 0.8817 relation recall" in text["caption"]
    line = recalls(data["lines"][12])
    steps = [b - a for a, b in zip(line, line[1:])]
    assert any(step < 0 for step in steps) and any(step > 0 for step in steps)
    assert f"{max(line):.4f}" == "0.8817" and line[-1] == max(line)
    assert f"{folds(data['lines'][12])[-1]:.2f}" == "7.53"


def test_12_token_windows_step_a_word_or_two_and_at_overlap_12_one_word(data, text):
    assert "each window steps forward by a word or two" in text["caption"]
    assert "each window there starts one word after the one before" in text["caption"]
    for words in data["bodies"]:
        starts = [start for start, _ in token_windows(words, 12, 10)]
        assert all(b - a in (1, 2) for a, b in zip(starts, starts[1:]))
        starts = [start for start, _ in token_windows(words, 12, 12)]
        assert starts == list(range(len(starts)))


def described_figure():
    """The committed notebook's figure output (the one whose PNG carries an alt): its text/plain description."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    outputs = [output for cell in cells if cell["cell_type"] == "code" for output in cell.get("outputs", [])
               if output.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(outputs) == 1, f"{len(outputs)} described figures, expected the one of cell 24"
    description = "".join(outputs[0]["data"]["text/plain"])
    assert outputs[0]["metadata"]["image/png"]["alt"] == description
    return description


def figure_description(data):
    """The description cell 24 writes, from the recomputed lines, the ring (SIZE, OVERLAP) and the star."""
    lines = {size: (folds(line), recalls(line)) for size, line in data["lines"].items()}
    sizes = data["sizes"]

    def line_in_words(size):
        line_folds, line_recalls = lines[size]
        words = f"{size} tokens: {line_recalls[0]:.4f} to {line_recalls[-1]:.4f} at {line_folds[-1]:.2f} times"
        lowest = min(line_recalls[1:-1], default=line_recalls[0])
        if lowest < min(line_recalls[0], line_recalls[-1]):
            words += f", dipping to {lowest:.4f}"
        return words + (f", ringed at OVERLAP {OVERLAP}" if size == SIZE else "")

    below = [overlap for i, overlap in enumerate(OVERLAPS)
             if not all(lines[a][1][i] < lines[b][1][i] for a, b in zip(sizes, sizes[1:]))]
    order = "" if len(below) == len(OVERLAPS) else (
        "Larger windows are higher at every overlap" + (f" but {', '.join(map(str, below))}. " if below else ". "))
    star_fold, star_relation = data["star"]
    return (f"Relation recall against storage in multiples of the source's {data['source_tokens']} tokens (log scale),"
            f" one line per window size from overlap 0 ({lines[SIZE][0][0]:.2f} times) to {OVERLAPS[-1]}. "
            + ". ".join(line_in_words(size) for size in sizes) + ". " + order
            + f"Star (paragraph boundary): {star_relation:.4f} at {star_fold:.2f} times.")


def test_the_figures_description_is_written_from_its_plotted_values(data):
    description = described_figure()
    assert description == figure_description(data)
    assert "12 tokens: 0.5440 to 0.8817 at 7.53 times, dipping to 0.4863" in description
    assert "Larger windows are higher at every overlap but 12." in description
    # Recall as the grid prints it (.4f), storage folds as they are printed (.2f); the sizes and overlaps
    # are in the legend and the annotations, the source's token count in the x label.
    plotted = [recalls(line) for line in data["lines"].values()] + [data["star"][1]]
    plotted += [f"{fold:.2f}" for line in data["lines"].values() for fold in folds(line)] + [f"{data['star'][0]:.2f}"]
    allowed = [data["sizes"], list(OVERLAPS), data["source_tokens"]]
    assert numbers_not_plotted(description, plotted, ".4f", allowed=allowed) == []
