"""``python -m ragcourse grade PATH... [--csv FILE] [--solutions] [--timeout SECONDS] [--jobs N]``: grading.

Each submission (a notebook, or every file in a folder, recursively) is recognised by its
metadata (or its title), run top to bottom in a fresh kernel of this Python with a time
limit, and then graded inside that kernel: every question's check runs against the names the
notebook defined, exactly as the check cells do. A submission that is not a notebook, a
notebook of another lesson, or one that runs out of time is reported as such and the rest
are graded; one whose cells raise is graded on what ran and the error is reported.
``--solutions`` grades the masters (the lessons' and the labs'), which must pass every question.
A lab's set may name the least time its cold run needs (``ExerciseSet.seconds``: it embeds
texts or starts a database); its notebooks get that long when ``--timeout`` is shorter.

Printed: per notebook and question, passed or not and the points. ``--csv FILE`` writes one
row per notebook and question with the columns ``notebook,question,points,max_points,passed``
(a submission that could not be graded at all gets one row with an empty question).
Exit status 0 when grading finished, 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import csv
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .framework import GRADE_MARKER, NOT_GRADED, PASSED, Verdict, load_set
from .notebooks import MASTERS_DIR, describe_notebook, master_notebooks

DEFAULT_TIMEOUT = 60.0
CSV_COLUMNS = ("notebook", "question", "points", "max_points", "passed")
PROG = "python -m ragcourse grade"


@dataclass
class Graded:
    """One submission: what it is, its verdicts, why it was not graded (if so) and what else to say."""

    path: Path
    what: str
    name: str | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def points(self) -> int:
        return sum(v.points for v in self.verdicts)

    @property
    def max_points(self) -> int:
        return sum(v.max_points for v in self.verdicts)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0; got {text!r}") from None
    if not 0 < value <= 24 * 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 (at most a day); got {text!r}")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 64; got {text!r}")
    return value


def _existing_path(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist")
    return path


def _csv_path(text: str) -> Path:
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give a file name")
    if not path.parent.resolve().is_dir():
        raise argparse.ArgumentTypeError(f"the folder of {text!r} does not exist")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``grade`` command's arguments."""
    parser.add_argument("paths", nargs="*", type=_existing_path, metavar="PATH",
                        help="submitted notebooks, or folders of them (searched recursively)")
    parser.add_argument("--csv", type=_csv_path, default=None, metavar="FILE",
                        help="also write notebook,question,points,max_points,passed rows to FILE")
    parser.add_argument("--solutions", action="store_true",
                        help=f"grade the masters in {MASTERS_DIR.relative_to(MASTERS_DIR.parents[1])}/ instead"
                             " (they must pass every question); takes no PATH")
    parser.add_argument("--timeout", type=_positive_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit per notebook, and per check (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                        help="notebooks graded at once, one kernel each (default 1)")
    parser.set_defaults(grade_prog=parser.prog)


def submissions(paths: list[Path]) -> list[Path]:
    """The files to grade: each file given, and every visible file under each folder given, in order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file()
                            and not any(part.startswith(".") for part in p.relative_to(path).parts))
        else:
            found.append(path)
    unique: list[Path] = []
    for path in found:
        if path.resolve() not in {p.resolve() for p in unique}:
            unique.append(path)
    return unique


def read_notebook(path: Path):
    """The notebook at ``path``, or None when it cannot be read as one."""
    import nbformat

    try:
        text = path.read_text(encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
        if not isinstance(nb.get("cells"), list):
            return None
        return nb
    except Exception:
        return None


def grading_code(name: str, seconds: float) -> str:
    """What the grader runs in a submission's kernel after its cells."""
    return ("from ragcourse.exercises.framework import grade_in_kernel as __ragcourse_grade\n"
            f"__ragcourse_grade({name!r}, globals(), {seconds!r})")


def not_graded(name: str, reason: str) -> list[Verdict]:
    """Zero points on every question of a set, each saying why."""
    return [Verdict(q.key, q.kind, q.title, NOT_GRADED, 0, q.max_points, (reason,)) for q in load_set(name).questions]


def grade_file(path: Path, seconds: float = DEFAULT_TIMEOUT) -> Graded:
    """Recognise, run and grade one submission."""
    from .execute import run_async

    return run_async(grade_file_async(path, seconds))


async def grade_files(paths: list[Path], seconds: float, jobs: int = 1) -> list[Graded]:
    """Grade every submission, ``jobs`` kernels at a time; the results in the order of ``paths``."""
    import asyncio

    slots = asyncio.Semaphore(jobs)

    async def one(path: Path) -> Graded:
        async with slots:
            return await grade_file_async(path, seconds)

    return list(await asyncio.gather(*(one(path) for path in paths)))


async def grade_file_async(path: Path, seconds: float = DEFAULT_TIMEOUT) -> Graded:
    """``grade_file`` as a coroutine."""
    from .execute import run_notebook_async

    nb = read_notebook(path)
    if nb is None:
        return Graded(path, "not a notebook", problem="not a notebook: it cannot be read as a Jupyter notebook")
    name, what = describe_notebook(nb)
    if name is None:
        return Graded(path, what, problem=f"{what}; nothing to grade")
    graded = Graded(path, what, name)
    stem_lesson = path.name[:3]
    if stem_lesson[:2].isdigit() and stem_lesson[2:] == "-" and stem_lesson[:2] != name[:2]:
        graded.notes.append(f"its file name says lesson {stem_lesson[:2]}, its content is exercise set {name}")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    exercise_set = load_set(name)
    if exercise_set.seconds and exercise_set.seconds > seconds:   # a lab's cold run needs at least this long
        graded.notes.append(f"time limit raised to {exercise_set.seconds:g} s, what a cold run of {name} needs")
        seconds = exercise_set.seconds
    checks = len(exercise_set.questions)   # each check may take up to `seconds`; the whole run a little more
    run = await run_notebook_async(nb, path.resolve().parent, seconds, allow_errors=True,
                                   extra_code=grading_code(name, seconds), extra_seconds=seconds * checks + 30)
    graded.seconds = run.seconds
    if run.failure:
        graded.problem = run.failure
    elif run.timed_out is not None:
        graded.problem = (f"did not finish within {seconds:g} s: code cell {run.timed_out} was still running"
                          " (an endless loop?)")
    if run.error is not None:
        number, ename, evalue = run.error
        graded.notes.append(f"code cell {number} raised {ename}: {evalue.splitlines()[0] if evalue else ''}"
                            "; the cells after it ran, and what they defined is graded")
    graded.notes += run.notes
    if graded.problem is None:
        line = next((ln for ln in run.extra_stdout.splitlines() if ln.startswith(GRADE_MARKER)), None)
        if line is None:
            graded.problem = ("the checks did not finish within the time limit" if run.extra_timed_out
                              else "the checks produced no result")
        else:
            import json

            graded.verdicts = [Verdict.from_dict(v) for v in json.loads(line[len(GRADE_MARKER):])]
    if graded.problem is not None:
        graded.verdicts = not_graded(name, graded.problem)
    return graded


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def report(results: list[Graded], out: TextIO, solutions: bool) -> None:
    """The printed report: per notebook and question, then a summary."""
    for graded in results:
        where = _shown_path(graded.path)
        if graded.name is None:
            print(f"\n{where}: NOT GRADED: {graded.problem}", file=out)
            continue
        print(f"\n{where}: {graded.what}, {graded.seconds:.1f} s", file=out)
        if graded.problem:
            print(f"  NOT GRADED: {graded.problem}", file=out)
        for note in graded.notes:
            print(f"  note: {note}", file=out)
        width = max(len(v.title) for v in graded.verdicts)
        for v in graded.verdicts:
            print(f"  {v.question:<3} {v.kind:<7} {v.title:<{width}}  {v.status:<15} {v.points}/{v.max_points}",
                  file=out)
        passed = sum(v.passed for v in graded.verdicts)
        print(f"  total {graded.points}/{graded.max_points} points, {passed} of {len(graded.verdicts)} questions"
              " passed", file=out)
    graded_ok = [g for g in results if g.name is not None and g.problem is None]
    questions = [v for g in graded_ok for v in g.verdicts]
    print(f"\n{len(graded_ok)} notebook{'s' if len(graded_ok) != 1 else ''} graded,"
          f" {len(results) - len(graded_ok)} not graded; {sum(v.passed for v in questions)} of {len(questions)}"
          f" questions passed, {sum(v.points for v in questions)}/{sum(v.max_points for v in questions)} points",
          file=out)
    if solutions:
        failing = [f"{g.name} {v.question}" for g in results for v in g.verdicts if v.status != PASSED]
        print("every master passes every question" if not failing and results else
              f"masters that do not pass: {', '.join(failing) or 'none found'}", file=out)


def write_csv(results: list[Graded], path: Path) -> None:
    """One row per notebook and question (an ungradable submission: one row, empty question)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for graded in results:
            where = _shown_path(graded.path)
            if not graded.verdicts:
                writer.writerow([where, "", 0, 0, "false"])
            for v in graded.verdicts:
                writer.writerow([where, v.question, v.points, v.max_points, "true" if v.passed else "false"])


def _usage_error(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Grade what ``args`` names; 0 when grading finished, 2 for bad arguments."""
    out = out or sys.stdout
    prog = getattr(args, "grade_prog", PROG)
    paths = list(getattr(args, "paths", []) or [])
    if args.solutions and paths:
        return _usage_error(prog, "--solutions grades the masters; give no PATH with it")
    if not args.solutions and not paths:
        return _usage_error(prog, "give at least one PATH (a notebook or a folder), or --solutions")
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        return _usage_error(prog, f"argument PATH: {', '.join(map(repr, missing))} does not exist")
    seconds = getattr(args, "timeout", DEFAULT_TIMEOUT)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        return _usage_error(prog, f"argument --timeout: must be a number of seconds above 0; got {seconds!r}")
    files = list(master_notebooks().values()) if args.solutions else submissions([Path(p) for p in paths])
    if not files:
        return _usage_error(prog, "no files to grade" + (f" in {MASTERS_DIR}" if args.solutions else ""))
    print(f"grading {len(files)} file{'s' if len(files) != 1 else ''}, time limit {seconds:g} s each", file=out,
          flush=True)
    from .execute import run_async

    results = run_async(grade_files([Path(p) for p in files], seconds, getattr(args, "jobs", 1) or 1))
    report(results, out, args.solutions)
    if args.csv is not None:
        write_csv(results, Path(args.csv))
        print(f"wrote {_shown_path(Path(args.csv))}", file=out)
    return 0
