"""The labs' judged-beside-real check: per-question measures, the headline rows and the paired comparisons."""
from __future__ import annotations

import re

import pytest

from ragcourse.corpus.queries import Coverage, Question
from ragcourse.labs.real_check import paired, print_measures, scores
from ragcourse.retrieval.metrics import hit_at_k, per_question, recall_at_k

QUESTIONS = [Question(f"q{n}", f"question {n}", (f"d{n}", f"e{n}")) for n in range(12)]
SETS = {"judged": QUESTIONS[:4], "real test": QUESTIONS[4:]}
GOOD = {q.qid: [q.relevant[0], "x", "y"] for q in QUESTIONS}            # the right page first
LATE = {q.qid: ["x", "y", q.relevant[1]] for q in QUESTIONS}            # the other right page third
EMPTY = {q.qid: [] for q in QUESTIONS}


def test_hit_at_k_is_one_when_any_relevant_id_is_in_the_top_k():
    assert hit_at_k(["a", "b", "c"], {"c", "z"}, 3) == 1.0
    assert hit_at_k(["a", "b", "c"], {"c", "z"}, 2) == 0.0
    assert hit_at_k([], {"c"}, 1) == 0.0
    with pytest.raises(ValueError, match="k must be at least 1"):
        hit_at_k(["a"], {"a"}, 0)


def test_hit_at_one_differs_from_recall_at_one_with_several_relevant_pages():
    """hit@1 is 'the first page is right'; Recall@1 cannot exceed 1/|relevant| (the labs' prose means hit@1)."""
    assert hit_at_k(GOOD["q0"], QUESTIONS[0].relevant, 1) == 1.0
    assert recall_at_k(GOOD["q0"], QUESTIONS[0].relevant, 1) == 0.5


def test_per_question_keeps_judgement_order_and_counts_a_missing_run_as_empty():
    judged = {"b": ("2",), "a": ("1",)}
    assert per_question({"a": ["1"]}, judged, hit_at_k, 1) == [0.0, 1.0]


def test_scores_by_measure_name():
    assert scores(GOOD, QUESTIONS, "hit@1") == [1.0] * 12
    assert scores(LATE, QUESTIONS, "hit@1") == [0.0] * 12
    assert scores(LATE, QUESTIONS, "recall@5") == [0.5] * 12
    assert scores(LATE, QUESTIONS, "mrr") == pytest.approx([1 / 3] * 12)


def test_headline_rows_per_system_and_set(capsys):
    print_measures({"good": {"judged": GOOD, "real test": GOOD}, "empty": {"judged": EMPTY, "real test": EMPTY}}, SETS)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["system", "questions", "n", "hit@1", "R@5", "MRR"]
    assert lines[1].split() == ["good", "judged", "4", "1.000", "0.500", "1.000"]
    assert lines[2].split() == ["good", "real", "test", "8", "1.000", "0.500", "1.000"]
    assert lines[4].split() == ["empty", "real", "test", "8", "0.000", "0.000", "0.000"]


def test_paired_comparison_direction_and_verdict():
    result = paired(GOOD, LATE, QUESTIONS, "hit@1", ("good", "late"))
    assert result.difference == 1.0 and result.verdict() == "good beats late"
    assert paired(LATE, GOOD, QUESTIONS, "hit@1", ("late", "good")).verdict() == "good beats late"
    same = paired(GOOD, GOOD, QUESTIONS, "recall@5", ("a", "b"))
    assert same.p_value == 1.0 and same.verdict() == "no difference this set can detect"
    assert "(n = 12)" in str(result)


# -- the held-out set is scored in one place -------------------------------------------------------

def test_held_out_questions_scored_from_a_second_place_raise_and_the_same_place_may_score_again():
    """A lab reads ``test`` in one cell: scoring it again from that cell is fine, from another it raises."""
    from ragcourse.labs.real_check import HeldOut, TestReadTwice, forget_test_reads

    forget_test_reads()
    held = HeldOut(QUESTIONS, Coverage(12, 12, ()))
    first_cell = compile("scores(GOOD, held, 'mrr'); paired(GOOD, LATE, held, 'hit@1', ('a', 'b'))",
                         "/tmp/ipykernel_1/1111.py", "exec")
    second_cell = compile("scores(GOOD, held, 'mrr')", "/tmp/ipykernel_1/2222.py", "exec")
    names = {"scores": scores, "paired": paired, "GOOD": GOOD, "LATE": LATE, "held": held}
    try:
        exec(first_cell, names)
        exec(first_cell, names)                      # the same cell run again
        with pytest.raises(TestReadTwice, match="already scored in another cell.*1111.py.*Restart the kernel"):
            exec(second_cell, names)
        assert scores(GOOD, list(held), "mrr") == [1.0] * 12      # a plain list of the same questions is not guarded
    finally:
        forget_test_reads()


# Labs whose real ``test`` questions are read in one cell (``held_out``): all four.
LABS_READING_TEST_ONCE = ["01", "02", "03", "04"]


@pytest.mark.parametrize("lab", LABS_READING_TEST_ONCE)
def test_each_lab_reads_its_test_questions_in_exactly_one_cell(lab):
    """Static: one code cell of the lab takes the held-out questions, and no other cell names the test split."""
    import json
    from pathlib import Path

    [notebook] = (Path(__file__).resolve().parents[2] / "notebooks" / "labs").glob(f"{lab}-*.ipynb")
    sources = ["".join(c["source"]) for c in json.loads(notebook.read_text("utf-8"))["cells"] if c["cell_type"] == "code"]
    reading = [s for s in sources if "held_out(" in s]
    assert len(reading) == 1
    assert not [s for s in sources if 'real_questions("test")' in s]
    assert not [s for s in sources if '"test"' in s and "held_out(" not in s]


def test_mrr_at_10_counts_only_the_first_ten_pages():
    from ragcourse.retrieval.metrics import reciprocal_rank_at_k

    ranked = [f"x{n}" for n in range(10)] + ["d0"]
    assert reciprocal_rank_at_k(ranked, {"d0"}, 10) == 0.0 and reciprocal_rank_at_k(ranked, {"d0"}, 11) == 1 / 11
    assert reciprocal_rank_at_k(["a", "d0"], {"d0"}, 10) == 0.5
    with pytest.raises(ValueError, match="k must be at least 1"):
        reciprocal_rank_at_k(ranked, {"d0"}, 0)
    assert scores(LATE, QUESTIONS, "mrr@10") == [1 / 3] * 12 and scores(GOOD, QUESTIONS, "hit@5") == [1.0] * 12


def test_print_measures_and_add_paired_over_named_sets(capsys):
    from ragcourse.labs.real_check import add_paired, print_measures
    from ragcourse.retrieval.significance import Family

    runs = {"good": {"mine": GOOD, "theirs": GOOD}, "late": {"mine": LATE, "theirs": LATE}}
    named = {"mine": QUESTIONS[:4], "theirs": QUESTIONS[4:]}
    print_measures(runs, named)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["good", "mine", "4", "1.000", "0.500", "1.000"]
    assert lines[4].split() == ["late", "theirs", "8", "0.000", "0.500", "0.333"]
    family = Family("good against late")
    add_paired(family, runs, "good", "late", named, prefix="vs late: ")
    assert family.labels == ["vs late: mine hit@1", "vs late: mine recall@5", "vs late: theirs hit@1",
                             "vs late: theirs recall@5"]
    assert family.verdict("vs late: theirs hit@1") == "good beats late"
    assert family.verdict("vs late: mine recall@5") == "no difference this set can detect"


def test_held_out_is_the_fresh_set_none_of_it_in_dev():
    """The fresh set (frozen by hash) is what every lab reports on; none of it is among the dev questions."""
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.corpus.queries import fresh_questions, real_questions
    from ragcourse.labs.real_check import held_out

    corpus = load_corpus()
    fresh = held_out(corpus)
    assert {q.qid for q in fresh} <= {q.qid for q in fresh_questions()} and len(fresh) >= 200
    assert not {q.text.lower() for q in fresh} & {q.text.lower() for q in real_questions("all")}
    assert fresh.coverage.total == len(fresh_questions())


@pytest.mark.parametrize("lab", LABS_READING_TEST_ONCE)
def test_a_lab_reads_the_fresh_set_and_prints_its_coverage(lab):
    import json
    from pathlib import Path

    [notebook] = (Path(__file__).resolve().parents[2] / "notebooks" / "labs").glob(f"{lab}-*.ipynb")
    cells = json.loads(notebook.read_text("utf-8"))["cells"]
    [reading] = ["".join(c["source"]) for c in cells if c["cell_type"] == "code" and "held_out(" in "".join(c["source"])]
    assert "held_out(corpus)" in reading
    printed = "".join("".join(o.get("text", "")) for c in cells
                      if c["cell_type"] == "code" and "held_out(" in "".join(c["source"]) for o in c["outputs"])
    # Labs 01, 02 and 04 print "fresh test questions: ...", lab 03 "fresh test: ..." (its reading cell is fixed).
    assert re.search(r"fresh test(?: questions)?: 268 of 268 questions have a page", printed)
