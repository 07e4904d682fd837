"""The checks of exercises 01-06: the blank is "not done yet", the solution passes, realistic mistakes fail.

Solutions and blanks are taken from the notebooks themselves: the code cells of each master
(solutions) and of each committed student version (blanks, as a student first sees them) are
run here in-process, check cells left out. Every "build it" check must reject at least two
realistic wrong answers (the MUTATIONS table), each with a message that says what it tried,
what it expected, what came back and a hint, and never shows the master's solution code.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ragcourse.exercises.framework import EXERCISE_SETS, FAILED, NOT_DONE, PASSED, is_lab_set, load_set
from ragcourse.retrieval.fusion import reciprocal_rank_fusion
from ragcourse.retrieval.index import rank_candidates
from ragcourse.world.embedding import cosine, dot, length
from ragcourse.world.text import tokenize
from support.exercises import answers, assert_every_build_rejects_two, assert_mistake_rejected, short
from support.marks import by_exercise_set

SETS = list(EXERCISE_SETS)
FIRST_SIX = [name for name in SETS if not is_lab_set(name) and int(name[:2]) <= 6]  # the sets whose mutations this file lists
QUESTIONS = [(name, q.key) for name in SETS for q in load_set(name).questions]
IDS = [f"{short(n)}-{k}" for n, k in QUESTIONS]


@pytest.mark.parametrize("name, key", by_exercise_set(QUESTIONS), ids=IDS)
def test_the_blank_is_not_done_yet(name, key):
    verdict = load_set(name).verdict(key, *answers("students", name, key))
    assert verdict.status == NOT_DONE and verdict.points == 0, verdict.text()
    assert "Traceback" not in verdict.text()


@pytest.mark.parametrize("name, key", by_exercise_set(QUESTIONS), ids=IDS)
def test_the_solution_passes(name, key):
    verdict = load_set(name).verdict(key, *answers("masters", name, key))
    assert verdict.status == PASSED and verdict.points == verdict.max_points > 0, verdict.text()


@pytest.mark.parametrize("placeholder", [..., None], ids=["ellipsis", "none"])
@pytest.mark.parametrize("name, key", by_exercise_set(QUESTIONS), ids=IDS)
def test_placeholders_and_not_implemented_are_not_done(name, key, placeholder):
    def unfinished(*args):
        raise NotImplementedError

    exercise_set = load_set(name)
    for answer in (placeholder, unfinished):
        verdict = exercise_set.verdict(key, answer)
        if exercise_set.question(key).kind != "predict" or answer is placeholder:
            assert verdict.status == NOT_DONE, verdict.text()


# ---------------------------------------------------------------- wrong answers a student might write

def keyword_counts_query_repeats(query_text, document_text):
    document_tokens = set(tokenize(document_text))
    return sum(token in document_tokens for token in tokenize(query_text))


def keyword_counts_document_occurrences(query_text, document_text):
    document_tokens = tokenize(document_text)
    return sum(document_tokens.count(token) for token in set(tokenize(query_text)))


def keyword_splits_on_spaces(query_text, document_text):
    return len(set(query_text.lower().split()) & set(document_text.lower().split()))


def cosine_is_the_dot_product(u, v):
    return sum(a * b for a, b in zip(u, v))


def cosine_divides_by_squares(u, v):
    return dot(u, v) / (dot(u, u) * dot(v, v))


def cosine_drops_the_sign(u, v):
    return abs(dot(u, v) / (length(u) * length(v)))


def cosine_divides_by_one_length(u, v):
    return dot(u, v) / length(u)


def sets_keep_order(rankings, k):
    return len({tuple(r[:k]) for r in rankings})


def sets_one_too_deep(rankings, k):
    return len({frozenset(r[:k + 1]) for r in rankings})


def sets_of_first_results(rankings, k):
    return len({r[0] for r in rankings})


def divergence_keeps_order(rankings_a, rankings_b, depth):
    return sum(list(a[:depth]) != list(b[:depth]) for a, b in zip(rankings_a, rankings_b))


def divergence_one_too_deep(rankings_a, rankings_b, depth):
    return sum(set(a[:depth + 1]) != set(b[:depth + 1]) for a, b in zip(rankings_a, rankings_b))


def divergence_counts_agreements(rankings_a, rankings_b, depth):
    return sum(set(a[:depth]) == set(b[:depth]) for a, b in zip(rankings_a, rankings_b))


def _bucket_search(index, query_vector, probes, k, *, extra=0, representatives=True, ties_high=False,
                   farthest=False):
    scores = [cosine(query_vector, index.vectors[r]) for r in index.representatives]
    order = sorted(range(len(scores)), key=lambda b: scores[b] if farthest else -scores[b])
    candidates = [m for b in order[:probes + extra] for m in index.members[b]]
    key = ((lambda i: (-cosine(query_vector, index.vectors[i]), -i)) if ties_high
           else (lambda i: -cosine(query_vector, index.vectors[i])))
    ranked = sorted(candidates, key=key)
    return ranked[:k], (len(index.representatives) if representatives else 0) + len(candidates)


def _filter(index, query_vector, probes, k, allowed, *, after=False, count_before=False, extra=0):
    opened = index.candidates(query_vector, probes + extra)
    if after:
        return [i for i in rank_candidates(query_vector, index.vectors, opened)[:k] if i in allowed], len(opened)
    kept = [i for i in opened if i in allowed]
    return rank_candidates(query_vector, index.vectors, kept)[:k], len(opened) if count_before else len(kept)


def _rrf(rankings, constant, *, start=0, ties_high=False, ascending=False, positions=False):
    n = len(rankings[0])
    fused = [0.0] * n
    for ranking in rankings:
        for position, item in enumerate(ranking, start=start):
            fused[item] += position if positions else 1.0 / (constant + position)
    if positions:
        return sorted(range(n), key=lambda i: (fused[i], i))
    sign = 1 if ascending else -1
    return sorted(range(n), key=lambda i: (sign * fused[i], -i if ties_high else i))


MUTATIONS = [  # (exercise set, question, the mistake, a wrong answer that makes it, what its hint must say)
    ("01-what-is-an-embedding", "q2", "repeated query tokens counted twice", keyword_counts_query_repeats,
     "counted twice"),
    ("01-what-is-an-embedding", "q2", "document occurrences counted", keyword_counts_document_occurrences,
     "once or five times"),
    ("01-what-is-an-embedding", "q2", "split on spaces instead of tokenize", keyword_splits_on_spaces,
     "split with tokenize"),
    ("01-what-is-an-embedding", "q3", "plain dot product", cosine_is_the_dot_product, "plain dot product"),
    ("01-what-is-an-embedding", "q3", "divided by squared lengths", cosine_divides_by_squares, "not by their squares"),
    ("01-what-is-an-embedding", "q3", "sign dropped", cosine_drops_the_sign, "keep the sign"),
    ("01-what-is-an-embedding", "q3", "divided by one length only", cosine_divides_by_one_length, "not only the first"),
    ("02-embedding-models", "q2", "order inside a set counted", sets_keep_order, "order does not count"),
    ("02-embedding-models", "q2", "off by one: k + 1 documents", sets_one_too_deep, "no more"),
    ("02-embedding-models", "q2", "first results only", sets_of_first_results, "not only the first"),
    ("03-similarity-metrics", "q2", "order inside the top three counted", divergence_keeps_order, "as sets"),
    ("03-similarity-metrics", "q2", "off by one: depth + 1", divergence_one_too_deep, "no more"),
    ("03-similarity-metrics", "q2", "agreements counted", divergence_counts_agreements, "agree"),
    ("04-vector-databases", "q2", "off by one: a probe too many", lambda *a: _bucket_search(*a, extra=1),
     "not one more"),
    ("04-vector-databases", "q2", "representatives not counted", lambda *a: _bucket_search(*a, representatives=False),
     "every representative"),
    ("04-vector-databases", "q2", "ties broken the wrong way", lambda *a: _bucket_search(*a, ties_high=True),
     "on equal scores"),
    ("04-vector-databases", "q2", "farthest buckets opened", lambda *a: _bucket_search(*a, farthest=True),
     "most similar"),
    ("05-metadata-filtering", "q2", "filter applied after the search", lambda *a: _filter(*a, after=True),
     "filters after the search"),
    ("05-metadata-filtering", "q2", "candidates counted before the filter", lambda *a: _filter(*a, count_before=True),
     "pass the filter"),
    ("05-metadata-filtering", "q2", "off by one: a probe too many", lambda *a: _filter(*a, extra=1), "not one more"),
    ("06-hybrid-search", "q2", "rank starting at 1", lambda *a: _rrf(*a, start=1), "count from 0"),
    ("06-hybrid-search", "q2", "ties broken toward the higher item", lambda *a: _rrf(*a, ties_high=True),
     "lower item number"),
    ("06-hybrid-search", "q2", "positions summed instead of reciprocals", lambda *a: _rrf(*a, positions=True),
     "not the positions"),
    ("06-hybrid-search", "q2", "lowest fused score first", lambda *a: _rrf(*a, ascending=True), "highest fused"),
]


@pytest.mark.parametrize("name, key, mistake, wrong, hint", MUTATIONS,
                         ids=[f"{n[:2]}-{k}-{m.replace(' ', '_')}" for n, k, m, _, _ in MUTATIONS])
def test_a_realistic_mistake_is_rejected_with_a_useful_message(name, key, mistake, wrong, hint):
    assert_mistake_rejected(name, key, mistake, wrong, hint)


def test_every_build_question_rejects_at_least_two_mistakes():
    assert_every_build_rejects_two(FIRST_SIX, MUTATIONS)


# ---------------------------------------------------------------- other correct ways pass too

def keyword_with_counter(query_text, document_text):
    return len(Counter(tokenize(query_text)).keys() & Counter(tokenize(document_text)).keys())


def cosine_with_numpy(u, v):
    u, v = np.asarray(u), np.asarray(v)
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


def bucket_search_with_rank_helpers(index, query_vector, probes, k):
    candidates = index.candidates(query_vector, probes)
    return rank_candidates(query_vector, index.vectors, candidates)[:k], index.n_buckets + len(candidates)


def rrf_with_package(rankings, constant):
    return reciprocal_rank_fusion(rankings, constant)


@pytest.mark.parametrize("name, key, answer", [
    ("01-what-is-an-embedding", "q2", keyword_with_counter),
    ("01-what-is-an-embedding", "q3", cosine_with_numpy),
    ("02-embedding-models", "q2", lambda rankings, k: len({tuple(sorted(r[:k])) for r in rankings})),
    ("03-similarity-metrics", "q2", lambda a, b, d: sum(sorted(x[:d]) != sorted(y[:d]) for x, y in zip(a, b))),
    ("04-vector-databases", "q2", bucket_search_with_rank_helpers),
    ("06-hybrid-search", "q2", rrf_with_package),
], ids=["counter", "numpy-cosine", "sorted-tuples", "sorted-lists", "package-helpers", "package-rrf"])
def test_other_correct_answers_pass(name, key, answer):
    verdict = load_set(name).verdict(key, answer)
    assert verdict.passed, verdict.text()


# ---------------------------------------------------------------- measure it: typed-in numbers fail

@pytest.mark.parametrize("name, key", [(n, q.key) for n in FIRST_SIX for q in load_set(n).questions
                                       if q.kind == "measure"])
def test_a_number_typed_in_fails(name, key):
    """A function returning the course seed's answer whatever it is asked fails at the other seeds."""
    solution = answers("masters", name, key)[0]
    probes = {"01-what-is-an-embedding": (20260218, 10), "02-embedding-models": (20260218, 5),
              "03-similarity-metrics": (20260218, 8), "04-vector-databases": (20260218, 20, 3),
              "05-metadata-filtering": (20260218, 1, 4), "06-hybrid-search": (20260218, "document", 2)}[name]
    answer = solution(*probes)
    verdict = load_set(name).verdict(key, lambda *args: answer)
    assert verdict.status == FAILED, verdict.text()
    assert "expected:" in verdict.text() and "20260218" not in verdict.text().split("tried:")[1].split("\n")[0]


def test_a_measure_mistake_gets_its_hint():
    from ragcourse.exercises.part1 import lesson01

    def precision_not_recall(seed, k):
        return lesson01.embedding_scores(seed, k).precision

    text = load_set("01-what-is-an-embedding").verdict("q4", precision_not_recall).text()
    assert "that is precision" in text and "not shown here" not in text


def test_the_asked_number_is_never_revealed():
    """When only the asked setting is wrong, the message does not print the reference value."""
    from ragcourse.exercises.part1 import lesson04

    def wrong_only_when_asked(seed, buckets, probes):
        recall, comparisons = lesson04.setting_measures(seed, buckets, probes)
        return (recall + 0.01, comparisons) if (seed, buckets, probes) == (20260218, 20, 3) else (recall, comparisons)

    text = load_set("04-vector-databases").verdict("q3", wrong_only_when_asked).text()
    assert "not shown here" in text and f"{lesson04.setting_measures(20260218, 20, 3)[0]:.6f}" not in text


# ---------------------------------------------------------------- predictions

@pytest.mark.parametrize("name", by_exercise_set(SETS))
def test_a_prediction_shows_the_measurement_once_answered(name):
    exercise_set = load_set(name)
    question = next(q for q in exercise_set.questions if q.kind == "predict")
    right = answers("masters", name, question.key)[0]
    wrong = ("a" if right != "a" else "c") if isinstance(right, str) else right + 10
    passed, failed = exercise_set.verdict(question.key, right), exercise_set.verdict(question.key, wrong)
    assert passed.passed and failed.status == FAILED
    assert "measured:" in passed.text() and "measured:" in failed.text()
    assert len(failed.lines) >= 3, "the explanation is shown after a wrong answer too"
    invalid = exercise_set.verdict(question.key, "z" if isinstance(right, str) else "lots")
    assert invalid.status == FAILED and "measured:" not in invalid.text(), "no answer given away for a typo"


def test_a_check_that_loops_is_stopped_while_grading():
    exercise_set = load_set("06-hybrid-search")

    def loops_forever(rankings, constant):
        while True:
            pass

    verdicts = exercise_set.grade({"PREDICTED_TARGET": "b", "rrf": loops_forever, "hybrid_top1": ...}, seconds=1)
    by_key = {v.question: v for v in verdicts}
    assert by_key["q1"].passed and by_key["q3"].status == NOT_DONE
    assert by_key["q2"].status == FAILED and "did not finish within 1 s" in by_key["q2"].text()


def test_a_missing_name_is_not_done():
    verdicts = load_set("03-similarity-metrics").grade({})
    assert [v.status for v in verdicts] == [NOT_DONE] * 3
    assert "defines no PREDICTED_CHANGES" in verdicts[0].text()


def test_expect_pair_passes_a_pair_and_names_what_a_wrong_shape_should_have_been():
    from ragcourse.exercises.framework import Mismatch, expect_pair

    assert expect_pair((0.5, 12), "f(1)", "recall, calls", "return two numbers") == (0.5, 12)
    for wrong in (0.5, (0.5, 12, 3), "ab"):
        with pytest.raises(Mismatch) as raised:
            expect_pair(wrong, "f(1)", "recall, calls", "return two numbers: `return recall, calls`")
        text = "\n".join(raised.value.lines)
        assert "a pair (recall, calls)" in text and "return recall, calls" in text and "f(1)" in text
