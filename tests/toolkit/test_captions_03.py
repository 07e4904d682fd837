"""Lesson 03's figure (raw vector length against tokens; longest-quarter shares) against its caption.

The plotted data are recomputed with the package exactly as the notebook's cells 6, 10, 18 and 22
do at the course seed; each test asserts one claim the prose makes about the figure and checks
that the committed notebook still makes it, so that a changed caption forces a look at its test.
The figure's description (its output's text and alt, written by cell 22 from the plotted values)
is recomputed from the same data and compared with the committed one.
"""
import json
from functools import lru_cache

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import numbers_not_plotted, values_output
from ragcourse.retrieval.metrics import mean_top_value
from ragcourse.retrieval.ranking import rank_by_score
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel, cosine, dot, length, unit
from ragcourse.world.text import tokenize

SEED, K, DIM = 20260218, 5, 32
NOTEBOOK = NOTEBOOKS_DIR / "03-similarity-metrics.ipynb"
FIGURE_NAME = '"03-vector-length-vs-tokens"'


def notebook_markdown() -> tuple[str, str, str]:
    """All markdown of the committed notebook, the figure's caption (the markdown cell before the figure cell)
    and the reading after the figure (the markdown cell after it)."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    texts = ["".join(c["source"]) for c in cells]
    figure = next(n for n, c in enumerate(cells) if c["cell_type"] == "code" and FIGURE_NAME in texts[n])
    markdown = [n for n, c in enumerate(cells) if c["cell_type"] == "markdown"]
    caption = texts[max(n for n in markdown if n < figure)]
    reading = texts[min(n for n in markdown if n > figure)]
    return "\n".join(texts[n] for n in markdown), caption, reading


@lru_cache(maxsize=4)
def figure_data(seed: int) -> dict:
    """What cell 22 plots: token counts, raw lengths (model 1), the two quarters and the longest-quarter shares."""
    world = build_world(seed, FIRST_EDITION)
    documents, queries = world.documents, world.queries
    texts = [d.text for d in documents]
    model = EmbeddingModel(world.edition, projection_seed=seed, dim=DIM)
    token_counts = [len(tokenize(text)) for text in texts]
    raw_vectors = [model.raw(text) for text in texts]
    raw_lengths = [length(v) for v in raw_vectors]
    quarter = len(documents) // 4
    shortest_first = sorted(range(len(documents)), key=lambda i: token_counts[i])
    shortest, longest = shortest_first[:quarter], shortest_first[-quarter:]
    unit_vectors = [unit(v) for v in raw_vectors]

    def by_cosine(query):
        query_vector = unit(model.raw(query.text))
        return rank_by_score([cosine(query_vector, v) for v in unit_vectors])

    def by_dot_product(query):
        query_vector = model.raw(query.text)
        return rank_by_score([dot(query_vector, v) for v in raw_vectors])

    longest_fifty = set(rank_by_score(token_counts)[:quarter])
    in_longest = [1 if i in longest_fifty else 0 for i in range(len(documents))]
    return {
        "codes": [d.code for d in documents], "shortest_first": shortest_first,
        "tokens": token_counts, "lengths": raw_lengths, "vectors": [tuple(v) for v in raw_vectors],
        "shortest": shortest, "longest": longest,
        "mean_shortest": sum(raw_lengths[i] for i in shortest) / quarter,
        "mean_longest": sum(raw_lengths[i] for i in longest) / quarter,
        "tokens_shortest": sum(token_counts[i] for i in shortest) / quarter,
        "tokens_longest": sum(token_counts[i] for i in longest) / quarter,
        "corpus_share": quarter / len(documents),
        "share_cosine": mean_top_value(by_cosine, queries, in_longest, K),
        "share_dot": mean_top_value(by_dot_product, queries, in_longest, K),
    }


def test_mean_lines_are_the_first_tables_quarters():
    _, caption, _ = notebook_markdown()
    assert "their mean lengths drawn as lines" in caption
    data = figure_data(SEED)
    # the legend labels (.2f) and the first table (.4f) show the same two means
    assert (f"{data['mean_shortest']:.4f}", f"{data['mean_longest']:.4f}") == ("4.6737", "5.4708")
    assert (f"{data['mean_shortest']:.2f}", f"{data['mean_longest']:.2f}") == ("4.67", "5.47")


def test_longer_documents_have_longer_raw_vectors_but_far_from_in_proportion():
    everything, _, _ = notebook_markdown()
    assert "the token count more than doubles between the two quarters while the raw length grows by a sixth or so" in everything
    data = figure_data(SEED)
    assert data["tokens_longest"] > 2 * data["tokens_shortest"]
    assert 1.12 < data["mean_longest"] / data["mean_shortest"] < 1.22     # a sixth is 1.167


def test_points_line_up_in_horizontal_rows():
    _, _, reading = notebook_markdown()
    assert "The points line up in horizontal rows." in reading
    data = figure_data(SEED)
    rows = {}
    for i, vector in enumerate(data["vectors"]):
        rows.setdefault(vector, []).append(i)
    assert len({round(v, 9) for v in data["lengths"]}) == len(rows) <= 60     # 200 points on few heights
    assert sum(len(members) >= 5 for members in rows.values()) >= 10         # many rows hold five points or more


def test_documents_of_very_different_lengths_share_one_vector():
    _, _, reading = notebook_markdown()
    assert "documents of very different lengths can share one vector and one length" in reading
    data = figure_data(SEED)
    rows = {}
    for i, vector in enumerate(data["vectors"]):
        rows.setdefault(vector, []).append(data["tokens"][i])
    widest = max(max(tokens) - min(tokens) for tokens in rows.values())
    assert widest >= 40     # one row spans at least 40 tokens (the x axis runs from 32 to 107)


def test_long_documents_sit_on_the_higher_rows_more_often():
    _, _, reading = notebook_markdown()
    assert "Long documents sit on the higher rows more often" in reading
    data = figure_data(SEED)
    assert data["mean_longest"] > data["mean_shortest"]
    median = sorted(data["lengths"])[len(data["lengths"]) // 2]
    above = {i for i, value in enumerate(data["lengths"]) if value > median}
    assert len(above & set(data["longest"])) > len(above & set(data["shortest"]))


def test_short_documents_with_long_vectors_and_long_ones_with_short_vectors():
    everything, _, _ = notebook_markdown()
    assert "the scatter below has short documents with long vectors and long documents with short ones" in everything
    data = figure_data(SEED)
    lengths = data["lengths"]
    assert max(lengths[i] for i in data["shortest"]) > data["mean_longest"]
    assert min(lengths[i] for i in data["longest"]) < data["mean_shortest"]


def test_bars_on_opposite_sides_of_the_corpus_share():
    _, caption, reading = notebook_markdown()
    assert "against its share of the corpus" in caption
    assert "The bars on the right place the two rankers on opposite sides of the dashed line." in reading
    data = figure_data(SEED)
    assert data["corpus_share"] == 0.25
    assert data["share_cosine"] < data["corpus_share"] < data["share_dot"]
    assert (f"{data['share_cosine']:.3f}", f"{data['share_dot']:.3f}") == ("0.150", "0.295")   # the bar labels


def committed_figure_outputs() -> tuple[str, str]:
    """The committed figure's description (text/plain of the one output whose image/png has an alt) and the
    text/plain of the values table shown under it."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    described = [n for n, o in enumerate(outputs) if o.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(described) == 1, "one described figure"
    figure = outputs[described[0]]
    text = "".join(figure["data"]["text/plain"])
    assert figure["metadata"]["image/png"]["alt"] == text
    return text, "".join(outputs[described[0] + 1]["data"]["text/plain"])


def figure_description(data: dict) -> str:
    """The description cell 22 writes, from the recomputed plotted values (raw lengths and shares at .4f)."""
    tokens, lengths, share = data["tokens"], data["lengths"], data["corpus_share"]

    def quarter_text(name, members):
        counts, values = [tokens[i] for i in members], [lengths[i] for i in members]
        return (f"{name} quarter ({min(counts)} to {max(counts)} tokens): lengths {min(values):.4f} to"
                f" {max(values):.4f}, mean line at {sum(values) / len(values):.4f}")

    rows = ", the points in horizontal rows of documents sharing one length" if len(set(lengths)) < len(lengths) else ""
    bars = [(name, value, "above" if value > share else "below" if value < share else "on")
            for name, value in (("cosine", data["share_cosine"]), ("dot product", data["share_dot"]))]
    return (f"Left: scatter of raw vector length (model 1) against document length in tokens, one point per document:"
            f" tokens {min(tokens)} to {max(tokens)}, lengths {min(lengths):.4f} to {max(lengths):.4f}{rows}. "
            + quarter_text("Shortest", data["shortest"]) + "; " + quarter_text("longest", data["longest"]) + "."
            f" Right: bars of the longest quarter's share among each ranker's first {K} results, with a dashed"
            f" line at its share of the corpus, {share:.4f}: "
            + "; ".join(f"{name} {value:.4f}, {side} the line" for name, value, side in bars) + ".")


def test_figure_description_is_written_from_the_plotted_values():
    description, values = committed_figure_outputs()
    data = figure_data(SEED)
    assert description == figure_description(data)
    plotted = [data["tokens"], data["lengths"], [data["mean_shortest"], data["mean_longest"]],
               [data["share_cosine"], data["share_dot"], data["corpus_share"]]]
    # "model 1" and "first 5" are in the axis labels
    assert numbers_not_plotted(description, plotted, ".4f", allowed=[1, K]) == []
    assert "cosine 0.1500, below the line; dot product 0.2950, above the line" in description
    # the scatter's points are printed nowhere else, so they follow as a table, shortest documents first
    group = {**{i: "shortest quarter" for i in data["shortest"]}, **{i: "longest quarter" for i in data["longest"]}}
    table = [["document", "tokens", "raw vector length", "group"],
             *[[data["codes"][i], data["tokens"][i], data["lengths"][i], group.get(i, "middle half")]
               for i in data["shortest_first"]]]
    assert values == values_output(table, ".4f")["text/plain"]
