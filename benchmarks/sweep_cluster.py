"""Benchmark (not a test): a seed sweep in process against local Dask clusters.

    .venv/bin/python benchmarks/sweep_cluster.py [--seeds 1-20] [--schedulers local:2,local:4] [LESSON ...]

Runs ``python -m ragcourse sweep --seeds SEEDS`` once in process and once per
``--scheduler``, each in a fresh process (so a cluster's start-up is counted) writing
into a temporary folder, checks that every ``sweep.csv`` is byte-identical to the
in-process one, and prints the wall time of each, its ratio to the in-process sweep,
the CPU time per seed (of the sweep and every process it started: less sensitive than
wall time to other work on the machine) and the time 1,000 seeds would take at the
same rate per seed (linear scaling: every seed is the same amount of work, and the
fixed start-up is counted in each seed's share, so the estimate errs a little high).
The load average before each run is printed with it: on a shared machine wall times
are noisy.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
FULL_SIZE = 1000


def seeds_in(text: str) -> int:
    count = 0
    for part in text.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def run(seeds: str, lessons: list[str], scheduler: str | None, out: Path) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds of the sweep and everything it started, exit status, its last line)."""
    command = [sys.executable, "-m", "ragcourse", "sweep", "--seeds", seeds, "--out", str(out),
               *(["--scheduler", scheduler] if scheduler else []), *lessons]
    env = dict(os.environ, TQDM_DISABLE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-300:]
    return wall, cpu, done.returncode, last.split("; table in")[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="1-20", help="the sweep's --seeds (default 1-20)")
    parser.add_argument("--schedulers", default="local:2,local:4", help="comma-separated --scheduler values")
    parser.add_argument("lessons", nargs="*", help="lessons to sweep (default: all)")
    args = parser.parse_args()
    configurations = [None] + [s for s in args.schedulers.split(",") if s]
    count = seeds_in(args.seeds)
    print(f"sweep --seeds {args.seeds} ({count} seeds), lessons: {' '.join(args.lessons) or 'all'}; "
          f"{os.cpu_count()} cores")
    rows, reference, status = [], None, 0
    with tempfile.TemporaryDirectory(prefix="ragcourse-bench-") as scratch:
        for index, scheduler in enumerate(configurations):
            load = os.getloadavg()[0]
            out = Path(scratch) / f"run-{index}"
            wall, cpu, code, last = run(args.seeds, args.lessons, scheduler, out)
            table = (out / "sweep.csv").read_bytes() if (out / "sweep.csv").exists() else None
            if reference is None:
                reference = table
            same = table is not None and table == reference
            status |= code != 0 or not same
            rows.append((scheduler or "in process", wall, cpu))
            print(f"  {scheduler or 'in process':<11} {wall:7.1f} s wall, {cpu:7.1f} s CPU  "
                  f"(load before {load:.2f}, exit {code}, "
                  f"sweep.csv {'identical' if same else 'DIFFERENT'}): {last}", flush=True)
    base = rows[0][1]
    print()
    print(f"{'where':<11}  {'wall s':>7}  {'s/seed':>6}  {'speed-up':>8}  {'CPU s/seed':>10}  "
          f"{'1,000 seeds (wall)':>18}")
    for where, wall, cpu in rows:
        estimate = wall / count * FULL_SIZE
        print(f"{where:<11}  {wall:7.1f}  {wall / count:6.2f}  {base / wall:7.2f}x  {cpu / count:10.2f}  "
              f"{estimate / 60:14.0f} min")
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
