"""``python -m ragcourse figures [--jobs N] [LESSON ...]``: regenerate the project's figures at the course seed.

Lessons' figures go to ``figures/``, labs' to ``figures/labs/``; with no LESSON, a figure no lesson
draws any more is removed. Exit status 0 when every notebook ran, 1 when one failed.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..batch.notebooks import LABS_FOLDER
from .selection import add_common, chosen_notebooks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``figures`` command's arguments."""
    add_common(parser)


def run(args: argparse.Namespace, out) -> int:
    """Regenerate the figures, print what was written and removed; the exit status."""
    from ..batch.runner import regenerate_figures, summary_table

    chosen, chosen_labs = chosen_notebooks(args)
    started = time.perf_counter()
    groups = [(chosen, Path(args.figures_dir), ""), (chosen_labs, Path(args.figures_dir) / LABS_FOLDER, "lab")]
    outcomes, report = [], []
    for group, folder, label in groups:
        if not group:
            continue
        done, written, unchanged, removed = regenerate_figures(
            group, folder, jobs=args.jobs, every_lesson=not args.lessons, label=label)
        outcomes += done
        report.append(f"{folder}: {len(written)} written, {len(unchanged)} unchanged, {len(removed)} removed"
                      + "".join(f"\n  wrote {name}" for name in written)
                      + "".join(f"\n  removed {name}" for name in removed))
    print(summary_table(outcomes, time.perf_counter() - started), file=out)
    print("\n".join(report), file=out)
    return 0 if all(o.ok for o in outcomes) else 1
