"""Running a notebook in a fresh kernel of this Python, with a time limit, for ``make exercises``.

``run_notebook`` executes the code cells in order (execution counts 1..n) in a new kernel
that uses this very interpreter (so the project's environment, whatever kernels the user has
registered), quiet and single-threaded, talking over local sockets: the kernel layer the
batch engine uses too (``ragcourse.batch.kernels``), with matplotlib's ``agg`` backend. What
is this module's own is the deadline: it stops at the first error unless errors are allowed,
and at the time limit, which covers the whole notebook, checked before and during every cell.
It reports what happened; it never raises for what the notebook did. (The grader's kernels
are ``sandbox``'s: another user, no output read, every process killed.)
"""
from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..batch.kernels import KERNEL_NAME, kernel_environment, run_blocking, start_kernel

MPL_BACKEND = "agg"  # figures are drawn, never shown
STARTUP_SECONDS = 60.0
MARGIN_SECONDS = 10.0  # beyond a cell's limit, before the kernel is given up for dead


@dataclass
class Run:
    """What running a notebook did: its first error, where it ran out of time, whether the kernel failed."""

    nb: Any
    error: tuple[int, str, str] | None = None     # (code cell number, exception name, message)
    timed_out: int | None = None                  # code cell number that was still running at the limit
    failure: str | None = None                    # the kernel could not start, or died
    seconds: float = 0.0

    @property
    def finished(self) -> bool:
        """Every cell ran to its end (errors allowed) and the kernel stayed alive."""
        return self.timed_out is None and self.failure is None


def run_notebook(nb: Any, cwd: Path, seconds: float, allow_errors: bool = True) -> Run:
    """Execute ``nb``'s code cells in place in a fresh kernel started in ``cwd`` (see the module)."""
    return run_blocking(run_notebook_async(nb, cwd, seconds, allow_errors), thread_name="ragcourse-execute")


def _first_error(cell: Any) -> tuple[str, str] | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return str(output.get("ename", "Error")), str(output.get("evalue", ""))
    return None


async def run_notebook_async(nb: Any, cwd: Path, seconds: float, allow_errors: bool = True) -> Run:
    """``run_notebook`` as a coroutine, so that several notebooks can run at once."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    started = time.monotonic()
    run = Run(nb)
    runtime = tempfile.mkdtemp(prefix="ragcourse-grade-")
    kernel = None
    try:
        try:
            kernel = await start_kernel(runtime, "kernel", str(Path(cwd)), kernel_environment(MPL_BACKEND),
                                        STARTUP_SECONDS)
        except Exception as error:
            run.failure = f"the kernel did not start: {type(error).__name__}: {error}"
            return run
        notebook_client = NotebookClient(nb, km=kernel.manager, kernel_name=KERNEL_NAME, allow_errors=allow_errors,
                                         record_timing=False, coalesce_streams=True, iopub_timeout=10,
                                         resources={"metadata": {"path": str(cwd)}})
        notebook_client.kc = kernel.client
        deadline = time.monotonic() + seconds  # the limit counts from a ready kernel: start-up is not the notebook's
        count = 0
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            count += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                run.timed_out = count
                break
            notebook_client.timeout = max(1, int(remaining + 0.999))
            try:
                await asyncio.wait_for(notebook_client.async_execute_cell(cell, index, execution_count=count),
                                       remaining + MARGIN_SECONDS)
            except (CellTimeoutError, asyncio.TimeoutError):
                run.timed_out = count
                break
            except DeadKernelError:
                run.failure = f"the kernel died while code cell {count} ran"
                break
            except Exception:  # CellExecutionError when errors are not allowed
                pass
            error = _first_error(cell)
            if error and run.error is None:
                run.error = (count, *error)
            if error and not allow_errors:
                break
        return run
    finally:
        if kernel is not None:
            await kernel.kill()
        shutil.rmtree(runtime, ignore_errors=True)
        run.seconds = time.monotonic() - started
