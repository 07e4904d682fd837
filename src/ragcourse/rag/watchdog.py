"""A watchdog for an embedded PostgreSQL whose owner may be killed.

pgserver stops its server, and deletes a temporary data folder, from an ``atexit`` hook, so
a process that is killed (SIGKILL, a notebook's "kill kernel", the OOM killer) leaves its
postgres running and its ``/tmp/ragcourse-pg-*`` folder behind. ``open_database`` therefore
starts this small process beside a temporary server: detached (a session of its own, so a
kill of the kernel's process group spares it; stdin, stdout and stderr on devnull, so it
never holds a notebook's output pipes), it polls every half second, with one ``stat`` and
one read of ``/proc/<pid>/stat``, whether

* the server was stopped the normal way (``postmaster.pid`` or the whole folder is gone):
  then it exits and does nothing;
* the owner is gone: ``os.kill(pid, 0)`` fails, the process is a zombie, its start time
  differs from the one recorded (the PID was reused by another process), or the watchdog,
  started as the owner's child, was handed to another parent. Then it stops the server
  (``pg_ctl -m fast -w stop``, ``-m immediate`` if that fails or times out) and, for a
  temporary folder, deletes the folder once the server is down.

The safe design, and why. pgserver shares one server among the processes that open the
same folder and counts them in the folder's ``.handle_pids.json``. So

1. even after its owner died, the watchdog acts only when no other live process is listed
   there; it checks under pgserver's own lock file, so a client that is starting meanwhile
   is either listed already or starts afterwards on a stopped server (and starts a new one);
2. ``open_database`` starts a watchdog for temporary folders only, never for the default
   folder (``default_data_dir()``). A temporary folder is a fresh ``mkdtemp`` that only its
   owner knows, and its contract is "gone when the owner is done", which a killed owner is.
   The default folder is shared by design (the commands, the tests, a notebook given
   ``data_dir``), and its list does not name every user: a process connected through its
   URI (``psql``, ``$RAGCOURSE_DATABASE_URL``) is not listed. Stopping it wrongly breaks a
   live process; leaving it running costs one idle server that the next ``open_database``
   finds running and reuses, and its data is meant to persist anyway.

Run by hand: ``python -m ragcourse.rag.watchdog --owner PID --data-dir DIR --pg-ctl PATH
[--temporary]``. This module imports the standard library only (psutil, if installed, off
Linux), so the watchdog costs a bare interpreter.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

MODULE = "ragcourse.rag.watchdog"
POLL_SECONDS = 0.5
STOP_SECONDS = 20          # pg_ctl's own wait (-t) for each of the two stop attempts
HANDLES = ".handle_pids.json"
PIDFILE = "postmaster.pid"


# ---------------------------------------------------------------- processes

def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks) from ``/proc/<pid>/stat``; None if there is no such entry."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()   # the name (field 2) may hold spaces and parentheses
    return fields[0], fields[19]                      # fields 3 (state) and 22 (starttime)


def start_stamp(pid: int) -> str | None:
    """When process ``pid`` started, as ``proc:<ticks>`` or ``psutil:<seconds>``; ``""`` if alive but
    unknown; None if there is no such process or it is a zombie."""
    if pid <= 0:
        return None
    if Path("/proc/self/stat").exists():
        stat = _proc_stat(pid)
        if stat is None or stat[0] in ("Z", "X"):
            return None
        return f"proc:{stat[1]}"
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            process = psutil.Process(pid)
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
            return f"psutil:{process.create_time():.3f}"
        except psutil.NoSuchProcess:
            return None
        except psutil.Error:
            pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass                     # it exists, under another user
    return ""


def same_process(pid: int, stamp: str | None) -> bool:
    """Whether ``pid`` still runs and is the process whose start was ``stamp`` (unknown stamps count as the same)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = start_stamp(pid)
    if now is None:
        return False
    if not stamp or not now:
        return True
    kind, _, value = stamp.partition(":")
    now_kind, _, now_value = now.partition(":")
    if kind != now_kind:
        return True              # cannot compare: assume the owner lives (the safe side)
    if kind == "proc":
        return value == now_value
    return abs(float(value) - float(now_value)) < 1.0


def other_clients(data_dir: Path, owner: int) -> list[int]:
    """The live processes other than ``owner`` (and this one) that pgserver lists as using ``data_dir``."""
    try:
        pids = json.loads((data_dir / HANDLES).read_text())
    except (OSError, ValueError):
        return []                # no list (or one pgserver itself could not read): nobody else is using it
    if not isinstance(pids, list):
        return []
    return [pid for pid in pids if isinstance(pid, int) and pid not in (owner, os.getpid()) and start_stamp(pid) is not None]


# ---------------------------------------------------------------- the server

def server_running(data_dir: Path) -> bool:
    """Whether the postmaster named in the folder's ``postmaster.pid`` still runs."""
    try:
        pid = int((data_dir / PIDFILE).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return start_stamp(pid) is not None


def stop_server(data_dir: Path, pg_ctl: Path, pg_user: str | None = None, seconds: int = STOP_SECONDS) -> bool:
    """Stop the server in ``data_dir`` (fast, else immediate); whether it is down afterwards."""
    for mode in ("fast", "immediate"):
        command = [str(pg_ctl), "-D", str(data_dir), "-m", mode, "-w", "-t", str(seconds), "stop"]
        extra = {"user": pg_user} if pg_user else {}
        try:
            subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=seconds + 10, check=True, **extra)
            return True
        except (subprocess.SubprocessError, OSError):
            if not server_running(data_dir):
                return True      # pg_ctl failed because nothing runs (a stale postmaster.pid)
    return not server_running(data_dir)


@contextlib.contextmanager
def pgserver_lock(path: Path | None):
    """Hold pgserver's inter-process lock (``fcntl.lockf`` on its lock file, as fasteners takes it)."""
    try:
        import fcntl
    except ImportError:
        fcntl = None
    if path is None or fcntl is None:
        yield
        return
    try:
        handle = open(path, "a")
    except OSError:
        yield
        return
    with handle:
        fcntl.lockf(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(handle, fcntl.LOCK_UN)


# ---------------------------------------------------------------- the watch

def watch(owner: int, data_dir: Path, pg_ctl: Path, temporary: bool, owner_stamp: str | None = None,
          pg_user: str | None = None, lock_file: Path | None = None, interval: float = POLL_SECONDS) -> str:
    """Poll until the server is stopped normally or the owner is gone; clean up in the second case. What happened."""
    data_dir = Path(data_dir)
    pidfile = data_dir / PIDFILE
    parent_was_owner = os.getppid() == owner
    while True:
        if not pidfile.exists():
            return "the server was stopped normally"
        gone = (parent_was_owner and os.getppid() != owner) or not same_process(owner, owner_stamp)
        if gone and not other_clients(data_dir, owner):
            with pgserver_lock(lock_file):
                if not pidfile.exists():
                    return "the server was stopped normally"
                if not other_clients(data_dir, owner):
                    stopped = stop_server(data_dir, pg_ctl, pg_user)
                    if not stopped:
                        return "the owner is gone, and the server did not stop"
                    if temporary:
                        shutil.rmtree(data_dir, ignore_errors=True)
                        return "the owner is gone: stopped the server and deleted its folder"
                    return "the owner is gone: stopped the server"
        time.sleep(interval)


# ---------------------------------------------------------------- starting and stopping a watchdog

def start_watchdog(owner: int, data_dir: Path, pg_ctl: Path, temporary: bool, pg_user: str | None = None,
                   lock_file: Path | None = None) -> subprocess.Popen:
    """Start a detached watchdog process for the server in ``data_dir``, owned by process ``owner``."""
    command = [sys.executable, "-m", MODULE, "--owner", str(owner), "--data-dir", str(data_dir), "--pg-ctl", str(pg_ctl)]
    stamp = start_stamp(owner)
    if stamp:
        command += ["--owner-start", stamp]
    if temporary:
        command.append("--temporary")
    if pg_user:
        command += ["--pg-user", pg_user]
    if lock_file is not None:
        command += ["--lock-file", str(lock_file)]
    source = str(Path(__file__).resolve().parents[2])    # src/, so that a kernel's sys.path tweaks are not needed
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH")) if p))
    detach = {"start_new_session": True} if os.name == "posix" else \
        {"creationflags": getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            close_fds=True, cwd=os.path.abspath(os.sep), env=environment, **detach)


def stop_watchdog(process: subprocess.Popen, seconds: float = 5.0) -> None:
    """End a watchdog whose server was stopped normally (it does nothing on SIGTERM) and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(seconds)


# ---------------------------------------------------------------- the command line

class _WatchdogParser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _pid(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a process id is a positive whole number, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a process id is a positive whole number, not {text!r}")
    return value


def _folder(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no data folder {text!r}")
    return path.resolve()


def _executable(text: str) -> Path:
    path = Path(text)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise argparse.ArgumentTypeError(f"no executable pg_ctl at {text!r}")
    return path


def _stamp(text: str) -> str:
    kind, colon, value = text.partition(":")
    try:
        float(value)
    except ValueError:
        value = ""
    if not colon or kind not in ("proc", "psutil") or not value:
        raise argparse.ArgumentTypeError(f"a start time is proc:<ticks> or psutil:<seconds>, not {text!r}")
    return text


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.01 <= value <= 60:
        raise argparse.ArgumentTypeError(f"the interval is 0.01 to 60 seconds, not {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    p = _WatchdogParser(prog=f"python -m {MODULE}", description="Stop (and, if temporary, delete) an embedded PostgreSQL "
                "when the process that started it is gone; exit quietly when the server is stopped normally.")
    p.add_argument("--owner", type=_pid, required=True, help="the PID of the process that owns the server")
    p.add_argument("--data-dir", type=_folder, required=True, help="the server's data folder")
    p.add_argument("--pg-ctl", type=_executable, required=True, help="the pg_ctl to stop it with (pgserver's)")
    p.add_argument("--temporary", action="store_true", help="delete the folder once the server is stopped")
    p.add_argument("--owner-start", type=_stamp, help="the owner's start time (proc:<ticks> or psutil:<seconds>), "
                   "to notice a reused PID; read at start if omitted")
    p.add_argument("--pg-user", help="the system user pg_ctl runs as (pgserver's, when run as root)")
    p.add_argument("--lock-file", type=Path, help="pgserver's inter-process lock file")
    p.add_argument("--interval", type=_interval, default=POLL_SECONDS, help="seconds between polls (default 0.5)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if os.name != "posix":
        print(f"python -m {MODULE}: the watchdog runs on POSIX systems only", file=sys.stderr)
        return 2
    stamp = args.owner_start if args.owner_start is not None else start_stamp(args.owner)
    outcome = watch(args.owner, args.data_dir, args.pg_ctl, args.temporary, owner_stamp=stamp, pg_user=args.pg_user,
                    lock_file=args.lock_file, interval=args.interval)
    print(f"watchdog for {args.data_dir}: {outcome}", flush=True)
    return 0 if "did not stop" not in outcome else 1


if __name__ == "__main__":
    sys.exit(main())
