"""The embedded PostgreSQL's watchdog (issue 54): a killed owner leaves no server and no folder behind.

Real processes throughout: a child Python opens a temporary embedded server, reports its data
folder, the postmaster's PID and the watchdog's, and is then killed with SIGKILL (pgserver's
``atexit`` hook never runs). Every wait polls against a deadline, and every test stops what it
started in a ``finally`` block, even when it fails.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("pgserver")
psutil = pytest.importorskip("psutil")   # a dependency of pgserver

from ragcourse.rag import watchdog  # noqa: E402
from ragcourse.rag.database import URL_VARIABLE, open_database  # noqa: E402

SOURCE = Path(__file__).resolve().parents[2] / "src"
CHILD = textwrap.dedent("""
    import os, sys, time
    from ragcourse.rag.database import open_database
    database = open_database(temporary=True)
    print(database.data_dir, database._server.get_pid(), database.watchdog_pid, flush=True)
    time.sleep(600)
""")


def running(pid: int | None) -> bool:
    """Whether ``pid`` is a live process (a zombie, exited but not yet reaped, counts as gone)."""
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until(condition, seconds: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def watchdogs_of(folder: Path) -> list[int]:
    """The PIDs of live watchdog processes for ``folder``, found by their command lines."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        line = process.info["cmdline"] or []
        if watchdog.MODULE in line and str(folder) in line and running(process.info["pid"]):
            found.append(process.info["pid"])
    return found


def force_cleanup(folder: Path | None, *pids: int | None) -> None:
    """After a failure: kill what is left (only processes that name ``folder``) and delete the folder."""
    if folder is None:
        return
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if any(str(folder) in part for part in process.cmdline()):
                process.kill()
        except (psutil.Error, TypeError, ValueError):
            pass
    for pid in watchdogs_of(folder):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def embedded(monkeypatch):
    """Make ``open_database`` start the embedded server even when the suite runs against a URL."""
    monkeypatch.delenv(URL_VARIABLE, raising=False)


@pytest.mark.database
def test_a_killed_owner_leaves_no_server_and_no_folder(embedded):
    environment = {k: v for k, v in os.environ.items() if k != URL_VARIABLE}
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (str(SOURCE), environment.get("PYTHONPATH")) if p)
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=environment, start_new_session=True)
    folder = postgres = guard = None
    try:
        ready, _, _ = select.select([child.stdout], [], [], 180)
        line = child.stdout.readline() if ready else ""
        assert line, f"the child reported nothing (exit {child.poll()}): {child.stderr.read() if child.poll() is not None else ''}"
        folder_text, postgres_text, guard_text = line.split()
        folder, postgres, guard = Path(folder_text), int(postgres_text), int(guard_text)
        assert folder.name.startswith("ragcourse-pg-") and (folder / "postmaster.pid").exists()
        assert running(postgres) and running(guard)
        assert watchdogs_of(folder) == [guard]

        child.kill()                       # SIGKILL: no atexit hook runs; the child stays unreaped until the end
        started = time.monotonic()
        assert wait_until(lambda: not running(postgres) and not folder.exists(), 20), \
            f"after 20 s: postgres running {running(postgres)}, folder exists {folder.exists()}"
        print(f"cleaned up {time.monotonic() - started:.1f} s after the kill")
        assert wait_until(lambda: not running(guard), 5), "the watchdog did not exit after cleaning up"
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
        child.stdout.close()
        child.stderr.close()
        force_cleanup(folder, postgres, guard)


@pytest.mark.database
def test_a_normal_close_leaves_no_watchdog_behind(embedded):
    database = open_database(temporary=True)
    folder, guard = database.data_dir, database.watchdog_pid
    try:
        assert guard is not None and running(guard)
        assert watchdogs_of(folder) == [guard]
        database.close()
        assert database.watchdog_pid is None
        assert not running(guard) and watchdogs_of(folder) == []
        assert not folder.exists()
    finally:
        database.close()
        force_cleanup(folder, guard)


@pytest.mark.database
def test_the_watchdog_does_nothing_while_the_owner_lives_and_leaves_when_the_server_stops(embedded):
    database = open_database(temporary=True)
    folder, process = database.data_dir, database._watchdog
    try:
        postgres = database._server.get_pid()
        time.sleep(3)                      # six polls
        assert process.poll() is None and running(postgres)
        with database.connect(vector=False) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)

        server, database._server = database._server, None
        server.cleanup()                   # stopped the normal way, without telling the watchdog
        assert process.wait(10) == 0       # it noticed postmaster.pid was gone and exited by itself
        assert not folder.exists()
    finally:
        if database._server is not None:
            database._server.cleanup()
            database._server = None
        database.close()
        force_cleanup(folder, process.pid)


def test_no_watchdog_for_a_database_given_by_url(monkeypatch):
    monkeypatch.setattr("ragcourse.rag.database.Database.ensure_vector", lambda self: "0")
    database = open_database(url="postgresql://nobody@/nowhere?host=/nonexistent")
    assert database.watchdog_pid is None and not database.embedded
    database.close()


def test_other_clients_are_the_live_listed_processes_but_the_owner(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(30)
    try:
        (tmp_path / watchdog.HANDLES).write_text(json.dumps([os.getpid(), sleeper.pid, dead.pid]))
        assert watchdog.other_clients(tmp_path, owner=os.getpid()) == [sleeper.pid]
        (tmp_path / watchdog.HANDLES).write_text("[12")          # unreadable: pgserver could not use it either
        assert watchdog.other_clients(tmp_path, owner=os.getpid()) == []
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_a_reused_pid_is_not_the_owner():
    stamp = watchdog.start_stamp(os.getpid())
    assert stamp and watchdog.same_process(os.getpid(), stamp)
    kind, _, value = stamp.partition(":")
    other = f"{kind}:{int(float(value)) + 100}"
    assert not watchdog.same_process(os.getpid(), other)


@pytest.mark.parametrize("arguments, message", [
    (["--owner", "x", "--data-dir", "/", "--pg-ctl", sys.executable], "a process id is a positive whole number"),
    (["--owner", "1", "--data-dir", "/no/such/folder", "--pg-ctl", sys.executable], "no data folder"),
    (["--owner", "1", "--data-dir", "/", "--pg-ctl", "/no/such/pg_ctl"], "no executable pg_ctl"),
    (["--owner", "1", "--data-dir", "/", "--pg-ctl", sys.executable, "--interval", "0"], "the interval is"),
])
def test_bad_arguments_get_one_line(arguments, message, capsys):
    with pytest.raises(SystemExit) as stop:
        watchdog.main(arguments)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count("\n") == 1
