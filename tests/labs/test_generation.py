"""Lab 04's accounting of generated answers (``labs.generation``), on hand-made reads whose counts are known:
the four-cell table, the causes of a wrong answer (each in the first that applies), the per-question numbers
a paired test reads, a condition's averages, and the throughput line (the copies that fill a pass not counted)."""
from __future__ import annotations

import pytest

from ragcourse.corpus.queries import Question
from ragcourse.labs.generation import Read, causes, four_cells, generation_row, per_question, throughput
from ragcourse.rag.answer_checks import AnswerMarks
from ragcourse.rag.generator import BATCH, Generation, Prompt
from ragcourse.rag.passages import Passage, ScoredPassage
from ragcourse.rag.reader import Answer


def read(qid: str, given: list[str], *, correct=False, abstained=False, named=(), ungrounded=()) -> Read:
    question = Question(qid, f"question {qid}", ("numpy.concatenate",))
    passages = tuple(ScoredPassage(Passage(i, f"{page}.md", 0, 0, 4, "text"), 1.0, i + 1) for i, page in enumerate(given))
    prompt = Prompt(question.text, passages, "", tuple(range(10 + len(given))), cut=0)
    text = "The documents do not say." if abstained else "Use `np.concatenate` [1]."
    answer = Answer(question.text, text, (), abstained, (), float("nan"))
    marks = AnswerMarks(correct, not ungrounded, abstained, correct, tuple(named), tuple(ungrounded))
    return Read("kept", question, prompt, answer, Generation(text, prompt.tokens, len(text.split())), marks)


READS = [read("a", ["numpy.concatenate"], correct=True, named=("numpy.concatenate",)),
         read("b", ["numpy.concatenate"], abstained=True),                                  # abstained, answer there
         read("c", ["numpy.stack"], named=("numpy.stack",)),                                # answered, nothing right given
         read("d", ["numpy.concatenate", "numpy.stack"], named=("numpy.vstack",), ungrounded=("numpy.vstack",)),
         read("e", ["numpy.concatenate", "numpy.stack"], named=("numpy.stack",)),           # followed a wrong passage
         read("f", [], abstained=True)]                                                     # abstained, nothing there


def test_the_four_cells_count_right_passage_against_right_answer():
    assert four_cells(READS) == {(True, True): 1, (True, False): 3, (False, True): 0, (False, False): 2}


def test_each_wrong_answer_goes_to_the_first_cause_that_applies():
    found = {cause: [r.question.qid for r in reads] for cause, reads in causes(READS).items()}
    assert found == {"abstained, answer there": ["b"], "answered, nothing right given": ["c"],
                     "named from memory": ["d"], "followed a wrong passage": ["e"]}


def test_per_question_numbers_and_a_bad_measure():
    assert per_question(READS, "correct") == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert per_question(READS, "answered") == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    assert per_question(READS, "right_passage") == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="measure must be one of"):
        per_question(READS, "accuracy")


def test_a_condition_row_averages_its_questions():
    row = generation_row("kept", READS)
    assert row.passages == pytest.approx(7 / 6) and row.right_passage == pytest.approx(4 / 6)
    assert row.answered == pytest.approx(4 / 6) and row.correct == pytest.approx(1 / 6)
    assert row.grounded == pytest.approx(5 / 6) and row.cut == 0


def test_the_throughput_line_counts_answers_and_passes():
    assert throughput({"generated": 0, "cached": 180}) == "all 180 answers read from the generation cache"
    one = throughput({"generated": 1, "cached": 179, "passes": 1, "prefill_tokens": 800, "prefill_seconds": 2.0,
                      "decode_tokens": 40, "decode_seconds": 4.0})
    assert one == f"1 answer generated in 1 pass of {BATCH}: prefill 400 tokens/s, decode 10.0 tokens/s; 179 read from the cache"
    many = throughput({"generated": 9, "cached": 0, "passes": 2, "prefill_tokens": 900, "prefill_seconds": 3.0,
                       "decode_tokens": 90, "decode_seconds": 3.0})
    assert many.startswith(f"9 answers generated in 2 passes of {BATCH}: prefill 300 tokens/s, decode 30.0")
