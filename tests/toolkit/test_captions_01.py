"""Lesson 01's figure (keyword against embedding search, four measures) says what its plotted data shows.

The bars and the dashed recall ceiling are recomputed with the package as cells 6, 10, 12, 14 and 15 of the
notebook compute them, at the course seed, and every claim of the caption is checked against them. Each
claim's key phrase is looked up in the committed notebook, so that a changed caption makes this file fail
until it is updated too.
"""
import json

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import describe_bars, numbers_not_plotted
from ragcourse.retrieval.metrics import recall_ceiling, retrieval_scores
from ragcourse.retrieval.ranking import rank_by_score
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel, cosine
from ragcourse.world.text import tokenize

NOTEBOOK = NOTEBOOKS_DIR / "01-what-is-an-embedding.ipynb"
FIGURE_NAME = '"01-keyword-vs-embedding"'
SEED, K, DIM = 20260218, 5, 32              # the notebook's parameter cell
MEASURES = ("precision", "recall", "concept hit", "class hit")


def figure_data(seed, k=K, dim=DIM):
    """What cell 20 plots: the four measures of each search (bars) and the recall ceiling (dashed line)."""
    world = build_world(seed, FIRST_EDITION)
    documents, queries = world.documents, world.queries
    model = EmbeddingModel(world.edition, projection_seed=seed, dim=dim)
    document_tokens = [set(tokenize(d.text)) for d in documents]
    document_vectors = [model.embed(d.text) for d in documents]

    def keyword_rank(query):
        query_tokens = set(tokenize(query.text))
        return rank_by_score([len(query_tokens & tokens) for tokens in document_tokens])

    def embedding_rank(query):
        query_vector = model.embed(query.text)
        return rank_by_score([cosine(query_vector, vector) for vector in document_vectors])

    bars = {name: retrieval_scores(rank, queries, documents, world.relevant, k).as_tuple()
            for name, rank in (("keyword search", keyword_rank), ("embedding", embedding_rank))}
    return {"bars": bars, "ceiling": recall_ceiling(queries, world.relevant, k), "n_documents": len(documents),
            "n_queries": len(queries)}


@pytest.fixture(scope="module")
def data():
    return figure_data(SEED)


@pytest.fixture(scope="module")
def text():
    """The figure's code and its caption (the markdown cell just before it)."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    index = next(i for i, cell in enumerate(cells)
                 if cell["cell_type"] == "code" and FIGURE_NAME in "".join(cell["source"]))
    before = next(c for c in reversed(cells[:index]) if c["cell_type"] == "markdown")
    return {"code": "".join(cells[index]["source"]), "caption": " ".join("".join(before["source"]).split())}


def test_four_measures_side_by_side_for_both_searches(data, text):
    assert "The four measures side by side" in text["caption"]
    assert 'measure_names = ["precision", "recall", "concept hit", "class hit"]' in text["code"]
    assert list(data["bars"]) == ["keyword search", "embedding"]
    assert all(len(values) == len(MEASURES) for values in data["bars"].values())
    assert data["n_documents"] == 200                      # the title: top 5 of 200 documents


def test_the_ceiling_is_drawn_over_the_recall_bars(data, text):
    assert "with the recall ceiling drawn over the recall bars" in text["caption"]
    recall = MEASURES.index("recall")
    assert "ax.hlines(ceiling, 1 - 0.45, 1 + 0.45" in text["code"] and recall == 1   # spans the recall pair
    assert all(values[recall] < data["ceiling"] for values in data["bars"].values())  # both bars end below it


def test_the_dashed_line_not_the_top_of_the_axis_is_the_target(data, text):
    assert "The dashed line, not the top of the axis, is the target." in text["caption"]
    assert "linestyles=\"--\"" in text["code"] and "ax.set_ylim(0, 1.12)" in text["code"]
    assert data["ceiling"] < 1.0                           # no search can reach 1 at k=5
    assert round(data["ceiling"], 4) == 0.4904             # the number the annotation and the prose quote
    recall = MEASURES.index("recall")
    assert round(data["bars"]["embedding"][recall], 4) == 0.2258


def described_figure():
    """The committed notebook's figure output (the one whose PNG carries an alt): its text/plain description."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    outputs = [output for cell in cells if cell["cell_type"] == "code" for output in cell.get("outputs", [])
               if output.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(outputs) == 1, f"{len(outputs)} described figures, expected the one of cell 20"
    description = "".join(outputs[0]["data"]["text/plain"])
    assert outputs[0]["metadata"]["image/png"]["alt"] == description
    return description


def figure_description(data, k=K):
    """The description as cell 20 writes it: describe_bars on the bars, then the dashed recall ceiling."""
    return (describe_bars(f"Bars of the mean over {data['n_queries']} queries, top {k} of {data['n_documents']} documents",
                          list(MEASURES), data["bars"], fmt=".4f")
            + f" A dashed line over the recall pair marks the recall ceiling at k={k}, {data['ceiling']:.4f},"
            " the most recall any ranking could reach.")


def test_the_figures_description_is_written_from_its_plotted_values(data):
    description = described_figure()
    assert description == figure_description(data)
    # k (title, annotation), the 40 queries (y label), the 200 documents (title) and the 4 bar pairs are in the figure
    allowed = [K, data["n_queries"], data["n_documents"], len(MEASURES)]
    assert numbers_not_plotted(description, [*data["bars"].values(), data["ceiling"]], ".4f", allowed=allowed) == []
