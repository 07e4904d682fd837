"""``python -m ragcourse questions``: every set as JSON lines, a listing, and status 2 for an unknown set."""
from __future__ import annotations

import json

import pytest

from ragcourse.cli.questions import SETS
from ragcourse.corpus import queries
from ragcourse.corpus.apidocs import load_corpus
from support.cli import run_main


def run(argv, capsys):
    return run_main(["questions", *argv], capsys)


@pytest.fixture(scope="module")
def expected():
    return {"self": queries.self_retrieval(load_corpus()), "judged": queries.judged_questions(),
            "unanswerable": queries.unanswerable_questions(), "real-dev": queries.real_questions("dev"),
            "real-test": queries.real_questions("test")}


@pytest.mark.parametrize("name", SETS)
def test_every_set_prints_one_json_object_a_line(name, expected, capsys):
    status, out, err = run([name, "--json"], capsys)
    assert status == 0 and err == ""
    lines = [json.loads(line) for line in out.splitlines()]
    assert all(list(line) == ["id", "text", "relevant", "source"] for line in lines)
    assert [(x["id"], x["text"], tuple(x["relevant"])) for x in lines] == \
        [(q.qid, q.text, q.relevant) for q in expected[name]]
    assert len({x["id"] for x in lines}) == len(lines) > 0
    if name.startswith("real-"):
        assert all(x["source"].startswith(("http://", "https://")) and 1 <= len(x["relevant"]) <= 3 for x in lines)
    else:
        assert all(x["source"] == "ragcourse" for x in lines)
    if name == "unanswerable":
        assert all(x["relevant"] == [] for x in lines)


def test_without_json_a_listing_one_line_a_question(capsys):
    status, out, _ = run(["real-dev"], capsys)
    lines = out.splitlines()
    dev = queries.real_questions("dev")
    assert status == 0 and len(lines) == len(dev) + 1
    assert lines[0].startswith(dev[0].qid) and lines[0].endswith(dev[0].text)
    assert lines[-1].startswith(f"{len(dev)} questions in real-dev")


@pytest.mark.parametrize("argv", [["real"], ["dev"], ["Judged"], []])
def test_an_unknown_or_missing_set_exits_2_and_names_the_allowed_ones(argv, capsys):
    status, out, err = run(argv, capsys)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "SET" in err
    if argv:
        assert all(name in err for name in SETS)
