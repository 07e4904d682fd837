"""Lab 02's dense numbers, recomputed now, equal the stored ones within a stated tolerance.

A neural model's vectors can differ in their last bits across CPUs and thread counts (never with
what a text is batched with: ``engines.batching``). Measured on this machine over 600 windows: one
and two threads gave identical vectors; before the fixed-shape rule, the same texts batched with
other texts differed by at most 9.7e-8 per coordinate, and no query's top-10 order changed. Other
CPUs may differ more.
Such a difference changes a printed recall only if it swaps two documents across a cut-off,
which happens for at most a handful of queries; the tolerance is therefore counted in
queries: two of the self-retrieval queries (one per page), one of the 50 judged questions. TF-IDF and
the lexical scorers need no tolerance: nbval compares their outputs exactly.
"""
from __future__ import annotations

import json
import re

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.corpus.apidocs import load_corpus, with_summaries
from ragcourse.engines.chunking.text_chunks import TextChunk, chunk_corpus, word_windows
from ragcourse.engines.dense import DenseEncoder
from ragcourse.corpus.queries import judged_questions, judgements, self_retrieval
from ragcourse.engines.retrievers import DenseRetriever, measure, run_questions
from ragcourse.retrieval.metrics import hit_at_k, mean_measure

pytestmark = pytest.mark.embeddings("questions", "lab 02")   # lab 02's questions and windows, embedded

LAB = NOTEBOOKS_DIR / "labs" / "02-evaluation-chunks-and-dense.ipynb"
SELF_QUERIES_TOLERATED, JUDGED_TOLERATED = 2, 1


def stored_stdout() -> str:
    cells = json.loads(LAB.read_text())["cells"]
    return "".join("".join(o["text"]) for c in cells if c["cell_type"] == "code"
                   for o in c.get("outputs", []) if o.get("name") == "stdout")


def stored_self_lines(text: str) -> dict[str, dict[str, float]]:
    """The dense self-retrieval line (whole pages; the layout lines after TF-IDF's two in the lab)."""
    lines = re.findall(r"^(whole-document|chunked)\s+(.*)$", text, flags=re.M)
    dense = lines[2:]
    return {unit: {k: float(v) for k, v in re.findall(r"([a-z@0-9]+)=([0-9.]+)", rest)} for unit, rest in dense}


def stored_judged_rows(text: str) -> dict[tuple[str, str], list[float]]:
    """(unit, "kept" or "left out") -> the dense rows of the judged table (whole pages with and without the
    summary line, windows with it)."""
    return {(unit, summary): [float(x) for x in rest.split()]
            for unit, summary, rest in re.findall(r"^dense\s+(whole|chunked)\s+(kept|left out)\s+(.*)$", text,
                                                  flags=re.M)}


@pytest.fixture(scope="module")
def now():
    corpus = load_corpus()
    encoder = DenseEncoder()
    kept = with_summaries(corpus.documents)
    units = {("whole-document", "left out"): [TextChunk(d.doc_id, 0, d.text) for d in corpus.documents],
             ("whole-document", "kept"): [TextChunk(d.doc_id, 0, d.text) for d in kept],
             ("chunked", "kept"): chunk_corpus(kept, word_windows, size=60, overlap=20)}
    retrievers = {key: DenseRetriever(chunks, encoder) for key, chunks in units.items()}
    self_queries, judged = self_retrieval(corpus), judged_questions(corpus)
    judged_runs = {key: run_questions(r, judged) for key, r in retrievers.items()}
    return ({unit: measure(run_questions(retrievers[unit, "left out"], self_queries), judgements(self_queries))
             for unit in ("whole-document",)},
            {key: {**measure(runs, judgements(judged)), "hit@1": mean_measure(runs, judgements(judged), hit_at_k, 1)}
             for key, runs in judged_runs.items()},
            len(self_queries), len(judged))


def test_self_retrieval_within_two_queries(now):
    stored = stored_self_lines(stored_stdout())
    assert set(stored) == {"whole-document"}
    for unit, numbers in stored.items():
        assert set(numbers) == {"recall@1", "recall@5", "recall@10", "mrr"}
        for measure_name, value in numbers.items():
            assert abs(now[0][unit][measure_name] - value) <= SELF_QUERIES_TOLERATED / now[2] + 0.0005, measure_name


def test_judged_within_one_question(now):
    stored = stored_judged_rows(stored_stdout())
    names = ["hit@1", "recall@1", "recall@5", "recall@10", "mrr", "ndcg@10"]
    assert set(stored) == {("whole", "kept"), ("whole", "left out"), ("chunked", "kept")}
    for (unit, summary), values in stored.items():
        label = "whole-document" if unit == "whole" else "chunked"
        assert len(values) == len(names)
        for name, value in zip(names, values):
            assert abs(now[1][label, summary][name] - value) <= JUDGED_TOLERATED / now[3] + 0.0005, (unit, summary, name)

