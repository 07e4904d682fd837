"""Exercises of lesson 13: the middle at temperature 0, packing chunks under the window, six irrelevant chunks.

q1 (predict) asks what a temperature of 0 does to the relevant chunk in the middle; q2 (build)
has the student pack the retrieved chunks into the prompt under the context limit (the longest
run from the top whose whole prompt fits) and reproduce what packing does to the lesson's
13-chunk row: no request refused, generation 0.6500 instead of 0.4500; q3 (measure) reads
generation by position of the relevant chunk at a number of irrelevant chunks the lesson did
not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.candidates import generation_share
from ...retrieval.pipeline import IndexedChunk, is_relevant
from ...world.corpus import World
from ...world.llm import ChunkAnswerer
from ...world.prompts import ANSWER_INSTRUCTION, answer_prompt
from ...world.text import tokenize
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                        first_hint, likely_hint, require_function, shown)
from ..reference import OTHER_SEEDS, hybrid_candidates, rag_world

WINDOW = 240
TEMPERATURE = 0.12
POOL = 40
MOST_CHUNKS = 13
PREDICTED_J = 4
ASKED_J = 6
LAYOUTS = ("head", "middle", "tail")
SEEDS = (COURSE_SEED, *OTHER_SEEDS)


def context_world(seed: int) -> tuple[World, tuple[tuple[IndexedChunk, ...], ...]]:
    """The world of lesson 13 at ``seed`` and every question's 40 best chunks (hybrid retriever)."""
    return rag_world(seed), hybrid_candidates(seed, POOL)


def prompt_length(query_text: str, chunks: Sequence[IndexedChunk]) -> int:
    """Tokens of the answer prompt holding ``chunks``."""
    return len(tokenize(answer_prompt(query_text, chunks)))


def reference_pack(query_text: str, ranked: Sequence[IndexedChunk], window: int) -> list[IndexedChunk]:
    """The longest run of ``ranked`` from the top whose whole prompt fits in ``window`` tokens."""
    n = 0
    while n < len(ranked) and prompt_length(query_text, ranked[:n + 1]) <= window:
        n += 1
    return list(ranked[:n])


@lru_cache(maxsize=16)
def packed_row(seed: int, k: int, window: int = WINDOW) -> tuple[int, float]:
    """(refused requests, generation) when each question's top k is packed under ``window`` (reference)."""
    return answer_row(seed, k, window, reference_pack)


def answer_row(seed: int, k: int, window: int, pack: Callable[..., Any] | None) -> tuple[int, float]:
    """Answer every question from its top k (packed by ``pack`` unless None); refused requests and generation."""
    current, pool = context_world(seed)
    model = ChunkAnswerer(current.edition, seed, temperature=TEMPERATURE, window=window)
    cited = []
    for query, candidates in zip(current.queries, pool):
        context = list(candidates[:k]) if pack is None else list(pack(query.text, list(candidates[:k]), window))
        cited.append(model.answer(query.text, context).chunk)
    return cited.count(None), generation_share(cited, current.queries, current.edition)


def layouts(relevant: IndexedChunk, irrelevant: list[IndexedChunk], j: int) -> dict[str, list[IndexedChunk]]:
    """The lesson's three orders of one relevant chunk and ``j`` irrelevant ones."""
    split = j // 2
    return {"head": [relevant] + irrelevant, "middle": irrelevant[:split] + [relevant] + irrelevant[split:],
            "tail": irrelevant + [relevant]}


@lru_cache(maxsize=32)
def layout_generation(seed: int, j: int, temperature: float = TEMPERATURE, model_seed: int | None = None,
                      split_up: bool = False) -> tuple[float, float, float]:
    """Generation (head, middle, tail) with one relevant chunk and j irrelevant ones per question (reference)."""
    current, pool = context_world(seed)
    queries, edition = current.queries, current.edition
    model = ChunkAnswerer(edition, seed if model_seed is None else model_seed, temperature=temperature, window=WINDOW)
    cited: dict[str, list] = {name: [] for name in LAYOUTS}
    for query, candidates in zip(queries, pool):
        relevant = next((c for c in candidates if is_relevant(c, query, edition)), None)
        if relevant is None:
            for name in LAYOUTS:
                cited[name].append(None)
            continue
        irrelevant = [c for c in candidates if not is_relevant(c, query, edition)][:j]
        orders = layouts(relevant, irrelevant, j)
        if split_up:
            orders["middle"] = irrelevant[:(j + 1) // 2] + [relevant] + irrelevant[(j + 1) // 2:]
        for name in LAYOUTS:
            cited[name].append(model.answer(query.text, orders[name]).chunk)
    return tuple(generation_share(cited[name], queries, edition) for name in LAYOUTS)


# ---------------------------------------------------------------- q1: predict the middle at temperature 0

MIDDLE_OPTIONS = {"a": "about 0.2, as at temperature 0.12",
                  "b": "1.0000: without sampling the best-matching chunk wins",
                  "c": "0.0000: without sampling a chunk at one of the two ends wins",
                  "d": "about one half"}


def check_middle_at_zero(prediction: Any) -> list[str]:
    """PREDICTED_MIDDLE: generation with the relevant chunk in the middle, j = 4, temperature 0 (course seed)."""
    head, middle, tail = layout_generation(COURSE_SEED, PREDICTED_J, 0.0)
    warm = layout_generation(COURSE_SEED, PREDICTED_J)
    truth = "b" if middle >= 0.99 else "c" if middle == 0 else "a" if abs(middle - warm[1]) <= 0.1 else "d"
    return check_choice(
        prediction, "PREDICTED_MIDDLE", MIDDLE_OPTIONS, truth,
        f"at temperature 0 generation is {head:.4f} / {middle:.4f} / {tail:.4f} (head / middle / tail), against"
        f" {warm[0]:.4f} / {warm[1]:.4f} / {warm[2]:.4f} at 0.12",
        ["At temperature 0 the model always cites its top-scoring chunk. In the middle the relevant chunk's",
         "score is 0.45 x (0.3 + its share of the question's words), about 0.45 x 0.5; the first chunk scores at",
         "least 1.0 x 0.3 even when it shares no word at all. So the relevant chunk in the middle can never",
         "win: sampling was the only thing that ever let it through. Taking the luck away does not remove the",
         "position bias; it makes the bias absolute, in whichever direction the scores point."])


# ---------------------------------------------------------------- q2: build the packing under the window

def entry_tokens(chunk: IndexedChunk) -> int:
    """Tokens of one chunk as the prompt writes it, ``[CODE] text .``."""
    return len(tokenize(f"[{chunk.code}] {chunk.text} ."))


def pack_cases() -> list[tuple[str, int, int, list[IndexedChunk], int]]:
    """(label, seed, question number, ranked chunks, window): exact fits and a long chunk first, then plain runs."""
    cases = []
    for seed in SEEDS:
        current, pool = context_world(seed)
        for number in (3, 17):
            ranked = list(pool[number][:MOST_CHUNKS])
            query_text = current.queries[number].text
            for fits in (4, 9):
                cases.append((f"its top {MOST_CHUNKS}, a window its first {fits} fill exactly", seed, number, ranked,
                              prompt_length(query_text, ranked[:fits])))
        long_first = 0
        for number, candidates in enumerate(pool):
            ranked = list(candidates[:MOST_CHUNKS])
            sizes = [entry_tokens(chunk) for chunk in ranked]
            cut = next((i for i in range(MOST_CHUNKS - 1) if sizes[i] > min(sizes[i + 1:])), None)
            if cut is not None and long_first < 2:
                long_first += 1
                cases.append((f"its top {MOST_CHUNKS}, a window one token short of chunk {cut + 1}", seed, number,
                              ranked, prompt_length(current.queries[number].text, ranked[:cut + 1]) - 1))
    for seed in SEEDS:
        current, pool = context_world(seed)
        for number, window in ((0, WINDOW), (11, 150), (26, WINDOW), (38, 90), (29, 30)):
            cases.append((f"its top {MOST_CHUNKS}", seed, number, list(pool[number][:MOST_CHUNKS]), window))
    return cases


def pack_hints(query_text: str, ranked: list[IndexedChunk], window: int) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong packings and what to say about each."""
    def prefix(fits):
        n = 0
        while n < len(ranked) and fits(ranked[:n + 1]):
            n += 1
        return [c.code for c in ranked[:n]]

    def skipping():
        kept = []
        for chunk in ranked:
            if prompt_length(query_text, kept + [chunk]) <= window:
                kept.append(chunk)
        return [c.code for c in kept]

    fixed = len(tokenize(ANSWER_INSTRUCTION)) + len(tokenize("Question:")) + len(tokenize(query_text))
    return [
        (lambda: prefix(lambda c: prompt_length(query_text, c) < window),
         "a prompt of exactly `window` tokens fits: the limit refuses only longer ones"),
        (lambda: prefix(lambda c: sum(entry_tokens(x) for x in c) <= window),
         "the window holds the whole prompt: the instruction and the question take tokens too"),
        (lambda: prefix(lambda c: fixed + sum(len(tokenize(x.text)) for x in c) <= window),
         "count each chunk as the prompt writes it, `[CODE] text .`, not its text alone"),
        (lambda: prefix(lambda c: len(answer_prompt(query_text, c).split()) <= window),
         "count tokens with tokenize, as the model does, not words"),
        (skipping, "stop at the first chunk that does not fit: the prompt keeps the retriever's order from the top,"
                   " it does not skip a chunk and take a shorter one further down"),
        (lambda: [c.code for c in ranked[:max(0, int((window - fixed) / 16.0))]],
         "the average chunk (16 tokens) is an estimate; measure the prompt you would send"),
    ]


def check_pack(answer: Any) -> list[str]:
    """pack equals the reference packing on every case; packing the top 13 rescues every refused request."""
    pack = require_function(answer, "pack")
    cases = pack_cases()
    for label, seed, number, ranked, window in cases:
        query_text = context_world(seed)[0].queries[number].text
        tried = f"pack({query_text!r}, <question {number + 1} at seed {seed}: {label}>, {window})"
        got = call(pack, "pack", (query_text, list(ranked), window), tried)
        expected = reference_pack(query_text, ranked, window)
        if not isinstance(got, (list, tuple)) or [id(c) for c in got] != [id(c) for c in expected]:
            shown_got = [getattr(c, "code", c) for c in got] if isinstance(got, (list, tuple)) else got
            others = [(context_world(s)[0].queries[n].text, list(r), w) for _, s, n, r, w in cases]
            raise Mismatch(tried + " (document codes)", shown([c.code for c in expected], 120), shown(shown_got, 120),
                           likely_hint(lambda *a: [getattr(c, "code", c) for c in pack(*a)], shown_got,
                                       (query_text, list(ranked), window), others, pack_hints,
                                       "keep the chunks from the top of the list for as long as the whole prompt"
                                       " (answer_prompt of the query and the chunks kept) is at most `window`"
                                       " tokens"))
    refused, generation = answer_row(COURSE_SEED, MOST_CHUNKS, WINDOW, pack)
    expected_refused, expected_generation = packed_row(COURSE_SEED, MOST_CHUNKS)
    tried = f"the lesson's top {MOST_CHUNKS} packed by your pack, window {WINDOW}, course seed"
    expect_number(refused, expected_refused, tried + " (requests refused)", "see the per-case check above",
                  tolerance=0)
    expect_number(generation, expected_generation, tried + " (generation)", "see the per-case check above",
                  tolerance=1e-12)
    unpacked = answer_row(COURSE_SEED, MOST_CHUNKS, WINDOW, None)
    return [f"pack agrees with the reference on {len(cases)} cases (three seeds; exact fits and a long chunk ahead"
            " of shorter ones among them),",
            f"and packing the lesson's top {MOST_CHUNKS} at the course seed leaves {refused} of 40 requests refused"
            f" (unpacked: {unpacked[0]}) and lifts generation to {generation:.4f} (unpacked: {unpacked[1]:.4f})."]


# ---------------------------------------------------------------- q3: measure six irrelevant chunks

LAYOUT_PROBES = ((COURSE_SEED + 1, 4, True), (7, 2, True), (COURSE_SEED, 8, True), (COURSE_SEED, ASKED_J, False))


def check_layout_shares(answer: Any) -> list[str]:
    """layout_shares(seed, j) equals the reference (head, middle, tail) at other settings, then at j = 6."""
    measure = require_function(answer, "layout_shares")
    for seed, j, reveal in LAYOUT_PROBES:
        tried = f"layout_shares({seed}, {j})"
        got = call(measure, "layout_shares", (seed, j), tried)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise Mismatch(tried, "three numbers (head, middle, tail)", shown(got),
                           "return three shares: `return head, middle, tail`")
        values = tuple(as_number(value, tried, "a share") for value in got)
        expected = layout_generation(seed, j)
        hints = [(lambda: layout_generation(seed, j, split_up=True),
                  "the middle layout puts j // 2 irrelevant chunks before the relevant one"),
                 (lambda: layout_generation(COURSE_SEED, j),
                  "your function measures the course seed's world: build everything from the seed it is given"),
                 (lambda: layout_generation(seed, j, model_seed=COURSE_SEED),
                  "seed the answering model with the seed you are given"),
                 (lambda: layout_generation(seed, j + 1), "put exactly j irrelevant chunks beside the relevant one"),
                 (lambda: layout_generation(seed, j, temperature=0.0), "answer at the lesson's temperature, 0.12")]
        hint = first_hint(values, hints,
                          "per question take the first relevant chunk of the 40 candidates and the first j irrelevant"
                          " ones, build the three layouts, answer each once, and take the share answered from a"
                          " relevant chunk (a question without a relevant candidate counts as a miss)")
        for position, name in enumerate(LAYOUTS):
            expect_number(values[position], expected[position], f"{tried} ({name}, number {position + 1})", hint,
                          reveal=reveal)
    head, middle, tail = layout_generation(COURSE_SEED, ASKED_J)
    return [f"layout_shares matches the reference at {len(LAYOUT_PROBES)} settings, three seeds among them.",
            f"Six irrelevant chunks at the course seed: head {head:.4f}, middle {middle:.4f}, tail {tail:.4f}"
            " (four: 0.7750 / 0.2000 / 0.6250; eight: 0.6500 / 0.1500 / 0.6000)."]


EXERCISES = ExerciseSet("13-context-construction", "Context construction", [
    Exercise("q1", "predict", "the middle at temperature 0", ("PREDICTED_MIDDLE",), check_middle_at_zero),
    Exercise("q2", "build", "packing chunks under the window", ("pack",), check_pack),
    Exercise("q3", "measure", "six irrelevant chunks, three layouts", ("layout_shares",), check_layout_shares),
])
check = EXERCISES.check
