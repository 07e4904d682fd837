"""Paired comparisons of two retrieval systems over the same questions: an interval and a p-value that agree.

Each question gives one score per system (hit@1, Recall@5, reciprocal rank, ...), and the honest
unit of comparison is the question. ``compare`` picks the test by the scores. When every score is
0 or 1 (hit@k), only the questions one system gets right and the other wrong count: the p-value
is McNemar's and the interval Tango's score interval, the same test inverted
(``paired_proportions``), which does not collapse when few questions differ. Other scores (MRR,
Recall@k in fractions) go to the sign-flip randomisation test: it flips the sign of each
question's difference at random and counts how often the shuffled mean difference is at least as
far from zero as the real one; its interval is that test inverted on the same sign patterns.
Either way the interval holds every shift the test does not reject, so it leaves zero out exactly
when p <= 1 - confidence. ``paired_bootstrap`` (checked against scipy's) is here too, but no lab
decides with it. ``Family`` judges the comparisons that answer one question together with Holm's
adjustment, and prints beside each Holm-adjusted p the interval at the level matching Holm's
step-down, so the interval leaves zero out exactly when the verdict names a winner. "No
difference this set can detect" does not say the systems are equal, only that this many questions
cannot tell them apart; the interval says how large a difference the set could still be hiding.

Every number is the same, bit for bit, for a given seed on any machine: means are exact means
rounded once, Tango's interval depends on the counts alone, and resampling works on whole numbers.
When every score is the float nearest a fraction p/q (q <= 10 000, a small enough common multiple:
Recall@k, reciprocal rank), each difference is an exact multiple of one over that multiple and
every sum, "at least as extreme" and interval end is exact. Other scores (nDCG, cosines) are
rounded to 32 significant bits of the largest one, and a resampled statistic counts as "at least as
extreme" when it falls short by less than that rounding could explain. Random numbers come from
numpy's PCG64 ``Generator`` seeded with ``seed`` (a numpy release may change the draws).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

from .. import COURSE_SEED
from ..toolkit.params import check_number, check_positive_int, check_seed
from .paired_proportions import PairedProportions, is_binary

NO_DIFFERENCE = "no difference this set can detect"
EXACT_RANDOMISATION_LIMIT = 16       # enumerate all 2**m sign patterns when m questions differ, m <= this
LARGEST_DENOMINATOR = 10_000         # a score is read as a fraction p/q only with q at most this
SIGNIFICANT_BITS = 32                # other scores are rounded to this many bits of the largest one
_ENTRIES_PER_BLOCK = 1 << 20         # resampling draws at most this many numbers per call (memory)
_INTEGER_ROOM = 1 << 62              # every resampled sum of differences stays below this (int64)


@dataclass(frozen=True)
class PairedComparison:
    """Two systems on the same ``n`` questions: their means, the mean difference (A - B), its interval and p."""

    name_a: str
    name_b: str
    n: int
    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float
    p_value: float
    method: str
    confidence: float = 0.95

    def verdict(self, alpha: float = 0.05) -> str:
        """``"A beats B"``/``"B beats A"`` (names filled in) when p <= ``alpha``, else ``NO_DIFFERENCE``."""
        alpha = check_number("alpha", alpha, 0.0, 1.0)
        if self.p_value > alpha or self.difference == 0:
            return NO_DIFFERENCE
        return f"{self.name_a} beats {self.name_b}" if self.difference > 0 else f"{self.name_b} beats {self.name_a}"

    def summary_line(self, alpha: float = 0.05) -> str:
        """One line to 3 decimals: ``A - B: +0.040 [−0.020, +0.100], p = 0.210 (n = 70): ...`` (level unless 95%)."""
        level = "" if abs(self.confidence - 0.95) < 1e-12 else f" at {level_text(self.confidence)}"
        return (f"{self.name_a} - {self.name_b}: {signed(self.difference)} "
                f"[{signed(self.low)}, {signed(self.high)}]{level}, {p_text(self.p_value)} (n = {self.n}): "
                f"{self.verdict(alpha)}")

    def __str__(self) -> str:
        return self.summary_line()


def signed(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` decimals with its sign (+ or the minus sign −); one that rounds to 0 reads 0.000."""
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text.replace("-", "\u2212")


def p_text(p_value: float, digits: int = 3) -> str:
    """``p = 0.210`` to ``digits`` decimals, or ``p < 0.001`` when it would round to zero."""
    return f"p < {10.0 ** -digits:.{digits}f}" if round(p_value, digits) == 0 else f"p = {p_value:.{digits}f}"


def level_text(confidence: float) -> str:
    """A confidence level in short: ``95%``, ``98.3%``, ``99.7%`` (more digits only where it would read 100%)."""
    digits = next((d for d in range(1, 9) if float(f"{100 * confidence:.{d}f}") < 100), 9)
    return f"{100 * confidence:.{digits}f}".rstrip("0").rstrip(".") + "%"


# ---- input ------------------------------------------------------------------------------------

def _scores(name: str, values: Sequence[float]) -> np.ndarray:
    """``values`` as a 1-D float64 array, after checking it is a non-empty list of finite numbers."""
    if isinstance(values, (str, bytes, Mapping)):
        raise ValueError(f"{name} must be a sequence of numbers, one per question; got {type(values).__name__}")
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of numbers, one per question; got {values!r:.80}") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers, one per question; got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must hold at least one score; got an empty sequence")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name} must hold finite numbers; question {bad[0]} has {array[bad[0]]!r}")
    return array


def _paired(a: Sequence[float], b: Sequence[float], a_name: str = "a",
            b_name: str = "b") -> tuple[np.ndarray, np.ndarray]:
    """Both score lists checked, and checked to cover the same number of questions."""
    first, second = _scores(a_name, a), _scores(b_name, b)
    if first.size != second.size:
        raise ValueError(f"{a_name} and {b_name} must score the same questions; "
                         f"{a_name} has {first.size} scores, {b_name} has {second.size}")
    return first, second


def _names(names: Sequence[str]) -> tuple[str, str]:
    if isinstance(names, str) or len(names) != 2 or not all(isinstance(x, str) and x.strip() for x in names):
        raise ValueError(f"names must be two non-empty strings (system a, system b); got {names!r}")
    return names[0], names[1]


def _confidence(confidence: float) -> Fraction:
    """The interval's level as an exact fraction (0.95 -> 19/20)."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number strictly between 0 and 1; got {confidence!r}")
    return Fraction(confidence).limit_denominator(10 ** 6)


def exact_mean(values: Sequence[float]) -> float:
    """The exact mean of the floats given, rounded once (no summation-order error)."""
    array = _scores("values", values)
    return float(sum(map(Fraction, array.tolist())) / array.size)


# ---- differences as whole numbers --------------------------------------------------------------

@dataclass(frozen=True)
class _Differences:
    """Per-question differences a - b as int64 multiples of ``unit``; ``slack`` units of rounding are forgiven."""

    units: np.ndarray
    unit: Fraction
    slack: int


def _as_fraction(value: float) -> Fraction | None:
    """The fraction p/q (q <= LARGEST_DENOMINATOR) whose nearest float is ``value``, or None."""
    guess = Fraction(value).limit_denominator(LARGEST_DENOMINATOR)
    return guess if float(guess) == value else None


def _differences(a: np.ndarray, b: np.ndarray) -> _Differences:
    """Exact integer differences over a common denominator when the scores allow it, else 32-bit rounding."""
    n = a.size
    fractions: dict[float, Fraction] = {}
    for value in set(a.tolist()) | set(b.tolist()):
        fraction = _as_fraction(value)
        if fraction is None:
            break
        fractions[value] = fraction
    else:
        denominator = math.lcm(*(f.denominator for f in fractions.values()))
        units = [int((fractions[x] - fractions[y]) * denominator) for x, y in zip(a.tolist(), b.tolist())]
        if 2 * n * max(map(abs, units)) < _INTEGER_ROOM:
            return _Differences(np.array(units, dtype=np.int64), Fraction(1, denominator), 0)
    largest = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    exponent = math.frexp(largest)[1] - SIGNIFICANT_BITS        # one unit = 2**exponent
    units = np.rint(np.ldexp(a - b, -exponent)).astype(np.int64)
    if 2 * n * (int(np.max(np.abs(units))) + 1) >= _INTEGER_ROOM:
        raise ValueError(f"a and b hold too many questions ({n}) to resample exactly")
    # each question is off by at most half a unit; a redraw counts a question up to n times
    return _Differences(units, Fraction(2) ** exponent, 2 * n)


def _at_least_as_far(statistics: np.ndarray, observed: int, slack: int) -> int:
    """How many of ``statistics`` are at least as far from zero as ``observed`` (less ``slack`` units)."""
    return int(np.count_nonzero(np.abs(statistics) >= abs(observed) - slack))


def _rows_per_block(columns: int) -> int:
    return max(1, _ENTRIES_PER_BLOCK // max(1, columns))


# ---- the two procedures ------------------------------------------------------------------------

def _bootstrap_sums(units: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Sum of the differences over each of ``resamples`` redraws of the questions (with replacement)."""
    n, step, sums = units.size, _rows_per_block(units.size), np.empty(resamples, dtype=np.int64)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        picks = rng.integers(0, n, size=(rows, n))
        sums[start:start + rows] = units[picks].sum(axis=1)
    return sums


def _percentile(ordered: np.ndarray, share: Fraction) -> Fraction:
    """The ``share`` quantile of sorted integers, interpolated linearly between neighbours (numpy's default)."""
    position = share * (ordered.size - 1)
    below = math.floor(position)
    above = min(below + 1, ordered.size - 1)
    return int(ordered[below]) + (int(ordered[above]) - int(ordered[below])) * (position - below)


def _compared(first: np.ndarray, second: np.ndarray, names: Sequence[str], low: float, high: float,
              p_value: float, method: str, level: Fraction) -> PairedComparison:
    """The result, with both means and their difference computed exactly from the floats given."""
    name_a, name_b = _names(names)
    total_a, total_b, n = sum(map(Fraction, first.tolist())), sum(map(Fraction, second.tolist())), first.size
    return PairedComparison(name_a, name_b, n, float(total_a / n), float(total_b / n),
                            float((total_a - total_b) / n), low, high, p_value, method, float(level))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], names: Sequence[str] = ("A", "B"), *,
                     resamples: int = 10_000, seed: int = COURSE_SEED, confidence: float = 0.95) -> PairedComparison:
    """Paired bootstrap of the mean difference a - b over the same questions: percentile interval and shift p-value.

    Each of ``resamples`` redraws picks ``n`` questions with replacement (the same for both systems).
    The interval runs between the (1 -+ confidence) / 2 quantiles of the redrawn means, interpolated as
    numpy's ``percentile`` does. Shift p-value: p = (1 + the number of redraws whose mean minus the
    observed mean is at least as far from zero as the observed mean) / (resamples + 1).
    """
    first, second = _paired(a, b)
    _names(names)
    resamples = check_positive_int("resamples", resamples)
    seed = check_seed(seed, "seed")
    level, diff = _confidence(confidence), _differences(first, second)
    n, observed = diff.units.size, int(diff.units.sum())
    sums = _bootstrap_sums(diff.units, resamples, np.random.default_rng(seed))
    p_value = (1 + _at_least_as_far(sums - observed, observed, diff.slack)) / (resamples + 1)
    ordered, tail = np.sort(sums), (1 - level) / 2
    low, high = (float(_percentile(ordered, share) * diff.unit / n) for share in (tail, 1 - tail))
    method = f"{float(level):.0%} paired bootstrap interval ({resamples} resamples), shift p-value"
    return _compared(first, second, names, low, high, p_value, method, level)


def paired_randomisation(a: Sequence[float], b: Sequence[float], *, permutations: int = 20_000,
                         seed: int = COURSE_SEED) -> float:
    """Two-sided p-value of the sign-flip randomisation test of the mean difference a - b ("fisher" in ranx).

    Under the null hypothesis each question's difference is as likely to carry either sign; p is the
    share of sign patterns whose mean difference is at least as far from zero as the observed one.
    Questions with no difference are left out. With m <= 16 questions that differ all 2**m patterns
    are enumerated (exact, never 0); otherwise ``permutations`` random patterns are drawn and
    p = (1 + the number at least as extreme) / (permutations + 1).
    """
    first, second = _paired(a, b)
    permutations = check_positive_int("permutations", permutations)
    diff = _differences(first, second)
    moving = replace(diff, units=diff.units[diff.units != 0])   # a question with no difference is the same flipped
    return _sign_patterns(moving, permutations, check_seed(seed, "seed")).p_value


def compare(a: Sequence[float], b: Sequence[float], names: Sequence[str] = ("A", "B"), *,
            resamples: int = 10_000, permutations: int = 20_000, seed: int = COURSE_SEED,
            confidence: float = 0.95) -> PairedComparison:
    """The course's paired comparison: one test gives both the p-value and the interval, so the two agree.

    Scores all 0 or 1 (hit@k): McNemar's p (no continuity correction) and Tango's score interval
    (``paired_proportions``). Otherwise the sign-flip randomisation test ("fisher" in ranx; all 2**n
    sign patterns when n <= 16 questions, else ``permutations`` random ones plus the observed) and its
    inversion on the same patterns (``_SignPatterns``). ``method`` says which. Both reject a shift when
    its p <= 1 - confidence, so the interval leaves zero out exactly when p <= 1 - confidence.
    ``resamples`` is accepted for backward compatibility and ignored (``paired_bootstrap`` is the bootstrap).
    """
    return _compare(a, b, names, resamples=resamples, permutations=permutations, seed=seed,
                    confidence=confidence)[0]


def _compare(a: Sequence[float], b: Sequence[float], names: Sequence[str] = ("A", "B"), *,
             resamples: int = 10_000, permutations: int = 20_000, seed: int = COURSE_SEED,
             confidence: float = 0.95) -> tuple[PairedComparison, PairedProportions | _SignPatterns]:
    """``compare``'s result and the test behind it, to read its interval at another level."""
    check_positive_int("resamples", resamples)
    first, second = _paired(a, b, "a", "b")
    name_a, name_b = _names(names)
    permutations = check_positive_int("permutations", permutations)
    seed = check_seed(seed, "seed")
    level = _confidence(confidence)
    if is_binary(first) and is_binary(second):
        test = PairedProportions.from_scores(first, second)
        counts = f"only {name_a} right on {test.b}, only {name_b} on {test.c} of {test.n} questions"
        method = f"paired proportions ({counts}): McNemar's p and its inverted {float(level):.0%} Tango score interval"
    else:
        test = _sign_patterns(_differences(first, second), permutations, seed)
        patterns = (f"exact over all {2 ** first.size} sign patterns" if test.exact
                    else f"{permutations} random sign patterns of all {first.size} questions")
        method = f"sign-flip randomisation ({patterns}): p-value and its inverted {float(level):.0%} interval"
    low, high = test.interval(1 - level)
    return _compared(first, second, names, low, high, test.p_value, method, level), test


@dataclass(frozen=True, eq=False)
class _SignPatterns:
    """The sign patterns of ``compare``'s randomisation test, kept to read its interval at any level.

    With differences ``u`` (whole units) summing to ``D`` over ``n`` questions and a pattern of signs
    ``s`` with ``A = s . u``, ``S = sum(s)``: after shifting every difference by ``delta`` the pattern
    is at least as extreme as the observation when ``|A - delta S| >= |D - n delta|``, i.e. for
    ``delta`` between ``(D - A) / (n - S)`` and ``(D + A) / (n + S)`` (always, for the all-plus and
    all-minus patterns). A shift is kept at ``alpha`` when its p is above ``alpha``, i.e. when at least
    ``need`` patterns count: the ends are the ``need``-th smallest lower and largest upper end.
    """

    diff: _Differences
    a_sums: np.ndarray
    s_sums: np.ndarray
    exact: bool                 # all 2**n patterns; else random ones (and the observed counts once more)
    extreme: int                # patterns at least as extreme as the observation

    @property
    def p_exact(self) -> Fraction:
        random = not self.exact                      # random patterns count the observed one once more
        return Fraction(self.extreme + random, self.a_sums.size + random)

    @property
    def p_value(self) -> float:
        return float(self.p_exact)

    def rejects(self, alpha: Fraction) -> bool:
        return self.p_exact <= alpha

    def level_at_p(self, rejects: bool) -> Fraction:
        """The ``alpha`` nearest p at which zero is rejected (``rejects``) or kept."""
        return self.p_exact if rejects else self.p_exact - Fraction(1, 2 * (self.a_sums.size + 1))

    def interval(self, alpha: Fraction) -> tuple[float, float]:
        """The shifts kept at ``alpha`` (0 < alpha < 1), ends as exact fractions rounded once."""
        a_sums, s_sums, n, total = self.a_sums, self.s_sums, self.diff.units.size, int(self.diff.units.sum())
        patterns = a_sums.size + (not self.exact)
        need = math.floor(alpha * patterns - (not self.exact)) + 1  # fewest patterns whose p is above alpha
        if need <= 0:
            return -math.inf, math.inf
        numerators, denominators = np.stack([total - a_sums, total + a_sums]), np.stack([n - s_sums, n + s_sums])
        with np.errstate(divide="ignore", invalid="ignore"):
            ends = np.where(denominators == 0, np.nan, numerators / np.where(denominators == 0, 1, denominators))
        always = np.isnan(ends).any(axis=0)                        # the all-plus or all-minus pattern
        lows, highs = np.where(always, -np.inf, ends.min(axis=0)), np.where(always, np.inf, ends.max(axis=0))

        def exact(index: int, value: float) -> float:
            if math.isinf(value):
                return value
            row = 0 if ends[0, index] == value else 1
            return float(Fraction(int(numerators[row, index]), int(denominators[row, index])) * self.diff.unit)

        low_at, high_at = np.argsort(lows, kind="stable")[need - 1], np.argsort(-highs, kind="stable")[need - 1]
        return exact(low_at, lows[low_at]), exact(high_at, highs[high_at])


def _sign_patterns(diff: _Differences, permutations: int, seed: int) -> _SignPatterns:
    """All 2**n sign patterns of the ``n`` differences when n <= 16, else ``permutations`` random ones."""
    units, n = diff.units, diff.units.size
    if n <= EXACT_RANDOMISATION_LIMIT:                        # every pattern, the observed one among them
        bits = (np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)) & 1
        a_sums, s_sums = (1 - 2 * bits) @ units, (1 - 2 * bits).sum(axis=1)
    else:
        rng = np.random.default_rng(seed)
        a_parts, s_parts, step = [], [], _rows_per_block(n)
        for start in range(0, permutations, step):
            rows = min(step, permutations - start)
            signs = 1 - 2 * rng.integers(0, 2, size=(rows, n), dtype=np.int64)
            a_parts.append(signs @ units)
            s_parts.append(signs.sum(axis=1))
        a_sums, s_sums = np.concatenate(a_parts), np.concatenate(s_parts)
    extreme = _at_least_as_far(a_sums, int(units.sum()), diff.slack)
    return _SignPatterns(diff, a_sums, s_sums, n <= EXACT_RANDOMISATION_LIMIT, extreme)


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest p times (m - i + 1), kept non-decreasing, capped at 1."""
    values = [check_number(f"p_values[{i}]", p, 0.0, 1.0) for i, p in enumerate(p_values)]
    adjusted, running = [0.0] * len(values), 0.0
    for rank, i in enumerate(sorted(range(len(values)), key=lambda j: (values[j], j))):
        running = max(running, min(1.0, (len(values) - rank) * values[i]))
        adjusted[i] = running
    return adjusted


def compare_to_baseline(baseline: Sequence[float], systems: Mapping[str, Sequence[float]],
                        baseline_name: str = "baseline", *, holm: bool = True, resamples: int = 10_000,
                        permutations: int = 20_000, seed: int = COURSE_SEED,
                        confidence: float = 0.95) -> list[PairedComparison]:
    """``compare(system, baseline)`` for each system, in the mapping's order; judged as a ``Family`` when ``holm``.

    Each comparison uses the same seed. Holm's adjustment (at 1 - ``confidence``) keeps the chance of
    any false "beats" at most that over the family; each interval is read at the matching level.
    """
    if not isinstance(systems, Mapping) or not systems:
        raise ValueError("systems must be a non-empty mapping of system name -> scores")
    family = Family(f"against {baseline_name}", alpha=float(1 - _confidence(confidence)))
    for name, scores in systems.items():
        _paired(scores, baseline, f"systems[{name!r}]", "baseline")
        family.add(name, scores, baseline, (name, baseline_name), resamples=resamples, permutations=permutations,
                   seed=seed, confidence=confidence)
    return family.adjusted if holm and len(family) > 1 else list(family.raw)


class Family:
    """The comparisons that answer one question a section asks, judged together (Holm over the family).

    Each ``add`` runs ``compare`` (kept in ``raw``); every verdict follows the Holm-adjusted p, so the
    chance of any false "beats" stays at most ``alpha``. ``adjusted`` and ``family[label]`` carry the
    Holm p and the interval at the level matching Holm's step-down (``confidence``): with the p-values
    ascending (ties by insertion) and j* the first rank j where p_(j) > alpha / (m - j + 1) (m + 1 if
    none), rank i is read at 1 - alpha / (m - min(i, j*) + 1). Both tests reject a shift when its p is
    at most the level's alpha, so the interval leaves zero out exactly when the Holm p <= alpha, i.e.
    when the verdict names a winner; a family of one is read at 1 - alpha (95%). Printed: one row per
    comparison with difference, p, Holm p, level, the interval at that level and the verdict.
    """

    def __init__(self, question: str, alpha: float = 0.05):
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"question must be a non-empty string naming what the family asks; got {question!r}")
        self.question = question
        self.alpha = check_number("alpha", alpha, 0.0, 1.0)
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be strictly between 0 and 1; got {alpha!r}")
        self.labels, self.raw, self._tests, self._adjusted = [], [], [], []

    def add(self, label: str, a: Sequence[float], b: Sequence[float], names: Sequence[str] = ("A", "B"),
            **options) -> PairedComparison:
        """Compare ``a`` with ``b`` (``compare``'s options) under ``label``; the raw comparison."""
        if not isinstance(label, str) or not label.strip() or label in self.labels:
            raise ValueError(f"label must be a new non-empty string; got {label!r} (have {self.labels})")
        result, test = _compare(a, b, names, **options)
        self.labels.append(label)
        self.raw.append(result)
        self._tests.append(test)
        return result

    def __len__(self) -> int:
        return len(self.raw)

    @property
    def adjusted(self) -> list[PairedComparison]:
        """The comparisons with Holm-adjusted p and each interval at the level matching Holm's step-down.

        ``stop`` is the first 0-based rank (by p, then insertion) whose p times (m - rank) exceeds alpha,
        computed as ``holm_adjusted`` does; rank r is read at alpha / (m - min(r, stop)). Should float
        rounding put a p within an ulp of its level on the wrong side, the level moves to p itself.
        """
        m, raw = len(self.raw), self.raw
        if len(self._adjusted) != m:
            held, order = holm_adjusted([c.p_value for c in raw]), sorted(range(m), key=lambda j: (raw[j].p_value, j))
            stop = next((r for r, j in enumerate(order) if min(1.0, (m - r) * raw[j].p_value) > self.alpha), m)
            self._adjusted = list(raw)
            for rank, j in enumerate(order):
                level, test = Fraction(self.alpha).limit_denominator(10 ** 6) / (m - min(rank, stop)), self._tests[j]
                if test.rejects(level) != (held[j] <= self.alpha):
                    level = test.level_at_p(held[j] <= self.alpha)
                low, high = test.interval(level)
                note = f"; p Holm-adjusted over {m} comparisons, interval at {level_text(float(1 - level))}"
                self._adjusted[j] = replace(raw[j], low=low, high=high, p_value=held[j], confidence=float(1 - level),
                                            method=raw[j].method + note * (m > 1))
        return list(self._adjusted)

    def __getitem__(self, label: str) -> PairedComparison:
        """The Holm-adjusted comparison ``label``."""
        if label not in self.labels:
            raise KeyError(f"no comparison {label!r} in family {self.question!r}; have {self.labels}")
        return self.adjusted[self.labels.index(label)]

    def verdict(self, label: str) -> str:
        """The verdict of comparison ``label``, from its Holm-adjusted p."""
        return self[label].verdict(self.alpha)

    def table(self) -> str:
        """The family as printed: its question, then one row per comparison, its interval at its Holm level."""
        width = max([10, *(len(label) for label in self.labels)])
        lines = [f"{self.question}: {len(self)} comparison{'s' * (len(self) != 1)}, verdicts at Holm-adjusted "
                 f"p <= {self.alpha:g}",
                 f"{'comparison':<{width}}  {'A - B':>7}       p  Holm p   level  {'interval':<16}  verdict"]
        for label, raw, held in zip(self.labels, self.raw, self.adjusted):
            interval = f"[{signed(held.low)}, {signed(held.high)}]"
            lines.append(f"{label:<{width}}  {signed(raw.difference):>7}  {raw.p_value:6.3f}  {held.p_value:6.3f}  "
                         f"{level_text(held.confidence):>6}  {interval:<16}  {held.verdict(self.alpha)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


__all__ = ["EXACT_RANDOMISATION_LIMIT", "Family", "NO_DIFFERENCE", "PairedComparison", "compare", "compare_to_baseline",
           "exact_mean", "holm_adjusted", "level_text", "p_text", "paired_bootstrap", "paired_randomisation", "signed"]
