"""Seed sweep: run lessons at many seeds and collect the headline numbers they record.

Every (seed, lesson) pair is one notebook execution in the batch engine, with ``SEED``
and ``RESULTS_DIR`` injected; the notebook's ``record_headline`` call writes
``DIR/seed-S/results/NN-headline.json``. The numbers in ``DIR/sweep.csv``, the printed
table and the figures come only from those files: nothing is recomputed here.

The summary columns over the n seeds that recorded a measure: the mean, the half-width
``ci95`` of a 95% confidence interval of the mean, the minimum and the maximum. The
interval is Student's t with n - 1 degrees of freedom, ``mean ± t·s/√n``, where s is
the sample standard deviation (divisor n - 1) and t the 97.5% quantile of the t
distribution, computed here in pure Python (``t_quantile``; no scipy). With fewer than
two seeds there is no interval (an empty cell).

The runs execute in this process (``Engine``) or, given a ``cluster``
(``ragcourse.batch.cluster``), as one task per seed on a Dask cluster; either way the
headline files land in DIR and the table is built from them the same way, so the same
seeds give a byte-identical ``sweep.csv``.

Layout of DIR (default ``build/sweep``)::

    seed-S/notebooks/NN-*.ipynb     executed notebooks (on a cluster: only the failed ones)
    seed-S/results/NN-headline.json what each lesson recorded
    sweep.csv                       lesson, measure, mean, ci95, min, max, n, seed_S ...
    figures/NN-sweep.svg|png        spread over seeds, one figure per lesson
"""
from __future__ import annotations

import csv
import io
import json
import math
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from .runner import Engine, Job, Outcome, default_jobs, summary_table

SUMMARY_COLUMNS = ["lesson", "measure", "mean", "ci95", "min", "max", "n"]
CONFIDENCE = 0.95
INTERVAL_NOTE = ("±95%: half-width of the 95% interval of the mean, "
                 "Student t with n-1 degrees of freedom: mean ± t·s/√n")


def t_coverage(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` degrees of freedom (exact finite series).

    Abramowitz and Stegun 26.7.3-4: with θ = atan(t/√df), a sum of powers of cos θ,
    ``df // 2`` terms; every term is positive, so the sum is well conditioned.
    """
    theta = math.atan(t / math.sqrt(df))
    sine, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:
        if df == 1:
            return 2.0 / math.pi * theta
        term = math.cos(theta)
        total = term
        for k in range(3, df - 1, 2):
            term *= cos2 * (k - 1) / k
            total += term
        return 2.0 / math.pi * (theta + sine * total)
    term = total = 1.0
    for k in range(2, df - 1, 2):
        term *= cos2 * (k - 1) / k
        total += term
    return sine * total


@lru_cache(maxsize=None)
def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The t with ``P(|T| <= t)`` = ``confidence`` (df = 19: 2.0930...): bisection down to adjacent floats.

    Agrees with scipy's ``t.ppf(0.975, df)`` to about 1e-14 relative for df up to 999.
    """
    if df < 1:
        raise ValueError(f"df must be >= 1; got {df}")
    low, high = 0.0, 1.0
    while t_coverage(high, df) < confidence:
        high *= 2.0
    while True:
        middle = (low + high) / 2.0
        if middle in (low, high):
            return high
        if t_coverage(middle, df) < confidence:
            low = middle
        else:
            high = middle


@dataclass
class MeasureRow:
    """One headline measure of one lesson across the seeds (None where a seed has no value)."""

    lesson: int
    measure: str
    values: dict[int, float | None]

    @property
    def present(self) -> list[float]:
        return [v for v in self.values.values() if v is not None]

    @property
    def mean(self) -> float | None:
        present = self.present
        return sum(present) / len(present) if present else None

    @property
    def low(self) -> float | None:
        return min(self.present) if self.present else None

    @property
    def high(self) -> float | None:
        return max(self.present) if self.present else None

    @property
    def sd(self) -> float | None:
        """Sample standard deviation (divisor n - 1); None below two values."""
        present = self.present
        if len(present) < 2:
            return None
        mean = sum(present) / len(present)
        return math.sqrt(sum((v - mean) ** 2 for v in present) / (len(present) - 1))

    @property
    def ci95(self) -> float | None:
        """Half-width of the 95% interval of the mean, ``t·s/√n`` (t with n - 1 df); None below two values."""
        sd = self.sd
        if sd is None:
            return None
        n = len(self.present)
        return t_quantile(n - 1) * sd / math.sqrt(n)


def results_dir(out_dir: Path, seed: int) -> Path:
    return out_dir / f"seed-{seed}" / "results"


def sweep_jobs(notebooks: dict[int, Path], seeds: list[int], out_dir: Path) -> list[Job]:
    """One job per (seed, lesson): SEED and RESULTS_DIR injected, figures not written."""
    jobs = []
    for seed in seeds:
        for lesson, path in sorted(notebooks.items()):
            parameters = {"SEED": seed, "RESULTS_DIR": str(results_dir(out_dir, seed))}
            target = out_dir / f"seed-{seed}" / "notebooks" / path.name
            jobs.append(Job(lesson, path, target, parameters, None, label=f"{lesson:02d} seed {seed}"))
    return jobs


def collect(lessons: list[int], seeds: list[int], out_dir: Path) -> tuple[list[MeasureRow], list[str]]:
    """Rows of recorded numbers per lesson and measure (first-seen order), and problems found."""
    rows: dict[tuple[int, str], MeasureRow] = {}
    problems: list[str] = []
    for lesson in lessons:
        for seed in seeds:
            path = results_dir(out_dir, seed) / f"{lesson:02d}-headline.json"
            if not path.exists():
                problems.append(f"lesson {lesson:02d} wrote no {path.name} at seed {seed}")
                continue
            payload = json.loads(path.read_text())
            if payload.get("lesson") != lesson or payload.get("seed") != seed:
                problems.append(f"{path} says lesson {payload.get('lesson')} seed {payload.get('seed')}, "
                                f"expected lesson {lesson} seed {seed}")
                continue
            for measure, value in payload.get("numbers", {}).items():
                row = rows.setdefault((lesson, measure), MeasureRow(lesson, measure, {s: None for s in seeds}))
                row.values[seed] = float(value)
    return list(rows.values()), problems


def _csv_number(value: float | int | None) -> str:
    """Exact text for a number: ``repr`` of a float reads back to the very same float."""
    if value is None:
        return ""
    return str(value) if isinstance(value, int) else repr(float(value))


def write_csv(rows: list[MeasureRow], seeds: list[int], path: Path) -> None:
    """``lesson, measure, mean, ci95, min, max, n, seed_S ...``: values as recorded, full precision."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS + [f"seed_{s}" for s in seeds])
    for row in rows:
        writer.writerow([f"{row.lesson:02d}", row.measure, _csv_number(row.mean), _csv_number(row.ci95),
                         _csv_number(row.low), _csv_number(row.high), len(row.present)]
                        + [_csv_number(row.values[s]) for s in seeds])
    path.write_text(buffer.getvalue())


def number_format(values: list[float]) -> Callable[[float | None], str]:
    """One format for a measure's numbers: whole numbers when every value is whole, else 4 decimals."""
    whole = all(float(v).is_integer() and abs(v) < 1e9 for v in values)
    large = any(abs(v) >= 1000 for v in values)

    def show(value: float | None) -> str:
        if value is None:
            return "-"
        if whole:
            return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
        return f"{value:.1f}" if large else f"{value:.4f}"
    return show


def format_table(rows: list[MeasureRow], seeds: list[int], per_seed_limit: int = 8) -> str:
    """Fixed-width table of the CSV (per-seed columns only when there are at most ``per_seed_limit`` seeds).

    ``±95%`` is the CSV's ``ci95``: read a row as "mean ± ci95 over n seeds".
    """
    show_seeds = len(seeds) <= per_seed_limit
    header = (["lesson", "measure", "mean", "±95%", "min", "max", "n"]
              + ([f"seed {s}" for s in seeds] if show_seeds else []))
    body = []
    for row in rows:
        show = number_format(row.present)
        cells = [f"{row.lesson:02d}", row.measure, show(row.mean), show(row.ci95), show(row.low), show(row.high),
                 str(len(row.present))]
        if show_seeds:
            cells += [show(row.values[s]) for s in seeds]
        body.append(cells)
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
    lines = []
    for line in [header] + body:
        lines.append("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths))).rstrip())
    lines.append(f"({INTERVAL_NOTE}"
                 + ("" if show_seeds else f"; {len(seeds)} seeds: per-seed values are in sweep.csv") + ")")
    return "\n".join(lines)


def plot_lesson(lesson: int, rows: list[MeasureRow], seeds: list[int], figures_dir: Path) -> list[Path]:
    """One figure: a panel per headline measure, each seed a dot over a box of the spread,
    the mean dashed and its 95% interval as a bar beside the box."""
    from matplotlib.figure import Figure

    from ..toolkit.figures import PALETTE, save_figure, use_house_style

    use_house_style()
    columns = min(4, len(rows))
    lines = math.ceil(len(rows) / columns)
    fig = Figure(figsize=(2.7 * columns + 0.6, 3.1 * lines + 0.7))
    axes = fig.subplots(lines, columns, squeeze=False)
    for ax, row in zip(axes.flat, rows):
        values = [row.values[s] for s in seeds if row.values[s] is not None]
        ax.boxplot(values, positions=[0], widths=0.5, showfliers=False, patch_artist=True,
                   boxprops={"facecolor": "#EEEEEE", "edgecolor": PALETTE["neutral"]},
                   medianprops={"color": PALETTE["neutral"]},
                   whiskerprops={"color": PALETTE["neutral"]}, capprops={"color": PALETTE["neutral"]})
        offsets = [((i * 0.618034) % 1.0 - 0.5) * 0.36 for i in range(len(values))]  # fixed, even jitter
        ax.scatter(offsets, values, s=22, color=PALETTE["embedding"], alpha=0.8, zorder=3,
                   edgecolors="white", linewidths=0.5)
        ax.axhline(row.mean, color=PALETTE["warning"], linewidth=1.2, linestyle="--", zorder=2)
        half = row.ci95
        if half is not None:
            ax.errorbar([0.42], [row.mean], yerr=[[half], [half]], fmt="D", markersize=4, capsize=4,
                        color=PALETTE["warning"], elinewidth=2.0, zorder=4)
        ax.set_title(row.measure, fontsize=10, fontweight="normal", loc="center")
        ax.set_xticks([])
        ax.set_xlim(-0.6, 0.6)
        show = number_format(values)
        interval = "" if half is None else f" ± {show(half)} (95%)"
        ax.set_xlabel(f"mean {show(row.mean)}{interval}\nrange {show(row.low)} to {show(row.high)}", fontsize=9)
        ax.margins(y=0.12)
    for ax in list(axes.flat)[len(rows):]:
        ax.set_visible(False)
    fig.suptitle(f"Lesson {lesson:02d}: headline numbers over {len(seeds)} seeds "
                 f"({_seed_text(seeds)}); dots = seeds, dashed = mean, bar = its 95% interval",
                 x=0.01, ha="left", fontsize=12, fontweight="bold")
    fig.tight_layout()
    name = f"{lesson:02d}-sweep"
    written = [save_figure(fig, name, figures_dir)]
    png = figures_dir / f"{name}.png"
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None})
    written.append(png)
    return [p for p in written if p is not None]


def _seed_text(seeds: list[int]) -> str:
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}-{seeds[-1]}"
    text = ", ".join(str(s) for s in seeds[:6])
    return f"seeds {text}" + (", ..." if len(seeds) > 6 else "")


def run_sweep(notebooks: dict[int, Path], seeds: list[int], out_dir: Path, jobs: int | None = None,
              progress: bool = True, stream=None, cluster=None) -> int:
    """Run, collect, write ``sweep.csv`` and figures, print the table; exit status (0 when complete).

    Without ``cluster`` every run executes here, ``jobs`` at once (default: the cores).
    With a ``ragcourse.batch.cluster.Cluster`` each seed is one task on the cluster, its
    lessons ``jobs`` at once on the worker (default 1); the headline files come back here.
    """
    stream = stream or sys.stdout
    started = time.perf_counter()
    out_dir = Path(out_dir).resolve()
    for seed in seeds:  # numbers left by an earlier sweep must not be read as this one's
        for lesson in notebooks:
            (results_dir(out_dir, seed) / f"{lesson:02d}-headline.json").unlink(missing_ok=True)
    where = ""
    if cluster is None:
        outcomes: list[Outcome] = Engine(jobs or default_jobs(), progress=progress).run(
            sweep_jobs(notebooks, seeds, out_dir))
    else:
        outcomes = cluster.run_seeds(notebooks, seeds, out_dir, parallel=jobs or 1, progress=progress)
        where = f" on {cluster.description}"
    failed = [o for o in outcomes if not o.ok]
    if failed:
        print(summary_table(failed), file=stream)
    lessons = sorted(notebooks)
    rows, problems = collect(lessons, seeds, out_dir)
    csv_path = out_dir / "sweep.csv"
    write_csv(rows, seeds, csv_path)
    print(format_table(rows, seeds), file=stream)
    figures_dir = out_dir / "figures"
    for lesson in lessons:
        lesson_rows = [row for row in rows if row.lesson == lesson and row.present]
        if lesson_rows:
            plot_lesson(lesson, lesson_rows, seeds, figures_dir)
    for problem in problems:
        print(f"missing: {problem}", file=stream)
    print(f"{len(outcomes) - len(failed)}/{len(outcomes)} runs ok ({len(lessons)} lessons x {len(seeds)} seeds)"
          f"{where} in {time.perf_counter() - started:.1f} s; table in {csv_path}, figures in {figures_dir}",
          file=stream)
    return 0 if not failed and not problems else 1
