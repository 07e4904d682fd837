"""Exercises of lesson 08: every paragraph wrapped, the repeat filter, what the filter deletes at threshold 5.

q1 (predict) asks what wrapping every paragraph does to the links the repeat filter deletes;
q2 (build) has the student write the repeat filter (wrapped lines joined, a line dropped when
it is on ``threshold`` or more sheets, each sheet counted once) and reproduce the lesson's 798
dropped lines, 96 deleted links and 8 documents without their main concept; q3 (measure)
counts what the filter throws away at a threshold the lesson did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...world.corpus import Chunk, tag_chunk
from ...world.sources import SPLIT_SHARE, is_continuation, raw_sources
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                        first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, rag_chunks, rag_world

THRESHOLD = 3
ASKED_THRESHOLD = 5
Sheets = tuple[tuple[str, ...], ...]


@lru_cache(maxsize=16)
def sheets_of(seed: int, split_share: float = SPLIT_SHARE) -> Sheets:
    """The raw record sheets of the world at ``seed``."""
    return tuple(tuple(lines) for lines in raw_sources(rag_world(seed).documents, seed, split_share))


def merge_continuations(lines: Sequence[str], strip: bool = True) -> list[str]:
    """Every indented continuation line appended to the line before it."""
    merged: list[str] = []
    for line in lines:
        if is_continuation(line) and merged:
            merged[-1] += " " + (line.strip() if strip else line)
        else:
            merged.append(line)
    return merged


def repeat_filter(sheets: Sequence[Sequence[str]], threshold: int, *, per_line: bool = False,
                  strictly: bool = False, unjoined: bool = False, unstripped: bool = False,
                  unique_drops: bool = False) -> tuple[list[list[str]], list[str]]:
    """The reference filter (kept lines per sheet, dropped lines), or one deliberate mistake (for hints)."""
    joined = [list(lines) if unjoined else merge_continuations(lines, strip=not unstripped) for lines in sheets]
    counts: dict[str, int] = {}
    for lines in joined:
        for line in (lines if per_line else set(lines)):
            counts[line] = counts.get(line, 0) + 1
    drop = (lambda line: counts[line] > threshold) if strictly else (lambda line: counts[line] >= threshold)
    kept = [[line for line in lines if not drop(line)] for lines in joined]
    dropped = [line for lines in joined for line in lines if drop(line)]
    if unique_drops:
        dropped = list(dict.fromkeys(dropped))
    return kept, dropped


def links(chunks: Sequence[Chunk]) -> set[tuple[str, str]]:
    """(document code, concept) pairs named by at least one chunk."""
    return {(chunk.code, concept) for chunk in chunks for concept in chunk.concepts}


def losses_of(seed: int, kept: Sequence[Sequence[str]], dropped: Sequence[str]) -> tuple[int, int, int]:
    """(dropped lines, deleted links, documents without their main concept) of a filter's result."""
    current = rag_world(seed)
    chunks = [tag_chunk(document, line, current.edition) for document, lines in zip(current.documents, kept)
              for line in lines]
    kept_links, full = links(chunks), links(rag_chunks(seed))
    return len(dropped), len(full - kept_links), sum((d.code, d.main) not in kept_links for d in current.documents)


@lru_cache(maxsize=64)
def filter_losses(seed: int, threshold: int, split_share: float = SPLIT_SHARE) -> tuple[int, int, int]:
    """The reference (dropped lines, deleted links, no-main documents) of the repeat filter."""
    return losses_of(seed, *repeat_filter(sheets_of(seed, split_share), threshold))


# ---------------------------------------------------------------- q1: predict every paragraph wrapped

WRAP_OPTIONS = {"a": "fewer than 96: more lines are broken, so fewer lines repeat",
                "b": "exactly 96, as before", "c": "more than 96: every broken phrase is lost too"}


def check_all_wrapped(prediction: Any) -> list[str]:
    """PREDICTED_WRAPPED: links the filter deletes at threshold 3 with every paragraph wrapped (course seed)."""
    lost, usual = filter_losses(COURSE_SEED, THRESHOLD, 1.0)[1], filter_losses(COURSE_SEED, THRESHOLD)[1]
    truth = "b" if lost == usual else "a" if lost < usual else "c"
    return check_choice(
        prediction, "PREDICTED_WRAPPED", WRAP_OPTIONS, truth,
        f"the filter deletes {lost} links with every paragraph wrapped ({usual} at a share of 0.45)",
        ["The filter counts sheets only after the wrapped lines are joined again, and joining a paragraph",
         "broken after any word gives back exactly the paragraph. Whatever the share of wrapped lines, the",
         "filter sees the same joined lines on the same sheets and drops the same ones. The wraps matter",
         "only to a step that reads the lines as printed, such as the lesson's line-based level."])


# ---------------------------------------------------------------- q2: build the repeat filter

MADE_UP_SHEETS: tuple[tuple[tuple[tuple[str, ...], ...], int], ...] = (
    ((("head", "alpha beta gamma", "same line", "same line", "foot"),
      ("head", "alpha beta", "  gamma", "other words", "foot"),
      ("head", "delta", "same line", "foot")), 2),
    ((("head", "one two", "  three", "four", "foot"),
      ("head", "one two three", "four", "foot"),
      ("head", "one", "  two three", "five", "foot"),
      ("head", "five", "five", "foot")), 3),
    ((("head", "x y", "  z", "x y z", "foot"),
      ("head", "x", "  y z", "foot"),
      ("head", "q", "foot")), 3),
)


def filter_cases() -> list[tuple[str, int | None, Sheets, int]]:
    """(label, seed, sheets, threshold): made-up sheets first, then the lesson's at three seeds."""
    cases: list[tuple[str, int | None, Sheets, int]] = [("made-up", None, sheets, threshold)
                                                        for sheets, threshold in MADE_UP_SHEETS]
    for seed in (*OTHER_SEEDS, COURSE_SEED):
        for threshold in (2, 4, 10):
            cases.append((f"the 200 sheets of seed {seed}", seed, sheets_of(seed), threshold))
    cases.append(("the 200 sheets of the course seed, every paragraph wrapped", COURSE_SEED,
                  sheets_of(COURSE_SEED, 1.0), THRESHOLD))
    return cases


def filter_hints(sheets: Sheets, threshold: int) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the filter and what to say about each."""
    def wrong(**mistake):
        return lambda: _as_lists(repeat_filter(sheets, threshold, **mistake))

    return [
        (wrong(per_line=True), "count on how many sheets a line appears: a line repeated on one sheet counts once"),
        (wrong(strictly=True), f"drop a line found on threshold or more sheets ({threshold} sheets is enough),"
                               " not only on more"),
        (wrong(unjoined=True), "join every indented continuation line to the line before it first, then count"),
        (wrong(unstripped=True), "strip the indent of a continuation line before you append it (one space between)"),
        (wrong(unique_drops=True), "list every dropped line where it was dropped, repeats on other sheets included"),
    ]


def _as_lists(result: Any) -> Any:
    if isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], (tuple, list)) \
            and isinstance(result[1], (tuple, list)):
        return ([list(lines) if isinstance(lines, (tuple, list)) else lines for lines in result[0]], list(result[1]))
    return result


def drop_list_hint(got: tuple[Any, Any], expected: tuple[list[list[str]], list[str]]) -> str:
    """The hint when no known mistake explains the result: about the dropped list when only it is off."""
    try:
        same_kept = got[0] == expected[0]
        dropped = [str(line) for line in got[1]]
    except Exception:
        same_kept, dropped = False, []
    if same_kept and set(dropped) == set(expected[1]):
        if sorted(dropped) == sorted(expected[1]):
            return "list the dropped lines in sheet order, and in each sheet in line order"
        return "list every dropped line where it was dropped, repeats on other sheets included"
    return ("join the continuation lines, count for each joined line the sheets it is on, and drop from every sheet"
            " the lines found on threshold or more sheets; return what each sheet keeps and the dropped lines in"
            " sheet order")


def check_repeat_filter(answer: Any) -> list[str]:
    """repeat_filter equals the reference on made-up and real sheets; reproduces the lesson's losses."""
    student = require_function(answer, "repeat_filter")
    cases = filter_cases()
    for label, seed, sheets, threshold in cases:
        tried = (f"repeat_filter({shown([list(s) for s in sheets], 150)}, {threshold})" if seed is None
                 else f"repeat_filter(<{label}>, {threshold})")
        got = _as_lists(call(student, "repeat_filter", ([list(lines) for lines in sheets], threshold), tried))
        if not (isinstance(got, tuple) and len(got) == 2):
            raise Mismatch(tried, "a pair (kept lines per sheet, dropped lines)", shown(got),
                           "return two lists: `return kept, dropped`")
        expected = repeat_filter(sheets, threshold)
        if got != expected:
            if seed is None:
                shown_expected, shown_got = shown(expected, 150), shown(list(got), 150)
            else:
                shown_expected = (f"{len(expected[1])} dropped lines, {sum(map(len, expected[0]))} kept")
                shown_got = (f"{len(got[1])} dropped lines, {sum(len(k) for k in got[0])} kept"
                             if all(isinstance(k, list) for k in got[0]) else shown(got))
            raise Mismatch(tried, shown_expected, shown_got, first_hint(
                got, filter_hints(sheets, threshold), drop_list_hint(got, expected)))
    kept, dropped = _as_lists(student([list(lines) for lines in sheets_of(COURSE_SEED)], THRESHOLD))
    got = losses_of(COURSE_SEED, kept, dropped)
    expected = filter_losses(COURSE_SEED, THRESHOLD)
    tried = f"your repeat_filter on the course seed's sheets at threshold {THRESHOLD}"
    for value, reference, what in zip(got, expected, ("dropped lines", "deleted links", "no-main documents")):
        expect_number(value, reference, f"{tried} ({what})", "see the per-case check above", tolerance=0)
    return [f"repeat_filter agrees with the reference on {len(cases)} cases (made-up sheets with repeats and wraps,"
            " the lesson's sheets at three seeds and four thresholds),",
            f"and reproduces lesson 08 at the course seed: {got[0]} lines dropped, {got[1]} of"
            f" {len(links(rag_chunks(COURSE_SEED)))} concept-document links deleted, {got[2]} documents left"
            " without their main concept."]


# ---------------------------------------------------------------- q3: measure threshold 5

LOSS_PROBES = ((COURSE_SEED + 1, ASKED_THRESHOLD, True), (7, ASKED_THRESHOLD, True), (7, 4, True),
               (COURSE_SEED, THRESHOLD, True), (COURSE_SEED, ASKED_THRESHOLD, False))


def check_filter_losses(answer: Any) -> list[str]:
    """filter_losses(seed, threshold) equals the reference at other settings, then at the asked one."""
    measure = require_function(answer, "filter_losses")
    names = ("dropped lines, first number", "deleted links, second number", "no-main documents, third number")
    for seed, threshold, reveal in LOSS_PROBES:
        tried = f"filter_losses({seed}, {threshold})"
        got = call(measure, "filter_losses", (seed, threshold), tried)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise Mismatch(tried, "three counts (dropped lines, deleted links, no-main documents)", shown(got),
                           "return three numbers: `return dropped_lines, lost_links, no_main`")
        values = [as_number(value, tried) for value in got]
        expected = filter_losses(seed, threshold)
        hints = [(lambda: list(filter_losses(COURSE_SEED, threshold)),
                  "your function measures the course seed's world: build everything from the seed it is given"),
                 (lambda: list(losses_of(seed, *repeat_filter(sheets_of(seed), threshold, per_line=True))),
                  "count on how many sheets a line appears, each sheet once"),
                 (lambda: list(losses_of(seed, *repeat_filter(sheets_of(seed), threshold, strictly=True))),
                  "drop a line found on threshold or more sheets, not only on more"),
                 (lambda: list(filter_losses(seed, THRESHOLD)), f"use the threshold you are given, not {THRESHOLD}")]
        hint = first_hint(values, hints, "filter the seed's sheets at the threshold, tag what every sheet keeps, and"
                                         " compare its concept-document links with those of the paragraph chunks")
        for value, reference, name in zip(values, expected, names):
            expect_number(value, reference, f"{tried} ({name})", hint, tolerance=0, reveal=reveal)
    dropped, lost, no_main = filter_losses(COURSE_SEED, ASKED_THRESHOLD)
    return [f"filter_losses matches the reference at {len(LOSS_PROBES)} settings, three seeds among them.",
            f"Threshold {ASKED_THRESHOLD}, course seed: {dropped} lines dropped, {lost} links deleted, {no_main}"
            " documents without their main concept (threshold 3: 798 / 96 / 8).",
            "A filter that still drops hundreds of lines can delete no link at all: what it drops may be"
            " named elsewhere in the same document. Only a count that needs no query shows which is the case."]


EXERCISES = ExerciseSet("08-document-preparation", "Document preparation", [
    Exercise("q1", "predict", "every paragraph wrapped", ("PREDICTED_WRAPPED",), check_all_wrapped),
    Exercise("q2", "build", "the repeat filter", ("repeat_filter",), check_repeat_filter),
    Exercise("q3", "measure", "what the filter deletes at threshold 5", ("filter_losses",), check_filter_losses),
])
check = EXERCISES.check
