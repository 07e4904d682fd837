"""``exercises.execute.run_notebook`` (what ``make exercises`` runs each student version with) on the kernel layer.

Its own part is the deadline over the whole notebook and the first error; the kernel, its
environment and the blocking call are ``ragcourse.batch.kernels``'.
"""
from __future__ import annotations

import asyncio
import sys

import psutil
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ragcourse.exercises.execute import run_notebook

pytestmark = pytest.mark.notebooks  # kernels run: not part of `make test-fast`


def notebook(*sources: str):
    return new_notebook(cells=[new_markdown_cell("# a title"), *(new_code_cell(source) for source in sources)])


def stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def kernels_left() -> list[psutil.Process]:
    return [child for child in psutil.Process().children(recursive=True)
            if "ipykernel" in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE]


def test_cells_run_in_order_in_this_python_with_agg_and_the_first_error_is_kept(tmp_path):
    nb = notebook("import os, sys, matplotlib\nprint(sys.executable, os.getcwd(), matplotlib.get_backend())",
                  "1 / 0", "print('still running')", "undefined_name")
    run = run_notebook(nb, tmp_path, 60)
    assert run.finished and run.failure is None and run.timed_out is None
    assert stdout(nb.cells[1]).split() == [sys.executable, str(tmp_path), "agg"]
    assert [cell.execution_count for cell in nb.cells[1:]] == [1, 2, 3, 4]
    assert run.error == (2, "ZeroDivisionError", "division by zero")
    assert stdout(nb.cells[3]) == "still running\n"
    assert kernels_left() == []


def test_errors_not_allowed_stop_at_the_first(tmp_path):
    nb = notebook("x = 1", "raise KeyError('k')", "print('never')")
    run = run_notebook(nb, tmp_path, 60, allow_errors=False)
    assert run.error == (2, "KeyError", "'k'")
    assert nb.cells[3].outputs == [] and nb.cells[3].get("execution_count") is None


def test_the_time_limit_covers_the_notebook_and_names_the_cell(tmp_path):
    nb = notebook("import time\ntime.sleep(0.5)", "time.sleep(60)", "print('never')")
    run = run_notebook(nb, tmp_path, 2)
    assert run.timed_out == 2 and not run.finished
    assert run.seconds < 30
    assert kernels_left() == []


def test_called_from_a_running_event_loop_it_still_runs(tmp_path):
    """As from a notebook cell: the run gets its own loop in a thread, and its result comes back."""
    async def cell():
        return run_notebook(notebook("print(6 * 7)"), tmp_path, 60)

    run = asyncio.run(cell())
    assert run.finished and stdout(run.nb.cells[1]) == "42\n"
