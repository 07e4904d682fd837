"""Running a notebook in a fresh kernel of this Python, with a time limit, for ``make exercises`` and the grader.

``run_notebook`` executes the code cells in order (execution counts 1..n) in a new kernel
that uses this very interpreter (so the project's environment, whatever kernels the user has
registered), quiet and single-threaded, talking over local sockets. It stops at the first
error unless errors are allowed, and at the time limit, which covers the whole notebook.
Then it can run one more piece of code (the grader's) with a limit of its own. It reports
what happened; it never raises for what the notebook did.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KERNEL_ENV = {"TQDM_DISABLE": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "PYDEVD_DISABLE_FILE_VALIDATION": "1", "JUPYTER_PREFER_ENV_PATH": "1", "MPLBACKEND": "agg"}
STARTUP_SECONDS = 60.0
MARGIN_SECONDS = 10.0  # beyond a cell's limit, before the kernel is given up for dead


@dataclass
class Run:
    """What running a notebook did: its first error, where it ran out of time, what the extra code printed."""

    nb: Any
    error: tuple[int, str, str] | None = None     # (code cell number, exception name, message)
    timed_out: int | None = None                  # code cell number that was still running at the limit
    failure: str | None = None                    # the kernel could not start, or died
    extra_stdout: str = ""
    extra_timed_out: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Every cell ran to its end (errors allowed) and the kernel stayed alive."""
        return self.timed_out is None and self.failure is None


def kernel_environment() -> dict[str, str]:
    """This process's environment, made quiet and single-threaded for a kernel."""
    env = dict(os.environ)
    env.update(KERNEL_ENV)
    return env


def _this_python_specs():
    """A kernel-spec manager whose ``python3`` is this interpreter."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              display_name="Python 3 (ipykernel)", language="python", resource_dir="")

    return ThisPython()


def run_notebook(nb: Any, cwd: Path, seconds: float, allow_errors: bool = True, extra_code: str | None = None,
                 extra_seconds: float = 60.0) -> Run:
    """Execute ``nb``'s code cells in place in a fresh kernel started in ``cwd`` (see the module)."""
    return run_async(run_notebook_async(nb, cwd, seconds, allow_errors, extra_code, extra_seconds))


def run_async(coroutine) -> Any:
    """Run a coroutine to its end, in a thread of its own when an event loop already runs here (a notebook cell)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", asyncio.run(coroutine)), daemon=True)
    thread.start()
    thread.join()
    return box["result"]


def _first_error(cell: Any) -> tuple[str, str] | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return str(output.get("ename", "Error")), str(output.get("evalue", ""))
    return None


async def run_notebook_async(nb: Any, cwd: Path, seconds: float, allow_errors: bool = True,
                             extra_code: str | None = None, extra_seconds: float = 60.0) -> Run:
    """``run_notebook`` as a coroutine, so that several notebooks can run at once."""
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    started = time.monotonic()
    run = Run(nb)
    runtime = tempfile.mkdtemp(prefix="ragcourse-grade-")
    manager = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=_this_python_specs(), transport="ipc",
                                 ip=os.path.join(runtime, "kernel"))
    manager.connection_file = os.path.join(runtime, "kernel.json")
    client = None
    try:
        try:
            await manager.start_kernel(cwd=str(Path(cwd)), env=kernel_environment(),
                                       extra_arguments=["--HistoryManager.hist_file=:memory:"])
            client = manager.client()
            client.start_channels()
            await client.wait_for_ready(timeout=STARTUP_SECONDS)
            client.allow_stdin = False
        except Exception as error:
            run.failure = f"the kernel did not start: {type(error).__name__}: {error}"
            return run
        notebook_client = NotebookClient(nb, km=manager, kernel_name="python3", allow_errors=allow_errors,
                                         record_timing=False, coalesce_streams=True, iopub_timeout=10,
                                         resources={"metadata": {"path": str(cwd)}})
        notebook_client.kc = client
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
        if extra_code is not None and run.finished:
            cell = nbformat.v4.new_code_cell(extra_code)
            nb.cells.append(cell)  # nbclient stores the executed cell back into the notebook
            notebook_client.timeout = max(1, int(extra_seconds))
            notebook_client.allow_errors = True
            try:
                await asyncio.wait_for(notebook_client.async_execute_cell(cell, len(nb.cells) - 1,
                                                                          store_history=False),
                                       extra_seconds + MARGIN_SECONDS)
                run.extra_stdout = "".join(o.get("text", "") for o in cell.outputs
                                           if o.get("output_type") == "stream" and o.get("name") == "stdout")
                error = _first_error(cell)
                if error:
                    run.notes.append(f"grading code raised {error[0]}: {error[1]}")
            except (CellTimeoutError, asyncio.TimeoutError):
                run.extra_timed_out = True
            except DeadKernelError:
                run.failure = "the kernel died while the checks ran"
            finally:
                nb.cells.pop()
        return run
    finally:
        if client is not None:
            client.stop_channels()
        try:
            await manager.shutdown_kernel(now=True)
        except Exception:
            pass
        shutil.rmtree(runtime, ignore_errors=True)
        run.seconds = time.monotonic() - started
