"""Lesson 12's figure captions against the plotted data, recomputed with the package at the course seed.

The figure (cell "12-reranking-precision-and-calls") draws, left, precision@3, success@3 and the
grounded-answer rate against the candidate count (hollow markers: the second run at ``SEED + 1``) and,
right, the model calls on a logarithmic scale. Each test recomputes what the notebook's cells compute,
asserts one claim of the caption (the markdown above the figure and the reading below it), and checks that
the committed notebook still makes the claim, so that a changed caption updates the test. The last test checks
the figure's own description (its text and alt, issue 53) against the same data.
"""
from __future__ import annotations

import ast
import json
import math
from functools import lru_cache

from ragcourse.batch.notebooks import lesson_notebooks
from ragcourse.toolkit.figures import describe_series, numbers_not_plotted
from ragcourse.retrieval.candidates import candidate_lists, generation_share, precision_at, recall_at
from ragcourse.retrieval.pipeline import CosineJaccardRetriever, index_chunks
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.llm import CallCounter, ChunkAnswerer, PairScorer

NOTEBOOK = lesson_notebooks()[12]
MEASURES = ("precision", "recall", "generation")


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


def printed_rows(phrase: str) -> list[list[str]]:
    """The lines the one code cell containing ``phrase`` printed, split into words."""
    cell = next(c for c in cells() if c["cell_type"] == "code" and phrase in "".join(c["source"]))
    return [line.split() for line in "".join("".join(o.get("text", "")) for o in cell["outputs"]).splitlines()]


def parameters() -> dict:
    """The literal values of the notebook's parameters cell."""
    tree = ast.parse(code_with("SEED = 2"))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body}


@lru_cache(maxsize=None)
def plotted(seed: int | None = None) -> dict:
    """The figure's data, computed as cells 6, 8, 14, 16 and 17 compute it: {seed: {count: row}}."""
    p = parameters()
    seed = p["SEED"] if seed is None else seed
    k, counts = p["K"], p["CANDIDATE_COUNTS"]
    world = build_world(seed, SECOND_EDITION)
    queries, edition = world.queries, world.edition
    embedding = EmbeddingModel(edition, seed)
    retriever = CosineJaccardRetriever(embedding, index_chunks(paragraph_chunks(world.documents, edition), embedding))
    pool = candidate_lists(retriever, queries, max(max(p["DEPTHS"]), max(counts), k))

    def run_pipeline(n_candidates: int, model_seed: int) -> dict[str, float]:
        counter = CallCounter()
        scorer = PairScorer(edition, model_seed, noise=p["NOISE"], counter=counter)
        answerer = ChunkAnswerer(edition, model_seed, temperature=p["TEMPERATURE"], counter=counter)
        tops, chosen, tokens = [], [], 0
        for query, candidates in zip(queries, pool):
            candidates = candidates[:max(n_candidates, k)]
            if n_candidates > k:
                responses = [scorer.score(query.text, chunk) for chunk in candidates]
                tokens += sum(response.tokens for response in responses)
                candidates = [candidates[i] for i in sorted(range(len(candidates)), key=lambda i: -responses[i].score)]
            response = answerer.answer(query.text, candidates[:k])
            tokens += response.tokens
            chosen.append(response.chunk)
            tops.append(candidates[:k])
        return {"recall": recall_at(tops, queries, edition, k), "precision": precision_at(tops, queries, edition, k),
                "generation": generation_share(chosen, queries, edition), "calls": counter.calls, "tokens": tokens}

    return {model_seed: {n: run_pipeline(n, model_seed) for n in counts} for model_seed in (seed, seed + 1)}


@lru_cache(maxsize=None)
def question_count() -> int:
    return len(build_world(parameters()["SEED"], SECOND_EDITION).queries)


def course() -> tuple[dict, dict]:
    """The first run (filled markers) and the second run at SEED + 1 (hollow markers)."""
    seed = parameters()["SEED"]
    data = plotted()
    return data[seed], data[seed + 1]


def steps(values: list[float]) -> list[float]:
    return [b - a for a, b in zip(values, values[1:])]


def test_the_recomputed_data_is_what_the_notebook_printed():
    first, second = course()
    table = [row for row in printed_rows("measures = (") if row and row[0].isdigit()]
    assert [row[:4] + row[4:5] for row in table] == \
        [[str(n), "%.4f" % r["recall"], "%.4f" % r["precision"], "%.4f" % r["generation"], str(r["calls"])]
         for n, r in first.items()]
    assert [row[5] for row in table] == [str(r["tokens"]) for r in first.values()]   # the labels of the right panel
    repeat = [row for row in printed_rows("second run (seed") if row and row[0].isdigit()]
    assert [[row[0], row[2], row[3], row[4]] for row in repeat] == \
        [[str(n), "%.4f" % r["recall"], "%.4f" % r["precision"], "%.4f" % r["generation"]]
         for n, r in second.items()]


def test_left_three_measures_with_hollow_markers_at_the_next_seed():
    markdown_with("Left: precision@K, success@K and the grounded-answer rate (legend: `grounded answers`) as the pool "
                  "grows (hollow markers: the same at `SEED + 1`)")
    code = code_with("12-reranking-precision-and-calls")
    assert '"recall": f"success@{K}", "generation": "grounded answers"' in code
    assert 'repeat_runs[n][measure] for n in counts], linestyle="none"' in code and 'markerfacecolor="none"' in code
    assert "repeat_runs = {n: run_pipeline(n, SEED + 1)" in code_with("repeat_runs = {")
    first, second = course()
    assert all(0.0 <= r[m] <= 1.0 for run in (first, second) for r in run.values() for m in MEASURES)


def test_all_three_lines_rise_most_steeply_from_6_to_12():
    text = markdown_with("all three benefit lines make their steepest rise from 6 to 12 candidates")
    assert "(precision 0.4917 to 0.8250, success 0.8000 to 0.9750, generation 0.7250 to 0.9250)" in text
    first, _ = course()
    counts = list(first)
    assert counts[1:3] == [6, 12]
    assert all(b == 2 * a for a, b in zip(counts[1:], counts[2:]))   # 6 to 48 evenly spaced on the log axis
    for measure in MEASURES:
        rise = steps([first[n][measure] for n in counts])
        assert max(rise) == rise[1] and all(r < rise[1] for i, r in enumerate(rise) if i != 1), (measure, rise)
    assert [round(first[n][m], 4) for m in MEASURES for n in (6, 12)] == \
        [0.4917, 0.8250, 0.8000, 0.9750, 0.7250, 0.9250]


def test_after_24_precision_flattens_and_success_and_generation_bend_down():
    text = markdown_with("After 24 precision flattens, and success and generation bend down at 48")
    assert "Past 24 the cost line keeps its steady slope while the benefit lines flatten or turn down" in text
    first, _ = course()
    precision = steps([first[n]["precision"] for n in (12, 24, 48)])
    assert 0.0 <= precision[1] < 0.02 and precision[1] < precision[0] / 5
    for measure in ("recall", "generation"):
        assert first[48][measure] < first[24][measure] > first[12][measure], measure


def test_calls_jump_sevenfold_then_roughly_double():
    text = markdown_with("the calls jump sevenfold from 3 to 6 candidates, where the second stage starts (40 to 280)")
    assert "then roughly double with every doubling of the pool (520, 1000, 1960)" in text
    code = code_with("12-reranking-precision-and-calls")
    assert 'cost.set_yscale("log")' in code and 'cost.set_xscale("log", base=2)' in code
    first, _ = course()
    calls = [first[n]["calls"] for n in first]
    assert calls[:2] == [40, 280] and calls[1] == 7 * calls[0]
    assert calls[2:] == [520, 1000, 1960]
    ratios = [b / a for a, b in zip(calls[1:], calls[2:])]
    assert all(1.8 <= r <= 2.0 for r in ratios), ratios
    # the steady slope past 24: the last log step within 5% of the one before
    slopes = [math.log(r) for r in ratios]
    assert abs(slopes[-1] - slopes[-2]) < 0.05 * slopes[-2]


def figure_output() -> dict:
    """The figure cell's one output: the described figure (its image/png carries an ``alt``), no values table."""
    cell = next(c for c in cells() if c["cell_type"] == "code" and "12-reranking-precision-and-calls" in "".join(c["source"]))
    described = [o for o in cell["outputs"] if "alt" in o.get("metadata", {}).get("image/png", {})]
    assert len(described) == 1 and cell["outputs"] == described, "one described figure, no table: cells 18 and 22 print it"
    return described[0]


def expected_description(first: dict, second: dict, k: int, n_questions: int) -> str:
    """The description written from the plotted runs: the left panel's lines, their steepest rise and the hollow
    markers' largest gap, then the right panel's calls and token labels."""
    names = {"precision": f"precision@{k}", "recall": f"success@{k}", "generation": "grounded answers"}
    counts = list(first)
    left = describe_series(f"Left: share of {n_questions} questions", "candidates", counts,
                           {names[m]: [first[n][m] for n in counts] for m in names}, fmt=".4f")
    spans = set()
    for measure in names:
        rise = steps([first[n][measure] for n in counts])
        assert max(rise) > 0
        spans.add((counts[rise.index(max(rise))], counts[rise.index(max(rise)) + 1]))
    assert len(spans) == 1, spans       # at the course seed the three lines share their steepest step
    (start, end), = spans
    gaps = [(round(abs(first[n][m] - second[n][m]), 4), m, n) for m in names for n in counts]
    _, measure, at = next(g for g in gaps if g[0] == max(gap for gap, _, _ in gaps))
    hollow = (f"hollow markers (next seed) differ most for {names[measure]} at {at},"
              f" {second[at][measure]:.4f} against {first[at][measure]:.4f}")
    right = ("Right: model calls (log scale) against the same candidate counts, each point labelled: "
             + "; ".join(f"{n} candidates, {first[n]['calls']} calls, {first[n]['tokens']} tokens" for n in counts) + ".")
    return f"{left[:-1]}; all three rise most steeply from {start} to {end}; {hollow}. {right}"


def test_the_figure_describes_itself_from_the_plotted_values():
    output = figure_output()
    description = "".join(output["data"]["text/plain"])
    assert output["metadata"]["image/png"]["alt"] == description
    k, (first, second) = parameters()["K"], course()
    values = [list(first), *([r[m] for r in run.values()] for run in (first, second) for m in MEASURES),
              [r["calls"] for r in first.values()], [r["tokens"] for r in first.values()]]
    # Besides the plotted values: K (the legend's precision@3, success@3) and the 40 of the y label.
    assert numbers_not_plotted(description, values, ".4f", allowed=[k, question_count()]) == []
    assert description == expected_description(first, second, k, question_count())
    assert "all three rise most steeply from 6 to 12" in description
