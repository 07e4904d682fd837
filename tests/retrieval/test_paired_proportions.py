"""McNemar's test and Tango's score interval for paired 0/1 scores, checked against published worked examples.

Where the reference numbers come from (each as the source prints it, so compared at its rounding):

* Tango T. (1998), Equivalence test and confidence interval for the difference in proportions for
  the paired-sample design, Statistics in Medicine 17:891-908: Table VII (b = 9, c = 3, n = 32,
  95%: -0.027 to 0.390) and Table V (b = 0, c = 1, n = 44, 90%: -0.096 to 0.037).
* Agresti A. & Min Y. (2005), Simple improved confidence intervals for comparing matched
  proportions, Statistics in Medicine 24:729-740: b = 16, c = 8, n = 86, 95%: -0.020 to 0.207.
* Fagerland M.W., Lydersen S. & Laake P. (2014), Recommended tests and confidence intervals for
  paired binomial proportions, Statistics in Medicine 33:2850-2875, airway hyper-responsiveness
  after stem cell transplantation (Bentur et al. 2009): b = 1, c = 7, n = 21, Tango -0.517 to -0.026.
  These four as R's ratesci pins them in its test suite (tests/testthat/test3.R, Tango's method is
  ``scorepairci(..., skew = FALSE, bcf = FALSE)``).
* Fagerland, Lydersen & Laake (2017), Statistical Analysis of Contingency Tables, chapter 8, complete
  response before and after consolidation therapy (Cavo et al. 2012): b = 6, c = 16, n = 161,
  McNemar asymptotic P = 0.033006 (Z = -2.132) and Tango -0.1240 to -0.0054; and the all-discordant
  table b = 3, c = 0, n = 3: Tango -0.1230 to 1.0000. As the book's R package contingencytables prints
  them (tests/testthat/test-ch8.R).

statsmodels (whose ``mcnemar(table, exact=False, correction=False)`` is the same test) is not installed
here, so the p-value is also checked against scipy's chi-squared distribution on the same statistic,
and the interval against an independent root-finding of Tango's equation |Z(delta)| = z with scipy's brentq.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from ragcourse.retrieval.paired_proportions import (
    PairedProportions,
    discordant_counts,
    is_binary,
    mcnemar_p,
    score_interval,
    score_p_value,
    score_statistic,
    tango_interval,
)

PUBLISHED_INTERVALS = [  # (b, c, n, confidence, low, high, decimals)
    (9, 3, 32, 0.95, -0.027, 0.390, 3),         # Tango 1998, Table VII
    (0, 1, 44, 0.90, -0.096, 0.037, 3),         # Tango 1998, Table V
    (16, 8, 86, 0.95, -0.020, 0.207, 3),        # Agresti & Min 2005
    (1, 7, 21, 0.95, -0.517, -0.026, 3),        # Fagerland et al. 2014 (Bentur et al. 2009)
    (6, 16, 161, 0.95, -0.1240, -0.0054, 4),    # Fagerland et al. 2017 (Cavo et al. 2012)
    (3, 0, 3, 0.95, -0.1230, 1.0, 4),           # contingencytables: every question discordant
    (0, 3, 3, 0.95, -1.0, 0.1230, 4),
]
GRID = [(b, c, n) for n in (12, 50, 210) for b in range(0, 13, 3) for c in range(0, 13, 4) if b + c <= n]


@pytest.mark.parametrize("b, c, n, confidence, low, high, decimals", PUBLISHED_INTERVALS)
def test_tango_interval_matches_published_worked_examples(b, c, n, confidence, low, high, decimals):
    ours = tango_interval(b, c, n, confidence)
    assert (round(ours[0], decimals), round(ours[1], decimals)) == (low, high)


def test_mcnemar_p_matches_the_published_example_and_scipy_chi_squared():
    assert round(mcnemar_p(6, 16), 6) == 0.033006                      # Cavo et al. 2012, as the book prints it
    assert round(score_statistic(0.0, 6, 16, 161), 3) == -2.132
    assert (mcnemar_p(0, 0), mcnemar_p(5, 5)) == (1.0, 1.0)
    for b in range(0, 40, 3):
        for c in range(0, 40, 5):
            if b + c:
                chi_squared = stats.chi2.sf((b - c) ** 2 / (b + c), df=1)
                assert mcnemar_p(b, c) == pytest.approx(chi_squared, rel=1e-12, abs=1e-300)
                assert mcnemar_p(b, c) == pytest.approx(2 * stats.norm.sf(abs(b - c) / math.sqrt(b + c)), rel=1e-12)


def brentq_interval(b: int, c: int, n: int, confidence: float) -> tuple[float, float]:
    """Tango's interval by another route: scipy's brentq on Z(delta) = +-z, with Tango's formula written out."""
    z = stats.norm.isf((1 - confidence) / 2)

    def statistic(delta: float) -> float:
        linear = -b - c + (2 * n - b + c) * delta
        q = (math.sqrt(linear ** 2 + 8 * n * c * delta * (1 - delta)) - linear) / (4 * n)
        return (b - c - n * delta) / math.sqrt(n * (2 * q + delta * (1 - delta)))

    estimate, edge = (b - c) / n, 1e-13
    bottom, top = max(estimate, -1 + edge), min(estimate, 1 - edge)      # Z is 0/0 at an estimate of +-1
    low = -1.0 if c == n else optimize.brentq(lambda d: statistic(d) - z, -1 + edge, top, xtol=1e-15)
    high = 1.0 if b == n else optimize.brentq(lambda d: statistic(d) + z, bottom, 1 - edge, xtol=1e-15)
    return low, high


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99, 1 - 0.05 / 16])
def test_interval_equals_an_independent_root_finding_of_the_score_equation(confidence):
    for b, c, n in GRID:
        if b + c:
            assert tango_interval(b, c, n, confidence) == pytest.approx(brentq_interval(b, c, n, confidence), abs=1e-9)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.05 / 3, 0.2])
def test_interval_ends_are_the_last_shifts_the_score_test_keeps(alpha):
    for b, c, n in GRID:
        low, high = score_interval(b, c, n, alpha)
        for end, outward in ((low, -1.0), (high, 1.0)):
            if abs(end) < 1:
                assert score_p_value(end, b, c, n) > alpha
                assert score_p_value(math.nextafter(end, outward), b, c, n) <= alpha


@pytest.mark.parametrize("alpha", [0.001, 0.01, 0.05 / 7, 0.05, 0.2])
def test_zero_is_outside_exactly_when_p_is_at_most_alpha_even_at_the_boundary(alpha):
    """p <= alpha rejects; so ``low > 0 or high < 0`` iff p <= alpha, also when alpha is p itself."""
    for b, c, n in GRID:
        p = mcnemar_p(b, c)
        for level in (alpha, p, math.nextafter(p, 0.0)):
            if 0 < level < 1:
                low, high = score_interval(b, c, n, level)
                assert low <= (b - c) / n <= high
                assert (low > 0 or high < 0) == (p <= level), (b, c, n, level)


def test_no_discordant_question_gives_the_closed_form_interval_not_zero_width():
    """With b = c = 0, |Z(delta)| = z solves to delta = +-z**2 / (n + z**2)."""
    z = stats.norm.isf(0.025)
    for n in (20, 60, 300):
        low, high = tango_interval(0, 0, n)
        assert low == pytest.approx(-z * z / (n + z * z), rel=1e-12) and high == -low > 0


def test_few_discordant_questions_never_snap_an_end_to_zero():
    """The old randomisation interval read [0.000, +0.217] at p = 0.176 (lab 01, judged hit@1, 50 questions).

    Tango's lower end is below zero exactly when McNemar's p > 0.05, and never exactly zero.
    """
    for n in (50, 60):
        for b in range(11):
            for c in range(b + 1):
                low, high = tango_interval(b, c, n)
                assert low != 0 and high > 0
                assert (low < 0) == (mcnemar_p(b, c) > 0.05), (b, c, n)
    low, high = tango_interval(7, 2, 50)                     # +0.100 on 50 questions, 9 of them discordant
    assert low < 0 < high and mcnemar_p(7, 2) > 0.05


def test_swapping_the_systems_negates_the_interval_exactly():
    for b, c, n in GRID:
        low, high = tango_interval(b, c, n)
        assert tango_interval(c, b, n) == (-high, -low)
        assert mcnemar_p(b, c) == mcnemar_p(c, b)


def test_counts_from_scores_and_the_comparison_object():
    a, b = [1, 1, 0, 1, 0, 0], [0, 1, 1, 1, 0, 0]
    assert is_binary(a) and not is_binary([1, 0.5]) and discordant_counts(a, b) == (1, 1, 6)
    test = PairedProportions.from_scores(np.array([1.0] * 6 + [0.0] * 54), np.zeros(60))
    assert (test.b, test.c, test.n, test.p_value) == (6, 0, 60, mcnemar_p(6, 0))
    assert test.interval(0.05) == tango_interval(6, 0, 60) and test.rejects(0.05)
    assert test.rejects(test.level_at_p(True)) and not test.rejects(test.level_at_p(False))


@pytest.mark.parametrize("call, message", [
    (lambda: tango_interval(3, 2, 4), "b \\+ c <= n"),
    (lambda: tango_interval(-1, 2, 4), "b must be a non-negative whole number"),
    (lambda: tango_interval(1, 2.5, 4), "c must be"),
    (lambda: tango_interval(1, 2, 4, confidence=1.0), "confidence"),
    (lambda: score_interval(1, 2, 4, alpha=0), "alpha"),
    (lambda: discordant_counts([1, 0], [1, 0.5]), "0/1 scores"),
])
def test_bad_input_raises_value_error_naming_it(call, message):
    with pytest.raises(ValueError, match=message):
        call()
