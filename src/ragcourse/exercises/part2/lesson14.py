"""Exercises of lesson 14: eight chunks, the four-cell contingency, two chunks with their tokens.

q1 (predict) asks what eight chunks do to the single number and its boxes; q2 (build) has the
student sort every question into the four boxes of right chunk against right answer, the
retrieval column judged from the chunks alone, and reproduce the lesson's rows for three and
five chunks (38 / 0 / 0 / 2 and 38 / 2 / 0 / 0); q3 (measure) reads the four boxes and the
prompt tokens at a context size the lesson did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.search import EmbeddingIndex
from ...world.concepts import Edition
from ...world.corpus import Chunk, Query, World
from ...world.llm import ClassPriorGenerator
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                        first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, rag_chunks, rag_model, rag_world

BOXES = ("right+right", "right+wrong", "wrong+right", "wrong+wrong")
TEMPERATURE = 0.6
DEEPEST = 10
PREDICTED_K = 8
ASKED_K = 2
SEEDS = (COURSE_SEED, *OTHER_SEEDS)


@lru_cache(maxsize=8)
def quality_world(seed: int) -> tuple[World, tuple[tuple[Chunk, ...], ...]]:
    """The world of lesson 14 at ``seed`` and every question's 10 best chunks (embedding search)."""
    current, chunks = rag_world(seed), rag_chunks(seed)
    index = EmbeddingIndex(rag_model(seed), [c.text for c in chunks])
    return current, tuple(tuple(chunks[i] for i in index.rank(q.text)[:DEEPEST]) for q in current.queries)


@lru_cache(maxsize=64)
def answers_at(seed: int, k: int, model_seed: int | None = None,
               temperature: float = TEMPERATURE) -> tuple[tuple[str | None, ...], int]:
    """The concept each question's answer names with its top k chunks (k = 0: none), and the prompt tokens."""
    current, ranked = quality_world(seed)
    generator = ClassPriorGenerator(current.edition, seed if model_seed is None else model_seed,
                                    temperature=temperature)
    replies = [generator.generate(q.text, [c.text for c in best[:k]]) for q, best in zip(current.queries, ranked)]
    return tuple(r.concept for r in replies), sum(r.input_tokens for r in replies)


def reference_boxes(queries: Sequence[Query], contexts: Sequence[Sequence[Chunk]], answers: Sequence[str | None],
                    edition: Edition, *, first_only: bool = False, by_main: bool = False,
                    answer_first: bool = False) -> dict[str, int]:
    """The four box counts (the deliberate mistakes switched on only for hints)."""
    counts = dict.fromkeys(BOXES, 0)
    for query, context, answer in zip(queries, contexts, answers):
        phrase = edition.concept(query.concept).document_form
        looked_at = list(context[:1]) if first_only else list(context)
        got_chunk = (any(c.main == query.concept for c in looked_at) if by_main
                     else any(phrase in c.text for c in looked_at))
        got_answer = answer == query.concept
        if answer_first:
            got_chunk, got_answer = got_answer, got_chunk
        counts[BOXES[(0 if got_chunk else 2) + (0 if got_answer else 1)]] += 1
    return counts


@lru_cache(maxsize=64)
def contingency(seed: int, k: int, model_seed: int | None = None,
                temperature: float = TEMPERATURE) -> tuple[int, int, int, int, int]:
    """(right+right, right+wrong, wrong+right, wrong+wrong, prompt tokens) of the top k (reference)."""
    current, ranked = quality_world(seed)
    answers, tokens = answers_at(seed, k, model_seed, temperature)
    counts = reference_boxes(current.queries, [best[:k] for best in ranked], answers, current.edition)
    return (*(counts[box] for box in BOXES), tokens)


# ---------------------------------------------------------------- q1: predict eight chunks

EIGHT_OPTIONS = {"a": "0.9500 again, the two misses still right+wrong",
                 "b": "1.0000, every question right+right",
                 "c": "below 0.9500: more chunks, more distraction",
                 "d": "0.9500, the two misses back in wrong+wrong"}


def check_eight_chunks(prediction: Any) -> list[str]:
    """PREDICTED_EIGHT: the single number and boxes with eight chunks (course seed)."""
    rr, rw, wr, ww, tokens = contingency(COURSE_SEED, PREDICTED_K)
    five = contingency(COURSE_SEED, 5)
    single = (rr + wr) / 40
    truth = ("b" if rr == 40 else "c" if single < 0.95 - 1e-9 else "a" if rw == 2 else "d" if ww == 2 else "c")
    return check_choice(
        prediction, "PREDICTED_EIGHT", EIGHT_OPTIONS, truth,
        f"with eight chunks the boxes are {rr} / {rw} / {wr} / {ww}, single number {single:.4f}, {tokens} prompt"
        f" tokens (five chunks: {five[0]} / {five[1]} / {five[2]} / {five[3]}, {five[4]} tokens)",
        ["The two misses were one wording asked twice, whose prompt named service restoration far more often",
         "than the field crew. With five chunks one crew paragraph had slipped in at the bottom; with eight,",
         "the crew is named as often as restoration (eight times each), and the small head start the model",
         "gives the question's class (the crew's) tips the draw its way; at this seed both draws went to the",
         "crew. The generation fault of five chunks was a shortage of evidence after all. The boxes say where",
         "to look; only a further measurement says what fixes it, and a tie this close is partly luck."])


# ---------------------------------------------------------------- q2: build the four boxes

def made_up_cases(seed: int) -> list[tuple[str, list[Query], list[list[Chunk]], list[str | None]]]:
    """Hand-made contexts: the target's phrase only in the last chunk, a chunk of another document naming it, None."""
    current, ranked = quality_world(seed)
    queries, edition = current.queries[:8], current.edition
    chunks = rag_chunks(seed)
    contexts, answers = [], []
    for number, query in enumerate(queries):
        phrase = edition.concept(query.concept).document_form
        carrier_elsewhere = next((c for c in chunks if phrase in c.text and c.main != query.concept), ranked[number][0])
        wrong_concept = next(key for key in edition.keys if key != query.concept)
        others = [c for c in chunks if phrase not in c.text][number * 3:number * 3 + 3]
        contexts.append([[], others[:2] + [ranked[number][0]], [carrier_elsewhere], others][number % 4])
        answers.append([query.concept, None, wrong_concept][number % 3])
    return [("made-up contexts and answers", list(queries), contexts, answers)]


def box_cases() -> list[tuple[str, list[Query], list[list[Chunk]], list[str | None], Edition]]:
    """(label, queries, contexts, answers, edition): made-up cases first, then the lesson's runs at three seeds."""
    cases = []
    for seed in SEEDS:
        edition = quality_world(seed)[0].edition
        cases += [(f"{label} at seed {seed}", q, c, a, edition) for label, q, c, a in made_up_cases(seed)]
    for seed in SEEDS:
        current, ranked = quality_world(seed)
        for k in (0, 1, 3, 5):
            cases.append((f"the lesson's 40 questions at seed {seed}, top {k} chunks, the model's answers",
                          list(current.queries), [list(best[:k]) for best in ranked], list(answers_at(seed, k)[0]),
                          current.edition))
    return cases


def box_hints(queries, contexts, answers, edition) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong contingencies and what to say about each."""
    def wrong(**mistake):
        return lambda: reference_boxes(queries, contexts, answers, edition, **mistake)

    counts = reference_boxes(queries, contexts, answers, edition)
    return [
        (wrong(answer_first=True), "the first half of a box name is the chunk, the second the answer: right+wrong"
                                   " means the right chunk arrived and the answer was wrong"),
        (wrong(first_only=True), "the right chunk may be anywhere among the retrieved ones, not only first"),
        (wrong(by_main=True), "judge the chunk by its text: it counts when it names the target procedure in the"
                              " crew's words, whichever document it comes from"),
        (lambda: {box: counts[box] / len(queries) for box in BOXES}, "return counts of questions, not shares"),
    ]


def check_four_boxes(answer: Any) -> list[str]:
    """four_boxes equals the reference counts on made-up and real runs; reproduces the lesson's k = 3 and 5 rows."""
    boxes = require_function(answer, "four_boxes")
    cases = box_cases()
    for label, queries, contexts, answers, edition in cases:
        tried = f"four_boxes(<{label}>)"
        got = call(boxes, "four_boxes", (list(queries), [list(c) for c in contexts], list(answers), edition), tried)
        expected = reference_boxes(queries, contexts, answers, edition)
        if not isinstance(got, dict) or set(got) != set(BOXES):
            raise Mismatch(tried, "a dict with the keys " + ", ".join(BOXES),
                           f"a dict with the keys {', '.join(map(str, got))}" if isinstance(got, dict) else shown(got),
                           "return a dict: each of the four box names mapped to its number of questions")
        got_counts = {box: got[box] for box in BOXES}
        if got_counts != expected:
            raise Mismatch(tried, " / ".join(str(expected[b]) for b in BOXES) + "  (" + " / ".join(BOXES) + ")",
                           " / ".join(shown(got_counts[b]) for b in BOXES),
                           first_hint(got_counts, box_hints(queries, contexts, answers, edition),
                                      "a question's chunk is right when any of its chunks contains the target's crew"
                                      " phrase, its answer right when it names the target concept; count each box"))
    rows = {}
    for k in (3, 5):
        current, ranked = quality_world(COURSE_SEED)
        got = boxes(list(current.queries), [list(best[:k]) for best in ranked], list(answers_at(COURSE_SEED, k)[0]),
                    current.edition)
        rows[k] = tuple(got[box] for box in BOXES)
        expected = contingency(COURSE_SEED, k)[:4]
        if rows[k] != expected:
            raise Mismatch(f"four_boxes on the lesson's top {k} at the course seed", shown(expected), shown(rows[k]),
                           "see the per-case check above")
    return [f"four_boxes agrees with the reference on {len(cases)} runs (made-up contexts and the lesson's runs at"
            " three seeds),",
            f"and reproduces lesson 14 at the course seed: three chunks {' / '.join(map(str, rows[3]))}, five chunks"
            f" {' / '.join(map(str, rows[5]))}. One single number, 0.9500, two different faults."]


# ---------------------------------------------------------------- q3: measure two chunks

BOX_PROBES = ((COURSE_SEED + 1, 1, True), (7, 1, True), (7, PREDICTED_K, True), (COURSE_SEED, 0, True),
              (COURSE_SEED, ASKED_K, False))


def check_contingency_at(answer: Any) -> list[str]:
    """contingency_at(seed, k) equals the reference (four boxes, tokens) at other settings, then at k = 2."""
    measure = require_function(answer, "contingency_at")
    for seed, k, reveal in BOX_PROBES:
        tried = f"contingency_at({seed}, {k})"
        got = call(measure, "contingency_at", (seed, k), tried)
        if not isinstance(got, (tuple, list)) or len(got) != 5:
            raise Mismatch(tried, "five numbers (the four boxes, then the prompt tokens)", shown(got),
                           "return `right_right, right_wrong, wrong_right, wrong_wrong, tokens`")
        values = tuple(as_number(value, tried, "a count") for value in got)
        expected = contingency(seed, k)
        swapped = (expected[0], expected[2], expected[1], expected[3], expected[4])
        hints = [(lambda: swapped, "the first half of a box name is the chunk, the second the answer"),
                 (lambda: contingency(COURSE_SEED, k),
                  "your function measures the course seed's world: build everything from the seed it is given"),
                 (lambda: contingency(seed, k, model_seed=COURSE_SEED), "seed the model with the seed you are given"),
                 (lambda: contingency(seed, k, temperature=0.0), f"sample at the lesson's temperature, {TEMPERATURE}"),
                 (lambda: contingency(seed, k + 1), "hand the model exactly the top k chunks")]
        hint = first_hint(values, hints,
                          "rank the paragraph chunks by embedding (projection seed = seed, 32 numbers), give each"
                          " question its top k, ask a ClassPriorGenerator of the seed once, sort the question into its"
                          " box, and add up the prompt tokens (input_tokens)")
        for position, name in enumerate((*BOXES, "tokens")):
            expect_number(values[position], expected[position], f"{tried} ({name})", hint, tolerance=0, reveal=reveal)
    rr, rw, wr, ww, tokens = contingency(COURSE_SEED, ASKED_K)
    three = contingency(COURSE_SEED, 3)
    return [f"contingency_at matches the reference at {len(BOX_PROBES)} settings, three seeds among them.",
            f"Two chunks at the course seed: {rr} / {rw} / {wr} / {ww} for {tokens} prompt tokens, single number"
            f" {(rr + wr) / 40:.4f} (three chunks: {' / '.join(map(str, three[:4]))} for {three[4]} tokens)."]


EXERCISES = ExerciseSet("14-retrieval-and-generation-quality",
                        "Measuring retrieval and generation quality separately", [
    Exercise("q1", "predict", "eight chunks", ("PREDICTED_EIGHT",), check_eight_chunks),
    Exercise("q2", "build", "the four boxes", ("four_boxes",), check_four_boxes),
    Exercise("q3", "measure", "two chunks, boxes and tokens", ("contingency_at",), check_contingency_at),
])
check = EXERCISES.check
