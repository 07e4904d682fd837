"""The contract every ``python -m ragcourse`` command keeps, shared by the command line and the grader.

A command is a module with ``add_arguments(parser)`` and ``run(args, out) -> int``
(``ragcourse.cli.main.COMMANDS`` names them all). A command refuses a bad argument by raising
``UsageError`` (exit status 2, printed as argparse prints its own:
``python -m ragcourse CMD: error: MESSAGE``) and reports a problem that is not in the arguments
(a database that does not answer, a missing index, a student version that does not run) by
raising ``CommandError`` (exit status 1: ``python -m ragcourse CMD: MESSAGE``). ``print_error`` prints
either in that form and gives its status; ``jobs_value`` is the one ``--jobs`` rule, ``file_value``
the one rule for a file a command writes.

It sits here, below both ``cli`` and ``exercises``, because the grader (``exercises.grading``)
raises the same errors and takes the same ``--jobs`` while nothing may import the command line.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

USAGE_STATUS = 2
COMMAND_STATUS = 1
# Every job is at least one live kernel (the batch engine boots up to twice --jobs at once,
# the grader one kernel and one supervisor per job): the limit stops a typo from starting hundreds.
MAX_JOBS = 64


class UsageError(Exception):
    """A bad command-line argument: exit status 2, one line naming the argument and what it accepts."""


class CommandError(Exception):
    """A problem outside the arguments (database, model, index, a notebook that fails): exit status 1,
    one line that says what to do."""


def print_error(error: UsageError | CommandError, prog: str, stream: TextIO | None = None) -> int:
    """Print ``error`` as the one line its kind gets, to ``stream`` (stderr); its exit status."""
    if isinstance(error, UsageError):
        print(f"{prog}: error: {error}", file=stream or sys.stderr)
        return USAGE_STATUS
    print(f"{prog}: {error}", file=stream or sys.stderr)
    return COMMAND_STATUS


def whole_number_from(text: str, low: int, high: int) -> int:
    """``int(text)`` when it is from ``low`` to ``high``; else an argparse error saying so (for a ``type``)."""
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}; got {text!r}")
    return value


def jobs_value(text: str) -> int:
    """``--jobs``: a whole number from 1 to ``MAX_JOBS``, for every command that takes it."""
    return whole_number_from(text, 1, MAX_JOBS)


def file_value(text: str) -> Path:
    """A file the command will write (``--csv``, ``--keys``...): not a folder, in a folder that exists (a ``type``)."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give a file name")
    if not path.parent.resolve().is_dir():
        raise argparse.ArgumentTypeError(f"the folder of {text!r} does not exist")
    return path
