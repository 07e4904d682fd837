"""The text measures of a written answer (rag.answer_checks), held against answers right and wrong.

The examples are the shapes SmolLM2's answers take in lab 04: a name in backticks, ``np.`` in code,
a ``.md`` file name copied from a passage label, a made-up function, an echo of the prompt.
"""
from __future__ import annotations

import pytest

from ragcourse.rag.answer_checks import NameIndex, cited_right, correct, grounded, mark, named_passages, ungrounded
from ragcourse.rag.generator import Generation, Prompt, abstains, cited_numbers, to_answer, with_citations
from ragcourse.rag.passages import Passage, ScoredPassage
from ragcourse.rag.reader import Answer

PAGES = ["numpy.concatenate", "numpy.hstack", "numpy.where", "numpy.sum", "numpy.ndarray.sum",
         "numpy.ndarray.reshape", "numpy.reshape", "numpy.linalg.solve", "numpy.linalg.lstsq", "numpy.fft.ifft",
         "numpy.savez", "numpy.savez_compressed", "numpy.ma.mask_rowcols", "numpy.array"]
NAMES = NameIndex.of(PAGES)


def passage(page: str, text: str, ordinal: int = 0) -> ScoredPassage:
    return ScoredPassage(Passage(ordinal, f"{page}.md", ordinal, 0, len(text), text), 1.0, ordinal + 1)


def answer(text: str, citations=()) -> Answer:
    return Answer("q", text, tuple(citations), abstains(text), (), float("nan"))


@pytest.mark.parametrize("text, expected", [
    ("Use `np.concatenate((a, b))`.", ["numpy.concatenate"]),
    ("numpy.concatenate joins them; so does numpy.hstack.", ["numpy.concatenate", "numpy.hstack"]),
    ("Call linalg.solve(a, b).", ["numpy.linalg.solve"]),
    ("fft.ifft gives the inverse.", ["numpy.fft.ifft"]),
    ("It is numpy.savez_compressed.md.", ["numpy.savez_compressed"]),   # a passage label copied: the page
    ("Try `where` with a condition.", ["numpy.where"]),
    ("arr.reshape(2, 3) does it.", ["numpy.reshape"]),                   # a short name goes to numpy.<name>
    ("The function `mask_rowcols` masks rows.", ["numpy.ma.mask_rowcols"]),
    ("np.linalg.solve(a, b) and np.linalg.lstsq", ["numpy.linalg.solve", "numpy.linalg.lstsq"]),
])
def test_names_are_found_as_people_write_them(text, expected):
    assert NAMES.mentioned(text) == expected


@pytest.mark.parametrize("text", [
    "Use the where clause of your query.",          # an English word is not a mention
    "The sum of the values is what you want.",
    "Use np.savez_npz for that.",                   # a made-up function names no page
    "The function `mask_max_values` does it.",
    "print(a) shows the array",                     # a call of something that is not numpy's
])
def test_words_and_made_up_names_are_not_mentions(text):
    assert NAMES.mentioned(text) == []


def test_correct_needs_a_judged_page_and_no_abstention():
    relevant = ("numpy.concatenate", "numpy.hstack")
    assert correct(answer("Use `np.concatenate`."), relevant, NAMES)
    assert not correct(answer("Use `np.savez`."), relevant, NAMES)                       # a wrong page
    assert not correct(answer("Use np.concatenate_arrays."), relevant, NAMES)           # a made-up name
    assert not correct(answer("The documents do not say. Maybe np.concatenate?"), relevant, NAMES)


def test_grounded_names_only_what_the_passages_hold():
    given = [passage("numpy.concatenate", "Join arrays.\n\n## See Also\n\nhstack : Stack arrays horizontally.")]
    assert grounded("Use `np.concatenate`.", given, NAMES)          # the page itself
    assert grounded("`np.hstack` also works.", given, NAMES)        # named in a passage (See Also)
    assert ungrounded("Use np.linalg.solve.", given, NAMES) == ["numpy.linalg.solve"]   # from memory
    assert grounded("Join them end to end.", given, NAMES)          # names nothing: nothing ungrounded
    assert not grounded("Use `np.concatenate`.", [], NAMES)         # closed book: every name is from memory


def test_cited_right_needs_a_cited_judged_page():
    assert cited_right(answer("x [1]", ["numpy.concatenate.md#2"]), ("numpy.concatenate",))
    assert not cited_right(answer("x [2]", ["numpy.savez.md#0"]), ("numpy.concatenate",))
    assert not cited_right(answer("Use np.concatenate."), ("numpy.concatenate",))        # no citation


@pytest.mark.parametrize("text, expected", [
    ("The documents do not say.", True), ("The passages do not contain the answer.", True), ("", True),
    ("No passage answers the question.", True), ("Use np.where [1].", False),
    ("It does not say whether the axis is kept.", False),   # a doubt about a detail is still an answer
])
def test_abstention_is_read_from_the_text(text, expected):
    assert abstains(text) is expected


def test_numbers_map_to_the_numbered_passages():
    given = (passage("numpy.where", "a"), passage("numpy.sum", "b", 3))
    prompt = Prompt("q", given, "", (1, 2, 3))
    made = to_answer(prompt, Generation("Use where [1] or sum [2]; see [7] and [1].", 3, 9))
    assert cited_numbers(made.text) == [1, 2, 7]
    assert made.citations == ("numpy.where.md#0", "numpy.sum.md#3")   # [7] names no passage: not a citation
    assert with_citations(prompt, made.text) == ("Use where [numpy.where.md#0] or sum [numpy.sum.md#3]; "
                                                 "see [7] and [numpy.where.md#0].")


def test_mark_puts_the_measures_together():
    given = [passage("numpy.concatenate", "Join a sequence of arrays along an existing axis.")]
    marks = mark(answer("Use `np.concatenate` or np.linalg.solve.", ["numpy.concatenate.md#0"]), given,
                 ("numpy.concatenate",), NAMES)
    assert (marks.correct, marks.grounded, marks.abstained, marks.cited_right) == (True, False, False, True)
    assert marks.named == ("numpy.concatenate", "numpy.linalg.solve") and marks.ungrounded == ("numpy.linalg.solve",)


def test_named_passages_are_the_given_passages_of_the_pages_an_answer_names():
    given = [passage("numpy.concatenate", "Join a sequence of arrays along an existing axis.", 0),
             passage("numpy.stack", "Join arrays along a new axis; see concatenate.", 2),
             passage("numpy.concatenate", "out: if provided, the destination.", 3)]
    assert named_passages("Use numpy.concatenate to join them end to end.", given) == \
        ["numpy.concatenate.md#0", "numpy.concatenate.md#3"]
    assert named_passages("Call `stack` or np.concatenate(a, b).", given) == \
        ["numpy.concatenate.md#0", "numpy.stack.md#2", "numpy.concatenate.md#3"]
    assert named_passages("Join them end to end.", given) == []          # a word of a page is not its name
    assert named_passages("Use numpy.hstack instead.", given) == []      # a page nobody gave is not a source
