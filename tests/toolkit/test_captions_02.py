"""Lesson 02's figure (hit rate against embedding dimension, two models) says what its plotted data shows.

The two sweeps, the shaded band and the dotted out-of-domain line are recomputed with the package as cells 6,
10, 12, 16, 18 and 21 of the notebook compute them, at the course seed, and every claim of the caption (cell 20),
of the reading under the figure (cell 22) and of the sweep's reading and summary about the plotted curves is
checked against them. Each claim's key phrase is looked up in the committed notebook, so that a changed text
makes this file fail until it is updated too.
"""
import json

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import describe_series, numbers_not_plotted
from ragcourse.retrieval.metrics import retrieval_scores
from ragcourse.retrieval.search import EmbeddingIndex
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel

NOTEBOOK = NOTEBOOKS_DIR / "02-embedding-models.ipynb"
FIGURE_NAME = '"02-hit-rate-vs-dimension"'
SEED, K, DIM = 20260218, 5, 32              # the notebook's parameter cell
SWEEP_DIMENSIONS = (64, 32, 16, 8, 4)       # cell 16, the table
FINER_DIMENSIONS = (48, 24, 12, 6, 3, 2)    # cell 18, for the figure
MEASURES = ("concept_hit", "class_hit")     # left panel, right panel


def figure_data(seed):
    """What cell 21 plots: per dimension and model, (concept hit, class hit); the band; the dotted lines."""
    world = build_world(seed, FIRST_EDITION)
    documents, queries = world.documents, world.queries
    texts = [d.text for d in documents]
    model_1 = EmbeddingModel(world.edition, projection_seed=seed, dim=DIM)
    model_2 = model_1.with_settings(projection_seed=seed + 1)

    def scores_at(model, dim):
        index = EmbeddingIndex(model.with_settings(dim=dim), texts)
        return retrieval_scores(lambda query: index.rank(query.text), queries, documents, world.relevant, K)

    sweep = {dim: (scores_at(model_1, dim), scores_at(model_2, dim)) for dim in SWEEP_DIMENSIONS + FINER_DIMENSIONS}
    outsider = scores_at(model_1.with_settings(in_domain=False), DIM)
    mean_class = [(sweep[d][0].class_hit + sweep[d][1].class_hit) / 2 for d in SWEEP_DIMENSIONS]
    falls = [mean_class[i] - mean_class[i + 1] for i in range(len(SWEEP_DIMENSIONS) - 1)]
    return {"dims": sorted(sweep),
            "curves": {m: [[getattr(sweep[d][which], m) for d in sorted(sweep)] for which in (0, 1)] for m in MEASURES},
            "outsider": {m: getattr(outsider, m) for m in MEASURES}, "falls": falls, "n_queries": len(queries)}


@pytest.fixture(scope="module")
def data():
    return figure_data(SEED)


@pytest.fixture(scope="module")
def text():
    """The figure's code, its caption (markdown before), the reading under it, the sweep's reading, the summary."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    index = next(i for i, cell in enumerate(cells)
                 if cell["cell_type"] == "code" and FIGURE_NAME in "".join(cell["source"]))

    def flat(cell):
        return " ".join("".join(cell["source"]).split())

    def markdown_starting(heading):
        return flat(next(c for c in cells if c["cell_type"] == "markdown" and "".join(c["source"]).startswith(heading)))

    return {"code": "".join(cells[index]["source"]),
            "caption": flat(next(c for c in reversed(cells[:index]) if c["cell_type"] == "markdown")),
            "reading": flat(next(c for c in cells[index + 1:] if c["cell_type"] == "markdown")),
            "sweep": markdown_starting("### Reading the sweep"), "summary": markdown_starting("## Summary")}


def at(data, measure, which, dim):
    return data["curves"][measure][which][data["dims"].index(dim)]


def band(data):
    """The shaded step as cell 21 picks it: the steepest fall of the mean class hit rate, the first on a tie."""
    steepest = max(range(len(data["falls"])), key=lambda i: (data["falls"][i], -i))
    return SWEEP_DIMENSIONS[steepest + 1], SWEEP_DIMENSIONS[steepest]


def test_both_hit_rates_of_both_models_over_all_swept_dimensions_on_a_base_2_axis(data, text):
    assert "Both hit rates for both models over all swept dimensions, on a base-2 axis" in text["caption"]
    assert data["dims"] == [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    assert 'ax.set_xscale("log", base=2)' in text["code"]


def test_the_band_is_the_steepest_fall_of_the_mean_class_hit_rate_8_to_4(data, text):
    assert "The shaded band marks the step with the steepest fall of the two models' mean class hit rate" in text["caption"]
    assert ("In the table's sweep the steepest fall of the two models' mean class hit rate is the step from 8 to 4"
            in text["sweep"])
    assert "mean class hit rate falls most from **8** to **4** dimensions" in text["summary"]
    assert band(data) == (4, 8)
    others = [fall for i, fall in enumerate(data["falls"]) if SWEEP_DIMENSIONS[i] != 8]
    assert data["falls"][SWEEP_DIMENSIONS.index(8)] > max(others)     # not a tie broken by position


def test_in_the_band_model_1_falls_0_40_and_model_2_no_more_than_from_16_to_8(data, text):
    assert "model 1 loses 0.4000 there, while model 2's 0.1250 is no more than its step from 16 to 8" in text["sweep"]
    step = {which: at(data, "class_hit", which, 8) - at(data, "class_hit", which, 4) for which in (0, 1)}
    assert round(step[0], 4) == 0.4000 and round(step[1], 4) == 0.1250
    assert step[1] <= at(data, "class_hit", 1, 16) - at(data, "class_hit", 1, 8) + 1e-12


def test_below_the_band_both_class_curves_fall_further_than_across_it(data, text):
    assert ("from 4 to 2, one more halving, the finer sweep has model 1 losing 0.4250 (to 0.1750) and model 2 0.2500"
            " (to 0.4500), each more than from 8 to 4") in text["sweep"]
    assert "the finer sweep shows both models falling further down to 2 (0.1750 and 0.4500)" in text["summary"]
    for which, (lost, end) in enumerate(((0.4250, 0.1750), (0.2500, 0.4500))):
        assert round(at(data, "class_hit", which, 4) - at(data, "class_hit", which, 2), 4) == lost
        assert round(at(data, "class_hit", which, 2), 4) == end
        assert (at(data, "class_hit", which, 4) - at(data, "class_hit", which, 2)
                > at(data, "class_hit", which, 8) - at(data, "class_hit", which, 4))


def test_the_dotted_line_is_the_out_of_domain_model_1(data, text):
    assert "the dotted line is the out-of-domain model 1 at `DIM` dimensions" in text["caption"]
    assert round(data["outsider"]["concept_hit"], 4) == 0.0500 and round(data["outsider"]["class_hit"], 4) == 0.2500


def test_the_concept_curves_cross_more_than_once_and_settle_into_no_order(data, text):
    assert "the two concept curves cross each other more than once and never settle into a common order" in text["reading"]
    first, second = data["curves"]["concept_hit"]
    signs = [(a > b) - (a < b) for a, b in zip(first, second) if a != b]
    crossings = sum(s != t for s, t in zip(signs, signs[1:]))
    assert crossings >= 2
    above_band = [(a > b) - (a < b) for d, a, b in zip(data["dims"], first, second) if d >= 8 and a != b]
    assert len(set(above_band)) == 2                                  # still changing order above the band


def test_the_class_curves_fall_at_different_points(data, text):
    assert ("the class curves fall at different points: model 1's stays at 0.9500 or above down to 6 dimensions,"
            " inside the shaded step, while model 2's leaves 1.0000 at 16 and moves unevenly (0.8250 at 8, 0.9000 at 6);"
            " from 4 down to 2 both keep falling, model 1's to 0.1750 and model 2's to 0.4500") in text["reading"]
    low, high = band(data)
    assert low < 6 < high                                             # 6 lies inside the shaded step
    first = {d: at(data, "class_hit", 0, d) for d in data["dims"]}
    second = {d: at(data, "class_hit", 1, d) for d in data["dims"]}
    assert min(v for d, v in first.items() if d >= 6) >= 0.95 and first[4] < 0.95
    assert max(d for d, v in second.items() if v < 1.0) == 16           # the first dimension, from the right, below 1
    assert round(second[8], 4) == 0.8250 and round(second[6], 4) == 0.9000 and second[6] > second[8]
    for curve in (first, second):
        assert curve[4] > curve[3] > curve[2]
    assert round(first[2], 4) == 0.1750 and round(second[2], 4) == 0.4500


def test_the_dotted_line_is_below_every_in_domain_point_down_to_3_dimensions(data, text):
    assert "The dotted line sits below every in-domain point down to 3 dimensions" in text["reading"]
    for measure in MEASURES:
        for which in (0, 1):
            assert all(at(data, measure, which, d) > data["outsider"][measure] for d in data["dims"] if d >= 3)


def test_at_2_dimensions_model_1_alone_drops_under_the_outsider_on_the_class_hit_rate(data, text):
    assert "At 2 dimensions that stops being true for model 1, whose class hit rate (0.1750" in text["reading"]
    assert "(0.1500 against 0.0500)" in text["reading"]
    assert round(at(data, "class_hit", 0, 2), 4) == 0.1750 < data["outsider"]["class_hit"]
    assert round(at(data, "concept_hit", 0, 2), 4) == 0.1500 > data["outsider"]["concept_hit"]
    assert at(data, "class_hit", 1, 2) > data["outsider"]["class_hit"]        # model 2 stays above it
    assert at(data, "concept_hit", 1, 2) > data["outsider"]["concept_hit"]


def test_above_the_band_model_1_peaks_at_8_and_model_2_at_48(data, text):
    assert "in the finer sweep its highest value is 0.6000, at 48" in text["sweep"]
    assert "(model 1 peaks at 8, model 2 at 48)" in text["summary"]
    above = [d for d in data["dims"] if d >= 8]
    first = {d: at(data, "concept_hit", 0, d) for d in above}
    second = {d: at(data, "concept_hit", 1, d) for d in above}
    assert max(first, key=first.get) == 8 and sorted(first.values())[-2] < first[8]
    assert max(second, key=second.get) == 48 and round(second[48], 4) == 0.6000
    assert sorted(second.values())[-2] < second[48]


def test_both_models_score_32_above_64_and_16_but_name_different_best_dimensions(data, text):
    assert "Both models score 32 above 64 and above 16, but their best dimensions differ" in text["sweep"]
    for which in (0, 1):
        assert at(data, "concept_hit", which, 32) > at(data, "concept_hit", which, 64)
        assert at(data, "concept_hit", which, 32) > at(data, "concept_hit", which, 16)
    table = [d for d in SWEEP_DIMENSIONS if d >= 8]
    best = [max(table, key=lambda d, which=which: at(data, "concept_hit", which, d)) for which in (0, 1)]
    assert best == [8, 32]


def described_figure():
    """The committed notebook's figure output (the one whose PNG carries an alt): its text/plain description."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    outputs = [output for cell in cells if cell["cell_type"] == "code" for output in cell.get("outputs", [])
               if output.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(outputs) == 1, f"{len(outputs)} described figures, expected the one of cell 21"
    description = "".join(outputs[0]["data"]["text/plain"])
    assert outputs[0]["metadata"]["image/png"]["alt"] == description
    return description


def figure_description(data):
    """The description as cell 21 writes it: one describe_series per panel, then what both panels share."""
    curves = {m: {"model 1": data["curves"][m][0], "model 2": data["curves"][m][1]} for m in MEASURES}
    concept_text = describe_series(f"Left, share of {data['n_queries']} queries whose first result has the right concept",
                                   "dimension", data["dims"], curves["concept_hit"], fmt=".4f")
    class_text = describe_series("Right, the same for the right class", "dimension", data["dims"], curves["class_hit"],
                                 fmt=".4f")
    both_full_from = min((d for i, d in enumerate(data["dims"])
                          if all(rate == 1 for curve in curves["class_hit"].values() for rate in curve[i:])), default=None)
    low, high = band(data)
    return (f"{concept_text} {class_text[:-1]}"
            + (f"; both are at 1.0000 from {both_full_from} up." if both_full_from else ".")
            + f" Both panels: in-domain models 1 and 2 on a log-scale dimension axis, a band shaded from {low}"
            f" to {high} (the steepest fall of the mean class hit rate), and a dotted line for the out-of-domain"
            f" model 1 at {DIM} dimensions: {data['outsider']['concept_hit']:.4f} left, {data['outsider']['class_hit']:.4f} right.")


def test_the_figures_description_is_written_from_its_plotted_values(data):
    description = described_figure()
    assert description == figure_description(data)
    assert "model 1 and model 2 cross 5 times" in description and "both are at 1.0000 from 24 up" in description
    first, second = data["curves"]["concept_hit"]
    signs = [(a > b) - (a < b) for a, b in zip(first, second) if a != b]
    crossings = sum(s != t for s, t in zip(signs, signs[1:]))              # the "5 times" of the left panel
    plotted = [data["dims"], *data["curves"]["concept_hit"], *data["curves"]["class_hit"], band(data),
               list(data["outsider"].values())]
    # the 40 queries (y label), model 1 (legend), DIM (legend, also a plotted dimension), the count of crossings
    allowed = [data["n_queries"], 1, DIM, crossings]
    assert numbers_not_plotted(description, plotted, ".4f", allowed=allowed) == []
