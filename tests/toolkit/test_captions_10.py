"""Lesson 10's figure (staleness and cost against the refresh interval) says what its plotted data shows.

The sweep is recomputed with the package as cells 6, 8, 10, 12, 14, 15 and 22 of the notebook compute
it, at the course seed, and the claims of the figure's introduction and title, and of the sentences of
"Reading the sweep" and "Reading the bill" about the plotted numbers, are checked against it. Each
claim's key phrase is looked up in the committed notebook, so that a changed text makes this file fail
until it is updated too.
"""
import json

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import describe_series, numbers_not_plotted
from ragcourse.retrieval.linking import retrieve_top_k
from ragcourse.retrieval.pipeline import link_instruction, link_prompt
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel
from ragcourse.world.llm import ConceptLinker
from ragcourse.world.updates import PERIODS, RECORD_MARKER, change_stream, served_text

NOTEBOOK = NOTEBOOKS_DIR / "10-indexing-and-updating.ipynb"
FIGURE_NAME = '"10-stale-rate-vs-interval"'
SEED, K, TEMPERATURE, CHANGE_RATE = 20260218, 3, 0.6, 0.10      # the notebook's parameter cell
INTERVALS = (1, 2, 3, 4, 6, 12)


def sweep_at(seed):
    """Cells 12, 14 and 15: per interval, the rates and the embedded chunks of both policies."""
    world = build_world(seed, SECOND_EDITION)
    documents, queries, edition = world.documents, world.queries, world.edition
    chunks = paragraph_chunks(documents, edition)
    chunk_document = [d for d, document in enumerate(documents) for _ in document.paragraphs]
    model = EmbeddingModel(edition, projection_seed=seed)
    retrieved = retrieve_top_k(model, [chunk.text for chunk in chunks], [query.text for query in queries], K)
    stream = change_stream(seed, len(documents), rate=CHANGE_RATE)
    instruction = link_instruction(edition, ask_for_record=True)

    def run_interval(interval):
        linker = ConceptLinker(edition, seed, temperature=TEMPERATURE, copy_record=RECORD_MARKER)
        stale = recall = concept = current = asked = incremental = full = 0
        for period in range(1, PERIODS + 1):
            seen = (period // interval) * interval
            if period % interval == 0:
                changed = stream.changed_between(period - interval, period)
                incremental += sum(chunk_document[i] in changed for i in range(len(chunks)))
                full += len(chunks)
            for query_index, query in enumerate(queries):
                top = retrieved[query_index]
                served = {i: served_text(chunks[i].text, stream.record(chunk_document[i], seen)) for i in top}
                stale += sum(stream.record(chunk_document[i], seen) != stream.record(chunk_document[i], period)
                             for i in top) / K
                recall += any(query.concept in chunks[i].concepts for i in top)
                reply = linker.call(link_prompt(instruction, query.text, [served[i] for i in top]))
                quoted = None if reply.concept is None else next(
                    (i for i in top if edition.concept(reply.concept).document_form in served[i]), None)
                right_concept = reply.concept == query.concept
                concept += right_concept
                current += (right_concept and quoted is not None
                            and reply.record == stream.record(chunk_document[quoted], period))
                asked += 1
        return {"stale": stale / asked, "recall": recall / asked, "concept": concept / asked,
                "current": current / asked, "incremental": incremental, "full": full, "asked": asked}

    return {interval: run_interval(interval) for interval in INTERVALS}


@pytest.fixture(scope="module")
def sweep():
    return sweep_at(SEED)


@pytest.fixture(scope="module")
def text():
    """The figure's code, and all markdown of the notebook with its whitespace collapsed."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    code = next("".join(c["source"]) for c in cells if c["cell_type"] == "code" and FIGURE_NAME in "".join(c["source"]))
    index = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and FIGURE_NAME in "".join(c["source"]))
    intro = next(c for c in reversed(cells[:index]) if c["cell_type"] == "markdown")
    markdown = [" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown"]
    return {"code": code, "intro": " ".join("".join(intro["source"]).split()), "markdown": " ".join(markdown)}


def per_answer(row, policy):
    """The right panel's value: chunks embedded per up-to-date answer."""
    return row[policy] / (row["current"] * row["asked"])


def test_left_panel_retrieval_and_generation_are_flat(sweep, text):
    assert "Left: retrieval success and generation, both flat" in text["intro"]
    assert "Retrieval stays flat while answers go stale" in text["code"]
    assert {row["recall"] for row in sweep.values()} == {0.95}
    assert {row["concept"] for row in sweep.values()} == {0.925}


def test_left_panel_staleness_and_wrong_answers_climb_with_the_interval(sweep, text):
    assert "lets the stale chunk rate climb to **0.2562** and the up-to-date rate sink to **0.6125**" in text["markdown"]
    stale = [sweep[a]["stale"] for a in INTERVALS]
    wrong = [1 - sweep[a]["current"] for a in INTERVALS]
    assert stale[0] == 0 and all(a < b for a, b in zip(stale, stale[1:]))
    assert all(a < b for a, b in zip(wrong, wrong[1:]))
    assert f"{stale[-1]:.4f}" == "0.2562" and f"{sweep[12]['current']:.4f}" == "0.6125"


def test_wrong_answers_beyond_wrong_concepts_exceed_the_stale_share_at_interval_12(sweep, text):
    assert "the rest, 0.3125 at interval 12, is more than the share of stale chunks (0.2562)" in text["markdown"]
    row = sweep[12]
    rest = (1 - row["current"]) - (1 - row["concept"])
    assert f"{rest:.4f}" == "0.3125" and rest > row["stale"]


def test_right_panel_incremental_barely_gets_cheaper(sweep, text):
    assert "Right: chunks embedded per up-to-date answer under the two policies, on a logarithmic scale" in text["intro"]
    assert 'right.set_yscale("log")' in text["code"]
    assert "it embeds **1.98** chunks at interval 1 and **1.77** at interval 12: about eleven percent saved" in text["markdown"]
    first, last = per_answer(sweep[1], "incremental"), per_answer(sweep[12], "incremental")
    assert (f"{first:.2f}", f"{last:.2f}") == ("1.98", "1.77")
    assert 0.10 <= 1 - last / first < 0.12


def test_right_panel_full_reindexing_falls_with_the_interval(sweep, text):
    assert "from **18.73** chunks per up-to-date answer down to **2.36**" in text["markdown"]
    full = [per_answer(sweep[a], "full") for a in INTERVALS]
    assert all(a > b for a, b in zip(full, full[1:]))
    assert (f"{full[0]:.2f}", f"{full[-1]:.2f}") == ("18.73", "2.36")
    assert all(per_answer(sweep[a], "full") > per_answer(sweep[a], "incremental") for a in INTERVALS)


def test_incremental_every_period_embeds_not_much_more_than_one_full_rebuild(sweep, text):
    assert "Incremental refresh at every period embeds 881 chunks over the year" in text["markdown"]
    assert "a single yearly full rebuild (693)" in text["markdown"]
    assert (sweep[1]["incremental"], sweep[12]["full"]) == (881, 693)


def described_figure():
    """The committed notebook's figure output (the one whose PNG carries an alt): its text/plain description."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    outputs = [output for cell in cells if cell["cell_type"] == "code" for output in cell.get("outputs", [])
               if output.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(outputs) == 1, f"{len(outputs)} described figures, expected the one of cell 22"
    description = "".join(outputs[0]["data"]["text/plain"])
    assert outputs[0]["metadata"]["image/png"]["alt"] == description
    return description


def panels(sweep):
    """The plotted series of cell 22: the left panel's four shares, the right panel's two costs per answer."""
    shares = {f"success@{K} (retrieval)": [sweep[a]["recall"] for a in INTERVALS],
              "answer accuracy (generation)": [sweep[a]["concept"] for a in INTERVALS],
              "stale chunk rate (input)": [sweep[a]["stale"] for a in INTERVALS],
              "wrong answer rate (output)": [1 - sweep[a]["current"] for a in INTERVALS]}
    costs = {"incremental refresh": [per_answer(sweep[a], "incremental") for a in INTERVALS],
             "full re-indexing": [per_answer(sweep[a], "full") for a in INTERVALS]}
    return shares, costs


def figure_description(sweep):
    """The description cell 22 writes, with the same describe_series calls, from the recomputed sweep."""
    shares, costs = panels(sweep)
    flat = [label for label, values in shares.items() if len({f"{value:.4f}" for value in values}) == 1]
    full_above = all(incremental < full for incremental, full in zip(*costs.values()))
    return (describe_series(f"Left: share of {sweep[1]['asked']} requests or their chunks", "refresh interval",
                            list(INTERVALS), shares, fmt=".4f")
            + (f" Flat at every interval: {' and '.join(flat)}." if flat else "")
            + " " + describe_series("Right: chunks embedded per up-to-date answer (log scale)", "refresh interval",
                                    list(INTERVALS), costs, fmt=".2f")
            + (" Full re-indexing costs more at every interval." if full_above else ""))


def test_the_figures_description_is_written_from_its_plotted_values(sweep):
    description = described_figure()
    assert description == figure_description(sweep)
    assert "Flat at every interval: success@3 (retrieval) and answer accuracy (generation)." in description
    assert "full re-indexing falls from 18.73 to 2.36. Full re-indexing costs more at every interval." in description
    # Each panel's numbers as the notebook prints them: shares with four decimals, costs per answer with two.
    # K is in the legend (success@3), the 480 requests in the left y label, the intervals on both x axes.
    left, right = description.split(" Right: ")
    shares, costs = panels(sweep)
    assert numbers_not_plotted(left, shares.values(), ".4f", allowed=[K, sweep[1]["asked"], list(INTERVALS)]) == []
    assert numbers_not_plotted(right, costs.values(), ".2f", allowed=[list(INTERVALS)]) == []
