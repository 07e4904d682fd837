"""A grading run stopped mid-way (SIGTERM, or Ctrl-C at a terminal) leaves nothing behind (issue 39).

Two notebooks, graded two at a time, each start a process in a session of their own and then
sleep in a cell; a third waits its turn. Once both kernels and both of their strays are
running, the run is stopped: with SIGTERM sent to the grader, or with SIGINT sent to its whole
process group, as a terminal's Ctrl-C does. Then no process the run started may be left (the
kernels and the strays included), its temporary folder must be gone, the CSV it was asked
for must still hold what it held before the run (no half-written table), and no report is
printed. The same run against a grader that lets SIGTERM kill it outright (its handler not
installed) leaves all of that behind: the check is shown to fail where the cleanup is missing.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from ragcourse.batch.notebooks import PROJECT_ROOT
from support.exercises import notebook

pytestmark = [pytest.mark.notebooks, pytest.mark.timed]  # kernels run, with deadlines

SLEEPER = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", {token!r}], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(600)
"""
OLD_TABLE = "notebook,question,points,max_points,passed\nlast-week.ipynb,q1,1,1,true\n"
# The grader as it would be without its SIGTERM handler: the signal's default action ends it at once.
NO_HANDLER = ("import sys; import ragcourse.exercises.grading as grading; grading._main_thread = lambda: False; "
              "from ragcourse.cli.main import main; sys.exit(main(sys.argv[1:]))")


def strays(tokens: list[str]) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(token in (process.info["cmdline"] or []) for token in tokens):
            found.append(process)
    return found


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stopped_run(tmp_path: Path, stop: str, command: list[str]) -> tuple[list[str], list[psutil.Process], Path]:
    """Start a run, stop it mid-way with ``stop``; what it left behind (empty: nothing), and what to clean."""
    folder = tmp_path / "class"
    folder.mkdir()
    # the run's own $TMPDIR, which the kernels' user (nobody, when the grader is root) can enter, as /tmp
    temporary = Path(tempfile.mkdtemp(prefix="ragcourse-signals-"))
    os.chmod(temporary, 0o711)
    tokens = [f"stray-{secrets.token_hex(6)}" for _ in range(2)]
    for name, token in zip(("a-sleeps.ipynb", "b-sleeps.ipynb"), tokens):
        notebook("master", SLEEPER.format(token=token), folder, name)
    notebook("master", "", folder, "c-waits.ipynb")
    table = tmp_path / "grades.csv"
    table.write_text(OLD_TABLE)
    # output to files, not pipes: a process left behind would hold a pipe open, and reading it would wait for it
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        grader = subprocess.Popen(command + [str(folder), "--csv", str(table), "--timeout", "300", "--jobs", "2"],
                                  cwd=PROJECT_ROOT, env=dict(os.environ, TMPDIR=str(temporary)),
                                  stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(strays(tokens)) < 2:
        if grader.poll() is not None or time.monotonic() > deadline:
            grader.kill()
            clean(strays(tokens), temporary)
            pytest.fail(f"the sleeping cells never started: {err.read_text()[-1000:]} {out.read_text()[-2000:]}")
        time.sleep(0.2)
    running = psutil.Process(grader.pid).children(recursive=True) + strays(tokens)
    assert len([p for p in running if "ipykernel_launcher" in " ".join(p.cmdline())]) == 2
    running = list({p.pid: p for p in running}.values())
    assert list(temporary.glob("ragcourse-grade-*")), "the run's temporary folder exists while it runs"
    if stop == "SIGTERM":
        os.kill(grader.pid, signal.SIGTERM)
    else:
        os.killpg(grader.pid, signal.SIGINT)   # Ctrl-C: the terminal signals the whole foreground group
    try:   # seconds when the machine is quiet; in make test lab 04 may be generating on both cores beside it
        grader.wait(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:
        grader.kill()
        grader.wait()
        return [f"the grader did not stop within {STOP_WITHIN} s"], running, temporary
    left = []
    time.sleep(1)   # the last kills land (a process killed by the grader may still be shutting down)
    survivors = [p for p in running if alive(p)]
    if survivors:
        left.append(f"{len(survivors)} processes still running: "
                    + ", ".join(" ".join(p.cmdline())[:80] for p in survivors if alive(p)))
    if list(temporary.glob("ragcourse-grade-*")):
        left.append("its temporary folder")
    if table.read_text() != OLD_TABLE or list(tmp_path.glob(".grades.csv.*")):
        left.append("a changed or half-written CSV")
    if "notebooks graded" in out.read_text():
        left.append("a report")
    if grader.returncode == 0:
        left.append("exit status 0")
    return left, running, temporary


STOP_WITHIN = 150   # one run beside lab 04's cold generation took more than 60 s


def clean(running: list[psutil.Process], temporary: Path) -> None:
    """Kill what a run left (a failing test must not leave it to the next), and remove its temporary folder."""
    import shutil

    for process in running:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(running, timeout=5)
    shutil.rmtree(temporary, ignore_errors=True)


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_a_stopped_run_leaves_nothing_behind(tmp_path, stop):
    left, running, temporary = stopped_run(tmp_path, stop, [sys.executable, "-m", "ragcourse", "grade"])
    clean(running, temporary)
    assert left == []


def test_without_its_cleanup_the_grader_would_fail_that_test(tmp_path):
    """The control: SIGTERM's default action (no handler) leaves kernels, strays and the temporary folder."""
    left, running, temporary = stopped_run(tmp_path, "SIGTERM", [sys.executable, "-c", NO_HANDLER, "grade"])
    clean(running, temporary)
    assert any("processes still running" in problem for problem in left), left
    assert "its temporary folder" in left
