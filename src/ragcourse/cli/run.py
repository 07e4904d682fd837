"""``python -m ragcourse run [--seed S] [--jobs N] [--out DIR] [LESSON ...]``: execute notebooks into a folder.

Lessons go to ``DIR/notebooks`` and ``DIR/figures``, labs (which take no SEED) to ``DIR/labs``;
the notebooks in the project are never modified. Exit status 0 when every notebook ran, 1 when one failed.
"""
from __future__ import annotations

import argparse
import time

from ..batch.notebooks import LABS_FOLDER
from .selection import add_common, chosen_notebooks, seed_value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``run`` command's arguments."""
    parser.add_argument("--seed", type=seed_value, default=None, metavar="S",
                        help="SEED for every lesson (default: the notebooks' own, the course seed)")
    add_common(parser, out="build")


def run(args: argparse.Namespace, out) -> int:
    """Execute the chosen notebooks, print the timing summary; the exit status."""
    from ..batch.runner import run_lessons, summary_table

    chosen, chosen_labs = chosen_notebooks(args)
    started = time.perf_counter()
    outcomes = run_lessons(chosen, args.out, seed=args.seed, jobs=args.jobs) if chosen else []
    if chosen_labs:   # the labs take no SEED; their outputs go to DIR/labs/
        outcomes += run_lessons(chosen_labs, args.out / LABS_FOLDER, jobs=args.jobs, label="lab")
    print(summary_table(outcomes, time.perf_counter() - started), file=out)
    print(f"notebooks in {args.out / 'notebooks'}, figures in {args.out / 'figures'}"
          + (f"; labs in {args.out / LABS_FOLDER}" if chosen_labs else ""), file=out)
    return 0 if all(o.ok for o in outcomes) else 1
