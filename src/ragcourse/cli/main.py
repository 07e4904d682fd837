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
  python -m ragcourse grade PATH... [--csv FILE] [--timeout SECONDS] [--jobs N] | grade --solutions [...]

LESSON is a number (3 or 03) or a range (2-6), or a Part 3 lab (lab1, lab1-2, labs); every
lesson when none is given (the sweep runs lessons only: the labs take no SEED).
Exit status: 0 when every lesson ran, 1 when one failed, 2 for a bad argument,
130 when interrupted.
"""
# The engine lives in ragcourse.batch.runner (and ragcourse.batch.sweep); the Part 3 commands in
# ragcourse.cli.search and ragcourse.cli.postgres. This module only parses arguments, dispatches and prints.
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..batch.notebooks import FIGURES_DIR, LABS_FOLDER, NOTEBOOKS_DIR, PROJECT_ROOT, lab_notebooks, lesson_notebooks
from ..exercises import grading
from . import postgres, prepare, questions, search

SEED_LIMIT = 2 ** 32
MAX_SEEDS = 1000


class UsageError(Exception):
    """A bad command-line argument (exit status 2, one line naming the argument)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``python -m ragcourse run: error: argument --jobs: ...``."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}; got {text!r}") from None


def jobs_value(text: str) -> int:
    """``--jobs``: an integer >= 1."""
    value = _int(text, "must be a whole number >= 1")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1; got {text!r}")
    return value


def seed_value(text: str) -> int:
    """``--seed``: an integer in [0, 2**32)."""
    value = _int(text, f"must be a whole number in [0, {SEED_LIMIT})")
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be a whole number in [0, {SEED_LIMIT}); got {text!r}")
    return value


def seeds_value(text: str) -> list[int]:
    """``--seeds``: ``1-20``, ``1,5,9`` or a mix (``1-3,7``); each in [0, 2**32), no repeats kept."""
    seeds: list[int] = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if not low or (dash and not high):
            raise argparse.ArgumentTypeError(f"must look like 1-20 or 1,5,9; got {text!r}")
        first, last = seed_value(low), seed_value(high) if dash else seed_value(low)
        if last < first:
            raise argparse.ArgumentTypeError(f"range {part.strip()!r} runs backwards")
        if last - first + 1 + len(seeds) > MAX_SEEDS:
            raise argparse.ArgumentTypeError(f"at most {MAX_SEEDS} seeds; got {text!r}")
        seeds.extend(s for s in range(first, last + 1) if s not in seeds)
    return seeds


def scheduler_value(text: str) -> str:
    """``--scheduler``: ``local:N`` or a Dask scheduler's address (syntax here; whether it answers, at dispatch)."""
    from ..batch.cluster import parse_scheduler

    try:
        return parse_scheduler(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def out_dir_value(text: str) -> Path:
    """``--out``: a folder (created if missing) outside the project's notebooks/ and figures/."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is an existing file, not a folder")
    resolved = path.resolve()
    if resolved == PROJECT_ROOT:
        raise argparse.ArgumentTypeError(f"{text!r} is the project itself; its notebooks/ would be overwritten")
    for protected in (NOTEBOOKS_DIR, FIGURES_DIR):
        if resolved == protected or protected in resolved.parents:
            raise argparse.ArgumentTypeError(f"{text!r} is inside the project's {protected.name}/, "
                                             "which only `refresh` and `figures` write")
    return path


def parse_lessons(values: list[str], available: dict[int, object]) -> list[int]:
    """Lesson numbers from arguments such as ``3``, ``03`` or ``2-6``; all lessons when empty.

    Raises UsageError naming the bad value and the lessons that exist.
    """
    if not values:
        return sorted(available)
    known = ", ".join(f"{k:02d}" for k in sorted(available)) or "none"
    chosen: list[int] = []
    for value in values:
        low, dash, high = value.partition("-")
        try:
            numbers = range(int(low), int(high if dash else low) + 1)
        except ValueError:
            raise UsageError(f"argument LESSON: must be a number such as 3 or a range such as 2-6; "
                             f"got {value!r}") from None
        if not numbers:
            raise UsageError(f"argument LESSON: range {value!r} runs backwards")
        for n in numbers:
            if n not in available:
                raise UsageError(f"argument LESSON: no notebook for lesson {n} (from {value!r}); "
                                 f"available: {known}")
            if n not in chosen:
                chosen.append(n)
    return sorted(chosen)


def parse_selection(values: list[str], lessons: dict[int, object],
                    labs: dict[int, object]) -> tuple[list[int], list[int]]:
    """(lessons, labs) chosen by arguments such as ``3``, ``2-6``, ``lab1``, ``lab1-2`` or ``labs``.

    No argument chooses the sixteen lessons (as before Part 3); ``labs`` adds every lab.
    """
    if not values:
        return sorted(lessons), []
    lab_values = [v for v in values if v.lower().startswith("lab")]
    lesson_values = [v for v in values if v not in lab_values]
    chosen_lessons = parse_lessons(lesson_values, lessons) if lesson_values else []
    chosen_labs: list[int] = []
    for value in lab_values:
        if value.lower() == "labs":
            numbers = sorted(labs)
        else:
            try:
                numbers = parse_lessons([value[3:]], labs)
            except UsageError as error:
                raise UsageError(str(error).replace("lesson", "lab").replace("argument LAB", "argument LESSON")
                                 .replace(f"{value[3:]!r}", f"{value!r}")) from None
        chosen_labs += [n for n in numbers if n not in chosen_labs]
    return chosen_lessons, sorted(chosen_labs)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser and its sub-parsers by command name."""
    parser = _Parser(prog="python -m ragcourse", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(p: argparse.ArgumentParser, out: str | None = None) -> None:
        if out is not None:
            p.add_argument("--out", type=out_dir_value, default=out, metavar="DIR",
                           help=f"output folder (default: {out}/)")
        p.add_argument("--jobs", type=jobs_value, default=None, metavar="N",
                       help="lessons executed at once (default: number of cores)")
        p.add_argument("lessons", nargs="*", metavar="LESSON",
                       help="3, 03 or 2-6; lab1, lab1-2 or labs for Part 3 (default: every lesson)")

    p_run = sub.add_parser("run", help="execute lessons into DIR/notebooks and DIR/figures")
    p_run.add_argument("--seed", type=seed_value, default=None, metavar="S",
                       help="SEED for every lesson (default: the notebooks' own, the course seed)")
    common(p_run, out="build")
    p_fig = sub.add_parser("figures", help="regenerate the project's figures/ at the course seed")
    common(p_fig)
    p_sweep = sub.add_parser("sweep", help="run lessons at many seeds; collect headline numbers")
    p_sweep.add_argument("--seeds", type=seeds_value, required=True, metavar="SEEDS",
                         help="1-20, 1,5,9 or a mix")
    p_sweep.add_argument("--scheduler", type=scheduler_value, default=None, metavar="ADDRESS",
                         help="run on a Dask cluster, one task per seed: a scheduler's address "
                              "(tcp://HOST:8786) or local:N to start N worker processes here; "
                              "--jobs is then the lessons each task runs at once (default 1)")
    common(p_sweep, out="build/sweep")
    p_refresh = sub.add_parser("refresh", help="re-execute notebooks in place to refresh stored outputs")
    common(p_refresh)
    p_search = sub.add_parser("search", help="Part 3: search the numpy reference with a lab's retriever")
    search.add_arguments(p_search)
    p_questions = sub.add_parser("questions", help="Part 3: print a query set (id, text, relevant ids, source)")
    questions.add_arguments(p_questions)
    p_prepare = sub.add_parser("prepare", help="Part 3: embed every text the labs and their tests need, once")
    prepare.add_arguments(p_prepare)
    p_index = sub.add_parser("index", help="Part 3, lab 04: build, refresh or check the PostgreSQL index")
    postgres.add_index_arguments(p_index)
    p_ask = sub.add_parser("ask", help="Part 3, lab 04: answer a question with citations from the index")
    postgres.add_ask_arguments(p_ask)
    p_grade = sub.add_parser("grade", help="grade exercise notebooks (--solutions: the masters)")
    grading.add_arguments(p_grade)
    return parser, {"run": p_run, "figures": p_fig, "sweep": p_sweep, "refresh": p_refresh, "search": p_search,
                    "questions": p_questions, "prepare": p_prepare, "index": p_index, "ask": p_ask, "grade": p_grade}


def _search(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The ``search`` command: bad input and a missing model end in one line and status 2."""
    from ..rag.database import DatabaseUnavailable
    from ..engines.dense import ModelUnavailable

    try:
        return search.run(args, sys.stdout)
    except ValueError as error:
        parser.error(str(error))
    except ModelUnavailable as error:
        parser.error(f"--retriever {args.retriever}: {error}")
    except (DatabaseUnavailable, postgres.CommandError) as error:
        return _fail(parser, error)
    return 2


def _fail(parser: argparse.ArgumentParser, error: Exception) -> int:
    """One line for a database, model or index problem; exit status 1."""
    print(f"{parser.prog}: {error}", file=sys.stderr)
    return 1


def _postgres(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``index`` and ``ask``: bad input is status 2, an unusable database, model or index status 1."""
    from ..rag.database import DatabaseUnavailable
    from ..engines.dense import ModelUnavailable

    command = postgres.run_index if args.command == "index" else postgres.run_ask
    try:
        return command(args, sys.stdout)
    except ValueError as error:
        parser.error(str(error))
    except (DatabaseUnavailable, ModelUnavailable, postgres.CommandError) as error:
        return _fail(parser, error)
    return 2


def main(argv: list[str] | None = None, notebooks_dir: Path = NOTEBOOKS_DIR,
         figures_dir: Path = FIGURES_DIR) -> int:
    """Run the command line; ``notebooks_dir`` and ``figures_dir`` are the project's unless a test says otherwise."""
    parser, commands = build_parser()
    args = parser.parse_args(argv)
    sub = commands[args.command]
    if args.command == "search":
        return _search(args, sub)
    if args.command == "prepare":
        return prepare.run(args, sys.stdout)
    if args.command == "questions":
        return questions.run(args, sys.stdout)
    if args.command in ("index", "ask"):
        return _postgres(args, sub)
    if args.command == "grade":
        return grading.run(args)
    notebooks = lesson_notebooks(Path(notebooks_dir))
    labs = lab_notebooks(Path(notebooks_dir)) if args.command != "sweep" else {}
    try:
        if args.command == "sweep" and any(v.lower().startswith("lab") for v in args.lessons):
            raise UsageError("argument LESSON: the labs take no SEED, so the sweep runs lessons only")
        lessons, lab_numbers = parse_selection(args.lessons, notebooks, labs)
    except UsageError as error:
        sub.error(str(error))
    if not lessons and not lab_numbers:
        sub.error(f"argument LESSON: no lesson notebooks in {notebooks_dir}")
    chosen = {n: notebooks[n] for n in lessons}
    chosen_labs = {n: labs[n] for n in lab_numbers}
    started = time.perf_counter()

    if args.command == "run":
        from ..batch.runner import run_lessons, summary_table

        outcomes = run_lessons(chosen, args.out, seed=args.seed, jobs=args.jobs) if chosen else []
        if chosen_labs:   # the labs take no SEED; their outputs go to DIR/labs/
            outcomes += run_lessons(chosen_labs, args.out / LABS_FOLDER, jobs=args.jobs, label="lab")
        print(summary_table(outcomes, time.perf_counter() - started))
        print(f"notebooks in {args.out / 'notebooks'}, figures in {args.out / 'figures'}"
              + (f"; labs in {args.out / LABS_FOLDER}" if chosen_labs else ""))
        return 0 if all(o.ok for o in outcomes) else 1

    if args.command == "figures":
        from ..batch.runner import regenerate_figures, summary_table

        groups = [(chosen, Path(figures_dir), ""), (chosen_labs, Path(figures_dir) / LABS_FOLDER, "lab")]
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
        print(summary_table(outcomes, time.perf_counter() - started))
        print("\n".join(report))
        return 0 if all(o.ok for o in outcomes) else 1

    if args.command == "sweep":
        from ..batch.sweep import run_sweep

        if args.scheduler is None:
            return run_sweep(chosen, args.seeds, args.out, jobs=args.jobs)
        from ..batch.cluster import SchedulerError, open_cluster

        try:  # before anything is written: an unusable --scheduler is a bad argument
            cluster = open_cluster(args.scheduler)
        except SchedulerError as error:
            sub.error(f"argument --scheduler: {error}")
        with cluster:
            return run_sweep(chosen, args.seeds, args.out, jobs=args.jobs, cluster=cluster)

    from ..batch.runner import refresh_lessons, summary_table

    outcomes = refresh_lessons(chosen, jobs=args.jobs) if chosen else []
    if chosen_labs:
        outcomes += refresh_lessons(chosen_labs, jobs=args.jobs, label="lab")
    print(summary_table(outcomes, time.perf_counter() - started))
    return 0 if all(o.ok for o in outcomes) else 1


def entry_point() -> None:
    """``python -m ragcourse``: run ``main`` and exit with its status (130 on Ctrl-C)."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: every kernel was stopped", file=sys.stderr)
        sys.exit(130)
