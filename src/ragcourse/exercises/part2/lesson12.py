"""Exercises of lesson 12: the bill at 32 candidates, the second stage, precision and calls at 16 candidates.

q1 (predict) asks for the model calls of the two-stage pipeline at 32 candidates; q2 (build)
has the student write the second stage (one scorer call per candidate, best score first,
ties in retrieval order, the tokens it spent) and reproduce the lesson's 12-candidate row,
precision 0.8250 for 520 calls; the scorer's call counter is part of the check. q3 (measure)
reads precision@3 and the calls at a pool size the lesson did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.candidates import generation_share, precision_at, recall_at
from ...retrieval.pipeline import IndexedChunk
from ...world.corpus import Query, World
from ...world.llm import CallCounter, ChunkAnswerer, PairScorer
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_estimate, expect_number,
                         expect_pair, first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, hybrid_candidates, rag_world, shuffled

K = 3
NOISE = 1.4
TEMPERATURE = 0.12
DEPTH = 48
PREDICTED_N = 32
REPRODUCED_N = 12
ASKED_N = 16
SEEDS = (COURSE_SEED, *OTHER_SEEDS)


def rerank_world(seed: int) -> tuple[World, tuple[tuple[IndexedChunk, ...], ...]]:
    """The world of lesson 12 at ``seed`` and every question's 48 best chunks (hybrid retriever)."""
    return rag_world(seed), hybrid_candidates(seed, DEPTH)


def reference_rerank(query: Query, candidates: Sequence[IndexedChunk],
                     scorer: PairScorer) -> tuple[list[IndexedChunk], int]:
    """The lesson's second stage: one call per candidate, best score first (stable), and the tokens spent."""
    responses = [scorer.score(query.text, chunk) for chunk in candidates]
    order = sorted(range(len(candidates)), key=lambda i: -responses[i].score)
    return [candidates[i] for i in order], sum(response.tokens for response in responses)


def run_pipeline(seed: int, n_candidates: int, rerank: Callable[..., Any] = reference_rerank) -> dict[str, float]:
    """Lesson 12's pipeline at ``seed``: n candidates, reranked by ``rerank`` when n > K, K chunks answered."""
    current, pool = rerank_world(seed)
    queries, edition = current.queries, current.edition
    counter = CallCounter()
    scorer = PairScorer(edition, seed, noise=NOISE, counter=counter)
    answerer = ChunkAnswerer(edition, seed, temperature=TEMPERATURE, counter=counter)
    tops, chosen, tokens = [], [], 0
    for query, candidates in zip(queries, pool):
        candidates = list(candidates[:max(n_candidates, K)])
        if n_candidates > K:
            reordered, spent = rerank(query, candidates, scorer)
            candidates, tokens = list(reordered), tokens + spent
        response = answerer.answer(query.text, candidates[:K])
        tokens += response.tokens
        tops.append(candidates[:K])
        chosen.append(response.chunk)
    return {"recall": recall_at(tops, queries, edition, K), "precision": precision_at(tops, queries, edition, K),
            "generation": generation_share(chosen, queries, edition), "calls": counter.calls, "tokens": tokens}


@lru_cache(maxsize=32)
def pipeline_row(seed: int, n_candidates: int) -> dict[str, float]:
    """The reference row of the lesson's table at ``seed`` and ``n_candidates``."""
    return run_pipeline(seed, n_candidates)


# ---------------------------------------------------------------- q1: predict the calls at 32 candidates

def check_calls(prediction: Any) -> list[str]:
    """PREDICTED_CALLS: the model calls of the pipeline with 32 candidates (course seed), exactly."""
    row = pipeline_row(COURSE_SEED, PREDICTED_N)
    questions = len(rerank_world(COURSE_SEED)[0].queries)
    return check_estimate(
        prediction, "PREDICTED_CALLS", row["calls"], 0,
        f"{row['calls']} model calls and {row['tokens']} tokens for {questions} questions at {PREDICTED_N} candidates"
        f" (precision@{K} {row['precision']:.4f})",
        [f"Each question costs one scorer call per candidate and then one answer call: {questions} x"
         f" ({PREDICTED_N} + 1). The count does not depend on the noise, the seed or on what the judge decides;",
         "it is fixed by the pool size before anything runs. The tokens grow the same way, about 36 per scored",
         "candidate. The bill of a second stage is linear in the pool; its benefit, the table shows, is not."],
        decimals=0)


# ---------------------------------------------------------------- q2: build the second stage

def rerank_cases() -> list[tuple[str, int, int, list[IndexedChunk]]]:
    """(label, seed, question number, candidates): reversed and shuffled pools first (ties), then plain pools."""
    cases = []
    for seed in SEEDS:
        _, pool = rerank_world(seed)
        cases.append(("its first 12 candidates, reversed", seed, 0, list(pool[0][:12])[::-1]))
        cases.append(("its first 24 candidates, shuffled", seed, 13, [pool[13][i] for i in shuffled(range(24), seed)]))
    for seed in SEEDS:
        _, pool = rerank_world(seed)
        for number, size in ((5, 6), (21, 12), (34, 48), (39, 1)):
            cases.append((f"its first {size} candidate{'s' if size > 1 else ''}", seed, number,
                          list(pool[number][:size])))
    return cases


def codes(chunks: Any) -> Any:
    """The document codes of a list of chunks (what a message shows of them)."""
    if isinstance(chunks, (list, tuple)):
        return [getattr(chunk, "code", chunk) for chunk in chunks]
    return chunks


def rerank_hints(query: Query, candidates: list[IndexedChunk], seed: int) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong orders of the second stage and what to say about each."""
    scorer = PairScorer(rerank_world(seed)[0].edition, seed, noise=NOISE)
    scores = [scorer.score(query.text, chunk).score for chunk in candidates]
    n = len(candidates)

    def order(key):
        return codes([candidates[i] for i in sorted(range(n), key=key)])

    return [
        (lambda: order(lambda i: scores[i]), "the highest score comes first, not the lowest"),
        (lambda: order(lambda i: (-scores[i], -i)),
         "on equal scores keep the retriever's order: the candidate that came earlier stays earlier"),
        (lambda: order(lambda i: (-scores[i], candidates[i].code)),
         "on equal scores keep the retriever's order, not the order of the document codes"),
        (lambda: codes(candidates), "that is the retriever's order: sort the candidates by the scorer's score"),
    ]


def check_rerank(answer: Any) -> list[str]:
    """rerank orders every candidate list as the reference, with one call each; reproduces the 12-candidate row."""
    rerank = require_function(answer, "rerank")
    cases = rerank_cases()
    for label, seed, number, candidates in cases:
        current = rerank_world(seed)[0]
        query = current.queries[number]
        counter = CallCounter()
        scorer = PairScorer(current.edition, seed, noise=NOISE, counter=counter)
        tried = (f"rerank(<question {number + 1} at seed {seed}, {query.text!r}>, <{label}>,"
                 " <a PairScorer with a fresh call counter>)")
        got = call(rerank, "rerank", (query, list(candidates), scorer), tried)
        if not isinstance(got, (tuple, list)) or len(got) != 2 or not isinstance(got[0], (list, tuple)):
            raise Mismatch(tried, "a pair (the candidates best first, the tokens spent)", shown(got),
                           "return two things, as the lesson's rerank does: `return reordered, tokens`")
        calls = counter.calls
        if calls != len(candidates):
            raise Mismatch(tried + " (the scorer's call counter)", f"{len(candidates)} calls, one per candidate",
                           f"{calls} calls",
                           "score every candidate exactly once and keep its response: the score and the tokens both"
                           " come from that one call" if calls > len(candidates) else
                           "every candidate needs its own score: call scorer.score(query.text, chunk) for each one")
        expected, expected_tokens = reference_rerank(query, candidates, PairScorer(current.edition, seed, noise=NOISE))
        if [id(c) for c in got[0]] != [id(c) for c in expected]:
            shown_got = codes(list(got[0]))
            raise Mismatch(tried + " (document codes, best first)", shown(codes(expected), 150),
                           shown(shown_got, 150), first_hint(shown_got, rerank_hints(query, candidates, seed),
                           "return every candidate, ordered by the score of its one scorer call, highest first,"
                           " equal scores in the order the candidates came in"))
        tokens = as_number(got[1], tried + " (tokens)", "a number of tokens")
        if tokens != expected_tokens:
            scorer_for_hint = PairScorer(current.edition, seed, noise=NOISE)
            inputs = sum(scorer_for_hint.score(query.text, c).input_tokens for c in candidates)
            hint = first_hint(tokens, [(lambda: inputs, "a call costs its prompt tokens and its one output token:"
                                                        " add up `response.tokens`, not `input_tokens`"),
                                       (lambda: len(candidates), "count the tokens of the calls, not the calls")],
                              "add up the tokens (prompt and output) of every scorer call")
            raise Mismatch(tried + " (tokens)", str(expected_tokens), shown(got[1]), hint)
    row = run_pipeline(COURSE_SEED, REPRODUCED_N, rerank)
    expected = pipeline_row(COURSE_SEED, REPRODUCED_N)
    tried = f"the lesson's pipeline with your rerank, {REPRODUCED_N} candidates, course seed"
    expect_number(row["precision"], expected["precision"], tried + f" (precision@{K})", "see the per-case check above",
                  tolerance=1e-12)
    expect_number(row["calls"], expected["calls"], tried + " (model calls)", "see the per-case check above",
                  tolerance=0)
    return [f"rerank agrees with the lesson's second stage on {len(cases)} candidate lists (three seeds; reversed and"
            " shuffled pools for the ties), one scorer call per candidate,",
            f"and reproduces lesson 12's row at the course seed: {REPRODUCED_N} candidates give precision@{K}"
            f" {row['precision']:.4f} for {row['calls']} model calls and {row['tokens']} tokens."]


# ---------------------------------------------------------------- q3: measure precision and calls at 16

STAGE_PROBES = ((COURSE_SEED + 1, 12, True), (7, 24, True), (COURSE_SEED, K, True), (COURSE_SEED, ASKED_N, False))


def check_two_stage(answer: Any) -> list[str]:
    """two_stage(seed, n_candidates) equals the reference (precision@3, calls) at other settings, then at 16."""
    measure = require_function(answer, "two_stage")
    for seed, n, reveal in STAGE_PROBES:
        tried = f"two_stage({seed}, {n})"
        got = call(measure, "two_stage", (seed, n), tried)
        expect_pair(got, tried, "precision, calls", "return two numbers: `return precision, calls`")
        precision = as_number(got[0], tried, "a precision")
        calls = as_number(got[1], tried, "a number of calls")
        row = pipeline_row(seed, n)
        questions = len(rerank_world(seed)[0].queries)
        hints = [(lambda: (row["precision"], row["calls"] - questions),
                  "count the answer call of every question too, not only the scorer's calls"),
                 (lambda: (precision_at(rerank_world(seed)[1], rerank_world(seed)[0].queries,
                                        rerank_world(seed)[0].edition, K), row["calls"]),
                  f"that is the retriever's own precision@{K}: measure the top {K} after reranking"),
                 (lambda: (row["recall"], row["calls"]), f"that is recall@{K}; the question asks for precision@{K}"),
                 (lambda: (row["generation"], row["calls"]), "that is generation; the question asks for precision"),
                 (lambda: (pipeline_row(COURSE_SEED, n)["precision"], pipeline_row(COURSE_SEED, n)["calls"]),
                  "your function measures the course seed's world: build everything from the seed it is given")]
        hint = first_hint((precision, calls), hints,
                          f"retrieve 48 candidates per question, take the first n, rerank them with a PairScorer of"
                          f" the seed when n > {K} (noise {NOISE}), answer from the top {K} with a ChunkAnswerer that"
                          " shares the scorer's call counter, and read precision and the counter")
        expect_number(precision, row["precision"], tried + " (precision, first number)", hint, reveal=reveal)
        expect_number(calls, row["calls"], tried + " (calls, second number)", hint, tolerance=0, reveal=reveal)
    row, twelve, twenty_four = (pipeline_row(COURSE_SEED, n) for n in (ASKED_N, 12, 24))
    return [f"two_stage matches the reference at {len(STAGE_PROBES)} settings, three seeds among them.",
            f"{ASKED_N} candidates at the course seed: precision@{K} {row['precision']:.4f} for {row['calls']} calls"
            f" (12: {twelve['precision']:.4f} for {twelve['calls']}; 24: {twenty_four['precision']:.4f} for"
            f" {twenty_four['calls']}). Compare each step with the run-to-run difference of 0.0250."]


EXERCISES = ExerciseSet("12-reranking", "Reranking", [
    Exercise("q1", "predict", "the calls at 32 candidates", ("PREDICTED_CALLS",), check_calls),
    Exercise("q2", "build", "the second stage", ("rerank",), check_rerank),
    Exercise("q3", "measure", "precision and calls at 16 candidates", ("two_stage",), check_two_stage),
])
check = EXERCISES.check
