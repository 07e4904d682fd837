"""``make exercises``: every student version regenerated from its master and executed from a fresh kernel.

    python -m ragcourse exercises [NAME ...]

The building itself is ``exercises.build`` (``build_student``): each student version is made,
executed top to bottom in a fresh kernel and written to ``notebooks/exercises/`` (a lab's to
``notebooks/exercises/labs/``). A cell that raises stops the build with exit status 1
(``BuildError``, a command error); exit status 2 for an unknown set name (``UsageError``).
"""
from __future__ import annotations

import argparse

from ..batch.contract import UsageError
from ..exercises.build import BuildError, build_student
from ..exercises.notebooks import MASTERS_DIR, STUDENT_DIR, master_notebooks, student_path

__all__ = ["BuildError", "add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``exercises`` command's arguments."""
    parser.add_argument("names", nargs="*", metavar="NAME", help="exercise sets to build (default: every master)")


def run(args: argparse.Namespace, out) -> int:
    """Regenerate the student versions; print one line per notebook written. BuildError when one fails."""
    import nbformat

    masters = master_notebooks()
    unknown = [name for name in args.names if name not in masters]
    if unknown:
        raise UsageError(f"argument NAME: no master for {', '.join(unknown)} in {MASTERS_DIR}; there are "
                         f"{', '.join(masters)}")
    for name in args.names or list(masters):
        target = student_path(name, STUDENT_DIR)
        nbformat.write(build_student(masters[name], target.parent), target)
        print(f"wrote {target.relative_to(STUDENT_DIR.parents[1])}", file=out, flush=True)
    return 0
