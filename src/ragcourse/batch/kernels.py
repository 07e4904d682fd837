"""The kernel layer that the batch engine and the grader share: environment, start, stop, the blocking call.

* ``QUIET_ENV`` and ``kernel_environment``: what every kernel's environment holds (no progress
  bars, one thread per numerical library, this environment's Jupyter paths first), with the
  real differences between callers as parameters: the matplotlib backend (the batch engine
  leaves the kernel's own inline backend, the grader and ``make exercises`` draw with ``agg``),
  variables withheld (a submission's kernel gets no ``RAGCOURSE_EMBED_LOG``) and additions
  (a submission's kernel keeps its home in its own folder).
* ``kernel_command`` and ``this_python_specs``: a kernel of *this* interpreter, whatever
  kernels the user has registered (the project's environment is the one with the pins).
* ``start_kernel``: a jupyter_client kernel over local sockets, ready when it answers on shell
  and its iopub messages arrive, returned as a ``RunningKernel`` whose ``kill`` is quick and
  never raises (the batch engine may have it forked by ``ragcourse.batch.forkserver``).
* ``run_blocking``: run a coroutine to its end from plain code, in a thread of its own when
  an event loop already runs here (a notebook cell, a Playwright session).
* ``reap_children``: collect every finished child (the fork server's kernels, the grader's
  adopted orphans).

Nothing heavy is imported at module import: jupyter_client and zmq load on first use.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

KERNEL_NAME = "python3"
QUIET_ENV = {"TQDM_DISABLE": "1", "JUPYTER_PREFER_ENV_PATH": "1", "OMP_NUM_THREADS": "1",
             "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
             "OMP_WAIT_POLICY": "PASSIVE"}   # OpenMP threads sleep while they wait (cli.main.PROCESS_DEFAULTS)
KERNEL_ARGUMENTS = ["--HistoryManager.hist_file=:memory:"]  # no history database written by any kernel
KERNEL_ARGV = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def _strings(name: str, values: Iterable[str]) -> tuple[str, ...]:
    values = (values,) if isinstance(values, str) else tuple(values)
    wrong = [value for value in values if not isinstance(value, str) or not value]
    if wrong:
        raise ValueError(f"{name} must be non-empty variable names (or prefixes), not {wrong!r}")
    return values


def kernel_environment(mpl_backend: str | None = None, *, withhold: Iterable[str] = (),
                       withhold_prefixes: Iterable[str] = (), extra: Mapping[str, str] | None = None,
                       ) -> dict[str, str]:
    """This process's environment for a kernel: ``QUIET_ENV`` over it, then the caller's differences.

    ``mpl_backend`` None removes ``MPLBACKEND`` (the kernel chooses its inline backend, as in
    JupyterLab); a name such as ``"agg"`` sets it. Variables named in ``withhold`` or starting
    with one of ``withhold_prefixes`` are left out; ``extra`` is set last.
    """
    if mpl_backend is not None and (not isinstance(mpl_backend, str) or not mpl_backend):
        raise ValueError(f"mpl_backend must be None (the kernel's own) or a backend name such as 'agg', "
                         f"not {mpl_backend!r}")
    names = set(_strings("withhold", withhold))
    prefixes = _strings("withhold_prefixes", withhold_prefixes)
    env = {key: value for key, value in os.environ.items()
           if key not in names and not (prefixes and key.startswith(prefixes))}
    env.update(QUIET_ENV)
    if mpl_backend is None:
        env.pop("MPLBACKEND", None)
    else:
        env["MPLBACKEND"] = mpl_backend
    env.update(extra or {})
    return env


def kernel_command(connection_file: str, *arguments: str) -> list[str]:
    """The command that starts a kernel of this interpreter on ``connection_file``, then ``arguments``."""
    return [part.replace("{connection_file}", connection_file) for part in KERNEL_ARGV] + list(arguments)


def this_python_specs():
    """A jupyter_client kernel-spec manager whose ``python3`` is this interpreter (``KERNEL_ARGV``)."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=list(KERNEL_ARGV), display_name="Python 3 (ipykernel)", language="python",
                              resource_dir="")

    return ThisPython()


class RunningKernel:
    """A started kernel: its manager and client; ``kill`` is quick and never raises."""

    def __init__(self, manager, client=None):
        self.manager, self.client = manager, client

    async def kill(self) -> None:
        """SIGKILL the kernel's process group, wait for it in milliseconds, clean its files."""
        import signal

        try:
            if self.client is not None:
                self.client.stop_channels()
        except Exception:
            pass
        provisioner = self.manager.provisioner
        try:
            if provisioner is not None and provisioner.has_process:
                await provisioner.send_signal(signal.SIGKILL)
                for _ in range(1000):
                    if await provisioner.poll() is not None:
                        break
                    await asyncio.sleep(0.002)
        except Exception:
            pass
        try:
            await self.manager.shutdown_kernel(now=True)  # finds it dead: only cleans up
        except Exception:
            pass


async def start_kernel(runtime: str, name: str, cwd: str, env: Mapping[str, str], timeout: float,
                       context=None, provisioner: Callable[[Any], Any] | None = None,
                       warm_up: str | None = None) -> RunningKernel:
    """Start a kernel of this interpreter in ``cwd`` and wait until it is ready (see ``wait_ready``).

    Its sockets and connection file are ``name`` and ``name.json`` in the folder ``runtime``;
    ``context`` is the zmq.asyncio context to use (None: the manager's own); ``provisioner``,
    given the manager, returns the jupyter_client provisioner that launches the kernel (None:
    launched as usual); ``warm_up`` is code run silently once it is ready (no history, nothing
    a notebook shows), whose reply is awaited. A kernel that fails to start, or to answer
    within ``timeout`` seconds, is killed and the error raised.
    """
    import uuid

    from jupyter_client.manager import AsyncKernelManager

    options = {} if context is None else {"context": context}
    manager = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=this_python_specs(), transport="ipc",
                                 ip=os.path.join(runtime, name), **options)
    manager.connection_file = os.path.join(runtime, f"{name}.json")
    manager.kernel_id = str(uuid.uuid4())  # before start: a provisioner is made with it
    if provisioner is not None:
        manager.provisioner = provisioner(manager)
    kernel = RunningKernel(manager)
    try:
        await manager.start_kernel(cwd=str(cwd), env=dict(env), extra_arguments=list(KERNEL_ARGUMENTS))
        kernel.client = manager.client(**options)
        kernel.client.start_channels()
        await wait_ready(manager, kernel.client, timeout)
        kernel.client.allow_stdin = False
        if warm_up:
            await shell_reply(kernel.client, kernel.client.execute(warm_up, silent=True, store_history=False), timeout)
    except BaseException:
        await kernel.kill()
        raise
    return kernel


async def wait_ready(manager, client, timeout: float) -> None:
    """Wait until the kernel answers on shell *and* its iopub messages reach us.

    Like ``client.wait_for_ready`` but polling in milliseconds rather than tenths of a
    second: a kernel_info request is repeated until one of its iopub status messages
    arrives, which proves the iopub subscription is connected (no output can be lost).
    Raises RuntimeError when the kernel dies or does not answer within ``timeout`` seconds.
    """
    from queue import Empty

    deadline = time.monotonic() + timeout
    while True:
        if time.monotonic() > deadline:
            raise RuntimeError(f"kernel did not answer within {timeout:.0f} s")
        msg_id = client.kernel_info()
        try:
            await shell_reply(client, msg_id, 0.5)
        except Empty:
            if not await manager.is_alive():
                raise RuntimeError("kernel died before replying to kernel_info") from None
            continue
        try:
            while (await client.get_iopub_msg(timeout=0.02))["parent_header"].get("msg_id") != msg_id:
                pass
            return
        except Empty:
            continue


async def shell_reply(client, msg_id: str, timeout: float) -> dict:
    """The shell reply to request ``msg_id`` (earlier replies skipped); ``queue.Empty`` when none comes in time.

    ``timeout`` bounds the wait for each message read, not the whole wait.
    """
    while True:
        reply = await client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


class SignalFreeLoop(asyncio.SelectorEventLoop):
    """An event loop on which nobody installs signal handlers.

    nbclient installs SIGINT/SIGTERM handlers per notebook that only clean up that one
    kernel; with several notebooks at once Ctrl-C would then kill one kernel and the
    batch would go on. Refused here (nbclient tolerates that), Ctrl-C reaches
    ``asyncio.Runner``, which cancels the whole batch: every kernel is killed.
    """

    def add_signal_handler(self, sig, callback, *args):
        raise RuntimeError("the batch engine handles signals itself")


def loop_running_here() -> bool:
    """Whether an asyncio event loop is already running in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_blocking(coroutine: Coroutine, loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
                 thread_name: str = "ragcourse-kernels") -> Any:
    """Run ``coroutine`` to its end on a new loop (``loop_factory``'s) and return its result or raise its error.

    When an event loop already runs in this thread (code called from a notebook cell or a
    Playwright session), the coroutine gets its loop in a worker thread named ``thread_name``.
    """
    if not asyncio.iscoroutine(coroutine):
        raise TypeError(f"run_blocking needs a coroutine (call the async function), not {type(coroutine).__name__}")

    def execute() -> Any:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coroutine)

    if not loop_running_here():
        return execute()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=thread_name) as pool:
        return pool.submit(execute).result()


def reap_children() -> list[int]:
    """Collect the exit status of every finished child of this process (without waiting); their pids."""
    reaped = []
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append(pid)


__all__ = ["KERNEL_ARGUMENTS", "KERNEL_ARGV", "KERNEL_NAME", "QUIET_ENV", "RunningKernel", "SignalFreeLoop",
           "kernel_command", "kernel_environment", "loop_running_here", "reap_children", "run_blocking",
           "shell_reply", "start_kernel", "this_python_specs", "wait_ready"]
