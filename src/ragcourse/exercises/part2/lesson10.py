"""Exercises of lesson 10: a volatile source, the refresh year (stale share and re-embeddings), interval 5.

q1 (predict) asks for the stale share of a yearly refresh when 30 % of the documents change
every period; q2 (build) has the student play the refresh policy over a
change stream, counting the stale share of the chunks served and what full and incremental
refresh re-embed (a document changed twice between rebuilds re-embedded once), and reproduce
the lesson's intervals 1 and 12; q3 (measure) runs the model that quotes its source at an
interval that does not divide the year, and reads the stale share beside the up-to-date answers.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.linking import retrieve_top_k
from ...retrieval.pipeline import link_instruction, link_prompt
from ...world.llm import ConceptLinker
from ...world.updates import CHANGE_RATE, PERIODS, RECORD_MARKER, ChangeStream, change_stream, served_text
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                         expect_pair, first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, rag_chunks, rag_model, rag_world
from .lesson07 import TEMPERATURE

K = 3
VOLATILE = 0.3
ASKED_INTERVAL = 5


@lru_cache(maxsize=8)
def chunk_documents(seed: int) -> tuple[int, ...]:
    """The document number of every paragraph chunk at ``seed``."""
    return tuple(d for d, document in enumerate(rag_world(seed).documents) for _ in document.paragraphs)


@lru_cache(maxsize=8)
def retrieved(seed: int) -> tuple[tuple[int, ...], ...]:
    """The lesson's top-3 chunks per request (in-domain embedding of ``seed``), the same in every period."""
    return tuple(tuple(top) for top in retrieve_top_k(rag_model(seed), [c.text for c in rag_chunks(seed)],
                                                      [q.text for q in rag_world(seed).queries], K))


@lru_cache(maxsize=16)
def stream_of(seed: int, rate: float = CHANGE_RATE) -> ChangeStream:
    """The change stream of the 200 documents at ``seed``."""
    return change_stream(seed, len(rag_world(seed).documents), rate=rate)


def refresh_year(stream: ChangeStream, chunk_document: Sequence[int], lists: Sequence[Sequence[int]], interval: int,
                 *, late: bool = False, republications: bool = False, last_period_only: bool = False,
                 per_request: bool = False, full_every_period: bool = False) -> tuple[float, int, int]:
    """The reference (stale share of served chunks, incremental re-embeddings, full re-embeddings) over the
    stream's periods, or one deliberate mistake (for hints)."""
    stale = served = incremental = full = 0
    for period in range(1, stream.periods + 1):
        seen = ((period - 1) // interval) * interval if late else (period // interval) * interval
        if period % interval == 0 or full_every_period:
            full += len(chunk_document)
        if period % interval == 0:
            if republications:
                counted = sum(chunk_document.count(d) for p in range(period - interval + 1, period + 1)
                              for d in stream.republished_in(p))
            else:
                changed = stream.changed_between(period - 1 if last_period_only else period - interval, period)
                counted = sum(document in changed for document in chunk_document)
            incremental += counted
        for top in lists:
            old = [stream.record(chunk_document[i], seen) != stream.record(chunk_document[i], period) for i in top]
            if per_request:
                stale, served = stale + any(old), served + 1
            else:
                stale, served = stale + sum(old), served + len(old)
    return stale / served, incremental, full


@lru_cache(maxsize=64)
def year_of(seed: int, interval: int, rate: float = CHANGE_RATE) -> tuple[float, int, int]:
    """The reference refresh year of the lesson's index at ``seed``."""
    return refresh_year(stream_of(seed, rate), chunk_documents(seed), retrieved(seed), interval)


@lru_cache(maxsize=64)
def answers_of(seed: int, interval: int, rate: float = CHANGE_RATE) -> tuple[float, float]:
    """The reference (stale share, up-to-date answer rate) of the lesson's run_interval: a fresh quoting model,
    one call per request and period."""
    current, chunks, documents_of = rag_world(seed), rag_chunks(seed), chunk_documents(seed)
    stream, edition = stream_of(seed, rate), rag_world(seed).edition
    instruction = link_instruction(edition, ask_for_record=True)
    linker = ConceptLinker(edition, seed, temperature=TEMPERATURE, copy_record=RECORD_MARKER)
    up_to_date = asked = 0
    for period in range(1, PERIODS + 1):
        seen = (period // interval) * interval
        for query, top in zip(current.queries, retrieved(seed)):
            served = {i: served_text(chunks[i].text, stream.record(documents_of[i], seen)) for i in top}
            reply = linker.call(link_prompt(instruction, query.text, [served[i] for i in top]))
            quoted = None if reply.concept is None else next(
                (i for i in top if edition.concept(reply.concept).document_form in served[i]), None)
            up_to_date += (reply.concept == query.concept and quoted is not None
                           and reply.record == stream.record(documents_of[quoted], period))
            asked += 1
    return year_of(seed, interval, rate)[0], up_to_date / asked


# ---------------------------------------------------------------- q1: predict a volatile source

STALE_OPTIONS = {"a": "about 0.26, as with a tenth changing", "b": "about 0.5", "c": "about 0.75",
                 "d": "1.0: every chunk served is stale"}


def check_volatile(prediction: Any) -> list[str]:
    """PREDICTED_STALE: the stale share at interval 12 with 30 % of the documents changing per period (course seed)."""
    stale, incremental, full = year_of(COURSE_SEED, 12, VOLATILE)
    usual = year_of(COURSE_SEED, 12)[0]
    truth = "a" if stale < 0.38 else "b" if stale < 0.62 else "c" if stale < 0.9 else "d"
    return check_choice(
        prediction, "PREDICTED_STALE", STALE_OPTIONS, truth,
        f"stale share {stale:.4f} at interval 12 with 30 % changes ({usual:.4f} with 10 %); incremental"
        f" refresh re-embeds {incremental} chunks that year against {full} for the full rebuild",
        ["A served chunk is stale once its document has changed at least once since the build. With 30 %",
         "a period, a document is still unchanged after p periods with chance 0.7 to the power p: about half",
         "after two periods, under 3 % after ten. So the share climbs fast, then saturates: three times the",
         "change rate gives less than three times the stale share, and it can never pass 1. The same",
         "saturation empties incremental refresh of its saving: nearly every document changed during the year."])


# ---------------------------------------------------------------- q2: build the refresh year

MADE_UP = (
    (ChangeStream(n_documents=4, changes=((0,), (0, 2), (), (0,), (1, 3), (0,))),
     (0, 0, 1, 2, 3, 3), ((0, 2), (4, 5), (1, 3)), (1, 2, 3, 4)),
    (ChangeStream(n_documents=3, changes=((1,), (1,), (1, 2), (0,), (), (2,), (0, 1, 2), ())),
     (0, 1, 1, 2), ((1, 2), (0, 3), (3, 1)), (2, 3, 8)),
)


def year_cases() -> list[tuple[str, ChangeStream, tuple[int, ...], tuple[tuple[int, ...], ...], int]]:
    """(label, stream, chunk documents, retrieved lists, interval): made-up streams first, then the lesson's."""
    cases = [(f"a made-up stream of {stream.periods} periods over {stream.n_documents} documents", stream,
              documents_of, lists, interval)
             for stream, documents_of, lists, intervals in MADE_UP for interval in intervals]
    for seed in (*OTHER_SEEDS, COURSE_SEED):
        for interval, rate in ((2, CHANGE_RATE), (5, CHANGE_RATE), (3, VOLATILE)):
            cases.append((f"the lesson's index at seed {seed}, change rate {rate}", stream_of(seed, rate),
                          chunk_documents(seed), retrieved(seed), interval))
    return cases


def year_hints(stream, documents_of, lists, interval) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong versions of the refresh year and what to say about each."""
    def wrong(**mistake):
        return lambda: refresh_year(stream, documents_of, lists, interval, **mistake)

    return [
        (wrong(late=True), "in a period that ends with a rebuild the requests are answered from the rebuilt index:"
                           " it holds the records of period (period // interval) * interval"),
        (wrong(republications=True), "a document republished twice since the last rebuild is re-embedded once, not"
                                     " once per republication"),
        (wrong(last_period_only=True), "an incremental rebuild re-embeds what changed since the previous rebuild,"
                                       " not only in the period of the rebuild"),
        (wrong(per_request=True), "the stale share is over the chunks served, each chunk counted, not over requests"),
        (wrong(full_every_period=True), "full re-indexing embeds every chunk at each rebuild, and only then"),
    ]


def check_refresh_year(answer: Any) -> list[str]:
    """refresh_year equals the reference on made-up and real streams; reproduces intervals 1 and 12."""
    student = require_function(answer, "refresh_year")
    cases = year_cases()
    for label, stream, documents_of, lists, interval in cases:
        tried = f"refresh_year(<{label}>, <its chunks' documents>, <retrieved lists>, {interval})"
        if stream.n_documents < 10:
            tried = (f"refresh_year(<{label}: {shown([list(c) for c in stream.changes], 60)}>,"
                     f" {shown(list(documents_of))}, {shown([list(t) for t in lists])}, {interval})")
        got = call(student, "refresh_year", (stream, list(documents_of), [list(t) for t in lists], interval), tried)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise Mismatch(tried, "three numbers (stale share, incremental re-embeddings, full re-embeddings)",
                           shown(got), "return three numbers: `return stale, incremental, full`")
        values = tuple(as_number(value, tried) for value in got)
        expected = refresh_year(stream, documents_of, lists, interval)
        if any(abs(value - reference) > 1e-9 for value, reference in zip(values, expected)):
            raise Mismatch(tried, shown(expected), shown(tuple(got)), first_hint(
                values, year_hints(stream, documents_of, lists, interval),
                "play the periods 1 .. stream.periods: rebuild when the period is a multiple of the interval,"
                " serve each retrieved chunk with the record of the last rebuild, and count what each policy"
                " re-embeds at a rebuild"))
    lines = []
    for interval in (1, 12):
        got = student(stream_of(COURSE_SEED), list(chunk_documents(COURSE_SEED)),
                      [list(t) for t in retrieved(COURSE_SEED)], interval)
        expected = year_of(COURSE_SEED, interval)
        tried = f"your refresh_year on the lesson's index at interval {interval}, course seed"
        for value, reference, what in zip(got, expected, ("stale share", "incremental", "full")):
            expect_number(value, reference, f"{tried} ({what})", "see the per-case check above", tolerance=1e-12)
        lines.append(f"interval {interval}: stale {got[0]:.4f}, incremental {got[1]}, full {got[2]}")
    return [f"refresh_year agrees with the reference on {len(cases)} cases (made-up streams of 6 and 8 periods with"
            " repeated republications, the lesson's index at three seeds and two change rates),",
            "and reproduces lesson 10 at the course seed: " + "; ".join(lines) + "."]


# ---------------------------------------------------------------- q3: measure interval 5

ANSWER_PROBES = ((COURSE_SEED + 1, ASKED_INTERVAL, True), (7, 3, True), (COURSE_SEED, 4, True),
                 (COURSE_SEED, ASKED_INTERVAL, False))


def check_stale_and_current(answer: Any) -> list[str]:
    """stale_and_current(seed, interval) equals the reference at other settings, then at the asked one."""
    measure = require_function(answer, "stale_and_current")
    for seed, interval, reveal in ANSWER_PROBES:
        tried = f"stale_and_current({seed}, {interval})"
        got = call(measure, "stale_and_current", (seed, interval), tried)
        expect_pair(got, tried, "stale share, up-to-date answer rate", "return two numbers: `return stale, up_to_date`")
        stale, current = as_number(got[0], tried, "a stale share"), as_number(got[1], tried, "a rate")
        expected = answers_of(seed, interval)
        hints = [(lambda: answers_of(COURSE_SEED, interval),
                  "your function measures the course seed's world: build everything from the seed it is given"),
                 (lambda: (expected[0], 1 - expected[1]), "the second number is the up-to-date rate, not the wrong"
                                                           " answer rate"),
                 (lambda: (refresh_year(stream_of(seed), chunk_documents(seed), retrieved(seed), interval,
                                        late=True)[0], expected[1]),
                  "in a period that ends with a rebuild the requests are answered from the rebuilt index")]
        hint = first_hint((stale, current), hints,
                          "play the twelve periods with one fresh quoting model: serve each request's three chunks"
                          " with the records of the last rebuild, call the model once, and count the answers with"
                          " the right concept and the record in force")
        expect_number(stale, expected[0], tried + " (stale share, first number)", hint, reveal=reveal)
        expect_number(current, expected[1], tried + " (up-to-date rate, second number)", hint, reveal=reveal)
    stale, current = answers_of(COURSE_SEED, ASKED_INTERVAL)
    return [f"stale_and_current matches the reference at {len(ANSWER_PROBES)} settings, three seeds among them.",
            f"Interval 5, course seed: stale share {stale:.4f}, up-to-date answers {current:.4f} (interval 4:"
            " 0.0937 / 0.8208; interval 6: 0.1278 / 0.7708). Periods 11 and 12 are served from the index of"
            " period 10, which is never rebuilt again that year."]


EXERCISES = ExerciseSet("10-indexing-and-updating", "Indexing and updating", [
    Exercise("q1", "predict", "a volatile source", ("PREDICTED_STALE",), check_volatile),
    Exercise("q2", "build", "the refresh year", ("refresh_year",), check_refresh_year),
    Exercise("q3", "measure", "an interval that does not divide the year", ("stale_and_current",),
             check_stale_and_current),
])
check = EXERCISES.check
