"""Two systems' 0/1 scores on the same questions: their difference, McNemar's test and Tango's score interval.

When every score is 0 or 1 (hit@k, answered or not), a question can only go four ways, and only
two of them tell the systems apart: ``b`` questions only system A gets right, ``c`` only B. Of
``n`` questions, A's share minus B's is ``(b - c) / n``. Tango's score statistic for a shift
``delta`` of that difference is

    Z(delta) = (b - c - n delta) / sqrt(n (2 q + delta (1 - delta))),

where ``q`` is the chance that a question goes only B's way, estimated by maximum likelihood
under the constraint that the difference is ``delta``: the non-negative root of the quadratic
``2n q**2 + (-b - c + (2n - b + c) delta) q - c delta (1 - delta) = 0`` (Tango 1998, Statistics
in Medicine 17:891-908; the same closed form as R's ``PropCIs::scoreci.mp`` and
``contingencytables::Tango_asymptotic_score_CI_paired_2x2``). Its two-sided p-value is
``2 (1 - Phi(|Z|))``. At ``delta = 0`` the estimate is ``q = (b + c) / (2n)`` and the statistic
is ``(b - c) / sqrt(b + c)``: McNemar's test without continuity correction (p = 1 when
``b + c = 0``), which is the p-value ``compare`` reports for such scores.

The interval holds every shift the same test keeps: ``delta`` in [-1, 1] is rejected at level
``alpha`` when its p-value is at most ``alpha`` and kept when it is above, so zero lies outside the
interval exactly when McNemar's p <= alpha (the same rule as the randomisation test in
``significance``). Each end is found by bisection on that rule, between a rejected and a kept
shift, to the last bit of a float; the end reported is the kept side of the last bracket. Zero
itself is tested first with the very p-value reported, so the agreement at zero holds without
rounding slack: ``low > 0`` or ``high < 0`` exactly when ``p <= alpha``. Unlike the randomisation
interval over few differing questions, this one does not collapse: with ``b = c = 0`` it is
``+-z**2 / (n + z**2)``, the shifts ``n`` identical answers cannot rule out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

_BISECTIONS = 2_200   # more than enough halvings to reach adjacent floats anywhere in [-1, 1]


def is_binary(scores: Sequence[float]) -> bool:
    """True when every score is exactly 0 or 1."""
    array = np.asarray(scores, dtype=np.float64)
    return bool(np.all((array == 0) | (array == 1)))


def discordant_counts(a: Sequence[float], b: Sequence[float]) -> tuple[int, int, int]:
    """``(b, c, n)``: questions only ``a`` gets right, only ``b`` gets right, and all of them (0/1 scores)."""
    first, second = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if first.shape != second.shape or first.ndim != 1 or not (is_binary(first) and is_binary(second)):
        raise ValueError("a and b must be flat sequences of 0/1 scores over the same questions")
    return int(np.sum((first == 1) & (second == 0))), int(np.sum((first == 0) & (second == 1))), int(first.size)


def _counts(b: int, c: int, n: int) -> tuple[int, int, int]:
    for name, value in (("b", b), ("c", c), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a non-negative whole number; got {value!r}")
    if n == 0 or b + c > n:
        raise ValueError(f"need n >= 1 and b + c <= n; got b = {b}, c = {c}, n = {n}")
    return int(b), int(c), int(n)


def restricted_estimate(delta: float, b: int, c: int, n: int) -> float:
    """The maximum-likelihood chance of a question going only B's way, given the difference ``delta``."""
    quadratic, linear, constant = 2 * n, -b - c + (2 * n - b + c) * delta, -c * delta * (1 - delta)
    root = math.sqrt(max(linear * linear - 4 * quadratic * constant, 0.0))
    if linear > 0:                                   # the same root, without subtracting near-equal numbers
        return -2 * constant / (linear + root)
    return (root - linear) / (2 * quadratic)


def score_statistic(delta: float, b: int, c: int, n: int) -> float:
    """Tango's ``Z(delta)``; at ``delta = 0`` exactly McNemar's ``(b - c) / sqrt(b + c)`` (0 when b + c = 0).

    Swapping the systems negates it: ``Z(delta; b, c) = -Z(-delta; c, b)``. It is computed with
    ``b > c`` (or ``b = c`` and ``delta >= 0``) so that this holds bit for bit.
    """
    if b < c or (b == c and delta < 0):
        return -score_statistic(-delta, c, b, n)
    if delta == 0:
        return 0.0 if b == c else (b - c) / math.sqrt(b + c)
    numerator = b - c - n * delta
    variance = n * (2 * restricted_estimate(delta, b, c, n) + delta * (1 - delta))
    if numerator == 0:
        return 0.0
    return numerator / math.sqrt(variance) if variance > 0 else math.copysign(math.inf, numerator)


def score_p_value(delta: float, b: int, c: int, n: int) -> float:
    """Two-sided p-value of the score test of difference ``delta``: ``2 (1 - Phi(|Z|))``."""
    return math.erfc(abs(score_statistic(delta, b, c, n)) / math.sqrt(2))


def mcnemar_p(b: int, c: int) -> float:
    """McNemar's asymptotic test, no continuity correction: ``2 (1 - Phi(|b - c| / sqrt(b + c)))``; 1 if b + c = 0."""
    b, c, _ = _counts(b, c, max(b + c, 1))
    return score_p_value(0.0, b, c, max(b + c, 1))


def _end(rejected: float, kept: float, b: int, c: int, n: int, alpha: float) -> float:
    """Bisect between a rejected and a kept shift until they are adjacent floats; the kept one."""
    for _ in range(_BISECTIONS):
        middle = rejected + (kept - rejected) / 2
        if middle in (rejected, kept):
            break
        if score_p_value(middle, b, c, n) > alpha:
            kept = middle
        else:
            rejected = middle
    return kept


def score_interval(b: int, c: int, n: int, alpha: float | Fraction) -> tuple[float, float]:
    """The shifts of ``(b - c) / n`` whose score p-value is above ``alpha``: Tango's interval at 1 - alpha.

    Computed with ``b >= c`` and negated otherwise, so swapping the systems negates it exactly.
    -1 (for the lower end) and 1 (for the upper) are taken as ruled out unless they are the estimate.
    """
    b, c, n = _counts(b, c, n)
    alpha = float(alpha)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be strictly between 0 and 1; got {alpha!r}")
    if b < c:
        low, high = score_interval(c, b, n, alpha)
        return -high, -low
    if b == c:                                       # zero is kept (p = 1), and the interval is symmetric
        high = _end(1.0, 0.0, b, c, n, alpha)
        return -high, high
    estimate = (b - c) / n                           # > 0; zero is decided with the very p-value reported
    rejected, kept = (-1.0, 0.0) if score_p_value(0.0, b, c, n) > alpha else (0.0, estimate)
    low = _end(rejected, kept, b, c, n, alpha)
    high = 1.0 if b == n else _end(1.0, estimate, b, c, n, alpha)
    return low, high


def tango_interval(b: int, c: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Tango's asymptotic score interval for the difference of paired proportions ``(b - c) / n``."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number strictly between 0 and 1; got {confidence!r}")
    return score_interval(b, c, n, 1 - Fraction(confidence).limit_denominator(10 ** 6))


@dataclass(frozen=True)
class PairedProportions:
    """0/1 scores reduced to ``b`` (only A right), ``c`` (only B right), ``n``: McNemar's test, Tango's interval."""

    b: int
    c: int
    n: int

    @classmethod
    def from_scores(cls, a: Sequence[float], b: Sequence[float]) -> PairedProportions:
        return cls(*discordant_counts(a, b))

    @property
    def p_value(self) -> float:
        """McNemar's p (``mcnemar_p``)."""
        return mcnemar_p(self.b, self.c)

    def rejects(self, alpha: float | Fraction) -> bool:
        """Whether zero is rejected at ``alpha``: p <= alpha, as ``interval`` decides it."""
        return self.p_value <= float(alpha)

    def interval(self, alpha: float | Fraction) -> tuple[float, float]:
        """Tango's interval at 1 - ``alpha`` (``score_interval``)."""
        return score_interval(self.b, self.c, self.n, alpha)

    def level_at_p(self, rejects: bool) -> Fraction:
        """The ``alpha`` nearest p at which zero is rejected (``rejects``) or kept."""
        return Fraction(self.p_value if rejects else math.nextafter(self.p_value, 0.0))


__all__ = ["PairedProportions", "discordant_counts", "is_binary", "mcnemar_p", "restricted_estimate", "score_interval",
           "score_p_value", "score_statistic", "tango_interval"]
