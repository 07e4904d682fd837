"""Building the student versions of the exercise sets (the command, ``python -m ragcourse exercises``: ``cli.exercises``).

For each master in ``exercises/masters/`` and ``exercises/masters/labs/`` (or the sets named),
the student version is made (``notebooks.student_version``), executed top to bottom in a fresh
kernel of this Python with the notebook's folder as working directory, and written to
``notebooks/exercises/`` (a lab's to ``notebooks/exercises/labs/``)
with its outputs (every check reads "not done yet") and execution counts 1..n, no timing
metadata. A cell that raises stops the build with exit status 1 (``BuildError``, a command error):
a student version must run top to bottom. Exit status 2 for an unknown set name (``UsageError``).
"""
from __future__ import annotations

from pathlib import Path

from ..batch.contract import CommandError
from .notebooks import STUDENT_DIR, student_version

BUILD_SECONDS = 300.0


class BuildError(CommandError):
    """A student version that does not run top to bottom (exit status 1)."""


def build_student(master_path: Path, out_dir: Path = STUDENT_DIR, seconds: float = BUILD_SECONDS):
    """The executed student version of one master (an nbformat node); BuildError if a cell fails."""
    import nbformat

    from .execute import run_notebook

    nb = student_version(nbformat.read(master_path, as_version=4))
    out_dir.mkdir(parents=True, exist_ok=True)
    run = run_notebook(nb, out_dir, seconds, allow_errors=False)
    if run.failure or run.timed_out is not None or run.error is not None:
        detail = run.failure or (f"code cell {run.timed_out} ran out of time" if run.timed_out is not None else
                                 f"code cell {run.error[0]} raised {run.error[1]}: {run.error[2]}")
        raise BuildError(f"the student version of {master_path.name} does not run top to bottom: {detail}")
    for cell in nb.cells:
        for key in ("execution", "papermill", "ExecuteTime", "collapsed"):
            cell.metadata.pop(key, None)
    nbformat.validate(nb)
    return nb
