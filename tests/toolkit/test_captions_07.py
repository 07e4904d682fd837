"""Lesson 07's figure (retrieval beside generation, and the bill per correct answer) says what it plots.

The three setups are recomputed with the package as cells 6, 14, 15, 17, 21 and 26 of the notebook
compute them, at the course seed, and every claim the caption (and the lesson's reading of the same
numbers) makes about the plotted bars and whiskers is checked against them. Each claim's key phrase is
looked up in the committed notebook, so that a changed caption makes this file fail until it is
updated too.
"""
import json
import math

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import numbers_not_plotted
from ragcourse.retrieval.pipeline import link_instruction, link_prompt
from ragcourse.retrieval.ranking import top_k
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel, cosine
from ragcourse.world.llm import ConceptLinker

NOTEBOOK = NOTEBOOKS_DIR / "07-retrieval-augmented-generation.ipynb"
FIGURE_NAME = '"07-retrieval-beside-generation"'
SEED, K, TEMPERATURE, N_SEEDS, DIM = 20260218, 3, 0.6, 6, 32     # the notebook's parameter cell
SETUPS = ("no retrieval", "retrieval", "wrong chunks")


def figure_data(seed):
    """What cell 33 plots: per setup success@K, answer accuracy, its range over the seeds, tokens per correct."""
    world = build_world(seed, SECOND_EDITION)
    queries, edition = world.queries, world.edition
    chunks = paragraph_chunks(world.documents, edition)
    chunk_texts = [chunk.text for chunk in chunks]
    in_domain = EmbeddingModel(edition, projection_seed=seed, dim=DIM)
    out_of_domain = in_domain.with_settings(in_domain=False)

    def retrieve_all(model, k):                                        # cell 14
        distinct_vectors = {text: model.embed(text) for text in dict.fromkeys(chunk_texts)}
        ranked = {}
        for request in dict.fromkeys(query.text for query in queries):
            request_vector = model.embed(request)
            similarity = {text: cosine(request_vector, vector) for text, vector in distinct_vectors.items()}
            ranked[request] = top_k([similarity[text] for text in chunk_texts], k)
        return [ranked[query.text] for query in queries]

    retrieved = {"no retrieval": [[] for _ in queries], "retrieval": retrieve_all(in_domain, K),
                 "wrong chunks": retrieve_all(out_of_domain, K)}
    instruction = link_instruction(edition)

    def sources_prompt(query_index, setup):                            # cell 17
        query = queries[query_index]
        if setup == "no retrieval":
            return link_prompt(instruction, query.text)
        return link_prompt(instruction, query.text, [chunk_texts[i] for i in retrieved[setup][query_index]])

    def run_setup(setup, model_seed):                                  # cell 21
        linker = ConceptLinker(edition, model_seed, temperature=TEMPERATURE)
        found, correct, tokens = 0, 0, 0
        for query_index, query in enumerate(queries):
            response = linker.call(sources_prompt(query_index, setup))
            tokens += response.tokens
            found += any(query.concept in chunks[i].concepts for i in retrieved[setup][query_index])
            correct += response.concept == query.concept
        return {"recall": found / len(queries), "generation": correct / len(queries), "correct": correct,
                "tokens": tokens, "per_correct": tokens / correct if correct else math.inf}

    results = {setup: run_setup(setup, seed) for setup in SETUPS}
    seed_generation = {setup: [run_setup(setup, seed + offset)["generation"] for offset in range(N_SEEDS)]
                       for setup in SETUPS}                            # cell 26
    fixed_concepts = {concept for i in retrieved["wrong chunks"][0] for concept in chunks[i].concepts}
    return {"results": results, "seeds": seed_generation, "queries": queries,
            "wrong_lists": {tuple(top) for top in retrieved["wrong chunks"]}, "fixed_concepts": fixed_concepts}


@pytest.fixture(scope="module")
def data():
    return figure_data(SEED)


@pytest.fixture(scope="module")
def text():
    """The figure's code, its caption (markdown before it) and the whole lesson's prose, whitespace folded."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    index = next(i for i, cell in enumerate(cells)
                 if cell["cell_type"] == "code" and FIGURE_NAME in "".join(cell["source"]))
    caption = next(c for c in reversed(cells[:index]) if c["cell_type"] == "markdown")
    prose = [" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown"]
    return {"code": "".join(cells[index]["source"]), "caption": " ".join("".join(caption["source"]).split()),
            "prose": " ".join(prose)}


def test_left_panel_pairs_success_with_answer_accuracy(data, text):
    assert "Left: for each setup, success@K (retrieval) next to the answer accuracy (generation)" in text["caption"]
    assert 'label=f"success@{K} (retrieval)"' in text["code"]
    assert 'label="answer accuracy (generation)"' in text["code"]
    assert '"no step" if s == "no retrieval"' in text["code"]
    shown = {s: (f"{r['recall']:.3f}", f"{r['generation']:.3f}") for s, r in data["results"].items()}
    assert shown == {"no retrieval": ("0.000", "0.200"), "retrieval": ("0.950", "0.925"),
                     "wrong chunks": ("0.175", "0.050")}


def test_the_whisker_spans_the_lowest_to_highest_accuracy_over_the_seeds(data, text):
    assert ("the black whisker on the answer-accuracy bar spans the lowest to highest accuracy over the model seeds"
            in text["caption"])
    for setup, result in data["results"].items():
        values = data["seeds"][setup]
        assert len(values) == N_SEEDS and values[0] == result["generation"]     # offset 0 is the bar itself
        assert min(values) <= result["generation"] <= max(values)               # both whisker arms >= 0


def test_the_in_domain_whisker_is_flat_and_the_other_two_span_the_threshold(data, text):
    assert "and **0.0000** for the in-domain pipeline" in text["prose"]
    spreads = {setup: max(values) - min(values) for setup, values in data["seeds"].items()}
    assert spreads["retrieval"] == 0.0
    assert f"{spreads['no retrieval']:.4f}" == f"{spreads['wrong chunks']:.4f}" == "0.0750"
    assert max(spreads.values()) == spreads["no retrieval"]


def test_wrong_chunks_answer_worse_than_no_sources(data, text):
    assert "answers **0.0500** correctly: worse than asking with no sources" in text["prose"]
    results = data["results"]
    assert results["wrong chunks"]["generation"] < results["no retrieval"]["generation"]
    assert max(data["seeds"]["wrong chunks"]) < max(data["seeds"]["no retrieval"])


def test_the_wrong_success_bar_is_the_requests_about_read_and_verify(data, text):
    assert "(at the course seed `read` and `verify`, the two keys they push in the valve request above)" in text["prose"]
    assert len(data["wrong_lists"]) == 1                                       # one fixed chunk list
    assert data["fixed_concepts"] == {"read", "verify"}
    share = sum(q.concept in data["fixed_concepts"] for q in data["queries"]) / len(data["queries"])
    assert share == data["results"]["wrong chunks"]["recall"]


def test_right_panel_tokens_per_correct_answer_turns_the_bill_around(data, text):
    assert "Right: the tokens spent per correct answer." in text["caption"]
    assert "Divide by the answers that came out right and the picture turns around" in text["prose"]
    assert "the most expensive run at **4915** tokens (**2457.5** per correct answer)" in text["prose"]
    results = data["results"]
    per_correct = {setup: result["per_correct"] for setup, result in results.items()}
    assert results["retrieval"]["tokens"] > results["no retrieval"]["tokens"]
    assert per_correct["retrieval"] < per_correct["no retrieval"] < per_correct["wrong chunks"]
    assert max(results, key=lambda s: results[s]["tokens"]) == "wrong chunks"
    assert [f"{per_correct[s]:.1f}" for s in SETUPS] == ["379.1", "131.0", "2457.5"]


def stored_description():
    """The committed figure output's description: its text/plain, which is also the PNG's alt."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    described = [output for cell in cells if cell["cell_type"] == "code" for output in cell.get("outputs", [])
                 if output.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(described) == 1, "one described figure"
    text = "".join(described[0]["data"]["text/plain"])
    assert described[0]["metadata"]["image/png"]["alt"] == text
    return text


def description(data):
    """Cell 33's description, written the same way from the recomputed bars, whiskers and cost bars."""
    results, seeds = data["results"], data["seeds"]
    success = ["no retrieval step" if s == "no retrieval" else f"{results[s]['recall']:.4f}" for s in SETUPS]
    cost = [f"{results[s]['per_correct']:.1f}" if results[s]["correct"] else "no correct answer" for s in SETUPS]
    pairs = "; ".join(f"{s}: {word} against {results[s]['generation']:.4f} ({min(seeds[s]):.4f} to {max(seeds[s]):.4f})"
                      for s, word in zip(SETUPS, success))
    return (f"Left: bars of the share of {len(data['queries'])} requests per setup, success@{K} (retrieval) against answer"
            f" accuracy (generation), in brackets the accuracy's lowest to highest over {N_SEEDS} model seeds"
            f" (its whisker): {pairs}. Right: bars of the tokens per correct answer: "
            + ", ".join(f"{s} {word}" for s, word in zip(SETUPS, cost)) + ".")


def test_the_figure_describes_itself_from_the_plotted_values(data):
    stored = stored_description()
    assert stored == description(data)
    left, right = stored.split(" Right: ")
    results, seeds = data["results"], data["seeds"]
    bars = [results[s]["recall"] for s in SETUPS if s != "no retrieval"] + [results[s]["generation"] for s in SETUPS]
    whiskers = [value for s in SETUPS for value in (min(seeds[s]), max(seeds[s]))]
    assert numbers_not_plotted(left, bars + whiskers, ".4f", allowed=[len(data["queries"]), K, N_SEEDS]) == []
    assert numbers_not_plotted(right, [results[s]["per_correct"] for s in SETUPS], ".1f") == []
