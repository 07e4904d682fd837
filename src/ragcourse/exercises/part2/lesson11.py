"""Exercises of lesson 11: a transformer that never samples, transform-then-retrieve with its calls, ten chunks.

q1 (predict) asks what temperature 0 does to the transformer's right-concept share on long
requests; q2 (build) has the student run one setup (transform once when the setup asks for
it, retrieve with what comes back, answer the request as typed) and score retrieval and
generation apart, with both models' shared call counter checked, then reproduce the lesson's
short and long expansion rows; q3 (measure) reads what expansion gains over the typed request,
short and long, at a depth the lesson did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.pipeline import IndexedChunk, is_relevant
from ...retrieval.ranking import rank_by_score
from ...world.llm import CallCounter, ChunkAnswerer, QueryTransformer
from ...world.phrasings import Phrasing, phrase_queries
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                         expect_pair, first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, hybrid_retriever, rag_world

K = 5
TEMPERATURE = 0.5
MODES = ("baseline", "expansion", "rewriting")
ASKED_K = 10


@lru_cache(maxsize=8)
def phrasings_of(seed: int) -> tuple[Phrasing, ...]:
    """The short and long phrasings of the forty requests at ``seed``."""
    current = rag_world(seed)
    return tuple(phrase_queries(current.queries, seed, current.edition))


_RANKINGS: dict[tuple[int, str], tuple[int, ...]] = {}


class TopChunks:
    """``retrieve(text)``: the top ``k`` chunks of the hybrid retriever at ``seed`` (what a check hands run_setup).

    The full ranking of a text is remembered, whatever ``k``; its first ``k`` are exactly what
    ``CosineJaccardRetriever.retrieve(text, k)`` returns (the same scores, the same ``rank_by_score``).
    It holds only its seed and depth, so it travels to a submission's kernel in a few bytes
    (the kernel builds the retriever itself, in milliseconds) rather than with the retriever
    and every ranking remembered so far (a megabyte a call: issue 39, lesson 11's grading time).
    """

    def __init__(self, seed: int, k: int):
        self.seed, self.k = seed, k

    def __call__(self, text: str) -> list[IndexedChunk]:
        retriever, key = hybrid_retriever(self.seed), (self.seed, text)
        if key not in _RANKINGS:
            _RANKINGS[key] = tuple(rank_by_score(retriever.scores(text)))
        return [retriever.chunks[i] for i in _RANKINGS[key][:self.k]]

    def __repr__(self) -> str:
        return f"<the top {self.k} chunks of lesson 11's hybrid retriever at seed {self.seed}>"


def retriever_for(seed: int, k: int) -> Callable[[str], list[IndexedChunk]]:
    """``retrieve(text)``: the top ``k`` chunks of the hybrid retriever at ``seed`` (a ``TopChunks``)."""
    return TopChunks(seed, k)


def models(seed: int, temperature: float = TEMPERATURE,
           rate_limit_every: int | None = 37) -> tuple[QueryTransformer, ChunkAnswerer, CallCounter]:
    """A fresh transformer and answerer at ``seed`` sharing one call counter."""
    edition, counter = rag_world(seed).edition, CallCounter()
    return (QueryTransformer(edition, seed, temperature=temperature, rate_limit_every=rate_limit_every,
                             counter=counter), ChunkAnswerer(edition, seed, counter=counter), counter)


def run_setup(phrasings: Sequence[Phrasing], form: str, mode: str, transformer: QueryTransformer,
              answerer: ChunkAnswerer, retrieve: Callable[[str], Sequence[IndexedChunk]], *,
              answer_transformed: bool = False, search_typed: bool = False, precision: bool = False,
              transforms_first: bool = False) -> tuple[float, float, float]:
    """The reference (recall, generation, right-concept share) of one setup, or one mistake (for hints)."""
    edition = transformer.edition
    found = answered = right = 0.0
    ahead = ([transformer.transform(p.text(form), mode) for p in phrasings]
             if transforms_first and mode != "baseline" else None)
    for number, phrasing in enumerate(phrasings):
        typed = search = phrasing.text(form)
        if mode != "baseline":
            transformed = ahead[number] if ahead else transformer.transform(typed, mode)
            search = typed if search_typed else transformed.text
            right += transformed.concept == phrasing.query.concept
        context = list(retrieve(search))
        hits = [is_relevant(chunk, phrasing.query, edition) for chunk in context]
        found += sum(hits) / len(context) if precision else any(hits)
        response = answerer.answer(search if answer_transformed else typed, context)
        answered += is_relevant(response.chunk, phrasing.query, edition)
    n = len(phrasings)
    return found / n, answered / n, right / n


@lru_cache(maxsize=128)
def setup_of(seed: int, form: str, mode: str, k: int = K,
             temperature: float = TEMPERATURE) -> tuple[float, float, float]:
    """The reference (recall, generation, right-concept share) of one of the lesson's setups."""
    transformer, answerer, _ = models(seed, temperature)
    return run_setup(phrasings_of(seed), form, mode, transformer, answerer, retriever_for(seed, k))


def expansion_gains(seed: int, k: int) -> tuple[float, float]:
    """Recall of expansion minus recall of the typed request, short and long."""
    return tuple(setup_of(seed, form, "expansion", k)[0] - setup_of(seed, form, "baseline", k)[0]
                 for form in ("short", "long"))


# ---------------------------------------------------------------- q1: predict a transformer that never samples

GREEDY_OPTIONS = {"a": "it rises well above 0.3500: without sampling the real question wins more often",
                  "b": "it stays within a request or two of 0.3500",
                  "c": "it falls well below 0.3500"}


def check_greedy(prediction: Any) -> list[str]:
    """PREDICTED_GREEDY: the transformer's right-concept share on long requests at temperature 0 (course seed)."""
    value = setup_of(COURSE_SEED, "long", "expansion", K, 0.0)[2]
    usual = setup_of(COURSE_SEED, "long", "expansion")[2]
    truth = "a" if value > usual + 0.05 else "c" if value < usual - 0.05 else "b"
    return check_choice(
        prediction, "PREDICTED_GREEDY", GREEDY_OPTIONS, truth,
        f"the transformer names the right concept for {value:.4f} of the long requests at temperature 0"
        f" ({usual:.4f} at {TEMPERATURE})",
        ["At temperature 0 the transformer takes the concept with the most votes, and on a tie the first in",
         "sorted order. A long request holds the real question and two asides, each a subscriber phrase of",
         "about the same length, so the real question often has no more votes than an aside: ties and",
         "near-ties are common, and a fixed rule for ties picks the question only when it sorts first.",
         "Sampling was never the problem; a request with three topics is."])


# ---------------------------------------------------------------- q2: build transform, then retrieve

def setup_cases() -> list[tuple[str, int, int, str, str, int | None]]:
    """(label, seed, requests, form, mode, rate-limit period): a few requests with frequent limits first."""
    cases = []
    for form, mode, every in (("short", "expansion", 3), ("long", "rewriting", 4), ("short", "baseline", 3),
                              ("long", "expansion", 5)):
        cases.append((f"the first 9 requests typed {form}", COURSE_SEED, 9, form, mode, every))
    for seed in (*OTHER_SEEDS, COURSE_SEED):
        for form in ("short", "long"):
            for mode in (MODES if seed == COURSE_SEED else MODES[:2]):
                cases.append((f"the 40 requests typed {form} at seed {seed}", seed, 40, form, mode, 37))
    return cases


def setup_hints(seed, count, form, mode, every) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the setup and what to say about each."""
    def wrong(**mistake):
        def run():
            transformer, answerer, _ = models(seed, rate_limit_every=every)
            return run_setup(phrasings_of(seed)[:count], form, mode, transformer, answerer,
                             retriever_for(seed, K), **mistake)[:2]
        return run

    return [
        (wrong(search_typed=True), "search the index with the text the transformer returned, not the typed request"),
        (wrong(answer_transformed=True), "the answering model reads the request as the user typed it; only the"
                                         " search uses the transformed text"),
        (wrong(precision=True), "retrieval recall asks whether at least one of the chunks is relevant, not what"
                                " share of them is"),
        (wrong(transforms_first=True), "the two models share one endpoint and its rate limit: per request, transform"
                                       " and then answer before the next request, so the limit falls on the calls the"
                                       " lesson's order gives it"),
    ]


def check_transform_setup(answer: Any) -> list[str]:
    """run_setup equals the reference on every setup at three seeds, with one transform call where asked."""
    student = require_function(answer, "run_setup")
    cases = setup_cases()
    for label, seed, count, form, mode, every in cases:
        phrasings = list(phrasings_of(seed)[:count])
        tried = f"run_setup(<{label}>, {form!r}, {mode!r}, <transformer rate-limited every {every} calls>, ...)"
        transformer, answerer, counter = models(seed, rate_limit_every=every)
        got = call(student, "run_setup", (phrasings, form, mode, transformer, answerer, retriever_for(seed, K)),
                   tried)
        calls = count * (1 if mode == "baseline" else 2)
        if counter.calls != calls:
            per_request = "one answer" if mode == "baseline" else "one transform and one answer"
            raise Mismatch(tried, f"{calls} model calls ({per_request} per request)", f"{counter.calls} calls",
                           ("use the two models you are handed, and call each at most once per request"
                            + (": the baseline sends the typed request as it is" if mode == "baseline" else ""))
                           if counter.calls else
                           "call the transformer and the answerer you are handed, not models of your own")
        expect_pair(got, tried, "recall, generation", "return two numbers: `return recall, generation`")
        values = (as_number(got[0], tried, "a recall"), as_number(got[1], tried, "a generation rate"))
        transformer, answerer, _ = models(seed, rate_limit_every=every)
        expected = run_setup(phrasings, form, mode, transformer, answerer, retriever_for(seed, K))[:2]
        if any(abs(value - reference) > 1e-9 for value, reference in zip(values, expected)):
            raise Mismatch(tried, shown(expected), shown(values), first_hint(
                values, setup_hints(seed, count, form, mode, every),
                "per request: transform the typed text once (unless the mode is baseline), retrieve with the"
                " result, let the answerer read the typed request and the chunks, and judge both stages against"
                " the request's own target"))
    lines = []
    for form in ("short", "long"):
        for mode in ("baseline", "expansion"):
            transformer, answerer, _ = models(COURSE_SEED)
            recall, generation = student(list(phrasings_of(COURSE_SEED)), form, mode, transformer, answerer,
                                         retriever_for(COURSE_SEED, K))
            expected = setup_of(COURSE_SEED, form, mode)
            tried = f"your run_setup, {form} {mode}, course seed"
            expect_number(recall, expected[0], tried + " (recall)", "see the per-case check above", tolerance=1e-12)
            expect_number(generation, expected[1], tried + " (generation)", "see the per-case check above",
                          tolerance=1e-12)
            lines.append(f"{form} {mode} {recall:.4f} / {generation:.4f}")
    return [f"run_setup agrees with the reference on {len(cases)} setups (rate limits every 3 to 37 calls, both"
            " phrasings at three seeds, all three modes at the course seed), with one transform call per request"
            " where asked,",
            "and reproduces lesson 11's recall / generation at the course seed: " + "; ".join(lines) + "."]


# ---------------------------------------------------------------- q3: measure ten chunks

GAIN_PROBES = ((COURSE_SEED + 1, ASKED_K, True), (7, 3, True), (COURSE_SEED, ASKED_K, False))


def check_expansion_gain(answer: Any) -> list[str]:
    """expansion_gain(seed, k) equals the reference at other settings, then at the asked one."""
    measure = require_function(answer, "expansion_gain")
    for seed, k, reveal in GAIN_PROBES:
        tried = f"expansion_gain({seed}, {k})"
        got = call(measure, "expansion_gain", (seed, k), tried)
        expect_pair(got, tried, "gain on short requests, gain on long requests",
                    "return two numbers: `return short_gain, long_gain`")
        short, long = as_number(got[0], tried, "a recall difference"), as_number(got[1], tried, "a recall difference")
        expected = expansion_gains(seed, k)
        hints = [(lambda: expansion_gains(COURSE_SEED, k),
                  "your function measures the course seed's world: build everything from the seed it is given"),
                 (lambda: tuple(-gain for gain in expected), "subtract the baseline's recall from expansion's,"
                                                              " not the other way round"),
                 (lambda: expansion_gains(seed, K), f"use the k you are given, not {K}"),
                 (lambda: tuple(setup_of(seed, form, "expansion", k)[1] - setup_of(seed, form, "baseline", k)[1]
                                for form in ("short", "long")), "compare retrieval recall, not generation")]
        hint = first_hint((short, long), hints,
                          "for each phrasing run the typed request and its expansion (one fresh pair of models per"
                          " run), retrieve the top k with the lesson's hybrid retriever, and subtract the recalls")
        expect_number(short, expected[0], tried + " (short gain, first number)", hint, reveal=reveal)
        expect_number(long, expected[1], tried + " (long gain, second number)", hint, reveal=reveal)
    short, long = expansion_gains(COURSE_SEED, ASKED_K)
    return [f"expansion_gain matches the reference at {len(GAIN_PROBES)} settings, three seeds among them.",
            f"Ten chunks, course seed: expansion changes recall by {short:+.4f} on short requests and {long:+.4f}"
            " on long ones (five chunks: +0.4250 and -0.0500)."]


EXERCISES = ExerciseSet("11-query-transformation", "Query transformation", [
    Exercise("q1", "predict", "a transformer that never samples", ("PREDICTED_GREEDY",), check_greedy),
    Exercise("q2", "build", "transform, then retrieve", ("run_setup",), check_transform_setup),
    Exercise("q3", "measure", "expansion's gain at ten chunks", ("expansion_gain",), check_expansion_gain),
])
check = EXERCISES.check
