"""``python -m ragcourse refresh [--jobs N] [LESSON ...]``: maintainers re-execute notebooks in place.

Each chosen notebook runs in a fresh kernel and its stored outputs are replaced with clean
metadata; a notebook that fails is left as it was. Exit status 0 when every notebook ran, 1 when one failed.
"""
from __future__ import annotations

import argparse
import time

from .selection import add_common, chosen_notebooks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``refresh`` command's arguments."""
    add_common(parser)


def run(args: argparse.Namespace, out) -> int:
    """Refresh the chosen notebooks, print the timing summary; the exit status."""
    from ..batch.runner import refresh_lessons, summary_table

    chosen, chosen_labs = chosen_notebooks(args)
    started = time.perf_counter()
    outcomes = refresh_lessons(chosen, jobs=args.jobs) if chosen else []
    if chosen_labs:
        outcomes += refresh_lessons(chosen_labs, jobs=args.jobs, label="lab")
    print(summary_table(outcomes, time.perf_counter() - started), file=out)
    return 0 if all(o.ok for o in outcomes) else 1
