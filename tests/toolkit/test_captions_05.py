"""Lesson 05's figure (three filter strategies as the filter narrows) says what its plotted data shows.

The plotted lines are recomputed with the package as cells 6, 8, 10, 12, 15, 17 and 22 of the notebook compute
them, at the course seed, and every claim of the figure's text (the markdown cell before the figure and the
one after it) is checked against them. Each claim's key phrase is looked up in the committed notebook, so that
a changed caption makes this file fail until it is updated too.
"""
import json

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import PALETTE, describe_series, numbers_not_plotted
from ragcourse.retrieval.index import build_bucket_index, rank_candidates
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.metadata import assign_regions, filter_widths, matching

NOTEBOOK = NOTEBOOKS_DIR / "05-metadata-filtering.ipynb"
FIGURE_NAME = '"05-filter-strategies"'
SEED, K, DIM, REGIONS, BUCKETS, PROBES = 20260218, 5, 32, 16, 16, 2     # the notebook's parameter cell
FETCH_SIZES = (5, 15, 50)


def recall_against(found, correct):
    """Cell 8's scan agreement of one search (an empty correct answer scores 0)."""
    return len(set(found) & set(correct)) / max(1, len(correct))


def figure_data(seed):
    """What cell 22 plots, per width (widest first): the agreement lines (left) and the cost lines (right)."""
    world = build_world(seed, FIRST_EDITION)
    model = EmbeddingModel(world.edition, projection_seed=seed, dim=DIM)
    document_vectors = [model.embed(d.text) for d in world.documents]
    query_vectors = [model.embed(q.text) for q in world.queries]
    regions = assign_regions(seed, len(world.documents), REGIONS)
    widths = filter_widths(REGIONS)
    correct = {w: [rank_candidates(v, document_vectors, matching(regions, w))[:K] for v in query_vectors]
               for w in widths}
    index = build_bucket_index(document_vectors, BUCKETS, seed)
    n_queries = len(query_vectors)

    def filter_after(v, width, fetch):
        return [i for i in index.search(v, PROBES, fetch).ids if regions[i] <= width][:K]

    def filter_inside(v, width):
        candidates = [i for i in index.candidates(v, PROBES) if regions[i] <= width]
        return rank_candidates(v, document_vectors, candidates)[:K], len(candidates)

    after = {fetch: [sum(recall_against(filter_after(v, w, fetch), correct[w][n]) for n, v in enumerate(query_vectors))
                     / n_queries for w in widths] for fetch in FETCH_SIZES}
    inside = {w: [filter_inside(v, w) for v in query_vectors] for w in widths}
    inside_recall = [sum(recall_against(inside[w][n][0], correct[w][n]) for n in range(n_queries)) / n_queries
                     for w in widths]
    inside_candidates = [sum(c for _, c in inside[w]) / n_queries for w in widths]
    after_costs = {fetch: sum(index.search(v, PROBES, fetch).comparisons for v in query_vectors) / n_queries
                   for fetch in FETCH_SIZES}
    prefix = all(filter_after(v, w, fetch) == inside[w][n][0][:len(filter_after(v, w, fetch))]
                 for fetch in FETCH_SIZES for w in widths for n, v in enumerate(query_vectors))
    return {
        "widths": widths,
        "after": after,                                                     # left, one line per fetch
        "inside": inside_recall,                                            # left, wide pale line
        "after_costs": after_costs,                                         # right, grey line (one per fetch)
        "unfiltered": index.n_buckets + sum(r.candidates for r in (index.search(v, PROBES, K) for v in query_vectors))
        / n_queries,                                                        # right, grey line as cell 22 draws it
        "inside_comparisons": [index.n_buckets + c for c in inside_candidates],   # right, solid blue
        "inside_candidates": inside_candidates,                             # right, dashed blue
        "scan": [len(matching(regions, w)) for w in widths],                # right, green
        "after_is_prefix_of_inside": prefix,
    }


@pytest.fixture(scope="module")
def data():
    return figure_data(SEED)


@pytest.fixture(scope="module")
def text():
    """The figure's code, the markdown cell before it and the one after it (whitespace collapsed)."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    index = next(i for i, cell in enumerate(cells)
                 if cell["cell_type"] == "code" and FIGURE_NAME in "".join(cell["source"]))
    before = next(c for c in reversed(cells[:index]) if c["cell_type"] == "markdown")
    after = next(c for c in cells[index + 1:] if c["cell_type"] == "markdown")
    return {"code": "".join(cells[index]["source"]), "before": " ".join("".join(before["source"]).split()),
            "after": " ".join("".join(after["source"]).split())}


def strictly_falling(values):
    return all(a > b for a, b in zip(values, values[1:]))


def test_width_axis_halves_with_the_narrowest_on_the_right(data, text):
    assert "The width axis halves at each step, narrowest filter on the right" in text["before"]
    widths = data["widths"]
    assert widths[0] == REGIONS and widths[-1] == min(widths) == 1
    assert all(narrower == wider // 2 for wider, narrower in zip(widths, widths[1:]))


def test_filter_after_costs_the_same_at_every_width(data, text):
    assert "Filtering after the search costs the same at every width" in text["before"]
    assert "(47.2 at every width)" in text["after"]
    # the search never sees the width, and the cost does not depend on fetch either
    assert len(set(data["after_costs"].values())) == 1
    assert data["after_costs"][FETCH_SIZES[0]] == pytest.approx(data["unfiltered"])
    assert f"{data['unfiltered']:.1f}" == "47.2"


def test_every_filter_after_line_falls_and_smaller_fetch_ends_lower(data, text):
    assert "every *filter after* line falls as the filter narrows" in text["after"]
    assert "the smaller the fetch, the lower it ends" in text["after"]
    assert all(strictly_falling(line) for line in data["after"].values())
    ends = [data["after"][fetch][-1] for fetch in sorted(FETCH_SIZES)]
    assert strictly_falling(ends[::-1])


def test_fetch_5_below_0_2_from_width_4_and_the_ends(data, text):
    assert "fetch 5 is below 0.2000 from width 4 on and ends at 0.0900" in text["after"]
    assert "fetch 15 ends at 0.2600" in text["after"]
    widths, fetch_5 = data["widths"], data["after"][5]
    assert [value < 0.2 for value in fetch_5] == [w <= 4 for w in widths]     # from width 4 on, not before
    assert f"{fetch_5[-1]:.4f}" == "0.0900"
    assert f"{data['after'][15][-1]:.4f}" == "0.2600"


def test_fetch_50_runs_along_filter_inside_and_cannot_rise_above_it(data, text):
    assert "fetch 50 runs along the wide pale line of *filter inside* at every width" in text["after"]
    assert "It cannot rise above it" in text["after"]
    assert data["after"][50] == pytest.approx(data["inside"], abs=1e-12)
    # the mechanism: per query, filter after returns the head of what filter inside returns
    assert data["after_is_prefix_of_inside"]
    assert all(a <= b + 1e-12 for fetch in FETCH_SIZES for a, b in zip(data["after"][fetch], data["inside"]))


def test_filter_inside_sinks_to_0_475(data, text):
    assert "That line sinks too, to 0.4750" in text["after"]
    assert strictly_falling(data["inside"])
    assert f"{data['inside'][-1]:.4f}" == "0.4750"


def test_scan_falls_and_crosses_below_the_other_two(data, text):
    assert "the green line of the scan falls with the number of matching documents" in text["after"]
    assert "below the grey *filter after* line (47.2 at every width) between widths 4 and 2" in text["after"]
    assert "below the solid blue *filter inside* comparisons between widths 2 and 1" in text["after"]
    widths, scan = data["widths"], data["scan"]
    assert strictly_falling(scan)
    assert [s < data["unfiltered"] for s in scan] == [w <= 2 for w in widths]
    assert [s < c for s, c in zip(scan, data["inside_comparisons"])] == [w <= 1 for w in widths]


def test_at_width_1_the_scan_is_the_cheapest(data, text):
    assert "at width 1 the exact method is also the cheapest of the three" in text["after"]
    assert data["widths"][-1] == 1
    assert data["scan"][-1] < min(data["inside_comparisons"][-1], data["unfiltered"])


def test_colours_and_line_styles_named_in_the_text(text):
    assert "comparisons per query (solid) and the in-index candidates (dashed)" in text["before"]
    code = " ".join(text["code"].split())
    assert 'color=PALETTE["fusion"], label="scan of the filtered set")' in code
    assert 'color=PALETTE["neutral"], label="filter after (any fetch)")' in code
    assert 'linewidth=2.4, label="filter inside: comparisons"' in code
    assert 'linestyle="--", label="filter inside: candidates"' in code

    def rgb(name):
        return [int(PALETTE[name][i:i + 2], 16) for i in (1, 3, 5)]

    red, green, blue = rgb("fusion")
    assert green > red and green > blue                         # green
    assert len(set(rgb("neutral"))) == 1                        # grey
    red, green, blue = rgb("embedding")
    assert blue > green > red                                   # blue


def committed_figure_output(cell_source_marker=FIGURE_NAME):
    """The committed figure cell's described output (the one whose PNG has an alt) and the output after it."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    cell = next(c for c in cells if c["cell_type"] == "code" and cell_source_marker in "".join(c["source"]))
    described = [n for n, o in enumerate(cell["outputs"]) if o.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(described) == 1, "the figure cell shows one described figure (show_figure)"
    return cell["outputs"][described[0]], cell["outputs"][described[0] + 1:]


def figure_description(data):
    """Cell 22's description, written with the same describe_series calls from the recomputed plotted lines."""
    widths, n = data["widths"], len(data["widths"])
    along_inside = [f"fetch {fetch}" for fetch, values in data["after"].items()
                    if [f"{v:.4f}" for v in values] == [f"{v:.4f}" for v in data["inside"]]]
    description = describe_series(
        f"Left, agreement with the exact top {K}", "filter width (regions kept)", widths,
        {"filter inside": data["inside"], **{f"filter after fetch {fetch}": values for fetch, values in data["after"].items()},
         "exact scan": [1.0] * n}, fmt=".4f")
    if along_inside:
        description += (f" Filter after {' and '.join(along_inside)} {'lies' if len(along_inside) == 1 else 'lie'}"
                        " on the filter inside line throughout.")
    return description + " " + describe_series(
        "Right, comparisons and candidates per query (log scale)", "filter width", widths,
        {"filter after": [data["unfiltered"]] * n, "filter inside comparisons": data["inside_comparisons"],
         "filter inside candidates": data["inside_candidates"], "exact scan": data["scan"]}, fmt=".1f")


def test_the_figure_describes_itself_from_the_plotted_lines(data):
    output, _ = committed_figure_output()
    description = "".join(output["data"]["text/plain"])
    assert output["metadata"]["image/png"]["alt"] == description
    assert description == figure_description(data)
    assert "Filter after fetch 50 lies on the filter inside line throughout." in description
    # every number is a plotted one, as the notebook prints it: agreement .4f (left), comparisons .1f (right)
    left, right = description.split(" Right, ")
    assert numbers_not_plotted(left, [list(data["widths"]), data["inside"], *data["after"].values(), [1.0]],
                               ".4f", allowed=[K, *FETCH_SIZES]) == []   # the legend names the fetch sizes
    assert numbers_not_plotted(right, [list(data["widths"]), [data["unfiltered"]], data["inside_comparisons"],
                                       data["inside_candidates"], data["scan"]], ".1f") == []


def test_the_figure_carries_its_plotted_values_as_a_table(data):
    """The fetch sizes' agreement at full width is printed nowhere else, so the figure carries its values."""
    _, after = committed_figure_output()
    assert len(after) == 1
    rows = [line.split() for line in "".join(after[0]["data"]["text/plain"]).split("\n")[2:]]
    expected = [[str(w), *(f"{data['after'][fetch][i]:.4f}" for fetch in FETCH_SIZES), f"{data['inside'][i]:.4f}",
                 "1.0000", f"{data['unfiltered']:.1f}", f"{data['inside_comparisons'][i]:.1f}",
                 f"{data['inside_candidates'][i]:.1f}", str(data["scan"][i])] for i, w in enumerate(data["widths"])]
    assert rows == expected
