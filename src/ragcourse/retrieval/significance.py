"""Paired comparisons of two retrieval systems over the same questions: a 95% interval and a p-value.

When two systems answer the same questions, each question gives one score per system (hit@1,
Recall@5, reciprocal rank, ...), and the honest unit of comparison is the question: for each one,
the first system's score minus the second's. A paired test asks how large the mean of these
differences would plausibly be if the two systems were interchangeable. The randomisation test
swaps the two systems' scores on each question at random (a sign flip of that question's
difference) and counts how often the shuffled mean difference is at least as far from zero as
the real one; that share is the p-value. The interval comes from the same test, inverted: it
holds every shift of the differences that the test would not reject, so it leaves zero out
exactly when p <= 0.05 and the two never disagree (``compare``). The bootstrap, which redraws
the questions themselves with replacement, is here too (``paired_bootstrap``) and is checked
against scipy's, but no lab decides with it. ``Family`` holds the comparisons that answer one
question and judges them together, with Holm's adjustment. Pairing matters because questions
differ far more among themselves than systems do on one question; comparing the same questions
removes that spread. When the p-value is not small, or the interval straddles zero, the
finding is "no difference this set can detect": not that the systems are equal, but that this
many questions cannot tell them apart, and any claim that one is better would be reading noise.
The interval says how large a difference the set could still be hiding.

Every number here is the same, bit for bit, for a given seed on any machine. Each system's mean
and the mean difference are the exact means of the floats given, rounded once. The resampling
works on whole numbers, so no sum depends on the order it is added in: when every score is the
float nearest a fraction p/q with q <= 10 000 and the denominators share a small enough common
multiple (hit@1, Recall@k, reciprocal rank over the first few dozen ranks), each difference is
an exact integer multiple of one over that multiple, and every resampled sum, every "at least as
extreme" and every interval endpoint is exact (rounded once at the end). Other scores (nDCG,
cosines) are rounded to 32 significant bits of the largest score; a resampled statistic then
counts as "at least as extreme" when it falls short by less than that rounding could explain,
so ties that float arithmetic would break by chance still count as ties. Random numbers come
from numpy's ``Generator`` (PCG64) seeded with ``seed``; the draws depend only on the seed and
the sizes (questions, resamples), not on the machine, though a numpy release may change them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

from .. import COURSE_SEED
from ..lesson.params import check_number, check_positive_int, check_seed

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
        if self.p_value <= alpha and self.difference > 0:
            return f"{self.name_a} beats {self.name_b}"
        if self.p_value <= alpha and self.difference < 0:
            return f"{self.name_b} beats {self.name_a}"
        return NO_DIFFERENCE

    def summary_line(self, alpha: float = 0.05) -> str:
        """One line for a notebook, to 3 decimals: ``A - B: +0.040 [−0.020, +0.100], p = 0.210 (n = 70): ...``."""
        return (f"{self.name_a} - {self.name_b}: {signed(self.difference)} "
                f"[{signed(self.low)}, {signed(self.high)}], {p_text(self.p_value)} (n = {self.n}): "
                f"{self.verdict(alpha)}")

    def __str__(self) -> str:
        return self.summary_line()


def signed(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` decimals with its sign (+ or the minus sign −); one that rounds to 0 reads 0.000."""
    text = f"{value:+.{digits}f}"
    if float(text) == 0:
        return text[1:]
    return text.replace("-", "\u2212")


def p_text(p_value: float, digits: int = 3) -> str:
    """``p = 0.210`` to ``digits`` decimals, or ``p < 0.001`` when it would round to zero."""
    if round(p_value, digits) == 0:
        return f"p < {10.0 ** -digits:.{digits}f}"
    return f"p = {p_value:.{digits}f}"


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
    n = units.size
    sums = np.empty(resamples, dtype=np.int64)
    step = _rows_per_block(n)
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


def _bootstrap(diff: _Differences, resamples: int, seed: int,
               confidence: Fraction) -> tuple[float, float, float]:
    """Interval endpoints and shift p-value of the paired bootstrap (see ``paired_bootstrap``)."""
    n = diff.units.size
    observed = int(diff.units.sum())
    sums = _bootstrap_sums(diff.units, resamples, np.random.default_rng(seed))
    extreme = _at_least_as_far(sums - observed, observed, diff.slack)
    ordered = np.sort(sums)
    tail = (1 - confidence) / 2
    low = float(_percentile(ordered, tail) * diff.unit / n)
    high = float(_percentile(ordered, 1 - tail) * diff.unit / n)
    return low, high, (1 + extreme) / (resamples + 1)


def _randomisation(diff: _Differences, permutations: int, seed: int) -> tuple[float, str]:
    """Two-sided sign-flip p-value and a few words on how it was reached (see ``paired_randomisation``)."""
    moving = diff.units[diff.units != 0]                # a question with no difference is the same flipped
    m = moving.size
    observed = int(moving.sum())
    if m <= EXACT_RANDOMISATION_LIMIT:
        patterns = (np.arange(2 ** m, dtype=np.int64)[:, None] >> np.arange(m, dtype=np.int64)) & 1
        statistics = observed - 2 * (patterns @ moving)  # flipping question i subtracts 2 d_i
        count = _at_least_as_far(statistics, observed, diff.slack)
        return count / 2 ** m, f"exact over all {2 ** m} sign patterns"
    rng = np.random.default_rng(seed)
    count, step = 0, _rows_per_block(m)
    for start in range(0, permutations, step):
        rows = min(step, permutations - start)
        flips = rng.integers(0, 2, size=(rows, m), dtype=np.int64)
        count += _at_least_as_far(observed - 2 * (flips @ moving), observed, diff.slack)
    return (1 + count) / (permutations + 1), f"{permutations} random sign patterns"


def _compared(first: np.ndarray, second: np.ndarray, names: Sequence[str], low: float, high: float,
              p_value: float, method: str, level: Fraction) -> PairedComparison:
    """The result, with both means and their difference computed exactly from the floats given."""
    name_a, name_b = _names(names)
    total_a, total_b = sum(map(Fraction, first.tolist())), sum(map(Fraction, second.tolist()))
    n = first.size
    return PairedComparison(name_a, name_b, n, float(total_a / n), float(total_b / n),
                            float((total_a - total_b) / n), low, high, p_value, method, float(level))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], names: Sequence[str] = ("A", "B"), *,
                     resamples: int = 10_000, seed: int = COURSE_SEED, confidence: float = 0.95) -> PairedComparison:
    """Paired bootstrap of the mean difference a - b over the same questions: percentile interval and shift p-value.

    Each of ``resamples`` redraws picks ``n`` questions with replacement (the same picks for both
    systems) and takes the mean difference there. The interval runs between the (1 - confidence) / 2
    and (1 + confidence) / 2 quantiles of those means, interpolated linearly between neighbours as
    numpy's ``percentile`` does. The p-value uses the shift method: the redrawn means, moved so that
    their centre is zero, imitate a world with no difference; p = (1 + the number of redraws whose
    mean minus the observed mean is at least as far from zero as the observed mean) / (resamples + 1).
    """
    first, second = _paired(a, b)
    _names(names)
    resamples = check_positive_int("resamples", resamples)
    seed = check_seed(seed, "seed")
    level = _confidence(confidence)
    low, high, p_value = _bootstrap(_differences(first, second), resamples, seed, level)
    method = f"{float(level):.0%} paired bootstrap interval ({resamples} resamples), shift p-value"
    return _compared(first, second, names, low, high, p_value, method, level)


def paired_randomisation(a: Sequence[float], b: Sequence[float], *, permutations: int = 20_000,
                         seed: int = COURSE_SEED) -> float:
    """Two-sided p-value of the sign-flip randomisation test of the mean difference a - b ("fisher" in ranx).

    Under the null hypothesis the two systems are interchangeable on every question, so each
    question's difference is as likely to carry either sign. The p-value is the share of sign
    patterns whose mean difference is at least as far from zero as the observed one. Questions
    with no difference are left out (flipping them changes nothing). With m questions that
    differ and m <= 16, all 2**m patterns are enumerated and the p-value is exact (the observed
    pattern is among them, so it is never 0). Otherwise ``permutations`` patterns are drawn at
    random and p = (1 + the number at least as extreme) / (permutations + 1).
    """
    first, second = _paired(a, b)
    permutations = check_positive_int("permutations", permutations)
    return _randomisation(_differences(first, second), permutations, check_seed(seed, "seed"))[0]


def compare(a: Sequence[float], b: Sequence[float], names: Sequence[str] = ("A", "B"), *,
            resamples: int = 10_000, permutations: int = 20_000, seed: int = COURSE_SEED,
            confidence: float = 0.95) -> PairedComparison:
    """The course's paired comparison: one procedure, the sign-flip randomisation test, gives both p and interval.

    The p-value is the share of sign patterns (each question's difference kept or flipped; all
    2**n patterns when n <= 16 questions, else ``permutations`` random ones plus the observed) whose mean difference is at least as far
    from zero as the observed one; it is the test ranx runs as "fisher" and needs no large-sample
    approximation. The interval is the same test inverted: the shifts ``delta`` for which the
    differences minus ``delta`` would not be rejected at ``1 - confidence``, on the very same sign
    patterns. So the interval leaves zero out exactly when p <= 1 - confidence, and the two can
    never disagree in print. (For each pattern the shifts at which it is at least as extreme form
    one closed interval containing the observed mean, so the set of shifts not rejected is an
    interval too, and its ends are found exactly, as fractions.) ``resamples`` is accepted for
    backward compatibility and ignored: ``paired_bootstrap`` is the bootstrap.
    """
    check_positive_int("resamples", resamples)
    first, second = _paired(a, b, "a", "b")
    _names(names)
    permutations = check_positive_int("permutations", permutations)
    seed = check_seed(seed, "seed")
    level = _confidence(confidence)
    low, high, p_value = _inverted_randomisation(_differences(first, second), permutations, seed, 1 - level)
    patterns = (f"exact over all {2 ** first.size} sign patterns" if first.size <= EXACT_RANDOMISATION_LIMIT
                else f"{permutations} random sign patterns of all {first.size} questions")
    method = f"sign-flip randomisation ({patterns}): p-value and its inverted {float(level):.0%} interval"
    return _compared(first, second, names, low, high, p_value, method, level)


def _inverted_randomisation(diff: _Differences, permutations: int, seed: int,
                            alpha: Fraction) -> tuple[float, float, float]:
    """(low, high, p): the sign-flip p-value at zero and the shifts it does not reject at ``alpha``.

    With per-question differences ``u`` (whole units), their sum ``D`` over ``n`` questions, and a
    pattern of signs ``s`` with ``A = s . u`` and ``S = sum(s)``: shifting every difference by
    ``delta``, the pattern is at least as extreme as the observation when
    ``|A - delta S| >= |D - n delta|``, which holds exactly for ``delta`` between
    ``(D - A) / (n - S)`` and ``(D + A) / (n + S)`` (always, for the all-plus and all-minus
    patterns). A shift is kept when ``(1 + patterns at least as extreme) / (permutations + 1) >
    alpha``, i.e. when at least ``need`` patterns count; the lowest kept shift is the ``need``-th
    smallest lower end, the highest the ``need``-th largest upper end.
    """
    units, n = diff.units, diff.units.size
    total = int(units.sum())
    if n <= EXACT_RANDOMISATION_LIMIT:                        # every pattern, the observed one among them
        bits = (np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)) & 1
        a_sums, s_sums = (1 - 2 * bits) @ units, (1 - 2 * bits).sum(axis=1)
        extreme = _at_least_as_far(a_sums, total, diff.slack)
        p_value, permutations = extreme / 2 ** n, 2 ** n
        need = math.floor(alpha * 2 ** n) + 1                 # smallest count c with c / 2**n > alpha
    else:
        rng = np.random.default_rng(seed)
        a_parts, s_parts, step = [], [], _rows_per_block(n)
        for start in range(0, permutations, step):
            rows = min(step, permutations - start)
            signs = 1 - 2 * rng.integers(0, 2, size=(rows, n), dtype=np.int64)
            a_parts.append(signs @ units)
            s_parts.append(signs.sum(axis=1))
        a_sums, s_sums = np.concatenate(a_parts), np.concatenate(s_parts)
        extreme = _at_least_as_far(a_sums, total, diff.slack)
        p_value = (1 + extreme) / (permutations + 1)
        need = math.floor(alpha * (permutations + 1) - 1) + 1  # smallest count c with (1 + c) / (P + 1) > alpha
    if need <= 0:
        return -math.inf, math.inf, p_value
    first = np.stack([total - a_sums, n - s_sums])            # numerator, denominator of (D - A) / (n - S)
    second = np.stack([total + a_sums, n + s_sums])           # of (D + A) / (n + S)
    ends = []
    for numerators, denominators in ((first[0], first[1]), (second[0], second[1])):
        with np.errstate(divide="ignore", invalid="ignore"):
            ends.append(np.where(denominators == 0, np.nan, numerators / np.where(denominators == 0, 1, denominators)))
    always = np.isnan(ends[0]) | np.isnan(ends[1])            # the all-plus or all-minus pattern
    lows = np.where(always, -np.inf, np.fmin(ends[0], ends[1]))
    highs = np.where(always, np.inf, np.fmax(ends[0], ends[1]))
    if need > permutations:
        mean = Fraction(total, n) * diff.unit
        return float(mean), float(mean), p_value
    low = _exact_end(np.argsort(lows, kind="stable")[need - 1], lows, first, second, ends)
    high = _exact_end(np.argsort(-highs, kind="stable")[need - 1], highs, first, second, ends)
    return float(low * diff.unit), float(high * diff.unit), p_value


def _exact_end(index: int, chosen: np.ndarray, first: np.ndarray, second: np.ndarray, ends: list) -> Fraction:
    """The end ``chosen[index]`` as an exact fraction of units per question (or an infinite float)."""
    value = chosen[index]
    if math.isinf(value):
        return value
    numerators, denominators = (first, second)[0 if ends[0][index] == value else 1]
    return Fraction(int(numerators[index]), int(denominators[index]))


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
    """``compare(system, baseline)`` for each system, in the mapping's order; p-values Holm-adjusted when ``holm``.

    Each comparison uses the same seed, so all systems are judged on the same redraws of the
    questions. With several systems, one of them beating the baseline by luck grows likelier;
    Holm's adjustment keeps the chance of any false "beats" at most ``alpha`` over the family.
    """
    if not isinstance(systems, Mapping) or not systems:
        raise ValueError("systems must be a non-empty mapping of system name -> scores")
    comparisons = []
    for name, scores in systems.items():
        _paired(scores, baseline, f"systems[{name!r}]", "baseline")
        comparisons.append(compare(scores, baseline, (name, baseline_name), resamples=resamples,
                                   permutations=permutations, seed=seed, confidence=confidence))
    if not holm or len(comparisons) == 1:
        return comparisons
    adjusted = holm_adjusted([c.p_value for c in comparisons])
    note = f"; p Holm-adjusted over {len(comparisons)} comparisons"
    return [replace(c, p_value=p, method=c.method + note) for c, p in zip(comparisons, adjusted)]


class Family:
    """The comparisons that answer one question a section asks, judged together (Holm over the family).

    Each ``add`` runs ``compare`` (randomisation p and its inverted interval, which agree with
    each other); the verdict of every comparison follows its Holm-adjusted p, so the chance of any
    false "beats" in the family stays at most ``alpha``. Printing the family prints one row per
    comparison: difference, interval, p, Holm p, verdict.
    """

    def __init__(self, question: str, alpha: float = 0.05):
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"question must be a non-empty string naming what the family asks; got {question!r}")
        self.question = question
        self.alpha = check_number("alpha", alpha, 0.0, 1.0)
        self.labels: list[str] = []
        self.raw: list[PairedComparison] = []

    def add(self, label: str, a: Sequence[float], b: Sequence[float], names: Sequence[str] = ("A", "B"),
            **options) -> PairedComparison:
        """Compare ``a`` with ``b`` (``compare``'s options) under ``label``; the raw comparison."""
        if not isinstance(label, str) or not label.strip() or label in self.labels:
            raise ValueError(f"label must be a new non-empty string; got {label!r} (have {self.labels})")
        result = compare(a, b, names, **options)
        self.labels.append(label)
        self.raw.append(result)
        return result

    def __len__(self) -> int:
        return len(self.raw)

    @property
    def adjusted(self) -> list[PairedComparison]:
        """The comparisons with Holm-adjusted p-values (intervals and differences as computed)."""
        held = holm_adjusted([c.p_value for c in self.raw]) if self.raw else []
        return [replace(c, p_value=p) for c, p in zip(self.raw, held)]

    def __getitem__(self, label: str) -> PairedComparison:
        """The Holm-adjusted comparison ``label``."""
        if label not in self.labels:
            raise KeyError(f"no comparison {label!r} in family {self.question!r}; have {self.labels}")
        return self.adjusted[self.labels.index(label)]

    def verdict(self, label: str) -> str:
        """The verdict of comparison ``label``, from its Holm-adjusted p."""
        return self[label].verdict(self.alpha)

    def table(self) -> str:
        """The family as printed: its question, then one row per comparison."""
        width = max([10, *(len(label) for label in self.labels)])
        lines = [f"{self.question}: {len(self)} comparison{'s' * (len(self) != 1)}, verdicts at Holm-adjusted "
                 f"p <= {self.alpha:g}",
                 f"{'comparison':<{width}}  {'A - B':>7}  {'95% interval':<17}  {'p':>6}  {'Holm p':>6}  verdict"]
        for label, raw, held in zip(self.labels, self.raw, self.adjusted):
            lines.append(f"{label:<{width}}  {signed(raw.difference):>7}  "
                         f"[{signed(raw.low)}, {signed(raw.high)}]".ljust(width + 29)
                         + f"  {raw.p_value:6.3f}  {held.p_value:6.3f}  {held.verdict(self.alpha)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


__all__ = ["EXACT_RANDOMISATION_LIMIT", "Family", "NO_DIFFERENCE", "PairedComparison", "compare", "compare_to_baseline",
           "exact_mean", "holm_adjusted", "p_text", "paired_bootstrap", "paired_randomisation", "signed"]
