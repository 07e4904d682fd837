"""``python -m ragcourse grade PATH... [--csv FILE] [--solutions] [--timeout SECONDS] [--jobs N] [--as-user NAME]``.

Each submission (a notebook, or every file in a folder, recursively) is read into memory
first, then recognised by its metadata (or its title). Each notebook is run top to bottom in
a fresh kernel of this Python, in a temporary folder of its own, by a supervising process
forked from this one (``judge.supervise``; the kernel itself: ``sandbox``), and graded from
outside that kernel: every question's check runs in the supervisor, fetching the student's
values from the kernel and calling the student's functions through it. A submission that is
not a notebook, a notebook of another lesson, or one that runs out of time is reported as
such and the rest are graded; one whose cells raise is graded on what ran and the error is
reported. ``--solutions`` grades the masters (the lessons' and the labs'), which must pass
every question. A lab's set may name the least time its cold run needs
(``ExerciseSet.seconds``: it embeds texts or starts a database); its notebooks get that long
when ``--timeout`` is shorter. ``--timeout`` limits the notebook's cells and, apart, each
question's check; a supervisor that overruns everything is killed with every process below it.

Printed: per notebook and question, passed or not and the points. ``--csv FILE`` writes one
row per notebook and question with the columns ``notebook,question,points,max_points,passed``
(a submission that could not be graded at all gets one row with an empty question). The
report and the CSV are written once, from this process's memory, after every kernel is gone.
Exit status 0 when grading finished, 2 for bad arguments (a bad ``--as-user`` included), 130 after
Ctrl-C and 128 + the signal after SIGTERM or SIGHUP (kernels killed, temporary folder removed, no CSV written).
The grading itself: ``exercises.grading``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from ..batch.contract import UsageError, file_value, jobs_value, print_error
from ..exercises.grading import DEFAULT_TIMEOUT, grade_and_report, submissions
from ..exercises.notebooks import MASTERS_DIR, master_notebooks


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0; got {text!r}") from None
    if not 0 < value <= 24 * 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 (at most a day); got {text!r}")
    return value


def _existing_path(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``grade`` command's arguments."""
    parser.add_argument("paths", nargs="*", type=_existing_path, metavar="PATH",
                        help="submitted notebooks, or folders of them (searched recursively)")
    parser.add_argument("--csv", type=file_value, default=None, metavar="FILE",
                        help="also write notebook,question,points,max_points,passed rows to FILE")
    parser.add_argument("--solutions", action="store_true",
                        help=f"grade the masters in {MASTERS_DIR.relative_to(MASTERS_DIR.parents[1])}/ instead"
                             " (they must pass every question); takes no PATH")
    parser.add_argument("--timeout", type=_positive_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit per notebook, and per question's check (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--jobs", type=jobs_value, default=1, metavar="N",
                        help="notebooks graded at once, one kernel each (default 1)")
    parser.add_argument("--as-user", default=None, metavar="NAME",
                        help="when grading as root, run the kernels as this user (default: nobody, where it can"
                             " run the course's Python; otherwise the kernels run as root, and the report says so)")
    parser.set_defaults(grade_prog=parser.prog)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """The ``grade`` command: grade what ``args`` names; 0 when grading finished.

    A bad combination of arguments (or a bad ``--as-user``, found before anything runs) is a
    UsageError, reported as the command line reports one (``batch.contract.print_error``, exit status 2),
    also when this is called on its own.
    """
    try:
        return _grade(args, out or sys.stdout)
    except UsageError as error:
        return print_error(error, args.grade_prog)


def _grade(args: argparse.Namespace, out: TextIO) -> int:
    """Check the combination of arguments, then grade (``exercises.grading.grade_and_report``); UsageError if refused."""
    if args.solutions and args.paths:
        raise UsageError("--solutions grades the masters; give no PATH with it")
    if not args.solutions and not args.paths:
        raise UsageError("give at least one PATH (a notebook or a folder), or --solutions")
    files = list(master_notebooks().values()) if args.solutions else submissions(args.paths)
    if not files:
        raise UsageError("no files to grade" + (f" in {MASTERS_DIR}" if args.solutions else ""))
    grade_and_report(files, args.timeout, args.jobs, args.as_user, args.solutions, args.csv, out)
    return 0
