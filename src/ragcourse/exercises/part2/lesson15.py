"""Exercises of lesson 15: freshness with one chunk, three tasks scored apart, the smallest training set for format.

q1 (predict) asks what one retrieved chunk instead of three does to retrieval's freshness;
q2 (build) has the student score one setup on the three tasks separately from one reply per
question (the model's call counter is part of the check) and reproduce the lesson's four
setups, among them the task retrieval does not win: format, 0.0000 against 1.0000; q3
(measure) finds the smallest training set whose format score is complete.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping

from ...retrieval.search import EmbeddingIndex
from ...world.corpus import World
from ...world.finetuning import ValidityStamps, stamped_chunks, training_examples, validity_stamps
from ...world.llm import CallCounter, FineTunedModel
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                        first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, rag_model, rag_world

K = 3
TUNED = 48
TEMPERATURE = 0.6
TASKS = ("freshness", "format", "domain", "tokens")
SETUPS = {"no-retrieval baseline": (False, 0), "retrieval only": (True, 0), "fine-tuning only": (False, TUNED),
          "both together": (True, TUNED)}
SEEDS = (COURSE_SEED, *OTHER_SEEDS)


@lru_cache(maxsize=8)
def tuning_world(seed: int) -> tuple[World, ValidityStamps, tuple[str, ...]]:
    """The world of lesson 15 at ``seed``: world, validity stamps, the 48 training examples."""
    current = rag_world(seed)
    return current, validity_stamps(seed, current.edition), tuple(training_examples(seed, current.documents, TUNED))


@lru_cache(maxsize=16)
def retrieved_texts(seed: int, k: int = K) -> tuple[tuple[str, ...], ...]:
    """Each question's top k stamped chunk texts (embedding search, projection seed ``seed``)."""
    current, stamps, _ = tuning_world(seed)
    chunks = stamped_chunks(current.documents, current.edition, stamps.current)
    index = EmbeddingIndex(rag_model(seed), [c.text for c in chunks])
    return tuple(tuple(chunks[i].text for i in index.rank(q.text)[:k]) for q in current.queries)


def tuned_model(seed: int, tuned: int, counter: CallCounter | None = None) -> FineTunedModel:
    """Lesson 15's model at ``seed`` fine-tuned on the first ``tuned`` examples."""
    current, stamps, training = tuning_world(seed)
    return FineTunedModel(current.edition, seed, list(training[:tuned]), stamps.trained, temperature=TEMPERATURE,
                          counter=counter)


def reference_scores(model: FineTunedModel, queries, contexts, current: Mapping[str, str],
                     stamps_against: Mapping[str, str] | None = None) -> tuple[float, float, float, int]:
    """(freshness, format, domain language, prompt tokens) of one setup, one reply per question."""
    against = current if stamps_against is None else stamps_against
    fresh = formatted = understood = tokens = 0
    for query, context in zip(queries, contexts):
        reply = model.solve(query.text, list(context))
        fresh += reply.stamp == against[query.concept]
        formatted += reply.format_ok
        understood += reply.concept == query.concept
        tokens += reply.input_tokens
    n = len(queries)
    return fresh / n, formatted / n, understood / n, tokens


@lru_cache(maxsize=64)
def setup_scores(seed: int, use_retrieval: bool, tuned: int, k: int = K) -> tuple[tuple[float, float, float, int], int]:
    """The reference scores of one setup at ``seed`` and the model calls they took."""
    current, stamps, _ = tuning_world(seed)
    counter = CallCounter()
    contexts = retrieved_texts(seed, k) if use_retrieval else [()] * len(current.queries)
    scores = reference_scores(tuned_model(seed, tuned, counter), current.queries, contexts, stamps.current)
    return scores, counter.calls


# ---------------------------------------------------------------- q1: predict freshness with one chunk

ONE_CHUNK_OPTIONS = {"a": "it falls: one chunk is less evidence than three",
                     "b": "it stays where it was",
                     "c": "it rises to 1.0000: the wrong chunks drop out",
                     "d": "it falls to the fine-tuned model's 0.6750"}


def check_one_chunk(prediction: Any) -> list[str]:
    """PREDICTED_FRESHNESS: retrieval-only freshness with K = 1 against K = 3 (course seed)."""
    (fresh_one, _, domain_one, tokens_one), _ = setup_scores(COURSE_SEED, True, 0, 1)
    (fresh_three, _, domain_three, tokens_three), _ = setup_scores(COURSE_SEED, True, 0, K)
    truth = ("b" if fresh_one == fresh_three else "c" if fresh_one == 1.0 else
             "d" if abs(fresh_one - 0.675) < 1e-9 else "a" if fresh_one < fresh_three else "c")
    return check_choice(
        prediction, "PREDICTED_FRESHNESS", ONE_CHUNK_OPTIONS, truth,
        f"retrieval-only freshness {fresh_one:.4f} with one chunk, {fresh_three:.4f} with three; domain language"
        f" {domain_one:.4f} against {domain_three:.4f}; {tokens_one} prompt tokens against {tokens_three}",
        ["The model quotes the stamp of the first retrieved chunk and never looks at the others for it, so",
         "cutting the context to that first chunk leaves every quoted stamp as it was. What the other chunks",
         "did carry was evidence for the procedure's name: with one chunk the domain-language column drops",
         "and the token bill shrinks. One change to the retrieval, three different answers in three columns,",
         "which is why the lesson never adds them up."])


# ---------------------------------------------------------------- q2: build the three task scores

def score_cases() -> list[tuple[str, int, bool, int, int]]:
    """(label, seed, use retrieval, examples, k): the untrained setups first (their calls show), then the rest."""
    cases = []
    for seed in SEEDS:
        for name, (use_retrieval, tuned) in SETUPS.items():
            cases.append((name, seed, use_retrieval, tuned, K))
    for seed in SEEDS:
        cases.append(("fine-tuned on the first 6 examples, with retrieval of 1 chunk", seed, True, 6, 1))
        cases.append(("fine-tuned on the first 12 examples, no retrieval", seed, False, 12, K))
    return sorted(cases, key=lambda case: case[3] > 0)


def score_hints(seed: int, use_retrieval: bool, tuned: int, k: int) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong scorings and what to say about each."""
    current, stamps, _ = tuning_world(seed)
    contexts = retrieved_texts(seed, k) if use_retrieval else [()] * len(current.queries)
    scores, _ = setup_scores(seed, use_retrieval, tuned, k)
    snapshot = reference_scores(tuned_model(seed, tuned), current.queries, contexts, stamps.current, stamps.trained)
    n = len(current.queries)
    return [
        (lambda: snapshot, "a stamp is fresh when it is the stamp in force now (current_stamps), not the one the"
                           " training data remembers"),
        (lambda: (scores[0] * n, scores[1] * n, scores[2] * n, scores[3]),
         "return shares of the questions (a count divided by the number of questions), not counts"),
        (lambda: (*scores[:3], scores[3] / n), "return the prompt tokens of all the calls added up, not their mean"),
    ]


def check_score_setup(answer: Any) -> list[str]:
    """score_setup scores the three tasks as the reference with one solve per question; reproduces the four setups."""
    score = require_function(answer, "score_setup")
    cases = score_cases()
    for label, seed, use_retrieval, tuned, k in cases:
        current, stamps, _ = tuning_world(seed)
        counter = CallCounter()
        model = tuned_model(seed, tuned, counter)
        contexts = [list(c) for c in retrieved_texts(seed, k)] if use_retrieval else [[] for _ in current.queries]
        tried = (f"score_setup(<the {label} model at seed {seed}, with a fresh call counter>, <its 40 questions>,"
                 f" <{'their top ' + str(k) + ' chunks' if use_retrieval else 'no chunks'}>, <the stamps in force>)")
        got = call(score, "score_setup", (model, list(current.queries), contexts, dict(stamps.current)), tried)
        if not isinstance(got, (tuple, list)) or len(got) != 4:
            raise Mismatch(tried, "four numbers (freshness, format, domain language, tokens)", shown(got),
                           "return `freshness, format_rate, domain_rate, tokens`")
        values = tuple(as_number(value, tried, "a number") for value in got)
        expected, expected_calls = setup_scores(seed, use_retrieval, tuned, k)
        if counter.calls != expected_calls:
            raise Mismatch(tried + " (the model's call counter)", f"{expected_calls} calls", f"{counter.calls} calls",
                           "ask the model once per question and read all three tasks off that one reply: a method"
                           " that asks again for each task costs the calls of three pipelines"
                           if counter.calls > expected_calls else
                           "answer every question with the model you are given: model.solve(query.text, context)")
        for position, name in enumerate(TASKS):
            if abs(values[position] - expected[position]) > 1e-9:
                raise Mismatch(f"{tried} ({name}, number {position + 1})",
                               " / ".join(f"{v:.4f}" if i < 3 else str(v) for i, v in enumerate(expected)),
                               " / ".join(f"{v:.4f}" if i < 3 else f"{v:g}" for i, v in enumerate(values)),
                               first_hint(values, score_hints(seed, use_retrieval, tuned, k),
                                          "per question: fresh when the quoted stamp is the one in force for the"
                                          " question's concept, format when the reply says format_ok, domain when"
                                          " it names the question's concept; tokens are the input tokens added up"))
    rows = {}
    current, stamps, _ = tuning_world(COURSE_SEED)
    for name, (use_retrieval, tuned) in SETUPS.items():
        contexts = [list(c) for c in retrieved_texts(COURSE_SEED)] if use_retrieval else [[] for _ in current.queries]
        rows[name] = tuple(score(tuned_model(COURSE_SEED, tuned), list(current.queries), contexts,
                                 dict(stamps.current)))
        expected = setup_scores(COURSE_SEED, use_retrieval, tuned)[0]
        if any(abs(a - b) > 1e-9 for a, b in zip(rows[name], expected)):
            raise Mismatch(f"score_setup on the lesson's {name} setup at the course seed", shown(expected),
                           shown(rows[name]), "see the per-case check above")
    retrieval, tuning = rows["retrieval only"], rows["fine-tuning only"]
    return [f"score_setup agrees with the reference on {len(cases)} setups (three seeds, smaller training sets and one"
            " chunk among them), asking the model no more often than the lesson does,",
            f"and reproduces lesson 15 at the course seed: freshness {retrieval[0]:.4f} with retrieval only against"
            f" {tuning[0]:.4f} fine-tuned; format {retrieval[1]:.4f} against {tuning[1]:.4f}, the task retrieval"
            " does not win; domain language"
            f" {retrieval[2]:.4f} against {tuning[2]:.4f}."]


# ---------------------------------------------------------------- q3: measure the smallest training set for format

@lru_cache(maxsize=8)
def format_sweep(seed: int) -> tuple[float, ...]:
    """Format score without retrieval for the first n examples, n = 0 ... 48."""
    return tuple(setup_scores(seed, False, n)[0][1] for n in range(TUNED + 1))


def smallest_complete(seed: int) -> int | None:
    """The smallest n whose format score is 1.0 (None if none up to 48)."""
    return next((n for n, rate in enumerate(format_sweep(seed)) if rate == 1.0), None)


FORMAT_PROBES = ((COURSE_SEED + 1, True), (7, True), (1234, True), (COURSE_SEED, False))


def check_smallest_training(answer: Any) -> list[str]:
    """smallest_training(seed) equals the reference at other seeds, then at the course seed."""
    measure = require_function(answer, "smallest_training")
    for seed, reveal in FORMAT_PROBES:
        tried = f"smallest_training({seed})"
        got = call(measure, "smallest_training", (seed,), tried)
        expected = smallest_complete(seed)
        value = as_number(got, tried, "a number of examples")
        _, _, training = tuning_world(seed)
        concepts = next((n for n in range(TUNED + 1) if len(set(training[:n])) == 20), None)
        hints = [(lambda: expected - 1, "return the number of examples, not the position of the last one"),
                 (lambda: next(n for n in (0, 6, 12, 24, 48) if format_sweep(seed)[n] == 1.0),
                  "try every size from 0 to 48, not only the sizes of the lesson's sweep"),
                 (lambda: concepts, "that is where all twenty procedures are covered (domain language); format needs"
                                    " less"),
                 (lambda: smallest_complete(COURSE_SEED),
                  "your function measures the course seed's world: build everything from the seed it is given")]
        expect_number(value, expected, tried, first_hint(value, hints,
                      "for n = 0, 1, 2, ... fine-tune on the first n of the seed's 48 examples, score format without"
                      " retrieval, and return the first n that reaches 1.0"), tolerance=0, reveal=reveal)
    n = smallest_complete(COURSE_SEED)
    _, _, training = tuning_world(COURSE_SEED)
    current = tuning_world(COURSE_SEED)[0]
    classes = len({current.edition.concept(key).label for key in training[:n]})
    return [f"smallest_training matches the reference at {len(FORMAT_PROBES)} seeds.",
            f"At the course seed {n} examples complete the format (they cover {classes} classes and"
            f" {len(set(training[:n]))} of the 20 procedures); {n - 1} do not. Format needs one example per class,"
            " not one per procedure."]


EXERCISES = ExerciseSet("15-retrieval-and-fine-tuning", "Measuring retrieval and fine-tuning side by side", [
    Exercise("q1", "predict", "freshness with one chunk", ("PREDICTED_FRESHNESS",), check_one_chunk),
    Exercise("q2", "build", "three tasks, scored apart", ("score_setup",), check_score_setup),
    Exercise("q3", "measure", "the smallest training set for format", ("smallest_training",),
             check_smallest_training),
])
check = EXERCISES.check
