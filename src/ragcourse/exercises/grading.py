"""Grading exercise notebooks: what ``python -m ragcourse grade`` runs. What it does, prints and exits with
is said once, in the command's docstring (``cli.grade``)."""
from __future__ import annotations

import csv
import os
import signal
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..batch.contract import UsageError
from .framework import FAILED, NOT_DONE, NOT_GRADED, PASSED, Verdict, load_set
from .notebooks import describe_notebook

DEFAULT_TIMEOUT = 60.0
CSV_COLUMNS = ("notebook", "question", "points", "max_points", "passed")


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
    limit: float = DEFAULT_TIMEOUT

    @property
    def points(self) -> int:
        return sum(v.points for v in self.verdicts)

    @property
    def max_points(self) -> int:
        return sum(v.max_points for v in self.verdicts)


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


def read_all(paths: list[Path]) -> list[tuple[Path, bytes | None]]:
    """Every submission's bytes, read before any of them runs (None: it could not be read)."""
    found = []
    for path in paths:
        try:
            found.append((path, path.read_bytes()))
        except OSError:
            found.append((path, None))
    return found


def parse_notebook(data: bytes | None):
    """The notebook in ``data``, or None when it is not one."""
    import nbformat

    if data is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        return nb if isinstance(nb.get("cells"), list) else None
    except Exception:
        return None


def read_notebook(path: Path):
    """The notebook at ``path``, or None when it cannot be read as one."""
    try:
        return parse_notebook(path.read_bytes())
    except OSError:
        return None


def not_graded(name: str, reason: str) -> list[Verdict]:
    """Zero points on every question of a set, each saying why."""
    return [Verdict(q.key, q.kind, q.title, NOT_GRADED, 0, q.max_points, (reason,)) for q in load_set(name).questions]


def recognise(path: Path, data: bytes | None) -> Graded:
    """What a submission is (its set, or why it has none), before anything runs."""
    nb = parse_notebook(data)
    if nb is None:
        return Graded(path, "not a notebook", problem="not a notebook: it cannot be read as a Jupyter notebook")
    name, what = describe_notebook(nb)
    if name is None:
        return Graded(path, what, problem=f"{what}; nothing to grade")
    graded = Graded(path, what, name)
    stem_lesson = path.name[:3]
    if stem_lesson[:2].isdigit() and stem_lesson[2:] == "-" and stem_lesson[:2] != name[:2]:
        graded.notes.append(f"its file name says lesson {stem_lesson[:2]}, its content is exercise set {name}")
    return graded


def trusted_verdicts(name: str, verdicts: list[dict]) -> list[Verdict]:
    """The supervisor's verdicts, held to the set: its questions in order, points from the status, at most the maximum."""
    questions = load_set(name).questions
    if len(verdicts) != len(questions):
        raise ValueError(f"{len(verdicts)} verdicts for {len(questions)} questions")
    found = []
    for question, data in zip(questions, verdicts):
        verdict = Verdict.from_dict(data)
        if verdict.question != question.key or verdict.status not in (PASSED, FAILED, NOT_DONE, NOT_GRADED):
            raise ValueError(f"a verdict on {verdict.question!r} with status {verdict.status!r}")
        found.append(Verdict(question.key, question.kind, question.title, verdict.status,
                             question.max_points if verdict.status == PASSED else 0, question.max_points,
                             verdict.lines))
    return found


def hard_limit(name: str, seconds: float) -> float:
    """How long a supervisor may take in all before it is killed: start-up, the notebook, every question, a margin."""
    from .sandbox import INTERRUPT_SECONDS, STARTUP_SECONDS

    questions = len(load_set(name).questions)
    return STARTUP_SECONDS + seconds + questions * (seconds + INTERRUPT_SECONDS) + 60


def kernel_user(as_user: str | None, out: TextIO | None = None, folder: Path | None = None):
    """The account kernels run as (None: the grader's own); UsageError saying what to fix for a bad ``--as-user``.

    The account must be able to run this Python, import the course and work in ``folder`` (the
    run's temporary folder); when the default account cannot, the kernels run as the grader.
    """
    from .sandbox import account, cannot_run_as

    try:
        user = account(as_user)
    except (KeyError, PermissionError) as error:
        raise UsageError(str(error).strip("'\"")) from None
    if user is None:
        return None
    reason = cannot_run_as(user, folder)
    if reason is None:
        return user
    if as_user is not None:
        raise UsageError(f"--as-user {as_user}: {reason}; make the environment readable by that user, or name"
                         " another")
    if out is not None:
        print(f"note: the kernels run as root, not as {user.name}: {reason} (see README.md, Exercises)", file=out)
    return None


def grade_files(paths: list[Path], seconds: float = DEFAULT_TIMEOUT, jobs: int = 1, as_user: str | None = None,
                out: TextIO | None = None) -> list[Graded]:
    """Grade every submission, ``jobs`` at a time, each by a supervisor of its own; results in the order of ``paths``.

    Every file is read first; then each notebook runs in a fresh folder under one temporary
    folder, which is removed on every way out (Ctrl-C and SIGTERM included, see ``run``).
    """
    import multiprocessing
    import shutil
    import tempfile
    import time
    from collections import deque
    from multiprocessing.connection import wait

    from .judge import GradingJob, supervise
    from .sandbox import kill_descendants

    read = read_all(paths)
    results = [recognise(path, data) for path, data in read]
    todo = [(index, graded) for index, graded in enumerate(results) if graded.problem is None]
    for _, graded in todo:
        load_set(graded.name)   # every set's checks imported here, before any submission runs
    import cloudpickle  # noqa: F401  (the supervisors' copies are forked from these)
    import jupyter_client.blocking.client  # noqa: F401
    import psutil  # noqa: F401

    root = Path(tempfile.mkdtemp(prefix="ragcourse-grade-"))
    context = multiprocessing.get_context("fork")
    running: dict[Any, tuple[int, Any, float, float]] = {}
    forked: list[Any] = []   # every supervisor, from its fork on
    try:
        os.chmod(root, 0o711)
        # tried in the folder the kernels will run under: a $TMPDIR the user cannot enter fails here, not later
        user = kernel_user(as_user, out, root) if todo else None
        queue = deque(todo)
        while queue or running:
            while queue and len(running) < jobs:
                index, graded = queue.popleft()
                exercise_set = load_set(graded.name)
                limit = seconds
                if exercise_set.seconds and exercise_set.seconds > seconds:  # a lab's cold run needs at least this
                    graded.notes.append(f"time limit raised to {exercise_set.seconds:g} s, what a cold run of"
                                        f" {graded.name} needs")
                    limit = exercise_set.seconds
                graded.limit = limit
                job = GradingJob(graded.name, read[index][1] or b"", root / f"{index:04d}", graded.path.name, limit, user)
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(target=supervise, args=(job, sender), daemon=True)
                with _signals_blocked():   # no way out between the fork and the supervisor being known
                    process.start()
                    forked.append(process)
                sender.close()
                running[receiver] = (index, process, time.monotonic(), hard_limit(graded.name, limit))
            for receiver in wait(list(running), timeout=0.5):
                index, process, started, _ = running.pop(receiver)
                try:
                    outcome = receiver.recv()
                except (EOFError, OSError):
                    outcome = None
                _finish(results[index], outcome, process, root / f"{index:04d}", time.monotonic() - started)
            for receiver, (index, process, started, limit) in list(running.items()):
                if time.monotonic() - started > limit:
                    del running[receiver]
                    _finish(results[index], None, process, root / f"{index:04d}", time.monotonic() - started,
                            f"stopped after {limit:g} s, the most a notebook and its checks may take")
        return results
    finally:
        with _signals_held():   # a second Ctrl-C or SIGTERM does not cut the cleanup short
            for process in forked:
                if process.is_alive():
                    kill_descendants(process.pid)
                    process.kill()
                    process.join(5)
            shutil.rmtree(root, ignore_errors=True)


def _finish(graded: Graded, outcome: Any, process: Any, folder: Path, seconds: float, why: str | None = None) -> None:
    """Kill what is left of a supervisor's tree, remove its folder, and turn its outcome into the grade."""
    import shutil

    from .sandbox import kill_descendants

    kill_descendants(process.pid)
    process.kill()
    process.join(5)
    shutil.rmtree(folder, ignore_errors=True)
    graded.seconds = seconds
    if outcome is None:
        graded.problem = why or "the grader's supervisor of this notebook ended without a result"
    else:
        graded.seconds = outcome.seconds
        if outcome.failure:
            graded.problem = outcome.failure
        elif outcome.timed_out is not None:
            graded.problem = (f"did not finish within {graded.limit:g} s: code cell {outcome.timed_out} was still"
                              " running (an endless loop?)")
        if outcome.error is not None:
            number, ename, evalue = outcome.error
            graded.notes.append(f"code cell {number} raised {ename}: {evalue.splitlines()[0] if evalue else ''}"
                                "; the cells after it ran, and what they defined is graded")
        graded.notes += outcome.notes
        if graded.problem is None:
            try:
                graded.verdicts = trusted_verdicts(graded.name, outcome.verdicts)
            except (ValueError, KeyError, TypeError) as error:
                graded.problem = f"the checks produced no usable result ({error})"
    if graded.problem is not None:
        graded.verdicts = not_graded(graded.name, graded.problem)


def grade_file(path: Path, seconds: float = DEFAULT_TIMEOUT, as_user: str | None = None) -> Graded:
    """Recognise, run and grade one submission."""
    return grade_files([path], seconds, 1, as_user)[0]


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
    """One row per notebook and question (an ungradable submission: one row, empty question).

    Written whole beside ``path`` and then renamed over it, so that ``path`` holds either what
    it held before or every row, never part of them (a run stopped while writing included).
    """
    import tempfile

    handle = tempfile.NamedTemporaryFile("w", newline="", encoding="utf-8", dir=path.parent,
                                         prefix=f".{path.name}.", suffix=".part", delete=False)
    try:
        with _signals_blocked(), handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(CSV_COLUMNS)
            for graded in results:
                where = _shown_path(graded.path)
                if not graded.verdicts:
                    writer.writerow([where, "", 0, 0, "false"])
                for v in graded.verdicts:
                    writer.writerow([where, v.question, v.points, v.max_points, "true" if v.passed else "false"])
            handle.flush()
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(handle.fileno(), 0o666 & ~umask)   # as open() would have made it
            os.replace(handle.name, path)
    finally:
        Path(handle.name).unlink(missing_ok=True)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM or SIGHUP: leave the way Ctrl-C does, through every ``finally`` (kernels killed, folders removed)."""
    raise SystemExit(128 + signum)


STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)   # what ends a run early (SIGKILL cannot be caught)


@contextmanager
def _signals_blocked():
    """Hold the stopping signals back until the block ends (then they arrive); the main thread only."""
    if not _main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


@contextmanager
def _signals_held():
    """Ignore the stopping signals while cleaning up, then restore what handled them; the main thread only."""
    if not _main_thread():
        yield
        return
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in STOPPING}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def grade_and_report(files: list[Path], seconds: float, jobs: int, as_user: str | None, solutions: bool,
                     csv_path: Path | None, out: TextIO) -> None:
    """Grade ``files``, print the report and write the CSV (``csv_path``, if given); SIGTERM and SIGHUP leave
    the way Ctrl-C does while the kernels run (every kernel stopped, no CSV written)."""
    print(f"grading {len(files)} file{'s' if len(files) != 1 else ''}, time limit {seconds:g} s each", file=out,
          flush=True)
    previous = {number: signal.signal(number, _terminated) for number in (signal.SIGTERM, signal.SIGHUP)} \
        if _main_thread() else {}
    try:
        results = grade_files(files, seconds, jobs, as_user, out)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    report(results, out, solutions)
    if csv_path is not None:
        write_csv(results, csv_path)
        print(f"wrote {_shown_path(csv_path)}", file=out)
