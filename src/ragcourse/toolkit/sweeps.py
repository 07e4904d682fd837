"""Seed-sweep summaries stored with the package, so a lesson can print them without running a sweep.

A lesson that reasons about noise (how far a rebuild or a re-run moves a number) backs the claim
with the course's own sweep over many seeds, computed once with the batch engine::

    python -m ragcourse sweep --seeds 20260218-20260237 --out build/sweep 4 5 7 12 13
    python -m ragcourse.toolkit.sweeps build/sweep/sweep.csv

The second command keeps, from ``sweep.csv``, the summary columns (mean, half-width of the 95%
interval of the mean, minimum, maximum, number of seeds) of the measures listed in
``STORED_MEASURES`` and writes them to ``data/sweeps.json``. A notebook reads them with
``stored_sweep`` and prints them with ``print_stored_sweep``; neither runs anything.
"""
from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "sweeps.json"
SWEEP_SEEDS = "20260218-20260237"

# lesson -> the headline measures whose spread over seeds a lesson's prose relies on
STORED_MEASURES: dict[str, tuple[str, ...]] = {
    "04": ("two-build difference", "bucket recall"),
    "05": ("largest two-build difference under a filter",),
    "07": ("threshold",),
    "11": ("run-to-run recall difference",),
    "12": ("run-to-run precision", "run-to-run generation"),
    "13": ("run-to-run change", "middle order change"),
}


@dataclass(frozen=True)
class SweepSummary:
    """One measure over the sweep's seeds: ``mean``, ``ci95`` (half-width), ``low``/``high`` (min, max), ``n``."""

    lesson: str
    measure: str
    mean: float
    ci95: float
    low: float
    high: float
    n: int

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% interval of the mean, Student t with n - 1 degrees of freedom."""
        return self.mean - self.ci95, self.mean + self.ci95


def stored_sweep(lesson: int, measure: str) -> SweepSummary:
    """The stored summary of one headline measure of lesson ``lesson`` over the sweep's seeds."""
    stored = json.loads(DATA.read_text(encoding="utf-8"))
    key = f"{lesson:02d}"
    try:
        row = stored["measures"][key][measure]
    except KeyError:
        raise KeyError(f"no stored sweep for lesson {key}, measure {measure!r}; see ragcourse.toolkit.sweeps") from None
    return SweepSummary(key, measure, row["mean"], row["ci95"], row["min"], row["max"], row["n"])


def print_stored_sweep(lesson: int, measure: str, label: str | None = None) -> None:
    """Print one stored summary: its label, the seeds, then mean, 95% interval of the mean and range."""
    summary = stored_sweep(lesson, measure)
    low, high = summary.interval
    print(f"{label or measure}")
    print(f"  over {summary.n} seeds, {SWEEP_SEEDS} (stored sweep, the lesson's default settings):")
    print(f"  mean {summary.mean:.4f} , 95% interval of the mean {low:.4f} to {high:.4f} ,"
          f" range {summary.low:.4f} to {summary.high:.4f}")


def summaries_from_csv(path: str | Path) -> dict[str, dict[str, dict[str, float]]]:
    """The summary columns of ``STORED_MEASURES`` read from a sweep's ``sweep.csv``."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["measure"] in STORED_MEASURES.get(row["lesson"], ()):
                found.setdefault(row["lesson"], {})[row["measure"]] = {
                    "mean": float(row["mean"]), "ci95": float(row["ci95"]), "min": float(row["min"]),
                    "max": float(row["max"]), "n": int(row["n"])}
    return found


def main(argv: list[str] | None = None) -> int:
    """Merge the measures found in each given ``sweep.csv`` into ``data/sweeps.json``."""
    paths = (argv if argv is not None else sys.argv[1:])
    if not paths:
        print(__doc__)
        return 2
    stored = json.loads(DATA.read_text(encoding="utf-8")) if DATA.exists() else {"seeds": SWEEP_SEEDS, "measures": {}}
    for path in paths:
        for lesson, measures in summaries_from_csv(path).items():
            stored["measures"].setdefault(lesson, {}).update(measures)
    stored["measures"] = {lesson: dict(sorted(m.items())) for lesson, m in sorted(stored["measures"].items())}
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
    print(f"stored {sum(len(m) for m in stored['measures'].values())} measures in {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
