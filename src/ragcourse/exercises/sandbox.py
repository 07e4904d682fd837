"""A submission's kernel, kept at arm's length: its own folder, its own user, no output read, every process killed.

The grader (``grading``) starts one ``Kernel`` per submission, from a supervising process of
its own (``judge.supervise``), never from the process that writes the report:

* the kernel runs in a fresh folder that holds nothing but the submission (written from the
  grader's memory), in a session and process group of its own;
* when the grader runs as root it runs as another user (``--as-user``, ``nobody`` by default),
  which cannot write the project, the environment, the other submissions or the report;
* only the shell channel is connected: the grader reads the replies to its own requests and
  never subscribes to the kernel's output, so a cell that prints gigabytes costs the kernel's
  time, not the grader's;
* every request has a deadline the grader keeps by itself (it polls, the kernel cannot make it
  wait), and at the end every process the kernel started is killed, including those that left
  its session or its process group: the supervising process is a child subreaper (Linux), so
  an orphan becomes its child and is found by walking its process tree.

Its environment, its command and the reaping of children are the kernel layer's
(``ragcourse.batch.kernels``), which the batch engine shares; what differs is explicit in
``submission_environment``. What is this module's own: the user, the folder, the shell-only
connection with its deadline loop, and killing every descendant.
"""
from __future__ import annotations

import ctypes
import os
import pwd
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..batch.kernels import KERNEL_ARGUMENTS, kernel_command, kernel_environment, reap_children

MPL_BACKEND = "agg"       # figures are drawn, never shown
# RAGCOURSE_EMBED_LOG is the test session's record of what the labs ask for: a submission takes no part in it;
# nor does it see the grader's own settings or a Jupyter server's.
WITHHELD = ("RAGCOURSE_EMBED_LOG",)
WITHHELD_PREFIXES = ("RAGCOURSE_GRADE", "JPY_")
STARTUP_SECONDS = 60.0
INTERRUPT_SECONDS = 5.0   # after an interrupt, how long the kernel has to answer before it counts as stuck
POLL_SECONDS = 0.2
DEFAULT_USER = "nobody"   # who runs the kernels when the grader runs as root (``--as-user``)
PR_SET_CHILD_SUBREAPER = 36


class KernelError(Exception):
    """The kernel could not start, died, or stopped answering."""


@dataclass(frozen=True)
class Account:
    """The user a kernel runs as: name, uid, gid and home (None: the grader's own user)."""

    name: str
    uid: int
    gid: int


def account(name: str | None) -> Account | None:
    """The account to run kernels as: ``name``, or ``nobody`` when the grader is root; None when not root.

    Raises ``KeyError`` with what to fix when the user does not exist.
    """
    if os.geteuid() != 0:
        if name is not None and name != pwd.getpwuid(os.geteuid()).pw_name:
            raise PermissionError(f"--as-user {name}: only a grader running as root can run kernels as another user")
        return None
    name = name or DEFAULT_USER
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise KeyError(f"--as-user {name}: no such user on this machine; create one, or name another") from None
    if entry.pw_uid == 0:
        return None
    return Account(name, entry.pw_uid, entry.pw_gid)


def cannot_run_as(user: Account, folder: Path | None = None) -> str | None:
    """Why a kernel cannot run as ``user`` in ``folder`` (it cannot enter it, start this Python or import the
    course), or None."""
    where = str(Path(folder) if folder is not None else Path("/"))
    # the folder is entered by its full path once the user is ``user`` (the kernel reads its connection file so)
    probe = ("import os, sys\ntry:\n    os.chdir(sys.argv[1])\nexcept OSError:\n    sys.exit(3)\n"
             "import ipykernel, cloudpickle, ragcourse.exercises.framework")
    try:
        done = subprocess.run([sys.executable, "-c", probe, where], cwd="/", env=submission_environment(Path(where)),
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=STARTUP_SECONDS,
                              user=user.uid, group=user.gid, extra_groups=[])
    except (OSError, subprocess.SubprocessError) as error:
        return f"user {user.name} cannot run {sys.executable}: {error}"
    if done.returncode == 3:
        return (f"user {user.name} cannot enter the temporary folder {where} (set TMPDIR to a folder every user"
                " may enter, such as /tmp)")
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        return f"user {user.name} cannot import the course with {sys.executable}: {last}"
    return None


def become_subreaper() -> bool:
    """Make this process adopt every orphan among its descendants (Linux); False where that is not possible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def kill_descendants(pid: int | None = None, rounds: int = 50) -> int:
    """SIGKILL every descendant of ``pid`` (this process by default), again until none is left; how many."""
    import psutil

    killed = 0
    try:
        me = psutil.Process(pid or os.getpid())
    except psutil.NoSuchProcess:
        return 0
    for _ in range(rounds):
        try:
            found = me.children(recursive=True)
        except psutil.NoSuchProcess:
            return killed
        if not found:
            break
        for process in found:
            try:
                process.send_signal(signal.SIGSTOP)   # no more forking while the tree is walked
            except psutil.Error:
                pass
        for process in found:
            try:
                process.kill()
                killed += 1
            except psutil.Error:
                pass
        for process in found:
            try:
                process.wait(0.5)
            except psutil.Error:
                pass
    reap_children()  # orphans adopted as a subreaper included
    return killed


def submission_environment(folder: Path) -> dict[str, str]:
    """A submission kernel's environment: quiet and single-threaded, ``WITHHELD`` left out, its home in ``folder``.

    It writes no bytecode, and reads the course's embeddings and models where the grader keeps them.
    """
    cache = Path(os.environ.get("RAGCOURSE_CACHE_DIR") or Path.home() / ".cache" / "ragcourse")
    hub = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return kernel_environment(MPL_BACKEND, withhold=WITHHELD, withhold_prefixes=WITHHELD_PREFIXES, extra={
        "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(folder), "IPYTHONDIR": str(folder / ".ipython"),
        "MPLCONFIGDIR": str(folder / ".mpl"), "XDG_CACHE_HOME": str(folder / ".cache"), "TMPDIR": str(folder),
        "RAGCOURSE_CACHE_DIR": str(cache), "HF_HOME": hub})


@dataclass
class Reply:
    """What one request did: ``ok``, ``error`` (with the exception), ``timeout`` or ``dead``."""

    status: str
    ename: str = ""
    evalue: str = ""
    seconds: float = 0.0


class Kernel:
    """One submission's kernel (see the module): start, run code with a deadline, interrupt, kill."""

    def __init__(self, folder: Path, user: Account | None = None):
        self.folder = Path(folder)
        self.user = user
        self.process: subprocess.Popen | None = None
        self.client = None
        self.stuck = False

    def start(self, seconds: float = STARTUP_SECONDS) -> None:
        """Start the kernel in ``folder`` and wait until it answers; KernelError saying why when it does not."""
        from jupyter_client.blocking.client import BlockingKernelClient
        from jupyter_client.connect import write_connection_file

        runtime = self.folder / ".kernel"
        runtime.mkdir()
        connection, info = write_connection_file(str(runtime / "kernel.json"), transport="ipc",
                                                 ip=str(runtime / "k"), key=secrets.token_hex(16).encode())
        if self.user is not None:
            for path in (self.folder, runtime, Path(connection)):
                os.chown(path, self.user.uid, self.user.gid)
            os.chmod(self.folder, 0o700)
        argv = kernel_command(connection, *KERNEL_ARGUMENTS, "--IPKernelApp.parent_handle=0")
        extra: dict[str, Any] = {}
        if self.user is not None:
            extra = {"user": self.user.uid, "group": self.user.gid, "extra_groups": []}
        try:
            self.process = subprocess.Popen(argv, cwd=self.folder, env=submission_environment(self.folder),
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True, **extra)
        except OSError as error:
            raise KernelError(f"the kernel did not start: {error}") from None
        client = BlockingKernelClient()
        client.load_connection_info(info)
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        self.client = client
        reply = self._request(client.session.msg("kernel_info_request"), seconds)
        if reply is None:
            who = f" as user {self.user.name}" if self.user else ""
            raise KernelError(f"the kernel did not start{who} within {seconds:g} s"
                              + (f" (it exited with status {self.process.returncode})" if self.process.poll()
                                 is not None else "")
                              + (f"; can user {self.user.name} read {sys.prefix} and the course's cache?"
                                 if self.user else ""))

    def send(self, message: dict) -> str:
        """Send a shell message; its id."""
        assert self.client is not None
        self.client.shell_channel.send(message)
        return message["header"]["msg_id"]

    def wait(self, msg_id: str, seconds: float) -> dict | None:
        """The reply to ``msg_id``, or None at the deadline or when the kernel is gone."""
        assert self.client is not None and self.process is not None
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                return None
            try:
                reply = self.client.get_shell_msg(timeout=min(POLL_SECONDS, left))
            except Exception:  # queue.Empty
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return reply

    def _request(self, message: dict, seconds: float) -> dict | None:
        return self.wait(self.send(message), seconds)

    def execute_message(self, code: str, store_history: bool = True) -> dict:
        """An execute request for ``code`` (no output wanted, no input allowed)."""
        assert self.client is not None
        return self.client.session.msg("execute_request", {
            "code": code, "silent": False, "store_history": store_history, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": False})

    def execute(self, code: str, seconds: float, store_history: bool = True) -> Reply:
        """Run ``code``; at the deadline interrupt it (a kernel that does not stop is marked ``stuck``)."""
        if self.stuck or self.client is None:
            return Reply("dead")
        started = time.monotonic()
        msg_id = self.send(self.execute_message(code, store_history))
        return self.outcome(msg_id, seconds, started)

    def outcome(self, msg_id: str, seconds: float, started: float) -> Reply:
        """What the execute request ``msg_id`` did, waiting at most ``seconds`` (then interrupting it)."""
        reply = self.wait(msg_id, seconds)
        if reply is None:
            if self.process is not None and self.process.poll() is not None:
                return Reply("dead", seconds=time.monotonic() - started)
            self.interrupt()
            if self.wait(msg_id, INTERRUPT_SECONDS) is None:
                self.stuck = True
            return Reply("timeout", seconds=time.monotonic() - started)
        body = reply.get("content", {})
        status = "ok" if body.get("status") == "ok" else "error"
        return Reply(status, str(body.get("ename", "")), str(body.get("evalue", "")),
                     seconds=time.monotonic() - started)

    def interrupt(self) -> None:
        """SIGINT to the kernel (a KeyboardInterrupt in what it runs)."""
        assert self.process is not None
        try:
            os.kill(self.process.pid, signal.SIGINT)
        except OSError:
            pass

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and not self.stuck

    def close(self) -> None:
        """Kill the kernel's process group and every other process it started."""
        if self.client is not None:
            try:
                self.client.stop_channels()
            except Exception:
                pass
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                pass
        kill_descendants()
        if self.process is not None:
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
