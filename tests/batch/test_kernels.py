"""The kernel layer (``ragcourse.batch.kernels``) that the batch engine and the grader share.

Its parameters carry the real differences between them: the batch engine's kernels choose their
own inline backend and keep ``RAGCOURSE_EMBED_LOG`` (the labs' record of what they embed); the
grader's draw with ``agg``, live in a folder of their own and never see that log.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading

import psutil
import pytest

from ragcourse.batch.kernels import (QUIET_ENV, SignalFreeLoop, kernel_command, kernel_environment, run_blocking,
                                     shell_reply, start_kernel, this_python_specs)
from ragcourse.batch.runner import Engine
from ragcourse.exercises import execute, sandbox


@pytest.fixture
def noisy_environment(monkeypatch):
    """Variables a kernel must not inherit as they are."""
    for name, value in {"OMP_NUM_THREADS": "8", "TQDM_DISABLE": "0", "MPLBACKEND": "module://somewhere",
                        "RAGCOURSE_EMBED_LOG": "/tmp/embed.log", "RAGCOURSE_EMBED_LOGGER": "kept",
                        "RAGCOURSE_GRADE_TOKEN": "secret", "JPY_PARENT_PID": "1", "KERNELS_TEST": "inherited"}.items():
        monkeypatch.setenv(name, value)


def test_quiet_settings_override_the_callers_and_the_backend_is_a_parameter(noisy_environment):
    inline = kernel_environment()
    assert {key: inline[key] for key in QUIET_ENV} == QUIET_ENV
    assert "MPLBACKEND" not in inline and inline["KERNELS_TEST"] == "inherited"
    assert kernel_environment("agg")["MPLBACKEND"] == "agg"


def test_withheld_names_are_exact_and_prefixes_are_prefixes(noisy_environment):
    env = kernel_environment("agg", withhold="RAGCOURSE_EMBED_LOG", withhold_prefixes=("RAGCOURSE_GRADE", "JPY_"),
                             extra={"HOME": "/nowhere", "OMP_NUM_THREADS": "2"})
    assert "RAGCOURSE_EMBED_LOG" not in env and env["RAGCOURSE_EMBED_LOGGER"] == "kept"
    assert not [key for key in env if key.startswith(("RAGCOURSE_GRADE", "JPY_"))]
    assert env["HOME"] == "/nowhere" and env["OMP_NUM_THREADS"] == "2", "extra is set last"


@pytest.mark.parametrize("arguments, message", [
    ({"mpl_backend": 3}, "mpl_backend must be None"),
    ({"mpl_backend": ""}, "mpl_backend must be None"),
    ({"withhold": [""]}, "withhold must be non-empty variable names"),
    ({"withhold_prefixes": ("JPY_", None)}, "withhold_prefixes must be non-empty variable names"),
])
def test_a_wrong_argument_names_itself(arguments, message):
    with pytest.raises(ValueError, match=message):
        kernel_environment(**arguments)


def test_the_batch_engine_and_the_grader_differ_only_where_they_must(noisy_environment, tmp_path):
    batch = Engine(1, progress=False).env
    assert batch["RAGCOURSE_EMBED_LOG"] == "/tmp/embed.log", "the labs' kernels log what they embed"
    assert "MPLBACKEND" not in batch and batch["OMP_NUM_THREADS"] == "1"
    submission = sandbox.submission_environment(tmp_path)
    assert "RAGCOURSE_EMBED_LOG" not in submission and "RAGCOURSE_GRADE_TOKEN" not in submission
    assert "JPY_PARENT_PID" not in submission
    assert submission["MPLBACKEND"] == "agg" and submission["PYTHONDONTWRITEBYTECODE"] == "1"
    assert {submission[key] for key in ("HOME", "TMPDIR")} == {str(tmp_path)}
    assert submission["MPLCONFIGDIR"] == str(tmp_path / ".mpl")
    assert submission["RAGCOURSE_CACHE_DIR"] == os.environ.get("RAGCOURSE_CACHE_DIR",
                                                               os.path.expanduser("~/.cache/ragcourse"))
    assert {key: submission[key] for key in QUIET_ENV} == QUIET_ENV
    assert execute.MPL_BACKEND == "agg"


def test_the_kernel_is_this_python_whatever_python3_is_registered(tmp_path, monkeypatch):
    elsewhere = tmp_path / "kernels" / "python3"
    elsewhere.mkdir(parents=True)
    (elsewhere / "kernel.json").write_text(json.dumps({"argv": ["/usr/bin/false", "{connection_file}"],
                                                       "display_name": "not ours", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    assert this_python_specs().get_kernel_spec("python3").argv[0] == sys.executable
    command = kernel_command("/run/k.json", "--flag")
    assert command == [sys.executable, "-m", "ipykernel_launcher", "-f", "/run/k.json", "--flag"]


@pytest.mark.notebooks
def test_a_started_kernel_answers_and_kill_leaves_nothing(tmp_path):
    work = tmp_path / "work"
    work.mkdir()

    async def scenario():
        kernel = await start_kernel(str(tmp_path), "k", str(work), kernel_environment(), 60,
                                    warm_up="import colorsys")
        try:
            assert kernel.client.allow_stdin is False
            msg_id = kernel.client.execute("import os, sys\n"
                                           "print(sys.executable, os.getcwd(), 'colorsys' in sys.modules)")
            lines = []
            while True:
                message = await kernel.client.get_iopub_msg(timeout=30)
                if message["parent_header"].get("msg_id") != msg_id:
                    continue
                if message["msg_type"] == "stream":
                    lines.append(message["content"]["text"])
                if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                    break
            reply = await shell_reply(kernel.client, msg_id, 30)
            pid = kernel.manager.provisioner.pid
        finally:
            await kernel.kill()
        return "".join(lines).split(), reply["content"]["execution_count"], pid

    words, count, pid = asyncio.run(scenario())
    assert words == [sys.executable, str(work), "True"], "in this Python, in cwd, warmed up"
    assert count == 1, "the warm-up is silent: the first cell is still number 1"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not (tmp_path / "k.json").exists(), "the connection file is cleaned up"


@pytest.mark.notebooks
def test_a_kernel_that_cannot_start_raises_and_leaves_nothing(tmp_path):
    before = {child.pid for child in psutil.Process().children(recursive=True)}
    with pytest.raises(Exception):
        asyncio.run(start_kernel(str(tmp_path), "k", str(tmp_path / "missing"), kernel_environment(), 30))
    after = {child.pid for child in psutil.Process().children(recursive=True)
             if child.status() != psutil.STATUS_ZOMBIE}
    assert after <= before


async def _answer(value):
    await asyncio.sleep(0)
    return value, threading.current_thread().name, type(asyncio.get_running_loop())


async def _fail():
    raise ValueError("from the coroutine")


def test_run_blocking_from_plain_code_runs_here():
    value, thread, loop = run_blocking(_answer(42), loop_factory=SignalFreeLoop)
    assert (value, thread, loop) == (42, threading.current_thread().name, SignalFreeLoop)


def test_run_blocking_inside_a_running_loop_uses_a_thread_and_passes_errors_on():
    async def cell():  # as a notebook cell or a Playwright session would call it
        answer = run_blocking(_answer("x"), thread_name="kern-test")
        with pytest.raises(ValueError, match="from the coroutine"):
            run_blocking(_fail())
        return answer

    value, thread, _ = asyncio.run(cell())
    assert value == "x" and thread.startswith("kern-test")


def test_run_blocking_needs_a_coroutine():
    with pytest.raises(TypeError, match="run_blocking needs a coroutine .* not function"):
        run_blocking(_answer)


def test_the_signal_free_loop_refuses_handlers():
    loop = SignalFreeLoop()
    try:
        with pytest.raises(RuntimeError, match="handles signals itself"):
            loop.add_signal_handler(2, lambda: None)
    finally:
        loop.close()


def test_reap_children_collects_finished_children():
    """In a process of its own: reaping here would take the exit status of other tests' children."""
    code = ("import os, time\nfrom ragcourse.batch.kernels import reap_children\n"
            "pids = [os.posix_spawn('/bin/true', ['/bin/true'], {}) for _ in range(3)]\n"
            "zombie = lambda pid: open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] == 'Z'\n"
            "deadline = time.monotonic() + 30\n"
            "while not all(map(zombie, pids)) and time.monotonic() < deadline:\n    time.sleep(0.01)\n"
            "reaped = reap_children()\n"
            "print(sorted(reaped) == sorted(pids), reap_children(), os.path.exists(f'/proc/{pids[0]}'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "[]", "False"]
