"""Exercises of lesson 07: the bare model at temperature 0, scoring the two stages apart, ten chunks a prompt.

q1 (predict) asks what a temperature of 0 does to the no-retrieval baseline; q2 (build) has
the student run one setup with the model it is handed, one call per request, and score
retrieval (a carrying chunk among those retrieved) and generation (the reply names the
concept) in two separate columns, then reproduce the lesson's three rows; the model's call
counter is part of the check. q3 (measure) reads both columns at a prompt size the lesson
did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.linking import retrieve_top_k
from ...retrieval.pipeline import link_instruction, link_prompt
from ...world.corpus import Chunk, Query
from ...world.llm import ConceptLinker
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                         expect_pair, first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, rag_chunks, rag_model, rag_world, shuffled

K = 3
TEMPERATURE = 0.6
SETUPS = ("no retrieval", "retrieval", "wrong chunks")
ASKED_K = 10


@lru_cache(maxsize=64)
def retrieved(seed: int, setup: str, k: int) -> tuple[tuple[int, ...], ...]:
    """Chunk indices handed to the model per request in one setup (empty for no retrieval)."""
    queries = rag_world(seed).queries
    if setup == "no retrieval":
        return tuple(() for _ in queries)
    model = rag_model(seed) if setup == "retrieval" else rag_model(seed).with_settings(in_domain=False)
    tops = retrieve_top_k(model, [c.text for c in rag_chunks(seed)], [q.text for q in queries], k)
    return tuple(tuple(top) for top in tops)


def score_setup(queries: Sequence[Query], chunks: Sequence[Chunk], lists: Sequence[Sequence[int]],
                linker: ConceptLinker, *, empty_source: bool = False, precision: bool = False,
                crossed: bool = False) -> tuple[float, float]:
    """The reference (retrieval recall, generation) of one setup, or one deliberate mistake (for hints)."""
    instruction = link_instruction(linker.edition)
    found = right = 0.0
    for query, top in zip(queries, lists):
        sources = [chunks[i].text for i in top]
        prompt = link_prompt(instruction, query.text, sources if sources or empty_source else None)
        reply = linker.call(prompt)
        carrying = [query.concept in chunks[i].concepts for i in top]
        found += (sum(carrying) / len(top) if top else 0.0) if precision else any(carrying)
        right += reply.concept == query.concept and (any(carrying) or not crossed)
    return found / len(queries), right / len(queries)


def fresh_linker(seed: int, rate_limit_every: int | None = 37, temperature: float = TEMPERATURE) -> ConceptLinker:
    """A new model of the lesson (its call counter at zero)."""
    return ConceptLinker(rag_world(seed).edition, seed, temperature=temperature, rate_limit_every=rate_limit_every)


@lru_cache(maxsize=64)
def setup_columns(seed: int, setup: str, k: int = K) -> tuple[float, float]:
    """The reference columns of one of the lesson's setups with a fresh model."""
    current = rag_world(seed)
    return score_setup(current.queries, rag_chunks(seed), retrieved(seed, setup, k), fresh_linker(seed))


# ---------------------------------------------------------------- q1: predict the bare model at temperature 0

BARE_OPTIONS = {"a": "it falls to 0.0000: without sampling the model never guesses right",
                "b": "it stays near 0.2000: the temperature only reshuffles the guesses",
                "c": "it rises, to between 0.3 and 0.5", "d": "it rises above 0.5"}


def bare_generation(seed: int, temperature: float) -> float:
    """Generation of the no-retrieval setup at ``temperature`` (fresh model)."""
    current = rag_world(seed)
    lists = retrieved(seed, "no retrieval", K)
    return score_setup(current.queries, rag_chunks(seed), lists,
                       fresh_linker(seed, temperature=temperature))[1]


def check_bare_at_zero(prediction: Any) -> list[str]:
    """PREDICTED_BARE: no-retrieval generation at temperature 0 (course seed)."""
    value, warm = bare_generation(COURSE_SEED, 0.0), bare_generation(COURSE_SEED, TEMPERATURE)
    truth = "a" if value == 0 else "b" if abs(value - warm) <= 0.05 else "c" if value <= 0.5 else "d"
    return check_choice(
        prediction, "PREDICTED_BARE", BARE_OPTIONS, truth,
        f"no-retrieval generation {value:.4f} at temperature 0 ({warm:.4f} at {TEMPERATURE})",
        ["At temperature 0 the model always takes its top score. A request about one of the seven concepts it",
         "knows in the subscribers' words scores 2.15 for that concept against 0.15 for the rest, so it is",
         "now answered right every time instead of about six times in ten (a rate-limited call aside). Every",
         "other request is a twenty-way tie, and a tie goes to the first key in sorted order: the requests",
         "about that one concept become right by accident, and all the others wrong, every time."])


# ---------------------------------------------------------------- q2: build the two columns

def made_up_cases(seed: int) -> list[tuple[str, tuple[Query, ...], tuple[tuple[int, ...], ...], int | None]]:
    """(label, queries, retrieved lists, rate-limit period): made-up lists over the chunks of ``seed``."""
    queries, chunks = rag_world(seed).queries, rag_chunks(seed)
    carrier = {q.concept: next(i for i, c in enumerate(chunks) if q.concept in c.concepts) for q in queries}
    other = {q.concept: next(i for i, c in enumerate(chunks) if c.concepts and q.concept not in c.concepts)
             for q in queries}
    first = queries[:8]
    twice = tuple((carrier[q.concept], carrier[q.concept], other[q.concept]) for q in first)
    mixed = tuple((other[q.concept],) if n % 3 == 0 else (other[q.concept], carrier[q.concept]) for n, q in
                  enumerate(first))
    drawn = tuple(tuple(shuffled(range(len(chunks)), 500 + n)[:2]) for n in range(len(first)))
    return [
        ("8 requests, a carrying chunk handed over twice", first, twice, None),
        ("8 requests, a carrying chunk for some", first, mixed, 5),
        ("8 requests, chunks drawn at random", first, drawn, 3),
        ("8 requests, no retrieval", first, tuple(() for _ in first), 4),
    ]


def two_column_cases() -> list[tuple[str, int, tuple[Query, ...], tuple[tuple[int, ...], ...], int | None]]:
    """(label, seed, queries, lists, rate-limit period): made-up lists first, then the lesson's setups."""
    cases = [(label, COURSE_SEED, queries, lists, every) for label, queries, lists, every in
             made_up_cases(COURSE_SEED)]
    for seed in (*OTHER_SEEDS, COURSE_SEED):
        for setup in SETUPS:
            for k in ((K,) if seed == COURSE_SEED else (1, 5)):
                if setup == "no retrieval" and k != (K if seed == COURSE_SEED else 1):
                    continue
                cases.append((f"the lesson's {setup} setup, k = {k}, seed {seed}", seed, rag_world(seed).queries,
                              retrieved(seed, setup, k), 37))
    return cases


def two_column_hints(queries, chunks, lists, seed, every) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the scoring and what to say about each."""
    def wrong(**mistake):
        return lambda: score_setup(queries, chunks, lists, fresh_linker(seed, every), **mistake)

    return [
        (wrong(precision=True), "retrieval recall asks whether at least one handed-over chunk carries the concept;"
                                " the share of carrying chunks is precision"),
        (wrong(crossed=True), "score generation on every request, whatever retrieval found: the columns are"
                              " separate, and a reply can be right without a carrying chunk"),
        (wrong(empty_source=True), "with no chunks the prompt has no Source part at all: pass no sources"
                                   " (None), not an empty list"),
    ]


def unpack_columns(got: Any, tried: str) -> tuple[float, float]:
    """The student's (recall, generation) pair, or Mismatch."""
    expect_pair(got, tried, "retrieval recall, generation", "return two numbers: `return recall, generation`")
    return as_number(got[0], tried, "a recall"), as_number(got[1], tried, "a generation rate")


def check_two_columns(answer: Any) -> list[str]:
    """score_columns equals the reference on made-up and real setups, one model call per request."""
    score = require_function(answer, "score_columns")
    cases = two_column_cases()
    for label, seed, queries, lists, every in cases:
        chunks = rag_chunks(seed)
        limit = f"rate-limited every {every} calls" if every else "no rate limit"
        tried = f"score_columns(<{label}>, <a fresh model, {limit}>)"
        linker = fresh_linker(seed, every)
        got = call(score, "score_columns", (list(queries), list(chunks), [list(t) for t in lists], linker), tried)
        if linker.calls != len(queries):
            raise Mismatch(tried, f"{len(queries)} calls of the model you were given (one per request)",
                           f"{linker.calls} calls", "call the model you are handed exactly once per request: a"
                           " second call moves the rate limit onto other requests, and a model of your own"
                           " has a counter and a rate limit of its own" if linker.calls else
                           "ask the model you are handed (`linker.call(prompt)`), not one of your own")
        recall, generation = unpack_columns(got, tried)
        expected = score_setup(queries, chunks, lists, fresh_linker(seed, every))
        if abs(recall - expected[0]) > 1e-9 or abs(generation - expected[1]) > 1e-9:
            raise Mismatch(tried, shown(expected), shown((recall, generation)), first_hint(
                (recall, generation), two_column_hints(queries, chunks, lists, seed, every),
                "for each request build the linking prompt with its chunks' texts, call the model once, and"
                " count apart whether any chunk carries the request's concept and whether the reply names it"))
    lines = []
    for setup in SETUPS:
        current = rag_world(COURSE_SEED)
        got = score(list(current.queries), list(rag_chunks(COURSE_SEED)),
                    [list(t) for t in retrieved(COURSE_SEED, setup, K)], fresh_linker(COURSE_SEED))
        recall, generation = unpack_columns(got, f"score_columns on the lesson's {setup} setup")
        expected = setup_columns(COURSE_SEED, setup)
        tried = f"your score_columns on the lesson's {setup} setup, K = {K}, course seed"
        expect_number(recall, expected[0], tried + " (recall)", "see the per-case check above", tolerance=1e-12)
        expect_number(generation, expected[1], tried + " (generation)", "see the per-case check above",
                      tolerance=1e-12)
        lines.append(f"{setup}: recall {recall:.4f}, generation {generation:.4f}")
    return [f"score_columns agrees with the reference on {len(cases)} cases (made-up chunk lists, rate limits every"
            " 3 to 37 calls, the lesson's setups at three seeds), calling the model once per request,",
            "and reproduces lesson 07 at the course seed: " + "; ".join(lines) + ".",
            "(The lesson prints no recall for the no-retrieval row: with nothing retrieved it is 0.)"]


# ---------------------------------------------------------------- q3: measure ten chunks a prompt

COLUMN_PROBES = ((COURSE_SEED + 1, 5, True), (7, 12, True), (COURSE_SEED, 1, True), (COURSE_SEED, ASKED_K, False))


def check_columns_at(answer: Any) -> list[str]:
    """columns_at(seed, k) equals the reference at other settings, then at the asked one."""
    measure = require_function(answer, "columns_at")
    for seed, k, reveal in COLUMN_PROBES:
        tried = f"columns_at({seed}, {k})"
        recall, generation = unpack_columns(call(measure, "columns_at", (seed, k), tried), tried)
        expected = setup_columns(seed, "retrieval", k)
        hints = [(lambda: setup_columns(seed, "wrong chunks", k),
                  "that is the out-of-domain model's run: retrieve with the in-domain embedding"),
                 (lambda: setup_columns(COURSE_SEED, "retrieval", k),
                  "your function measures the course seed's world: build everything from the seed it is given"),
                 (lambda: setup_columns(seed, "retrieval", K),
                  f"use the k you are given, not {K}"),
                 (lambda: score_setup(rag_world(seed).queries, rag_chunks(seed), retrieved(seed, "retrieval", k),
                                      fresh_linker(seed), precision=True),
                  "the first number is recall (a carrying chunk among the k), not precision")]
        hint = first_hint((recall, generation), hints,
                          "retrieve the top k paragraph chunks with the in-domain embedding of the seed, ask a fresh"
                          " model at that seed once per request, and return the two columns")
        expect_number(recall, expected[0], tried + " (recall, first number)", hint, reveal=reveal)
        expect_number(generation, expected[1], tried + " (generation, second number)", hint, reveal=reveal)
    recall, generation = setup_columns(COURSE_SEED, "retrieval", ASKED_K)
    return [f"columns_at matches the reference at {len(COLUMN_PROBES)} settings, three seeds among them.",
            f"Ten chunks a prompt, course seed: recall {recall:.4f}, generation {generation:.4f} (three chunks:"
            " 0.9500 / 0.9250). Retrieval can only gain from more chunks; whether the answers gain depends on"
            " the model's 240-token window."]


EXERCISES = ExerciseSet("07-retrieval-augmented-generation", "What is retrieval-augmented generation", [
    Exercise("q1", "predict", "the bare model at temperature 0", ("PREDICTED_BARE",), check_bare_at_zero),
    Exercise("q2", "build", "retrieval and generation in two columns", ("score_columns",), check_two_columns),
    Exercise("q3", "measure", "ten chunks a prompt", ("columns_at",), check_columns_at),
])
check = EXERCISES.check
