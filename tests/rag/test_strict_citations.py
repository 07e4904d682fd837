"""Strict citations: a relevant page is cited correctly only with its own text, not with a See Also line.

The pages below are abridged from the numpy pages lab 04 indexes (``ApiDocument.markdown``
with ``summary=False``), each line verbatim; the sentences are cut the way the reader cuts
them (lines of a paragraph joined by spaces). The last test runs the rule over every
sentence of the real corpus.
"""
from __future__ import annotations

import math

import pytest

from ragcourse.labs.ladder import cites_relevant, threshold_sweep
from ragcourse.rag.reader import (Answer, SentenceSplitter, citation_accuracy, copied_sentence, copied_sentences,
                                  see_also_section, strict_citation_accuracy)

PAGES = {
    "numpy.hstack": """# numpy.hstack

## Extended Summary

This is equivalent to concatenation along the second axis, except for 1-D
arrays where it concatenates along the first axis. Rebuilds arrays divided
by `hsplit`.

## Returns

stacked : ndarray
The array formed by stacking the given arrays.

## See Also

concatenate : Join a sequence of arrays along an existing axis.
stack : Join a sequence of arrays along a new axis.
block : Assemble an nd-array from nested lists of blocks.
""",
    "numpy.nanmean": """# numpy.nanmean

## Extended Summary

Returns the average of the array elements.  The average is taken over
the flattened array by default, otherwise over the specified axis.

## See Also

average : Weighted average
mean : Arithmetic mean taken while not ignoring NaNs
var, nanvar

## Notes

The arithmetic mean is the sum of the non-NaN elements along the axis
divided by the number of non-NaN elements.
""",
    "numpy.linalg.inv": """# numpy.linalg.inv

## Extended Summary

Given a square matrix `a`, return the matrix `ainv` satisfying
``a @ ainv = ainv @ a = eye(a.shape[0])``.

## Parameters

a : (..., M, M) array_like
Matrix to be inverted.

## See Also

scipy.linalg.inv : Similar function in SciPy.
numpy.linalg.cond : Compute the condition number of a matrix.
""",
    "numpy.cumulative_sum": """# numpy.cumulative_sum

## See Also

sum : Sum array elements.
trapezoid : Integration of array values using composite trapezoidal rule.
diff : Calculate the n-th discrete difference along given axis.
""",
    "numpy.transpose": """# numpy.transpose

## See Also

ndarray.transpose : Equivalent method.
moveaxis : Move axes of an array to new positions.
""",
    "numpy.interp": """# numpy.interp

## Extended Summary

Returns the one-dimensional piecewise linear interpolant to a function
with given discrete data points (`xp`, `fp`), evaluated at `x`.

## See Also

scipy.interpolate
""",
}

CONCATENATE_LINE = "concatenate : Join a sequence of arrays along an existing axis."   # numpy.concatenate's summary
HSTACK_OWN = ("This is equivalent to concatenation along the second axis, except for 1-D arrays where it "
              "concatenates along the first axis.")
INV_PARAMETER = "a : (..., M, M) array_like Matrix to be inverted."   # "name : text", but the page's own
JOIN = "how do I join two arrays along an existing axis"


def answer(question: str, evidence: list[tuple[str, str]], abstained: bool = False) -> Answer:
    """An answer as ``ExtractiveReader`` builds it: citations are the evidence's, in order, once each."""
    triples = tuple((sentence, citation, 0.6) for sentence, citation in evidence)
    citations = () if abstained else tuple(dict.fromkeys(citation for _, citation in evidence))
    return Answer(question, "text", citations, abstained, triples, 0.3 if abstained else 0.6)


def both(answers, relevant):
    return citation_accuracy(answers, relevant), strict_citation_accuracy(answers, relevant, PAGES)


# -- the three cases the issue names ------------------------------------------------------------

def test_a_see_also_line_of_a_relevant_page_counts_under_the_old_rule_only():
    """The reviewer's case: numpy.hstack is relevant, but the sentence describes numpy.concatenate."""
    answers = [answer(JOIN, [(CONCATENATE_LINE, "numpy.hstack.md#0"),
                             ("stack : Join a sequence of arrays along a new axis.", "numpy.hstack.md#0")])]
    old, strict = both(answers, {JOIN: ("numpy.hstack", "numpy.concatenate")})
    assert (old.citations, old.correct_citations, old.answered_with_correct) == (1, 1, 1)
    assert (strict.citations, strict.correct_citations, strict.answered_with_correct) == (1, 0, 0)
    assert strict.accuracy == 0.0 and strict.answered_with_correct_share == 0.0


def test_a_pages_own_sentence_counts_under_both_rules_even_when_it_looks_like_an_entry():
    """A parameter line has the See Also shape ``name : text`` and is still the page's own text."""
    question = "how do I invert a matrix"
    answers = [answer(question, [(INV_PARAMETER, "numpy.linalg.inv.md#0")]),
               answer(JOIN, [(HSTACK_OWN, "numpy.hstack.md#0")])]
    relevant = {question: ("numpy.linalg.inv",), JOIN: ("numpy.hstack",)}
    old, strict = both(answers, relevant)
    assert old == strict
    assert (strict.citations, strict.correct_citations, strict.answered_with_correct) == (2, 2, 2)


def test_an_irrelevant_page_counts_under_neither_rule():
    question = "average of an array ignoring nans"
    answers = [answer(question, [("average : Weighted average mean : Arithmetic mean taken while not ignoring "
                                  "NaNs var, nanvar", "numpy.nanmean.md#0"),
                                 ("Returns the average of the array elements.", "numpy.nanmean.md#0")])]
    old, strict = both(answers, {question: ("numpy.average",)})
    assert old == strict and (old.citations, old.correct_citations) == (1, 0)


def test_a_citation_counts_when_one_of_its_sentences_is_the_pages_own():
    """Scored per citation, as the old rule is: the own sentence of the same passage carries it."""
    question = "evaluate a piecewise linear interpolant"
    mixed = answer(question, [("scipy.interpolate", "numpy.interp.md#0"),
                              ("Returns the one-dimensional piecewise linear interpolant to a function with given "
                               "discrete data points (`xp`, `fp`), evaluated at `x`.", "numpy.interp.md#0")])
    only_copied = answer(JOIN, [(CONCATENATE_LINE, "numpy.hstack.md#0"), (HSTACK_OWN, "numpy.hstack.md#1")])
    relevant = {question: ("numpy.interp",), JOIN: ("numpy.hstack",)}
    old, strict = both([mixed, only_copied], relevant)
    assert (old.citations, old.correct_citations) == (3, 3)
    # interp.md#0 has an own sentence; hstack.md#0 only the copy; hstack.md#1 its own sentence
    assert (strict.citations, strict.correct_citations, strict.answered_with_correct) == (3, 2, 2)


# -- edge cases ---------------------------------------------------------------------------------

def test_abstained_answers_and_answers_without_evidence():
    question = "sum the elements of an array"
    abstained = answer(question, [("sum : Sum array elements.", "numpy.cumulative_sum.md#0")], abstained=True)
    no_context = Answer(question, "no passage was admitted", (), True, (), -1.0)
    old, strict = both([abstained, no_context], {question: ("numpy.cumulative_sum",)})
    assert old.answered == strict.answered == 0 and math.isnan(strict.accuracy) and math.isnan(old.accuracy)
    counts = copied_sentences([abstained, no_context], {question: ()}, PAGES)
    assert (counts.sentences, counts.copied) == (0, 0)
    # an answer that cites a relevant page with no sentence to check: the old rule counts it, the strict cannot
    bare = Answer(question, "text", ("numpy.cumulative_sum.md#0",), False, (), 0.6)
    old, strict = both([bare], {question: ("numpy.cumulative_sum",)})
    assert (old.correct_citations, strict.correct_citations) == (1, 0)
    with pytest.raises(ValueError, match="sum the elements"):
        strict_citation_accuracy([bare], {}, PAGES)


def test_a_cited_page_missing_from_pages_is_an_error_not_own_text():
    with pytest.raises(ValueError, match="numpy.stack"):
        copied_sentence(CONCATENATE_LINE, "numpy.stack.md#0", PAGES)


def test_copied_sentences_counts_overall_and_among_the_old_rules_correct():
    question = "cumulative sum along an axis"
    answers = [answer(JOIN, [(CONCATENATE_LINE, "numpy.hstack.md#0"), (HSTACK_OWN, "numpy.hstack.md#0")]),
               answer(question, [("sum : Sum array elements.", "numpy.cumulative_sum.md#0"),
                                 ("ndarray.transpose : Equivalent method.", "numpy.transpose.md#0")]),
               answer(question, [(INV_PARAMETER, "numpy.linalg.inv.md#0")], abstained=True)]
    relevant = {JOIN: ("numpy.hstack",), question: ("numpy.cumulative_sum",)}
    counts = copied_sentences(answers, relevant, PAGES)
    assert (counts.sentences, counts.copied, counts.relevant, counts.copied_relevant) == (4, 3, 3, 2)


# -- the rule: what lies inside a page's See Also section ---------------------------------------

@pytest.mark.parametrize("sentence, page", [
    (CONCATENATE_LINE, "numpy.hstack"),                                     # another page's summary, verbatim
    ("sum : Sum array elements.", "numpy.cumulative_sum"),                  # a description, not numpy.sum's summary
    ("ndarray.transpose : Equivalent method.", "numpy.transpose"),         # a pointer with a note
    ("scipy.interpolate", "numpy.interp"),                                  # a bare name
    ("average : Weighted average mean : Arithmetic mean taken while not ignoring NaNs var, nanvar",
     "numpy.nanmean"),                                                      # entries without a full stop run together
    ("ays along a new axis.", "numpy.hstack"),                              # a fixed window starts mid-entry
    ("  scipy.linalg.inv :   Similar function in SciPy. ", "numpy.linalg.inv"),
])
def test_sentences_inside_the_see_also_section_are_copied(sentence, page):
    assert copied_sentence(sentence, f"{page}.md#0", PAGES)


@pytest.mark.parametrize("sentence, page", [
    (INV_PARAMETER, "numpy.linalg.inv"),
    (HSTACK_OWN, "numpy.hstack"),
    ("The arithmetic mean is the sum of the non-NaN elements along the axis divided by the number of "
     "non-NaN elements.", "numpy.nanmean"),                                 # Notes, after the See Also section
    ("# numpy.interp", "numpy.interp"),
    (CONCATENATE_LINE, "numpy.linalg.inv"),                                 # not on this page at all
])
def test_the_pages_own_sentences_are_not_copied(sentence, page):
    assert not copied_sentence(sentence, f"{page}.md#0", PAGES)


def test_a_sentence_that_is_also_a_whole_sentence_of_the_pages_own_text_is_not_copied():
    """The tie goes to the page (no real page has one: the last test checks all of them)."""
    page = "# numpy.interp\n\n## Notes\n\nUse scipy.interpolate.\n\n## See Also\n\nUse scipy.interpolate.\n"
    assert see_also_section(page) == "Use scipy.interpolate."
    assert not copied_sentence("Use scipy.interpolate.", "numpy.interp.md#0", {"numpy.interp": page})
    assert copied_sentence("Use scipy.interpolate.", "numpy.interp.md#0",
                           {"numpy.interp": page.replace("## Notes\n\nUse scipy.interpolate.\n\n", "")})


def test_see_also_section_reads_up_to_the_next_heading():
    assert see_also_section(PAGES["numpy.nanmean"]) == ("average : Weighted average\n"
                                                        "mean : Arithmetic mean taken while not ignoring NaNs\n"
                                                        "var, nanvar")
    assert see_also_section("# numpy.ravel\n\n## Notes\n\nNo pointers here.\n") == ""


# -- the threshold sweep reads the same rule ----------------------------------------------------

def test_threshold_sweep_gives_the_strict_share_beside_the_old_one():
    copied = answer(JOIN, [(CONCATENATE_LINE, "numpy.hstack.md#0")])
    own = answer(JOIN, [(HSTACK_OWN, "numpy.hstack.md#0")])
    judged = [(copied, ("numpy.hstack",)), (own, ("numpy.hstack",))]
    assert cites_relevant(copied, ("numpy.hstack",)) and not cites_relevant(copied, ("numpy.hstack",), PAGES)
    rows = threshold_sweep(judged, [copied], [0.5, 0.7], PAGES)
    assert [(r.judged_correct, r.judged_correct_strict) for r in rows] == [(1.0, 0.5), (0.0, 0.0)]
    assert math.isnan(threshold_sweep(judged, [copied], [0.5])[0].judged_correct_strict)


# -- the rule over the whole corpus -------------------------------------------------------------

def test_on_the_real_pages_exactly_the_see_also_sentences_are_copied():
    """Every sentence the reader cuts from a page's See Also section is copied; no other sentence of the corpus is."""
    from ragcourse.corpus.apidocs import load_corpus

    corpus = load_corpus()
    pages = {d.doc_id: d.markdown(summary=False) for d in corpus.documents}
    split = SentenceSplitter()
    wrong, copies = [], 0
    for document in corpus.documents:
        for section in document.sections:
            for sentence in split(section.text):
                is_copy = copied_sentence(sentence, f"{document.doc_id}.md#0", pages)
                copies += is_copy
                if is_copy != (section.heading == "See Also"):
                    wrong.append((document.doc_id, section.heading, sentence))
    assert not wrong, wrong[:5]
    assert copies > 500
