"""The package's paired comparison (issue 22, item 3): hand-worked cases, its promises, and two references.

Scores that are all 0 or 1 go to McNemar's test and Tango's interval (``paired_proportions``, checked
against published examples in test_paired_proportions.py); the randomisation tests here use other scores
(halves, reciprocal ranks, fractions). A family's intervals are read at the level matching Holm's
step-down, and the last section checks that they agree with its verdicts over many realistic families.
The references: scipy (``stats.bootstrap`` draws the same redraws from the same seed, so its percentile
interval must equal ours; ``stats.permutation_test`` enumerates sign flips exactly on small sets) and
ranx (``ranx.compare(..., stat_test="fisher")``, the randomisation test the labs can call directly).
ranx compiles with numba on first use (about 50 s cold), so its runs share one module-scoped fixture.
"""
from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
import pytest
from scipy import stats

from ragcourse import COURSE_SEED
from ragcourse.retrieval.metrics import ndcg_at_k, recall_at_k, reciprocal_rank
from ragcourse.retrieval.paired_proportions import discordant_counts, mcnemar_p, tango_interval
from ragcourse.retrieval.significance import (
    EXACT_RANDOMISATION_LIMIT,
    Family,
    NO_DIFFERENCE,
    PairedComparison,
    compare,
    compare_to_baseline,
    exact_mean,
    holm_adjusted,
    level_text,
    p_text,
    paired_bootstrap,
    paired_randomisation,
    signed,
)

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast from uint64 to int64")  # inside ranx's numba code

RANX_PERMUTATIONS = 20_000


def hits(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    return (rng.random(n) < rate).astype(float)


def brute_force_p(differences: list[float], tolerance: float = 0.0) -> float:
    """Share of all 2**n sign patterns whose |sum| is at least the observed |sum| (less ``tolerance``)."""
    observed = abs(math.fsum(differences))
    patterns = list(product((1, -1), repeat=len(differences)))
    extreme = sum(abs(math.fsum(s * d for s, d in zip(signs, differences))) >= observed - tolerance
                  for signs in patterns)
    return extreme / len(patterns)


# ---------------------------------------------------------------- small cases worked by hand

def test_exact_randomisation_p_for_tiny_vectors_worked_by_hand():
    # three equal differences: only "all +" and "all -" reach |sum| = 3 -> 2 of 8 patterns
    assert paired_randomisation([1, 1, 1], [0, 0, 0]) == 0.25
    # (1, 1, 1, -1): |sum| = 2; the sum of four +-1 is 0 for C(4, 2) = 6 of 16 patterns -> 10 / 16
    assert paired_randomisation([1, 1, 1, 0], [0, 0, 0, 1]) == 0.625
    # in quarters (2, -1, 4, 3, 1, 0): sum 9 of total 11; the 0 is dropped; flipping a subset F gives
    # 9 - 2 sum(F); |.| >= 9 when sum(F) <= 0 ({}, {-1}, {-1, 1}) or sum(F) >= 9 ({2, 4, 3}, {2, 4, 3, 1},
    # all five): 6 of 32
    assert paired_randomisation([0.5, -0.25, 1.0, 0.75, 0.0, 0.25], [0.0] * 6) == 6 / 32


def test_recall_in_thirds_is_handled_as_exact_fractions():
    """2/3 - 1/3 and 1 - 2/3 are not the same float; read as thirds, all three differences are 1/3."""
    a, b = [1 / 3, 2 / 3, 1.0], [0.0, 1 / 3, 2 / 3]
    assert len({x - y for x, y in zip(a, b)}) > 1       # the floats alone would not tie
    assert paired_randomisation(a, b) == 0.25
    assert "exact over all 8 sign patterns" in compare(a, b).method
    assert compare(a, b).p_value == 0.25


def test_differences_that_tie_only_up_to_float_error_still_count_as_ties():
    """0.2 + 0.4 - 0.6 is not 0 in floats; with an irrational score present the exact-fraction path is off."""
    differences = [0.2, 0.4, -0.6, math.pi / 10]
    expected = brute_force_p(differences, tolerance=1e-9)
    assert (expected, brute_force_p(differences)) == (0.875, 0.75)   # a strict float comparison loses ties
    assert paired_randomisation(differences, [0.0] * 4) == expected


def test_bootstrap_of_two_questions_worked_by_hand():
    """Differences (1, 0): a redraw's mean is 0, 1/2 or 1 with chance 1/4, 1/2, 1/4."""
    result = paired_bootstrap([1, 0], [0, 0], resamples=20_000)
    assert (result.low, result.high, result.difference) == (0.0, 1.0, 0.5)
    assert abs(result.p_value - 0.5) < 0.02          # shifted means -1/2 and +1/2 are as far as 1/2


def test_means_are_exact_means_of_the_floats_given():
    values = [0.1] * 10
    assert sum(values) / 10 != 0.1                       # summed in order, the floats drift
    assert exact_mean(values) == 0.1
    result = compare(values, [0.0] * 10)
    assert (result.mean_a, result.mean_b, result.difference) == (0.1, 0.0, 0.1)


def test_holm_adjustment_worked_by_hand():
    # sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> kept at 0.06
    assert holm_adjusted([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    assert holm_adjusted([0.5, 0.9]) == [1.0, 1.0]
    assert holm_adjusted([]) == []


# ---------------------------------------------------------------- what a comparison promises

def test_identical_systems_give_zero_difference_p_one_and_no_difference():
    scores = hits(np.random.default_rng(1), 70, 0.6)
    result = compare(scores, scores, ("dense", "dense again"))
    assert (result.difference, result.p_value, result.verdict()) == (0.0, 1.0, NO_DIFFERENCE)
    assert -result.low == result.high == tango_interval(0, 0, 70)[1] > 0.05     # 70 questions cannot rule out 0.05
    ranks = 1 / np.random.default_rng(1).integers(1, 11, 70)
    same = compare(ranks, ranks)
    assert (same.difference, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert paired_bootstrap(scores, scores).p_value == 1.0


def test_large_consistent_difference_is_detected_in_the_right_direction():
    rng = np.random.default_rng(2)
    weaker = rng.random(50) * 0.5
    stronger = weaker + 0.1 + rng.random(50) * 0.05
    result = compare(stronger, weaker, ("dense", "bm25"))
    assert result.p_value == 1 / (20_000 + 1)          # no random sign pattern is as extreme
    assert 0.1 < result.low < result.difference < result.high < 0.15
    assert result.verdict() == "dense beats bm25"
    assert compare(weaker, stronger, ("bm25", "dense")).verdict() == "dense beats bm25"
    assert compare(weaker, stronger, ("bm25", "dense")).summary_line().endswith("p < 0.001 (n = 50): dense beats bm25")


@pytest.mark.parametrize("kind", ["hits", "continuous", "few differ"])
def test_swapping_the_systems_negates_the_interval_and_keeps_p(kind):
    rng = np.random.default_rng(3)
    if kind == "hits":
        a, b = hits(rng, 70, 0.7), hits(rng, 70, 0.6)
    elif kind == "continuous":
        a, b = rng.random(70), rng.random(70)
    else:
        a = hits(rng, 70, 0.7)
        b = a.copy()
        b[:9] = 1 - b[:9]
    forward, backward = compare(a, b, ("a", "b")), compare(b, a, ("b", "a"))
    assert (backward.low, backward.high, backward.difference) == (-forward.high, -forward.low, -forward.difference)
    assert backward.p_value == forward.p_value
    assert paired_bootstrap(b, a).p_value == paired_bootstrap(a, b).p_value


def test_same_seed_same_result_other_seed_other_draws():
    rng = np.random.default_rng(4)
    a, b = rng.random(70), rng.random(70)
    assert compare(a, b, seed=11) == compare(list(a), tuple(b), seed=11)
    assert paired_randomisation(a, b, seed=11) == paired_randomisation(a, b, seed=11)
    other = compare(a, b, seed=12)
    assert (other.low, other.high, other.p_value) != (compare(a, b, seed=11).low, compare(a, b, seed=11).high,
                                                      compare(a, b, seed=11).p_value)


def test_printed_line_is_pinned_for_the_course_seed():
    """Bit-for-bit: the same numbers on any machine (they change only if numpy's PCG64 stream does).

    Hit@1 goes to McNemar and Tango; the same hits halved (not 0/1) go to the randomisation test, whose
    sign patterns depend only on the seed and the number of questions.
    """
    rng = np.random.default_rng(COURSE_SEED)
    dense, fused = hits(rng, 70, 0.71), hits(rng, 70, 0.77)
    result = compare(dense, fused, ("dense", "fusion"))
    assert (result.mean_a, result.mean_b, result.difference) == (56 / 70, 51 / 70, 5 / 70)
    b, c, n = discordant_counts(dense, fused)
    assert (b, c, n) == (13, 8, 70) and result.p_value == mcnemar_p(13, 8)
    assert (result.low, result.high) == tango_interval(13, 8, 70) and "McNemar" in result.method
    assert str(result) == "dense - fusion: +0.071 [\u22120.060, +0.203], p = 0.275 (n = 70): " + NO_DIFFERENCE
    halved = compare(dense / 2, fused / 2, ("dense", "fusion"))
    assert (halved.low, halved.high, halved.p_value) == (-1 / 33, 1 / 10, 7682 / 20_001)
    assert "sign-flip randomisation" in halved.method


def test_verdict_follows_p_at_alpha_and_the_sign():
    base = dict(name_a="dense", name_b="bm25", n=70, mean_a=0.5, mean_b=0.45, low=0.01, high=0.09, method="m")
    assert PairedComparison(difference=0.05, p_value=0.05, **base).verdict() == "dense beats bm25"
    assert PairedComparison(difference=0.05, p_value=0.05, **base).verdict(alpha=0.01) == NO_DIFFERENCE
    assert PairedComparison(difference=-0.05, p_value=0.001, **base).verdict() == "bm25 beats dense"
    assert PairedComparison(difference=0.05, p_value=0.2, **base).verdict() == NO_DIFFERENCE
    with pytest.raises(ValueError, match="alpha"):
        PairedComparison(difference=0.05, p_value=0.2, **base).verdict(alpha=2)


def test_summary_line_reads_as_the_course_prints_it():
    result = PairedComparison("dense", "bm25", 70, 0.74, 0.70, 0.04, -0.02, 0.1, 0.2104, "m")
    assert str(result) == "dense - bm25: +0.040 [\u22120.020, +0.100], p = 0.210 (n = 70): " + NO_DIFFERENCE
    assert (signed(-0.0004), signed(0.0), signed(-0.02), signed(0.0206)) == ("0.000", "0.000", "\u22120.020", "+0.021")
    assert (p_text(0.0004), p_text(1.0), p_text(0.04999)) == ("p < 0.001", "p = 1.000", "p = 0.050")


def test_compare_to_baseline_is_a_family_of_compare_for_each_system():
    rng = np.random.default_rng(5)
    baseline = hits(rng, 80, 0.5)
    systems = {"dense": hits(rng, 80, 0.75), "fusion": hits(rng, 80, 0.55), "rerank": 1 / rng.integers(1, 6, 80)}
    plain = [compare(scores, baseline, (name, "bm25")) for name, scores in systems.items()]
    adjusted = compare_to_baseline(baseline, systems, "bm25")
    family = Family("against bm25")
    for name, scores in systems.items():
        family.add(name, scores, baseline, (name, "bm25"))
    assert [c.name_a for c in adjusted] == list(systems) and {c.name_b for c in adjusted} == {"bm25"}
    assert [c.p_value for c in adjusted] == holm_adjusted([c.p_value for c in plain])
    assert adjusted == family.adjusted and [c.difference for c in adjusted] == [c.difference for c in plain]
    assert all(a.low <= p.low and a.high >= p.high and a.confidence >= 0.95 for a, p in zip(adjusted, plain))
    assert all("Holm-adjusted over 3" in c.method for c in adjusted)
    assert compare_to_baseline(baseline, systems, "bm25", holm=False) == plain


def test_the_exact_limit_switches_to_random_sign_patterns():
    a = np.zeros(EXACT_RANDOMISATION_LIMIT)
    a[:5] = 0.5
    exact = compare(a, np.zeros(a.size))
    assert "exact over all 65536" in exact.method
    assert exact.p_value == paired_randomisation(a, np.zeros(a.size)) == 2 / 32
    longer = np.append(a, 0.0)
    assert "20000 random sign patterns of all 17 questions" in compare(longer, np.zeros(longer.size)).method


def cases(seed: int):
    """Realistic score pairs: hits, reciprocal ranks, few questions differing, and a clear winner."""
    rng = np.random.default_rng(seed)
    a, b = hits(rng, 109, 0.6), hits(rng, 109, 0.5)
    yield a, b
    yield 1 / rng.integers(1, 11, 109), 1 / rng.integers(1, 11, 109)
    c = a.copy()
    c[:7] = 1 - c[:7]
    yield a, c
    yield np.minimum(1, b + hits(rng, 109, 0.2)), b


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_interval_leaves_zero_out_exactly_when_p_is_at_most_one_minus_confidence(seed, confidence):
    """One procedure: the interval is the randomisation test inverted, so the two never disagree."""
    for a, b in cases(seed):
        result = compare(a, b, confidence=confidence)
        assert result.low <= result.difference <= result.high
        assert (result.low > 0 or result.high < 0) == (result.p_value <= 1 - confidence), result


def test_interval_ends_are_the_last_shifts_the_test_keeps():
    """Shifting one system's scores by an end keeps the test at p > 0.05; a little further rejects it.

    The shifted comparison uses the same seed and size, so the same sign patterns: this checks the
    interval against the test itself, computed by the same code path that gives every p-value.
    """
    rng = np.random.default_rng(9)
    a, b = hits(rng, 60, 0.7) / 2, hits(rng, 60, 0.5) / 2     # halves: not 0/1, so the randomisation test
    result = compare(a, b)
    assert "sign-flip randomisation" in result.method
    for end, outward in ((result.low, -1e-3), (result.high, +1e-3)):
        end = Fraction(end).limit_denominator(10_000)
        assert compare(a - float(end), b).p_value > 0.05
        assert compare(a - float(end + Fraction(outward).limit_denominator(1000)), b).p_value <= 0.05


def test_a_family_prints_raw_and_holm_p_and_its_verdicts_follow_holm():
    rng = np.random.default_rng(5)
    base = hits(rng, 109, 0.45)
    strong = np.maximum(base, hits(rng, 109, 0.3))
    weak = base.copy()
    weak[:6] = 1 - weak[:6]
    family = Family("does the new system beat the old on dev")
    family.add("strong - base", strong, base, ("strong", "base"))
    family.add("weak - base", weak, base, ("weak", "base"))
    family.add("base - base", base, base, ("base", "base again"))
    raw = [c.p_value for c in family.raw]
    assert [c.p_value for c in family.adjusted] == holm_adjusted(raw)
    assert family.verdict("strong - base") == "strong beats base"
    assert family.verdict("base - base") == NO_DIFFERENCE
    printed = str(family).splitlines()
    assert printed[0] == "does the new system beat the old on dev: 3 comparisons, verdicts at Holm-adjusted p <= 0.05"
    assert printed[1].split() == ["comparison", "A", "-", "B", "p", "Holm", "p", "level", "interval", "verdict"]
    assert printed[2].startswith("strong - base") and printed[2].endswith("strong beats base")
    strong = family["strong - base"]
    assert f"{level_text(strong.confidence)}  [{signed(strong.low)}, {signed(strong.high)}]" in printed[2]
    assert strong.confidence == pytest.approx(1 - 0.05 / 3) and level_text(strong.confidence) == "98.3%"
    assert all(len(line) <= 120 for line in printed)
    with pytest.raises(ValueError, match="label must be a new"):
        family.add("weak - base", weak, base)
    with pytest.raises(KeyError, match="no comparison 'other'"):
        family["other"]


def test_holm_can_turn_a_raw_win_into_no_difference_in_a_family():
    """A raw p of about 0.03 is a win alone and no difference among three comparisons."""
    a = np.zeros(100)
    a[:8] = 1
    b = np.zeros(100)
    b[8:9] = 1
    family = Family("three looks")
    for label in ("one", "two", "three"):
        family.add(label, a, b)
    raw = family.raw[0]
    assert 0.01 < raw.p_value <= 0.05 and raw.verdict() != NO_DIFFERENCE and raw.low > 0
    assert family.verdict("one") == NO_DIFFERENCE
    held = family["one"]                               # 1 - 0.05 / 3: zero back inside, as the verdict says
    assert held.low < 0 < held.high and held.confidence == pytest.approx(1 - 0.05 / 3)
    assert str(held).startswith(f"A - B: +0.070 [{signed(held.low)}, {signed(held.high)}] at 98.3%, p = 0.059")


# ---------------------------------------------------------------- which test, and intervals at Holm's levels

def reciprocal_ranks(ranks: np.ndarray) -> np.ndarray:
    return np.where(ranks <= 10, 1.0 / ranks, 0.0)


def correlated_hits(rng: np.random.Generator, n: int, rate: float, gain: float) -> tuple[np.ndarray, np.ndarray]:
    """hit@k of a new and an old system on the same questions: mostly the same questions are easy for both."""
    ease = rng.random(n)
    old = (ease < rate).astype(float)
    new = np.where(rng.random(n) < 0.75, ease < rate + gain, rng.random(n) < rate + gain).astype(float)
    return new, old


def correlated_ranks(rng: np.random.Generator, n: int, gain: float) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal ranks (1/r within the top 10, else 0) of two systems that often rank the answer alike."""
    old = rng.geometric(0.3, n)
    new = np.where(rng.random(n) < 0.6, old, rng.geometric(min(0.9, 0.3 + gain), n))
    return reciprocal_ranks(new), reciprocal_ranks(old)


def test_compare_uses_paired_proportions_for_zero_one_scores_and_randomisation_otherwise():
    a, b = np.zeros(60), np.zeros(60)
    a[:6] = 1                                                 # 6 questions only A gets right, none only B
    binary = compare(a, b, ("bm25", "idf"))
    assert (binary.low, binary.high) == tango_interval(6, 0, 60) and binary.p_value == mcnemar_p(6, 0)
    assert binary.method.startswith("paired proportions (only bm25 right on 6, only idf on 0 of 60 questions)")
    halves = compare(a / 2, b, ("bm25", "idf"))          # random patterns of all 60 questions; exact: 2 / 64
    assert halves.method.startswith("sign-flip randomisation") and abs(halves.p_value - 2 / 64) < 0.005


def test_the_old_failure_few_differing_questions_no_longer_snap_the_interval_to_zero():
    """Lab 01 printed ``judged hit@1 +0.100 [0.000, +0.217] 0.176``: 50 questions, 7 against 2 discordant.

    The inverted randomisation interval snapped its lower end to 0.000 beside p = 0.18. Tango's interval
    leaves its lower end below 0 exactly when p > 0.05, never at 0, for few discordant questions.
    """
    for n in (50, 60):
        for wins in range(9):
            for losses in range(wins + 1):
                a, b = np.zeros(n), np.zeros(n)
                a[:wins], b[wins:wins + losses] = 1, 1
                result = compare(a, b)
                assert result.low != 0 and (result.low < 0) == (result.p_value > 0.05), (n, wins, losses)
    a, b = np.zeros(50), np.zeros(50)
    a[:7], b[7:9] = 1, 1
    result = compare(a, b, ("BM25", "IDF overlap"))
    assert result.difference == 0.1 and result.low < -0.02 and result.p_value > 0.05
    assert str(result) == (f"BM25 - IDF overlap: +0.100 [{signed(result.low)}, +0.231], p = 0.096 (n = 50): "
                           + NO_DIFFERENCE)


@pytest.mark.parametrize("kind", ["hits", "reciprocal ranks"])
def test_holm_turns_a_raw_win_into_no_difference_and_its_interval_says_so(kind):
    """Like lab 04's ``+0.062 [+0.014, +0.110] ... Holm 0.093``: a raw p near 0.012 among eight comparisons."""
    family = Family("eight looks")
    if kind == "hits":
        a, b = np.zeros(200), np.zeros(200)
        a[:15], b[15:19] = 1, 1                               # 15 against 4 discordant: p = 0.012
        nulls = [(b, b)] * 7
    else:
        rng = np.random.default_rng(56)
        old = rng.geometric(0.3, 210)
        a, b = reciprocal_ranks(np.where(rng.random(210) < 0.6, old, rng.geometric(0.4, 210))), reciprocal_ranks(old)
        nulls = [(b, b)] * 7
    family.add("the win", a, b, ("new", "old"))
    for i, (x, y) in enumerate(nulls):
        family.add(f"null {i}", x, y, ("new", "old"))
    raw, held = family.raw[0], family["the win"]
    assert 0.01 < raw.p_value < 0.015 and raw.verdict() == "new beats old" and raw.low > 0
    assert 0.08 < held.p_value < 0.12 and held.verdict() == NO_DIFFERENCE
    assert held.confidence == pytest.approx(1 - 0.05 / 8) and held.low < 0 < held.high
    assert held.low < raw.low and held.high > raw.high
    row = str(family).splitlines()[2]
    assert f"99.4%  [{signed(held.low)}, {signed(held.high)}]  {NO_DIFFERENCE}" in row


def test_a_holm_level_interval_is_the_same_test_read_at_that_level():
    """Recomputed at its level on the same sign patterns (same seed and size) or analytically for Tango."""
    rng = np.random.default_rng(3)
    family = Family("three")
    pairs = [correlated_hits(rng, 120, 0.5, 0.15), correlated_ranks(rng, 120, 0.3), correlated_ranks(rng, 120, 0.0)]
    for i, (a, b) in enumerate(pairs):
        family.add(f"c{i}", a, b)
    for (a, b), held in zip(pairs, family.adjusted):
        again = compare(a, b, confidence=held.confidence)
        assert (again.low, again.high) == (held.low, held.high)


def test_boundary_p_equal_to_the_level_rejects_for_both_tests():
    """Both tests reject when p <= alpha: at p == alpha exactly, a winner, and zero outside the interval."""
    a = [0.5] * 4                                              # 4 equal differences: p = 2 / 16 exactly
    family = Family("at the edge", alpha=0.125)
    family.add("halves", a, [0.0] * 4)
    held = family["halves"]
    assert held.p_value == 0.125 and held.verdict(0.125) == "A beats B" and held.low > 0
    wins, losses = np.zeros(40), np.zeros(40)
    wins[:7], losses[7:8] = 1, 1
    p = mcnemar_p(7, 1)
    family = Family("at the edge", alpha=p)
    family.add("hits", wins, losses)
    assert family["hits"].p_value == p and family.verdict("hits") == "A beats B" and family["hits"].low > 0
    family = Family("just past the edge", alpha=math.nextafter(p, 0.0))
    family.add("hits", wins, losses)
    assert family.verdict("hits") == NO_DIFFERENCE and family["hits"].low <= 0


def test_a_family_of_one_is_read_at_95_percent():
    a, b = correlated_ranks(np.random.default_rng(8), 90, 0.2)
    family = Family("one")
    family.add("only", a, b)
    assert family["only"].confidence == 0.95 and (family["only"].low, family["only"].high) == (family.raw[0].low,
                                                                                             family.raw[0].high)
    assert "95%" in str(family).splitlines()[2] and str(family["only"]) == str(family.raw[0])


def random_family(seed: int) -> Family:
    """2 to 16 comparisons on 20 to 300 questions: hit@k of correlated systems and reciprocal ranks."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 17)), int(rng.integers(20, 301))
    family = Family(f"family {seed}")
    for i in range(m):
        gain = float(rng.choice([0.0, 0.0, 0.03, 0.08, 0.15, 0.3]))
        a, b = correlated_hits(rng, n, 0.4, gain) if rng.random() < 0.5 else correlated_ranks(rng, n, gain)
        family.add(f"comparison {i}", a, b, ("new", "old"), permutations=1_999, seed=seed)
    return family


def test_intervals_leave_zero_out_exactly_when_the_holm_verdict_names_a_winner():
    """Over many realistic families: ``0 outside the printed interval`` == ``verdict is not no difference``.

    And each Holm-level interval contains the comparison's own 95% interval.
    """
    seen = {"hits": 0, "ranks": 0, "winners": 0, "holm took a raw win": 0}
    for seed in range(30):
        family = random_family(seed)
        rows = str(family).splitlines()[2:]
        for raw, held, row in zip(family.raw, family.adjusted, rows):
            outside = held.low > 0 or held.high < 0
            assert outside == (held.verdict(family.alpha) != NO_DIFFERENCE), (seed, raw, held)
            assert held.low <= raw.low <= raw.difference <= raw.high <= held.high
            assert f"{level_text(held.confidence)}  [{signed(held.low)}, {signed(held.high)}]" in row
            seen["hits" if raw.method.startswith("paired proportions") else "ranks"] += 1
            seen["winners"] += outside
            seen["holm took a raw win"] += raw.p_value <= 0.05 and not outside
    assert min(seen.values()) >= 20, seen


# ---------------------------------------------------------------- bad input names the argument

@pytest.mark.parametrize("a, b, message", [
    ([1.0, 0.0], [1.0], "a and b must score the same questions; a has 2 scores, b has 1"),
    ([], [], "a must hold at least one score"),
    ([1.0, 0.0], [], "b must hold at least one score"),
    ([1.0, float("nan")], [1.0, 0.0], "a must hold finite numbers; question 1"),
    ([1.0, 0.0], [float("inf"), 0.0], "b must hold finite numbers; question 0"),
    (["x", "y"], [1.0, 0.0], "a must be a sequence of numbers"),
    ("10", [1.0, 0.0], "a must be a sequence of numbers"),
    ([[1.0], [0.0]], [1.0, 0.0], "a must be a flat sequence"),
])
def test_bad_scores_raise_value_error_naming_the_argument(a, b, message):
    for function in (compare, paired_bootstrap, paired_randomisation):
        with pytest.raises(ValueError, match=message):
            function(a, b)


@pytest.mark.parametrize("keyword, value", [("resamples", 0), ("permutations", -1), ("seed", -1),
                                            ("seed", 2 ** 32), ("confidence", 1.0), ("confidence", 0),
                                            ("names", ("dense",)), ("names", "ab")])
def test_bad_settings_raise_value_error_naming_the_setting(keyword, value):
    with pytest.raises(ValueError, match=keyword):
        compare([1.0, 0.0], [0.0, 0.0], **{keyword: value})


def test_baseline_helper_names_the_system_whose_scores_are_wrong():
    with pytest.raises(ValueError, match=r"systems\['dense'\] and baseline must score the same questions"):
        compare_to_baseline([1.0, 0.0], {"dense": [1.0]})
    with pytest.raises(ValueError, match="systems must be a non-empty mapping"):
        compare_to_baseline([1.0, 0.0], {})
    with pytest.raises(ValueError, match=r"p_values\[1\]"):
        holm_adjusted([0.5, 1.5])


# ---------------------------------------------------------------- scipy as a second reference

@pytest.mark.parametrize("kind, tolerance", [("hits", 1e-15), ("reciprocal ranks", 1e-15), ("continuous", 1e-9)])
def test_bootstrap_interval_equals_scipy_percentile_bootstrap_with_the_same_generator(kind, tolerance):
    """scipy redraws question indices with ``rng.integers(0, n, (resamples, n))`` too: the same redraws."""
    rng = np.random.default_rng(6)
    if kind == "hits":
        a, b = hits(rng, 60, 0.7), hits(rng, 60, 0.6)
    elif kind == "reciprocal ranks":
        a, b = 1 / rng.integers(1, 11, 60), 1 / rng.integers(1, 11, 60)
    else:
        a, b = rng.random(60), rng.random(60)
    ours = paired_bootstrap(a, b, resamples=5_000, seed=99)
    theirs = stats.bootstrap((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), paired=True, vectorized=True,
                             method="percentile", n_resamples=5_000, rng=np.random.default_rng(99))
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=tolerance)


def scipy_sign_flip_p(a, b, resamples=np.inf, seed=0) -> float:
    return stats.permutation_test((np.asarray(a, float), np.asarray(b, float)),
                                  lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                  vectorized=True, n_resamples=resamples, alternative="two-sided",
                                  rng=np.random.default_rng(seed)).pvalue


@pytest.mark.parametrize("seed", range(4))
def test_exact_randomisation_equals_scipy_exact_permutation_test(seed):
    rng = np.random.default_rng(seed)
    a, b = 1 / rng.integers(1, 6, 12), 1 / rng.integers(1, 6, 12)   # reciprocal ranks, some equal
    assert paired_randomisation(a, b) == pytest.approx(scipy_sign_flip_p(a, b), abs=1e-12)


def test_random_sign_patterns_agree_with_scipy_within_monte_carlo_error():
    rng = np.random.default_rng(12)
    a, b = hits(rng, 60, 0.7), hits(rng, 60, 0.6)
    ours = paired_randomisation(a, b, permutations=20_000)
    theirs = scipy_sign_flip_p(a, b, resamples=20_000, seed=1)
    assert 0.05 < ours < 0.95
    assert abs(ours - theirs) < 0.02             # each has standard error <= 0.0036


# ---------------------------------------------------------------- ranx as the library reference

def ranked(run: dict[str, float]) -> list[str]:
    return sorted(run, key=lambda doc: (-run[doc], doc))


OUR_MEASURES = {"hit_rate@1": lambda r, rel: float(recall_at_k(r, rel, 1) > 0),
                "recall@5": lambda r, rel: recall_at_k(r, rel, 5),
                "mrr": reciprocal_rank,
                "ndcg@10": lambda r, rel: ndcg_at_k(r, rel, 10)}
PAIRS = [("dense", "bm25"), ("dense", "fused"), ("bm25", "fused")]


@pytest.fixture(scope="module")
def ranx_world():
    """60 synthetic questions, three runs, and ranx's fisher comparison of them (compiled once).

    ``threads=1``: ranx's test sums in parallel otherwise, and the order of a float sum then decides,
    differently from run to run, which of recall's tied sign patterns count (see the recall test).
    ranx leaves numba's thread count at 1, so it is put back afterwards.
    """
    ranx = pytest.importorskip("ranx")
    numba = pytest.importorskip("numba")
    rng = np.random.default_rng(COURSE_SEED)
    questions = [f"q{i:02d}" for i in range(60)]
    documents = [f"d{j:02d}" for j in range(30)]
    judged = {q: sorted(rng.choice(documents, size=int(rng.integers(1, 4)), replace=False).tolist())
              for q in questions}

    def scored(boost: float) -> dict[str, dict[str, float]]:
        run = {}
        for q in questions:
            noise = rng.normal(size=len(documents))
            run[q] = {d: float(s + (boost if d in judged[q] else 0.0)) for d, s in zip(documents, noise)}
        return run

    dense, bm25 = scored(1.6), scored(1.3)
    fused = {q: (bm25[q] if i % 5 == 0 else dense[q]) for i, q in enumerate(questions)}  # 12 questions differ
    runs = {"dense": dense, "bm25": bm25, "fused": fused}
    ranx_runs = [ranx.Run(run, name=name) for name, run in runs.items()]
    threads = numba.get_num_threads()
    try:
        report = ranx.compare(ranx.Qrels({q: {d: 1 for d in rel} for q, rel in judged.items()}), runs=ranx_runs,
                              metrics=list(OUR_MEASURES), stat_test="fisher", n_permutations=RANX_PERMUTATIONS,
                              random_seed=42, threads=1)
    finally:
        numba.set_num_threads(threads)
    ours = {name: {m: [measure(ranked(run[q]), judged[q]) for q in questions] for m, measure in OUR_MEASURES.items()}
            for name, run in runs.items()}
    theirs = {r.name: {m: [r.scores[m][q] for q in questions] for m in OUR_MEASURES} for r in ranx_runs}
    return report, ours, theirs


@pytest.mark.ranx
def test_per_question_scores_and_means_equal_ranx(ranx_world):
    report, ours, theirs = ranx_world
    for name in ours:
        for metric in OUR_MEASURES:
            assert ours[name][metric] == pytest.approx(theirs[name][metric], abs=1e-12), (name, metric)
            assert compare(ours[name][metric], ours["dense"][metric]).mean_a \
                == pytest.approx(report.results[name][metric], abs=1e-12)


@pytest.mark.ranx
@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("metric", ["hit_rate@1", "mrr", "ndcg@10"])
def test_randomisation_p_agrees_with_ranx_fisher(ranx_world, pair, metric):
    """ranx draws 20 000 patterns (p = share, no +1); ours are exact when <= 16 questions differ.

    ``compare`` gives hit@1 (0/1 scores) McNemar's p, so hit@1 is checked through ``paired_randomisation``.
    """
    report, ours, _ = ranx_world
    a, b = ours[pair[0]][metric], ours[pair[1]][metric]
    if metric == "hit_rate@1":
        p_value = paired_randomisation(a, b, permutations=RANX_PERMUTATIONS)
    else:
        p_value = compare(a, b, pair, permutations=RANX_PERMUTATIONS).p_value
    theirs = report.comparisons[pair][metric]["p_value"]
    assert abs(p_value - theirs) < 0.02, (p_value, theirs)


def in_order_mean(values: np.ndarray) -> np.ndarray:
    """Mean along the last axis summed left to right, as ranx's numba code does on one thread."""
    return np.cumsum(values, axis=-1)[..., -1] / values.shape[-1]


@pytest.mark.ranx
@pytest.mark.parametrize("pair", PAIRS)
def test_recall_p_differs_from_ranx_only_by_ties_ranx_decides_with_float_rounding(ranx_world, pair):
    """Recall@5 takes values like 1/3 and 1/2, so many sign patterns tie the observed |difference| exactly.

    ranx compares float means, so whether a tie counts depends on rounding; ours counts every tie.
    On the same random patterns: ranx matches the float rule, ours matches the exact rule.
    """
    report, ours, _ = ranx_world
    a, b = np.array(ours[pair[0]]["recall@5"]), np.array(ours[pair[1]]["recall@5"])
    flips = np.random.default_rng(1).integers(0, 2, size=(RANX_PERMUTATIONS, a.size)).astype(bool)
    observed = abs(in_order_mean(a) - in_order_mean(b))
    float_rule = np.mean(abs(in_order_mean(np.where(flips, b, a)) - in_order_mean(np.where(flips, a, b))) >= observed)
    sixths_a, sixths_b = np.rint(a * 6).astype(np.int64), np.rint(b * 6).astype(np.int64)
    assert np.allclose(sixths_a / 6, a, rtol=0, atol=1e-15) and np.allclose(sixths_b / 6, b, rtol=0, atol=1e-15)
    swapped = np.where(flips, sixths_b, sixths_a).sum(axis=1) - np.where(flips, sixths_a, sixths_b).sum(axis=1)
    exact_rule = np.mean(abs(swapped) >= abs(sixths_a.sum() - sixths_b.sum()))
    theirs = report.comparisons[pair]["recall@5"]["p_value"]
    result = compare(a, b, pair, permutations=RANX_PERMUTATIONS)
    assert abs(theirs - float_rule) < 0.02, (theirs, float_rule)
    assert abs(result.p_value - exact_rule) < 0.02, (result.p_value, exact_rule)
    assert exact_rule >= float_rule
    if pair == ("bm25", "fused"):
        assert exact_rule - float_rule > 0.01                        # the ties ranx loses here
