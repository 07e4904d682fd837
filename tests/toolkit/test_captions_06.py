"""Lesson 06's figure (keyword, embedding and their fusion on three query classes) says what its bars show.

The bars are recomputed with the package as cells 6, 12 and 16 of the notebook compute them, at the course
seed, and every claim of the caption (the markdown just before the figure) is checked against them. Each
claim's key phrase is looked up in the committed notebook, so that a changed caption makes this file fail
until it is updated too.
"""
import json
import re

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import PALETTE, describe_bars, numbers_not_plotted
from ragcourse.retrieval.fusion import reciprocal_rank_fusion
from ragcourse.retrieval.search import EmbeddingIndex, KeywordIndex
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.query_classes import draw_query_classes, searchable_text

NOTEBOOK = NOTEBOOKS_DIR / "06-hybrid-search.ipynb"
FIGURE_NAME = '"06-fusion-by-query-class"'
SEED, K, DIM, FUSION_CONSTANT, RECALL_DEPTH = 20260218, 5, 32, 20, 20     # the notebook's parameter cells
SETUPS = ("keyword", "embedding", "hybrid")
PANELS = {0: "top1", 2: "recall", 3: "target"}      # measure index in cell 16's table -> panel of cell 29


def figure_data(seed, constant=FUSION_CONSTANT):
    """Cell 16's measures per (class, setup): top1, precision@K, recall@20, target document@K."""
    world = build_world(seed, FIRST_EDITION)
    documents, edition = world.documents, world.edition
    searchable = [searchable_text(d) for d in documents]
    model = EmbeddingModel(edition, projection_seed=seed, dim=DIM)
    keyword_index, embedding_index = KeywordIndex(searchable), EmbeddingIndex(model, searchable)
    query_classes = draw_query_classes(seed, edition, documents)
    relevant_by_concept = {key: {i for i, d in enumerate(documents) if d.main == key} for key in edition.keys}
    measures = {}
    for class_name, class_queries in query_classes.items():
        pairs = [(keyword_index.rank(q.text), embedding_index.rank(q.text)) for q in class_queries]
        orders = {"keyword": [k for k, _ in pairs], "embedding": [e for _, e in pairs],
                  "hybrid": [reciprocal_rank_fusion([k, e], constant) for k, e in pairs]}
        for setup in SETUPS:
            top1 = precision = recall = target = 0.0
            for query, order in zip(class_queries, orders[setup]):
                relevant = relevant_by_concept[query.concept]
                top1 += order[0] in relevant
                precision += len(set(order[:K]) & relevant) / K
                recall += len(set(order[:RECALL_DEPTH]) & relevant) / len(relevant)
                target += any(documents[doc].code == query.code for doc in order[:K])
            measures[(class_name, setup)] = [total / len(class_queries) for total in (top1, precision, recall, target)]
    return {"classes": list(query_classes), "measures": measures,
            "n_queries": {name: len(qs) for name, qs in query_classes.items()}}


@pytest.fixture(scope="module")
def data():
    return figure_data(SEED)


@pytest.fixture(scope="module")
def text():
    """The figure's code and its caption: the markdown cell before it, from its '## Figure' heading on."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    index = next(i for i, cell in enumerate(cells)
                 if cell["cell_type"] == "code" and FIGURE_NAME in "".join(cell["source"]))
    before = "".join(next(c for c in reversed(cells[:index]) if c["cell_type"] == "markdown")["source"])
    caption = before[before.index("## Figure"):]
    return {"code": "".join(cells[index]["source"]), "caption": " ".join(caption.split())}


def green_holds_its_own(data):
    """The (panel, class) groups whose fusion bar matches or beats the better of the group's other two bars."""
    measures = data["measures"]
    return {(PANELS[m], name) for m in PANELS for name in data["classes"]
            if measures[(name, "hybrid")][m] >= max(measures[(name, "keyword")][m], measures[(name, "embedding")][m])}


def test_three_panels_and_one_group_per_class(data, text):
    caption = text["caption"]
    assert "One panel for each of three measures (top1, recall@20 and target document@K; precision@K is left to the table)" \
        in caption
    assert "one group of bars per query class" in caption
    panels = re.search(r"^panels = \[(.*?)\]$", text["code"], re.S | re.M).group(1)
    assert [int(m) for m in re.findall(r"\((\d), ", panels)] == list(PANELS)     # precision (1) is not drawn
    assert data["classes"] == ["subscriber", "document", "code"]
    assert all(n == 40 for n in data["n_queries"].values())


def test_the_green_bar_is_fusion(text):
    assert "Compare the green bar with the better of the other two bars in its group" in text["caption"]
    assert 'PALETTE["fusion" if setup == "hybrid" else setup]' in text["code"]
    red, green, blue = (int(PALETTE["fusion"][i:i + 2], 16) for i in (1, 3, 5))
    assert green > red and green > blue


def test_fusion_holds_its_own_in_two_of_nine_groups_both_in_recall(data, text):
    assert "it does so in two of the nine groups, both in the recall panel (document phrasing and code queries)" \
        in text["caption"]
    assert green_holds_its_own(data) == {("recall", "document"), ("recall", "code")}
    # the code group is a match, not a win: the same 0.1950 under keyword search and fusion
    measures = data["measures"]
    assert measures[("code", "hybrid")][2] == measures[("code", "keyword")][2]
    assert f"{measures[('code', 'hybrid')][2]:.4f}" == "0.1950"
    assert measures[("document", "hybrid")][2] > measures[("document", "embedding")][2]


def figure_description(data):
    """Cell 29's description, written with the same describe_bars calls from the recomputed bars."""
    measures, classes = data["measures"], data["classes"]
    group_names = [f"{name} phrasing" if name != "code" else "code query" for name in classes]
    setup_labels = {setup: "fusion (hybrid)" if setup == "hybrid" else setup for setup in SETUPS}
    titles = {0: "first result on the concept (top1)", 2: f"recall in the first {RECALL_DEPTH}",
              3: f"source document in the first {K}"}
    description = (f"Bars of the mean over {data['n_queries']['document']} queries for keyword search, embedding"
                   f" search and their fusion (constant {FUSION_CONSTANT}), one group per query class. ")
    fusion_holds = []
    for place, m in zip(("Left", "Middle", "Right"), PANELS):
        bars = {setup: [measures[(name, setup)][m] for name in classes] for setup in SETUPS}
        description += describe_bars(f"{place}, {titles[m]}", group_names,
                                     {setup_labels[s]: bars[s] for s in SETUPS}, fmt=".4f") + " "
        shown = {setup: [float(f"{v:.4f}") for v in bars[setup]] for setup in SETUPS}
        held = []
        for n, group in enumerate(group_names):
            best = max(shown["keyword"][n], shown["embedding"][n])
            if shown["hybrid"][n] >= best:
                held.append(f"{group} ({'highest' if shown['hybrid'][n] > best else 'level'})")
        if held:
            fusion_holds.append(f"{' and '.join(held)} in the {place.lower()} panel")
    return description + ("The fusion bar is the highest of its group, or level with the highest, only for "
                          + "; ".join(fusion_holds) + "." if fusion_holds
                          else "The fusion bar is below the highest of its group everywhere.")


def test_the_figure_describes_itself_from_the_plotted_bars(data):
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    cell = next(c for c in cells if c["cell_type"] == "code" and FIGURE_NAME in "".join(c["source"]))
    described = [o for o in cell["outputs"] if o.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(described) == len(cell["outputs"]) == 1, "one described figure, no values table (cell 16 prints them)"
    description = "".join(described[0]["data"]["text/plain"])
    assert described[0]["metadata"]["image/png"]["alt"] == description
    assert description == figure_description(data)
    assert description.endswith("only for document phrasing (highest) and code query (level) in the middle panel.")
    # every number is a plotted bar as the table prints it (.4f), or a number of the figure's labels
    plotted = [data["measures"][(name, setup)][m] for m in PANELS for name in data["classes"] for setup in SETUPS]
    assert numbers_not_plotted(description, plotted, ".4f",
                               allowed=[data["n_queries"]["document"], FUSION_CONSTANT, RECALL_DEPTH, K]) == []
