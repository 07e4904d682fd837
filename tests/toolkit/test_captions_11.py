"""Lesson 11's figure caption against the plotted data, recomputed with the package at the course seed.

The figure (cell "11-short-vs-long-phrasing") draws, left, success@5 and, right, the grounded-answer rate of
the short and the long phrasing under the three setups (baseline, expansion, rewriting), each panel with a
dashed line at the reference: the requests as the query set writes them (cell 8). Each test recomputes what
the notebook's cells compute, asserts one claim the caption (or a sentence that reads the same values)
makes, and checks that the committed notebook still makes the claim, so that a changed caption updates the
test. The last test checks the figure's own description (its text and alt, issue 53) against the same data.
"""
from __future__ import annotations

import ast
import json
from functools import lru_cache

from ragcourse.batch.notebooks import lesson_notebooks
from ragcourse.toolkit.figures import describe_bars, numbers_not_plotted
from ragcourse.retrieval.pipeline import CosineJaccardRetriever, index_chunks, is_relevant
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.llm import CallCounter, ChunkAnswerer, QueryTransformer
from ragcourse.world.phrasings import phrase_queries

NOTEBOOK = lesson_notebooks()[11]
MODES = ("baseline", "expansion", "rewriting")
FORMS = ("short", "long")


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


def printed(phrase: str) -> str:
    """What the one code cell containing ``phrase`` printed."""
    cell = next(c for c in cells() if c["cell_type"] == "code" and phrase in "".join(c["source"]))
    return "".join("".join(o.get("text", "")) for o in cell["outputs"])


def parameters() -> dict:
    """The literal values of the notebook's parameters cell."""
    tree = ast.parse(code_with("SEED = 2"))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body}


@lru_cache(maxsize=None)
def plotted(seed: int | None = None) -> dict:
    """The figure's data, computed as cells 6, 8, 10 and 14-18 compute it (first runs only)."""
    p = parameters()
    seed = p["SEED"] if seed is None else seed
    k = p["K"]
    world = build_world(seed, SECOND_EDITION)
    queries, edition = world.queries, world.edition
    embedding = EmbeddingModel(edition, projection_seed=seed)
    retriever = CosineJaccardRetriever(embedding, index_chunks(paragraph_chunks(world.documents, edition), embedding))
    memo: dict[str, list] = {}

    def retrieve(text: str) -> list:
        if text not in memo:
            memo[text] = retriever.retrieve(text, k)
        return memo[text]

    # Cell 8: the reference, the requests as the query set writes them.
    answerer = ChunkAnswerer(edition, seed)
    found = answered = 0
    for query in queries:
        context = retrieve(query.text)
        found += any(is_relevant(chunk, query, edition) for chunk in context)
        answered += is_relevant(answerer.answer(query.text, context).chunk, query, edition)
    reference = {"recall": found / len(queries), "generation": answered / len(queries)}

    # Cell 14's measure, one call counter per setup, at the course seed (the bars).
    phrasings = phrase_queries(queries, seed, edition)

    def measure(form: str, mode: str) -> dict[str, float]:
        counter = CallCounter()
        transformer = QueryTransformer(edition, seed, temperature=p["TEMPERATURE"], counter=counter)
        model = ChunkAnswerer(edition, seed, counter=counter)
        found = answered = 0
        for phrasing in phrasings:
            typed = search_text = phrasing.text(form)
            if mode != "baseline":
                search_text = transformer.transform(typed, mode).text
            context = retrieve(search_text)
            found += any(is_relevant(chunk, phrasing.query, edition) for chunk in context)
            answered += is_relevant(model.answer(typed, context).chunk, phrasing.query, edition)
        return {"recall": found / len(phrasings), "generation": answered / len(phrasings)}

    return {"n": len(queries), "reference": reference,
            "bars": {form: {mode: measure(form, mode) for mode in MODES} for form in FORMS}}


def test_the_recomputed_data_is_what_the_notebook_printed():
    data = plotted()
    reference = printed("index_language = {").splitlines()[-1].split()
    assert [reference[-3], reference[-1]] == \
        ["%.4f" % data["reference"]["recall"], "%.4f" % data["reference"]["generation"]]
    rows = [line.split() for line in (printed('measure("short", mode, SEED)')
                                      + printed('measure("long", mode, SEED)')).splitlines()
            if line.split()[:1] in (["short"], ["long"]) and line.split()[1] in MODES]
    assert [row[:4] for row in rows] == \
        [[form, mode, "%.4f" % data["bars"][form][mode]["recall"], "%.4f" % data["bars"][form][mode]["generation"]]
         for form in FORMS for mode in MODES]


def test_left_is_success_right_is_the_grounded_answer_rate():
    markdown_with("Success@5 (left) and the grounded-answer rate (right) for both phrasings")
    code = code_with("11-short-vs-long-phrasing")
    assert 'zip(axes, ("recall", "generation"))' in code
    assert parameters()["K"] == 5
    data = plotted()
    values = [v for form in FORMS for row in data["bars"][form].values() for v in row.values()]
    assert data["n"] == 40 and all(0.0 <= v <= 1.0 for v in values + list(data["reference"].values()))


def test_the_dashed_line_is_the_reference():
    markdown_with("The dashed line (legend: `request in the index's language`) is the reference measured at the start")
    code = code_with("11-short-vs-long-phrasing")
    assert "axis.axhline(index_language[measure_name]" in code and 'linestyle="--"' in code
    assert "label=\"request in the index's language\"" in code
    reference = plotted()["reference"]
    assert (round(reference["recall"], 4), round(reference["generation"], 4)) == (0.8000, 0.6750)


def test_short_transforms_end_just_above_the_dashed_line_on_grounded_answers():
    markdown_with("on short requests the grounded-answer bars of both transforms end up just above it, "
                  "by one request in forty")
    markdown_with("on short requests a transform below ends up one answer above this generation")
    data = plotted()
    line = data["reference"]["generation"]
    for mode in ("expansion", "rewriting"):
        bar = data["bars"]["short"][mode]["generation"]
        assert bar > line and round((bar - line) * data["n"]) == 1, (mode, bar, line)


def test_short_transforms_end_two_requests_below_on_success():
    markdown_with("success two requests below it, generation one above it")
    data = plotted()
    line = data["reference"]["recall"]
    for mode in ("expansion", "rewriting"):
        bar = data["bars"]["short"][mode]["recall"]
        assert bar < line and round((line - bar) * data["n"]) == 2, (mode, bar, line)


def figure_output() -> dict:
    """The figure cell's one output: the described figure (its image/png carries an ``alt``), no values table."""
    cell = next(c for c in cells() if c["cell_type"] == "code" and "11-short-vs-long-phrasing" in "".join(c["source"]))
    described = [o for o in cell["outputs"] if "alt" in o.get("metadata", {}).get("image/png", {})]
    assert len(described) == 1 and cell["outputs"] == described, "one described figure, no table: cells 8, 16, 18 print it"
    return described[0]


def expected_description(data: dict, k: int) -> str:
    """The description written from the bars and the dashed line, as the figure cell's describe_panel writes it."""
    def panel(measure: str, title: str) -> str:
        bars = {f"{form} phrasing": [data["bars"][form][mode][measure] for mode in MODES] for form in FORMS}
        line = data["reference"][measure]
        above = [f"{form} {mode}" for form in FORMS for mode in MODES if data["bars"][form][mode][measure] > line]
        return (describe_bars(f"{title} (share of {data['n']} requests) per setup", MODES, bars, fmt=".4f")
                + f" Dashed line (request in the index's language) at {line:.4f}; bars above it:"
                f" {', '.join(above) if above else 'none'}.")
    return f"Left: {panel('recall', f'Success@{k}')} Right: {panel('generation', 'Grounded answers')}"


def test_the_figure_describes_itself_from_the_plotted_values():
    output = figure_output()
    description = "".join(output["data"]["text/plain"])
    assert output["metadata"]["image/png"]["alt"] == description
    k, data = parameters()["K"], plotted()
    values = [data["bars"][form][mode][measure] for form in FORMS for mode in MODES for measure in ("recall", "generation")]
    values += list(data["reference"].values())
    # Besides the plotted values: K (the left title), the 40 of the y label, and describe_bars' "1 of 3" (bars counted).
    long_higher = {sum(data["bars"]["long"][m][measure] > data["bars"]["short"][m][measure] for m in MODES)
                   for measure in ("recall", "generation")}
    assert numbers_not_plotted(description, values, ".4f", allowed=[k, data["n"], len(MODES), *long_higher]) == []
    assert description == expected_description(data, k)
    assert "bars above it: none. Right:" in description and description.endswith("bars above it: short expansion, short rewriting.")
