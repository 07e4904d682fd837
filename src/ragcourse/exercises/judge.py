"""Grading a submission from outside its kernel: the checks call the student's answers through the kernel.

The kernel holds what the notebook defined and nothing else of the grader's: no check runs
there, no verdict is made there. After the notebook's cells have run, the supervising process
(``supervise``, forked from the grader before any kernel started, so its copy of the package
was imported before any submission could touch a file) puts one small function into the
kernel under a name with a fresh secret in it, and then runs every question's check itself.
The check receives, for each name the question reads,

* the value, when the name holds data (a prediction): the kernel pickles it, and the grader
  loads it with an unpickler that builds nothing but plain data (numbers, strings, containers,
  numpy arrays, the package's own dataclasses and named tuples);
* a ``RemoteFunction`` when the name holds a function: calling it sends the arguments the check chose
  to the kernel (cloudpickled: the grader trusts its own arguments), calls the student's
  function there, and brings the result back through the same strict unpickler. A result
  that is not plain data, an exception or a call that runs past the question's time limit is
  what the check sees, exactly as if the function had run in the grader.

An argument object travels once per question: the kernel keeps it, and the question's later
calls refer to it by number (a lab hands the same index to fifty calls). What is lent by
reference, and what the kernel opens afresh rather than receives, is in ``lending``; the
protocol itself (the kernel's side, ``Link``, the strict unpickler) is in ``wire``.

So the verdict, its status and its points come from the grader's code alone; a cell that
replaces a check, the verdict or anything else of the package changes only the kernel's copy.
What the kernel sends back can only be an answer: it is the student's to choose, and it is
judged as one.
"""
from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .framework import FAILED, NOT_DONE, CheckTimeout, ExerciseSet, Verdict, load_set
from .sandbox import Account, Kernel, KernelError, become_subreaper
from .wire import RemoteFunction, KernelGone, Link, Unreadable

# A cell that only calls a check (``exercises.check("q2", keyword_score)``) is not run by the grader:
# the grader runs the checks itself, so a slow answer costs one question's limit, not the notebook's.
CHECK_CELL = re.compile(r"^\s*exercises\.check\(\s*(['\"])q\w+\1\s*(,\s*[A-Za-z_]\w*\s*)*,?\s*\)\s*;?\s*$")


def judge(exercise_set: ExerciseSet, link: Link, seconds: float) -> list[Verdict]:
    """Every question's verdict, its checks run here, its answers fetched from or called in the kernel."""
    if exercise_set.seconds:
        seconds = max(seconds, exercise_set.seconds)
    verdicts = []
    for question in exercise_set.questions:
        def verdict(status: str, *lines: str) -> Verdict:
            return Verdict(question.key, question.kind, question.title, status, 0, question.max_points, lines)

        link.question(question.key, seconds)
        try:
            kinds = [link.request("kind", name) for name in question.names]
            missing = [name for name, kind in zip(question.names, kinds) if kind == "missing"]
            if missing:
                verdicts.append(verdict(NOT_DONE, f"the notebook defines no {', '.join(missing)}"))
                continue
            answers = [RemoteFunction(link, name) if kind == "callable" else link.request("value", name)
                       for name, kind in zip(question.names, kinds)]
        except CheckTimeout as error:
            verdicts.append(verdict(FAILED, str(error)))
            continue
        except Unreadable as error:
            verdicts.append(verdict(FAILED, f"{', '.join(question.names)} holds {error}, which the grader does not"
                                    " read", "hint:     give plain values: numbers, strings, lists, tuples, dicts"))
            continue
        except Exception as error:
            verdicts.append(verdict(FAILED, f"the grader could not read {', '.join(question.names)}: {error}"))
            continue
        verdicts.append(exercise_set.verdict(question.key, *answers))
    return verdicts


@dataclass
class GradingJob:
    """What a supervisor needs: the submission (its bytes), where to run it, its set, limits, its user."""

    name: str
    data: bytes
    folder: Path
    file_name: str
    seconds: float
    user: Account | None = None


@dataclass
class GradingOutcome:
    """What the supervisor reports (plain data, back to the grader through a pipe)."""

    verdicts: list[dict] = field(default_factory=list)
    error: tuple[int, str, str] | None = None
    timed_out: int | None = None
    failure: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_cells(kernel: Kernel, nb: Any, seconds: float, outcome: GradingOutcome) -> None:
    """The notebook's code cells in order within ``seconds`` (its check cells left out)."""
    deadline = time.monotonic() + seconds
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        count += 1
        if CHECK_CELL.match(cell.source) or not cell.source.strip():
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            outcome.timed_out = count
            return
        reply = kernel.execute(cell.source, remaining)
        if reply.status == "timeout":
            outcome.timed_out = count
            return
        if reply.status == "dead":
            outcome.failure = f"the kernel died while code cell {count} ran"
            return
        if reply.status == "error" and outcome.error is None:
            outcome.error = (count, reply.ename or "Error", reply.evalue)


def supervise(job: GradingJob, connection: Any) -> None:
    """A forked child's work: run ``job``'s notebook, judge it, kill every process it left, send the outcome."""
    import nbformat

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the grader's to handle: it kills this process
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    # forked while the grader held these back (grading._signals_blocked): the kernel must get its SIGINT
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    become_subreaper()
    started = time.monotonic()
    outcome = GradingOutcome()
    kernel = Kernel(job.folder, job.user)
    try:
        job.folder.mkdir()
        (job.folder / job.file_name).write_bytes(job.data)
        nb = nbformat.reads(job.data.decode("utf-8"), as_version=4)
        kernel.start()
        run_cells(kernel, nb, job.seconds, outcome)
        if outcome.failure is None and outcome.timed_out is None:
            link = Link(kernel)
            try:
                link.open()
                outcome.verdicts = [v.as_dict() for v in judge(load_set(job.name), link, job.seconds)]
            finally:
                link.close()
    except (KernelError, KernelGone) as error:
        outcome.failure = str(error)
    except Exception as error:
        outcome.failure = f"the grader failed on this notebook: {type(error).__name__}: {error}"
    finally:
        kernel.close()
    outcome.seconds = time.monotonic() - started
    connection.send(outcome)
    connection.close()
    os._exit(0)
