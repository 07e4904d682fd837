"""The line ``ask`` prints under a generated answer: the passages given, marked by how the answer points at them."""
from __future__ import annotations

from ragcourse.cli.ask import given_line
from ragcourse.rag.passages import Passage, ScoredPassage
from ragcourse.rag.reader import Answer


def given(*pages: str) -> list[ScoredPassage]:
    return [ScoredPassage(Passage(n, f"{page}.md", n, 0, 10, "some text"), 1.0, n + 1) for n, page in enumerate(pages)]


def answer(text: str, citations=(), abstained: bool = False) -> Answer:
    return Answer("q", text, tuple(citations), abstained, (), float("nan"))


def test_a_page_the_answer_names_is_marked_even_without_a_number():
    line = given_line(answer("Use numpy.concatenate to join them."), given("numpy.concatenate", "numpy.stack"))
    assert line == ("passages given (numbered in this order; + its page named in the answer): "
                    "[numpy.concatenate.md#0]+  [numpy.stack.md#1]")


def test_numbers_and_names_are_marked_apart_and_an_abstention_names_nothing():
    passages = given("numpy.concatenate", "numpy.stack")
    line = given_line(answer("np.stack does it [1]", ["numpy.concatenate.md#0"]), passages)
    assert line.endswith("[numpy.concatenate.md#0]*  [numpy.stack.md#1]+")
    assert "* cited by number; + its page named" in line
    quiet = given_line(answer("The documents do not say; numpy.stack is close.", abstained=True), passages)
    assert quiet == "passages given (numbered in this order): [numpy.concatenate.md#0]  [numpy.stack.md#1]"
    assert given_line(answer("nothing"), []) == "passages given (numbered in this order): none"
