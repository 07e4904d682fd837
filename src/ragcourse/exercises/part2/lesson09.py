"""Exercises of lesson 09: a window that steps a word at a time, the token-window chunker, 24 tokens with overlap 6.

q1 (predict) asks how many times the source an index of 12-token windows with overlap 11
stores; q2 (build) has the student write the chunker (size and overlap counted in tokens,
boundaries between words, at least one word a window, never stepping back to a window's first
word) and reproduce the lesson's relation recall 0.6392 and 0.9639; q3 (measure) reads
relation recall and stored tokens at a setting the lesson did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.chunking import body_words, count_whole, relation_spans, token_windows
from ...world.text import tokenize
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                         expect_pair, first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, rag_world

SIZE, OVERLAP = 20, 8
ASKED = (24, 6)
Span = tuple[int, int]


@lru_cache(maxsize=8)
def bodies(seed: int) -> tuple[tuple[str, ...], ...]:
    """The body words of every document at ``seed``."""
    return tuple(tuple(body_words(d)) for d in rag_world(seed).documents)


@lru_cache(maxsize=8)
def relations(seed: int) -> tuple[tuple[Span, ...], ...]:
    """The relation spans of every document at ``seed``."""
    current = rag_world(seed)
    return tuple(tuple(relation_spans(d, current.edition)) for d in current.documents)


@lru_cache(maxsize=8)
def source_tokens(seed: int) -> int:
    """Tokens of all bodies: what one copy of the source costs to store."""
    return sum(len(tokenize(" ".join(words))) for words in bodies(seed))


def split_measures(seed: int, chunker: Callable[[Sequence[str], int, int], Sequence[Span]], size: int,
                   overlap: int) -> tuple[float, int]:
    """(relation recall, stored tokens) of the corpus at ``seed`` cut by ``chunker``."""
    whole = stored = 0
    for words, spans_of_relations in zip(bodies(seed), relations(seed)):
        spans = [tuple(span) for span in chunker(list(words), size, overlap)]
        whole += count_whole(spans_of_relations, spans)
        stored += sum(len(tokenize(" ".join(words[first:last]))) for first, last in spans)
    return whole / sum(len(r) for r in relations(seed)), stored


@lru_cache(maxsize=64)
def window_measures(seed: int, size: int, overlap: int) -> tuple[float, int]:
    """The reference (relation recall, stored tokens) of token windows."""
    return split_measures(seed, token_windows, size, overlap)


def variant_windows(words: Sequence[str], size: int, overlap: int, *, words_for_size: bool = False,
                    words_for_overlap: bool = False, short_budget: bool = False,
                    drop_last: bool = False) -> list[Span]:
    """The chunker with one deliberate mistake switched on (for hints)."""
    if not words:
        return []
    counts = [1 if words_for_size else len(tokenize(word)) for word in words]
    back = [1 if words_for_overlap else len(tokenize(word)) for word in words]
    spans, start = [], 0
    while True:
        end, used = start, 0
        while end < len(words) and (used + counts[end] < size if short_budget else used + counts[end] <= size):
            used += counts[end]
            end += 1
        end = max(end, start + 1)
        if end >= len(words):
            if not drop_last or not spans:
                spans.append((start, end))
            return spans
        spans.append((start, end))
        next_start, shared = end, 0
        while next_start > start + 1 and shared + back[next_start - 1] <= overlap:
            next_start -= 1
            shared += back[next_start]
        start = next_start


# ---------------------------------------------------------------- q1: predict a window that steps a word at a time

FOLD_OPTIONS = {"a": "under 2 times the source", "b": "2 to 4 times", "c": "4 to 8 times",
                "d": "more than 8 times"}


def check_fold(prediction: Any) -> list[str]:
    """PREDICTED_FOLD: stored tokens over the source's for 12-token windows with overlap 11 (course seed)."""
    relation, stored = window_measures(COURSE_SEED, 12, 11)
    fold = stored / source_tokens(COURSE_SEED)
    truth = "a" if fold < 2 else "b" if fold < 4 else "c" if fold < 8 else "d"
    return check_choice(
        prediction, "PREDICTED_FOLD", FOLD_OPTIONS, truth,
        f"{stored} stored tokens, {fold:.2f} times the source's {source_tokens(COURSE_SEED)}; relation recall"
        f" {relation:.4f} (overlap 10: {window_measures(COURSE_SEED, 12, 10)[0]:.4f})",
        ["With 11 of 12 tokens allowed to repeat, each window steps back over every word it can and moves",
         "forward by a word or two, one to three tokens. Each token then lands in as many windows as fit",
         "over it, several of them, so the index holds the corpus several times over. And relation",
         "recall does not move from overlap 10 to 11: it is already the share of relations of twelve tokens",
         "or fewer, and a longer relation fits no window of that size, however the windows are placed."])


# ---------------------------------------------------------------- q2: build the chunker

MADE_UP_WORDS = (
    ("pressure", "drop", "for", "note", "goes", "with", "valve", "check", "and", "is", "filed"),
    ("a", "bb", "replacement", "c", "dd", "calibration", "e", "f", "gg", "h"),
    ("short", "words", "then", "an", "extraordinarilylongword", "and", "more"),
)


def window_cases() -> list[tuple[str, Sequence[str], int, int]]:
    """(label, words, size, overlap): made-up words with long ones first, then the lesson's bodies."""
    cases: list[tuple[str, Sequence[str], int, int]] = []
    for words in MADE_UP_WORDS:
        for size, overlap in ((3, 0), (4, 2), (5, 3), (7, 6), (12, 5)):
            cases.append(("made-up", words, size, overlap))
    for seed in (*OTHER_SEEDS, COURSE_SEED):
        for number in (0, 77, 150):
            for size, overlap in ((8, 0), (12, 11), (SIZE, OVERLAP), (32, 4), (80, 0)):
                cases.append((f"document {number + 1} at seed {seed}", bodies(seed)[number], size, overlap))
    return cases


def window_hints(words: Sequence[str], size: int, overlap: int) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the chunker and what to say about each."""
    def wrong(**mistake):
        return lambda: variant_windows(words, size, overlap, **mistake)

    return [
        (wrong(words_for_size=True), "the size is a budget of tokens, not of words: a long word costs several"),
        (wrong(words_for_overlap=True), "the overlap is counted in tokens too, not in words"),
        (wrong(short_budget=True), "a window may use its whole budget: a word fits while the tokens so far plus its"
                                   " own stay at or below the size"),
        (wrong(drop_last=True), "the last window, however short, holds the end of the text: keep it"),
    ]


def check_windows(answer: Any) -> list[str]:
    """windows equals the package's chunker on made-up words and real bodies; reproduces relation recall."""
    chunker = require_function(answer, "windows")
    cases = window_cases()
    for label, words, size, overlap in cases:
        tried = (f"windows({shown(list(words), 110)}, {size}, {overlap})" if label == "made-up"
                 else f"windows(<the body words of {label}>, {size}, {overlap})")
        got = call(chunker, "windows", (list(words), size, overlap), tried)
        spans = [tuple(span) if isinstance(span, (list, tuple)) else span for span in got] \
            if isinstance(got, (list, tuple)) else got
        expected = token_windows(list(words), size, overlap)
        if spans != expected:
            raise Mismatch(tried, shown(expected, 110), shown(spans, 110), first_hint(
                spans, window_hints(words, size, overlap),
                "fill each window word by word while the tokens fit the size (at least one word), then start the"
                " next one by stepping back over the last words while their tokens fit the overlap, never back"
                " to the window's first word; return (start, end) spans, end exclusive"))
    lines = []
    for size, overlap in ((SIZE, 0), (SIZE, OVERLAP)):
        relation, stored = split_measures(COURSE_SEED, chunker, size, overlap)
        expected = window_measures(COURSE_SEED, size, overlap)
        tried = f"relation recall of your windows at size {size}, overlap {overlap}, course seed"
        expect_number(relation, expected[0], tried, "see the per-case check above", tolerance=1e-12)
        lines.append(f"size {size}, overlap {overlap}: relation recall {relation:.4f}, {stored} stored tokens")
    return [f"windows agrees with the package's token_windows on {len(cases)} cases (made-up words longer than the"
            " budget, five settings on the lesson's bodies at three seeds),",
            "and reproduces lesson 09 at the course seed: " + "; ".join(lines) + "."]


# ---------------------------------------------------------------- q3: measure 24 tokens, overlap 6

RELATION_PROBES = ((COURSE_SEED + 1, *ASKED, True), (7, 16, 6, True), (COURSE_SEED, SIZE, OVERLAP, True),
                   (COURSE_SEED, *ASKED, False))


def check_relation_recall_at(answer: Any) -> list[str]:
    """relation_recall_at(seed, size, overlap) equals the reference at other settings, then at the asked one."""
    measure = require_function(answer, "relation_recall_at")
    for seed, size, overlap, reveal in RELATION_PROBES:
        tried = f"relation_recall_at({seed}, {size}, {overlap})"
        got = call(measure, "relation_recall_at", (seed, size, overlap), tried)
        expect_pair(got, tried, "relation recall, stored tokens",
                    "return two numbers: `return relation_recall, stored`")
        relation, stored = as_number(got[0], tried, "a relation recall"), as_number(got[1], tried, "a token count")
        expected = window_measures(seed, size, overlap)
        hints = [(lambda: window_measures(COURSE_SEED, size, overlap),
                  "your function measures the course seed's world: build everything from the seed it is given"),
                 (lambda: window_measures(seed, size, 0), "use the overlap you are given"),
                 (lambda: (expected[0], source_tokens(seed)),
                  "count the stored tokens chunk by chunk: words two windows share are stored twice"),
                 (lambda: (expected[0] * sum(len(r) for r in relations(seed)), expected[1]),
                  "relation recall is the share of all relations kept whole, not their number")]
        hint = first_hint((relation, stored), hints,
                          "cut every body of the seed's world into token windows, count the relations lying whole"
                          " inside one window over all relations, and add up the tokens of every window's text")
        expect_number(relation, expected[0], tried + " (relation recall, first number)", hint, reveal=reveal)
        expect_number(stored, expected[1], tried + " (stored tokens, second number)", hint, tolerance=0,
                      reveal=reveal)
    relation, stored = window_measures(COURSE_SEED, *ASKED)
    return [f"relation_recall_at matches the reference at {len(RELATION_PROBES)} settings, three seeds among them.",
            f"24-token windows with overlap 6, course seed: relation recall {relation:.4f} for {stored} stored"
            f" tokens, {stored / source_tokens(COURSE_SEED):.2f} times the source (20 tokens, overlap 8: 0.9639 at"
            " 1.45 times). Here the bigger window did not make up for the smaller overlap."]


EXERCISES = ExerciseSet("09-chunking-strategies", "Chunking strategies", [
    Exercise("q1", "predict", "a window that steps a word at a time", ("PREDICTED_FOLD",), check_fold),
    Exercise("q2", "build", "the token-window chunker", ("windows",), check_windows),
    Exercise("q3", "measure", "24 tokens with overlap 6", ("relation_recall_at",), check_relation_recall_at),
])
check = EXERCISES.check
