"""Command line of the course.

  python -m ragcourse run [--seed S] [--jobs N] [--out DIR] [LESSON ...]
  python -m ragcourse figures [--jobs N] [LESSON ...]
  python -m ragcourse sweep --seeds 1-20 [--scheduler ADDRESS|local:N] [--jobs N] [--out DIR] [LESSON ...]
  python -m ragcourse refresh [--jobs N] [LESSON ...]
  python -m ragcourse search "QUESTION" [--retriever lexical|bm25|tfidf|dense|hybrid|postgres] [-k 5] [--json]
  python -m ragcourse search --file QUESTIONS.txt [--retriever R] [-k 5]
  python -m ragcourse questions self|judged|unanswerable|real-dev|real-test [--json]
  python -m ragcourse prepare [--check]
  python -m ragcourse index [--corpus DIR] [--refresh] [--check] [--policy sentences|fixed|headings]
  python -m ragcourse ask "QUESTION" [--json] [--trace] [--tenant T] [--reranker-model PATH]
  python -m ragcourse train-reranker [--estimate] [--groups N]
  python -m ragcourse grade PATH... [--csv FILE] [--timeout SECONDS] [--jobs N] | grade --solutions [...]
  python -m ragcourse exercises [NAME ...]

LESSON is a number (3 or 03) or a range (2-6), or a Part 3 lab (lab1, lab1-2, labs); every
lesson when none is given (the sweep runs lessons only: the labs take no SEED). NAME is an
exercise set (01-what-is-an-embedding, ...); every master when none is given. --jobs is a
whole number from 1 to 64 wherever it is taken.
Exit status: 0 when every lesson ran, 1 when one failed, 2 for a bad argument,
130 when interrupted.
"""
# Every command is a module with add_arguments(parser) and run(args, out) -> int, named in COMMANDS:
# the engines live in ragcourse.batch (runner, sweep, cluster), ragcourse.exercises (grading, build) and
# the Part 3 subpackages. This module only builds the parser, dispatches, and turns a command's error into
# its one line and exit status (ragcourse.batch.contract; the errors of the layers below: ERRORS).
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..batch.contract import CommandError, UsageError, print_error
from ..batch.notebooks import FIGURES_DIR, NOTEBOOKS_DIR
from . import ask, exercises, figures, grade, index, prepare, questions, refresh, run, search, sweep, train
from .selection import parse_selection

__all__ = ["COMMANDS", "CommandError", "UsageError", "build_parser", "entry_point", "main", "parse_selection"]

COMMANDS = {
    "run": (run, "execute lessons into DIR/notebooks and DIR/figures"),
    "figures": (figures, "regenerate the project's figures/ at the course seed"),
    "sweep": (sweep, "run lessons at many seeds; collect headline numbers"),
    "refresh": (refresh, "re-execute notebooks in place to refresh stored outputs"),
    "search": (search, "Part 3: search the numpy reference with a lab's retriever"),
    "questions": (questions, "Part 3: print a query set (id, text, relevant ids, source)"),
    "prepare": (prepare, "Part 3: embed every text the labs and their tests need, once"),
    "index": (index, "Part 3, lab 04: build, refresh or check the PostgreSQL index"),
    "ask": (ask, "Part 3, lab 04: answer a question with citations from the index"),
    "train-reranker": (train, "Part 3, lab 04: train the course's cross-encoder once (or find it cached)"),
    "grade": (grade, "grade exercise notebooks (--solutions: the masters)"),
    "exercises": (exercises, "regenerate the exercises' student versions from their masters"),
}


def errors_below() -> tuple[tuple[type[Exception], type[Exception]], ...]:
    """The one table of what the layers below the command line raise and what it means here, first match wins.

    A problem with the model or the database is a command error; a ``ValueError`` is a check of the
    input that refused it (``toolkit.params``, ``rag.search.check_question``, ``engines.filters``...).
    """
    from ..engines.dense import ModelUnavailable
    from ..rag.database import DatabaseUnavailable

    return ((UsageError, UsageError), (CommandError, CommandError), (DatabaseUnavailable, CommandError),
            (ModelUnavailable, CommandError), (ValueError, UsageError))


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``python -m ragcourse run: error: argument --jobs: ...``."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(print_error(UsageError(message), self.prog))


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser and its sub-parsers by command name, one per entry of ``COMMANDS``."""
    parser = _Parser(prog="python -m ragcourse", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands = {}
    for name, (module, help_line) in COMMANDS.items():
        commands[name] = sub.add_parser(name, help=help_line)
        module.add_arguments(commands[name])
    return parser, commands


def main(argv: list[str] | None = None, notebooks_dir: Path = NOTEBOOKS_DIR,
         figures_dir: Path = FIGURES_DIR) -> int:
    """Run the command line; ``notebooks_dir`` and ``figures_dir`` are the project's unless a test says otherwise.

    A usage error ends as argparse's own do (one line, ``SystemExit(2)``); a command error prints
    its line and returns 1; any other exception is a bug and keeps its traceback.
    """
    parser, commands = build_parser()
    args = parser.parse_args(argv)
    args.notebooks_dir, args.figures_dir = Path(notebooks_dir), Path(figures_dir)
    module, _ = COMMANDS[args.command]
    try:
        return module.run(args, sys.stdout)
    except Exception as error:
        meaning = next((kind for raised, kind in errors_below() if isinstance(error, raised)), None)
        if meaning is None:
            raise
        status = print_error(meaning(str(error)), commands[args.command].prog)
        if meaning is UsageError:
            raise SystemExit(status) from None
        return status


# Set for the command's own process before anything loads torch (libgomp reads them once, at load):
# OpenMP threads that sleep when they wait instead of spinning. On the 2-core machine, three processes of
# two threads each (``make test``: two workers and ``prepare``) ran 3 times faster at the encoder and up to
# 10 times at the generator with them asleep; alone, the same (encoder) or 5-8% slower (decoding). They
# change no arithmetic, and a value the user set is kept (``benchmarks/wait_policy.py``).
PROCESS_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE"}


def apply_process_defaults(environ: dict | None = None) -> dict:
    """Set each of ``PROCESS_DEFAULTS`` in ``environ`` (``os.environ`` by default) unless it is set already."""
    import os

    environ = os.environ if environ is None else environ
    for name, value in PROCESS_DEFAULTS.items():
        environ.setdefault(name, value)
    return environ


def entry_point() -> None:
    """``python -m ragcourse``: run ``main`` and exit with its status (130 on Ctrl-C)."""
    apply_process_defaults()
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: every kernel was stopped", file=sys.stderr)
        sys.exit(130)
