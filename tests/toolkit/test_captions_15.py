"""Lesson 15's figure caption against the plotted data, recomputed with the package at the course seed.

The figure (cell "15-tasks-by-setups") draws, left, the three task rates of the four setups as bars and,
right, the fine-tuning sweep without retrieval (one line per task) with the retrieval-only freshness as a
reference line. Each test recomputes what cells 6-16 compute, draws the figure cell on that data (Agg
backend, nothing saved), asserts one claim of the caption or of the prose that reads the same numbers,
and checks that the committed notebook still makes the claim, so that a changed caption updates the test.
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
from matplotlib.colors import to_hex  # noqa: E402

from ragcourse.batch.notebooks import lesson_notebooks  # noqa: E402
from ragcourse.toolkit.figures import PALETTE, describe_bars, describe_series, numbers_not_plotted, save_figure  # noqa: E402
from ragcourse.retrieval.search import EmbeddingIndex  # noqa: E402
from ragcourse.world.concepts import SECOND_EDITION  # noqa: E402
from ragcourse.world.corpus import build_world  # noqa: E402
from ragcourse.world.embedding import EmbeddingModel  # noqa: E402
from ragcourse.world.finetuning import stamped_chunks, training_examples, validity_stamps  # noqa: E402
from ragcourse.world.llm import FineTunedModel  # noqa: E402

NOTEBOOK = lesson_notebooks()[15]
TASKS = ("freshness", "format", "domain")


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
    """The figure's data as cells 6, 10, 12, 14 and 16 compute it (``seed`` replaces the course seed)."""
    p = parameters()
    seed = p["SEED"] if seed is None else seed
    world = build_world(seed, SECOND_EDITION)
    queries, edition = world.queries, world.edition
    stamps = validity_stamps(seed, edition)
    chunks = stamped_chunks(world.documents, edition, stamps.current)
    training = training_examples(seed, world.documents, p["TUNED_EXAMPLES"])
    index = EmbeddingIndex(EmbeddingModel(edition, projection_seed=seed, dim=p["DIM"]), [c.text for c in chunks])
    retrieved = [[chunks[i].text for i in index.rank(q.text)[:p["K"]]] for q in queries]
    setups = {"no-retrieval baseline": (False, 0), "retrieval only": (True, 0),
              "fine-tuning only": (False, p["TUNED_EXAMPLES"]), "both together": (True, p["TUNED_EXAMPLES"])}

    def measure(use_retrieval: bool, tuned: int) -> dict:
        model = FineTunedModel(edition, seed, training[:tuned], stamps.trained, temperature=p["TEMPERATURE"])
        fresh = formatted = understood = 0
        for q, context in zip(queries, retrieved):
            reply = model.solve(q.text, context if use_retrieval else [])
            fresh += reply.stamp == stamps.current[q.concept]
            formatted += reply.format_ok
            understood += reply.concept == q.concept
        n = len(queries)
        return {"freshness": fresh / n, "format": formatted / n, "domain": understood / n}

    results = {name: measure(*setup) for name, setup in setups.items()}
    sweep = {n: measure(False, n) for n in p["EXAMPLE_COUNTS"]}
    classes = {n: len({edition.concept(k).label for k in set(training[:n])}) for n in p["EXAMPLE_COUNTS"]}
    concepts = {n: len(set(training[:n])) for n in p["EXAMPLE_COUNTS"]}
    return {"queries": queries, "setups": setups, "results": results, "sweep": sweep, "classes": classes,
            "concepts": concepts, "stale_queries": sum(q.concept in stamps.stale for q in queries),
            "procedures": len(edition.keys)}


@lru_cache(maxsize=None)
def drawn() -> dict:
    """Run the notebook's figure cell on the recomputed data and read back what it drew."""
    p, data = parameters(), plotted()
    shown = []
    namespace = {"plt": plt, "PALETTE": PALETTE, "save_figure": save_figure, "FIGURES_DIR": None,
                 "describe_bars": describe_bars, "describe_series": describe_series,
                 "show_figure": lambda fig, description, **kwargs: shown.append((description, kwargs)),
                 "SETUPS": data["setups"], "results": data["results"], "sweep": data["sweep"],
                 "queries": data["queries"], "TUNED_EXAMPLES": p["TUNED_EXAMPLES"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec("".join(code_cell("15-tasks-by-setups")["source"]), namespace)
    assert len(shown) == 1, "the figure cell shows its figure once, with show_figure"
    fig = namespace["fig"]
    left, right = fig.axes[:2]
    bars = {c.get_label(): c for c in left.containers}
    lines = {line.get_label(): line for line in right.get_lines()}
    out = {"bars": {name: ([r.get_height() for r in c], to_hex(c[0].get_facecolor())) for name, c in bars.items()},
           "lines": {label: {"x": list(line.get_xdata()), "y": list(line.get_ydata()), "colour": to_hex(line.get_color()),
                             "style": line.get_linestyle(), "marker": line.get_marker()} for label, line in lines.items()},
           "ylabel": right.get_ylabel(), "left_ylabel": left.get_ylabel(),
           "description": shown[0][0], "show_kwargs": shown[0][1]}
    plt.close(fig)
    return out


def sweep_lines() -> dict:
    return {label: line for label, line in drawn()["lines"].items() if label.endswith(", fine-tuning only")}


def test_the_recomputed_numbers_are_what_the_notebook_printed():
    printed = "".join("".join(o.get("text", "")) for o in code_cell("results = {name: measure(")["outputs"])
    for name, result in plotted()["results"].items():
        assert f"{name:<21} {result['freshness']:>9.4f} {result['format']:>7.4f} {result['domain']:>15.4f}" in printed
    printed = "".join("".join(o.get("text", "")) for o in code_cell("sweep[n_examples] = measure(")["outputs"])
    for n, result in plotted()["sweep"].items():
        assert f" {result['freshness']:>9.4f} {result['format']:>7.4f} {result['domain']:>15.4f}" in printed, n


def test_left_panel_three_task_rates_in_each_setup():
    markdown_with("Left: the three task rates in each setup.")
    bars = drawn()["bars"]
    assert list(bars) == list(plotted()["setups"])
    for name, (heights, _) in bars.items():
        assert heights == [plotted()["results"][name][task] for task in TASKS], name


def test_right_panel_is_the_sweep_one_style_and_marker_per_task_in_the_fine_tuning_colour():
    markdown_with("(freshness solid with circles, format dashed with squares, domain language dotted with triangles)")
    markdown_with("Right: the sweep over training examples without retrieval, in the fine-tuning setup's colour")
    lines = sweep_lines()
    expected = {"knowledge freshness": ("freshness", "-", "o"), "format compliance": ("format", "--", "s"),
                "domain language": ("domain", ":", "^")}
    assert [label.removesuffix(", fine-tuning only") for label in lines] == list(expected)
    finetuning_colour = drawn()["bars"]["fine-tuning only"][1]
    for label, line in lines.items():
        task, style, marker = expected[label.removesuffix(", fine-tuning only")]
        assert (line["style"], line["marker"], line["colour"]) == (style, marker, finetuning_colour), label
        assert line["x"] == list(parameters()["EXAMPLE_COUNTS"])
        assert line["y"] == [plotted()["sweep"][n][task] for n in parameters()["EXAMPLE_COUNTS"]]


def test_the_unmarked_dashed_line_is_retrieval_only_freshness_in_the_retrieval_colour():
    text = markdown_with("The dashed line without markers, in the retrieval setup's colour, is not part of the sweep")
    assert 'the axis label "rate, no retrieval" does not apply to it' in text
    assert drawn()["ylabel"] == "rate, no retrieval"
    others = {label: line for label, line in drawn()["lines"].items() if label not in sweep_lines()}
    assert len(others) == 1
    (line,) = others.values()
    assert (line["style"], line["marker"]) == ("--", "None")
    assert line["colour"] == drawn()["bars"]["retrieval only"][1]
    assert set(line["y"]) == {plotted()["results"]["retrieval only"]["freshness"]}


def test_a_colour_means_one_setup_in_both_panels():
    markdown_with("A colour means one setup in both panels.")
    colours = [colour for _, colour in drawn()["bars"].values()]
    assert len(set(colours)) == len(colours) == 4
    used_right = {line["colour"] for line in drawn()["lines"].values()}
    assert used_right == {drawn()["bars"]["fine-tuning only"][1], drawn()["bars"]["retrieval only"][1]}


def test_together_the_setups_reach_the_best_of_both_on_every_task():
    markdown_with("Together, the setups reach the best of both on every task column")
    results = plotted()["results"]
    for task in TASKS:
        assert results["both together"][task] == max(results["retrieval only"][task], results["fine-tuning only"][task])


def test_format_completes_at_12_the_first_count_with_all_five_classes():
    markdown_with("the pattern is complete at 12 examples, the first count at which all five classes have appeared")
    sweep, classes = plotted()["sweep"], plotted()["classes"]
    first_full = next(n for n in sweep if sweep[n]["format"] == 1.0)
    assert first_full == 12 == next(n for n in sweep if classes[n] == 5)
    assert all(sweep[n]["format"] == 1.0 for n in sweep if n >= first_full)


def test_domain_language_reaches_one_only_when_all_twenty_procedures_are_covered():
    markdown_with("reaches 1.0000 only when all twenty are covered, at 48 examples")
    sweep, concepts = plotted()["sweep"], plotted()["concepts"]
    assert [n for n in sweep if sweep[n]["domain"] == 1.0] == [48]
    assert concepts[48] == plotted()["procedures"] == 20
    domain = [sweep[n]["domain"] for n in sweep]
    assert domain == sorted(domain) and [round(v, 4) for v in domain[1:4]] == [0.575, 0.625, 0.725]


def test_freshness_stops_at_the_thirteen_revised_questions_below_the_retrieval_line():
    text = markdown_with("Those thirteen cannot be fresh at any number of examples")
    assert "It stays at 0.3750 at 12 examples" in text and "0.6750 is where that stops: 27 of 40" in text
    sweep = plotted()["sweep"]
    freshness = [sweep[n]["freshness"] for n in sweep]
    assert [round(v, 4) for v in freshness] == [0.0, 0.375, 0.375, 0.4, 0.675]
    steps = [b - a for a, b in zip(freshness, freshness[1:])]
    assert max(steps) == steps[0]                                     # the largest step is the first six examples
    assert max(freshness) == 27 / 40 == 1 - plotted()["stale_queries"] / 40
    assert max(freshness) < plotted()["results"]["retrieval only"]["freshness"]


def described_output() -> dict:
    """The committed figure cell's output whose metadata gives the PNG its alt text (exactly one)."""
    found = [o for o in code_cell("15-tasks-by-setups")["outputs"] if o.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(found) == 1, "the figure cell ends with show_figure(fig, description)"
    return found[0]


def expected_description() -> str:
    """The figure's description, written from the recomputed data with the notebook's describe calls."""
    data, labels = plotted(), ["knowledge freshness", "format compliance", "domain language"]
    task_rates = {name: [data["results"][name][task] for task in TASKS] for name in data["setups"]}
    sweep_rates = {label: [data["sweep"][n][task] for n in data["sweep"]] for task, label in zip(TASKS, labels)}
    reference = data["results"]["retrieval only"]["freshness"]
    above = all(rate < reference for rate in sweep_rates["knowledge freshness"])
    return (describe_bars(f"Left: share of {len(data['queries'])} questions per task, bars in setup order",
                          labels, task_rates, fmt=".4f")
            + " Right: " + describe_series("fine-tuning-only rate, no retrieval,", "labelled training examples",
                                           list(data["sweep"]), sweep_rates, fmt=".4f")
            + f" A dashed reference line, not part of the sweep, marks retrieval-only freshness at {reference:.4f},"
            + (" above every point" if above else " reached or passed by a point") + " of the knowledge freshness sweep.")


def test_the_figure_describes_itself_from_the_plotted_values():
    output = described_output()
    description = "".join(output["data"]["text/plain"])
    assert output["metadata"]["image/png"]["alt"] == description
    # (b) every number it states is one the figure draws, as the notebook prints it (.4f); the one other
    # number, the count of questions, is in the left panel's axis label.
    d = drawn()
    plotted_values = [heights for heights, _ in d["bars"].values()]
    plotted_values += [line["y"] for line in d["lines"].values()]
    plotted_values += [[int(x) for x in line["x"]] for line in sweep_lines().values()]   # numpy's ints, as int
    questions = len(plotted()["queries"])
    assert d["left_ylabel"] == f"share of {questions} questions"
    assert numbers_not_plotted(description, plotted_values, ".4f", allowed=[questions]) == []
    # (a) it is the description recomputed from the data, and the figure cell writes the same from it
    assert description == expected_description() == d["description"]
    assert "above every point of the knowledge freshness sweep" in description
    # the plotted values are printed as tables above (cells 14 and 16), so no values table follows the figure
    assert d["show_kwargs"] == {} and len(code_cell("15-tasks-by-setups")["outputs"]) == 1
