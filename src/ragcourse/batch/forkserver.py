"""The fork server: kernels forked from one process that imported ipykernel (and a notebook's modules) once.

Booting a kernel costs more CPU than most lessons compute (interpreter, ipykernel, IPython,
matplotlib: about 0.8 s). A ``ForkServer`` is a process of this interpreter that imports
those once (``preload_modules`` chooses what, from the modules the notebooks import) and
then forks a kernel on request; each fork is a fresh process with a fresh kernel, shell and
namespace, in a session of its own. How the batch engine uses it::

    server = ForkServer(env, preload_modules(["numpy", "matplotlib.pyplot"]), cwd=runtime)
    await server.start()
    kernel = await kernels.start_kernel(runtime, "k1", cwd, env, timeout,
                                        provisioner=lambda manager: forking_provisioner(manager, server))
    ...
    await kernel.kill()
    await server.close()   # also kills any kernel it forked that is still running

``forking_provisioner`` makes jupyter_client launch a kernel through the server (a
``ForkedProcess`` stands for it where jupyter_client expects a ``Popen``); when the server
is gone, broken, or the kernel command is not this interpreter's ``ipykernel_launcher``,
the kernel is launched the usual way instead. ``ForkServer.broken`` says the server died.

The protocol (``_template_main``, the server's own process): one JSON line per request on
its stdin, ``{"args": [...], "env": {...}, "cwd": "..."}`` (``args`` as
``ipykernel_launcher`` would get them), answered with the child's pid on a line of its
stdout. When its stdin closes, the server kills the kernels it forked and exits.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time

# Modules that hook into the running IPython shell when imported are never preloaded.
NEVER_PRELOAD = ("matplotlib.pyplot", "matplotlib_inline", "pylab", "IPython")
MATPLOTLIB_PRELOAD = ["matplotlib", "matplotlib.figure", "matplotlib.image", "matplotlib.backend_bases",
                      "matplotlib.projections", "matplotlib.axes", "matplotlib.colorbar",
                      "matplotlib.font_manager", "matplotlib.backends.backend_agg",
                      "matplotlib.backends.backend_svg", "PIL.PngImagePlugin"]
KERNEL_PRELOAD = ["ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel.debugger"]  # what a kernel imports at start
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
CLOSE_SECONDS = 5.0  # how long a closing server has to exit before it is killed


def preload_modules(imports: list[str]) -> list[str]:
    """What the server imports for notebooks that import ``imports``."""
    chosen: list[str] = []
    for name in imports:
        if name.split(".")[0] == "matplotlib":
            chosen.extend(MATPLOTLIB_PRELOAD)
        if not name.startswith(NEVER_PRELOAD):
            chosen.append(name)
    return list(dict.fromkeys(chosen))


def _template_main() -> None:
    """The server's process: import ipykernel and ``sys.argv[1:]``, then fork kernels on request (see the module).

    Each child becomes a session leader in the request's ``cwd`` with its ``env`` and runs a new kernel.
    """
    import importlib
    import signal
    import traceback

    from .kernels import reap_children

    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # as ipykernel_launcher does; IPython puts the kernel's cwd back
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)  # what ipykernel sets before user code
    from ipykernel import kernelapp

    for name in [*KERNEL_PRELOAD, *sys.argv[1:]]:
        try:
            importlib.import_module(name)
        except Exception:
            pass

    children: set[int] = set()

    def reap(*_) -> None:
        children.difference_update(reap_children())

    signal.signal(signal.SIGCHLD, reap)
    replies = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    try:
        for line in sys.stdin.buffer:
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:  # the kernel
                status = 0
                try:
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    os.setsid()
                    os.dup2(devnull, 0)
                    replies.close()
                    os.chdir(request["cwd"])
                    os.environ.clear()
                    os.environ.update(request["env"])
                    os.environ["JPY_PARENT_PID"] = str(os.getppid())
                    sys.argv = [kernelapp.__file__, *request["args"]]
                    kernelapp.launch_new_instance()
                except SystemExit as stop:
                    status = stop.code if isinstance(stop.code, int) else 0
                except BaseException:
                    traceback.print_exc()
                    status = 1
                finally:
                    os._exit(status)
            children.add(pid)
            replies.write(f"{pid}\n")
            replies.flush()
    finally:
        for pid in list(children):  # kernels still running (reaped ones were dropped)
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)  # nothing to tear down; skip the slow interpreter shutdown


class ForkedProcess:
    """The part of ``Popen`` that jupyter_client's LocalProvisioner uses, for a forked kernel.

    The kernel is the server's child, not ours: ``poll`` can only tell that it is gone
    (``returncode`` -9 then), ``wait`` polls until then, and the signals go to its pid.
    """

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """None while the kernel runs, else -9."""
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.returncode = -9
            except PermissionError:
                pass
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait until the kernel is gone (TimeoutError after ``timeout`` seconds); its ``returncode``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"kernel {self.pid} is still running")
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        """Signal the kernel; nothing when it is gone already (as ``Popen.send_signal``)."""
        if self.poll() is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(9)

    def terminate(self) -> None:
        self.send_signal(15)


class ForkServer:
    """This side of the fork server (see the module): ``start`` it once, ``spawn`` kernels, ``close`` it.

    ``env`` and ``cwd`` are the server process's own (a forked kernel gets the request's);
    ``preload`` the modules it imports before the first fork.
    """

    def __init__(self, env: dict[str, str], preload: list[str], cwd: str):
        if isinstance(preload, str) or not all(isinstance(name, str) for name in preload):
            raise TypeError(f"preload must be a list of module names, not {preload!r}")
        self.env, self.preload, self.cwd = env, list(preload), cwd
        self.process: asyncio.subprocess.Process | None = None
        self.lock = asyncio.Lock()
        self.broken = False

    @property
    def pid(self) -> int | None:
        """The server process's pid (the parent of every kernel it forks), None before ``start``."""
        return None if self.process is None else self.process.pid

    async def start(self) -> None:
        """Start the server process; it imports ``preload`` while the caller goes on."""
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "from ragcourse.batch.forkserver import _template_main; _template_main()",
            *self.preload, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=self.env, cwd=self.cwd)

    async def spawn(self, args: list[str], env: dict[str, str], cwd: str) -> int:
        """Fork a kernel started with ``ipykernel_launcher``'s ``args`` in ``cwd`` with ``env``; its pid.

        Raises RuntimeError when the server was not started or has exited (then ``broken``).
        """
        async with self.lock:
            if self.broken or self.process is None:
                raise RuntimeError("no kernel template process")
            request = json.dumps({"args": args, "env": env, "cwd": cwd}).encode() + b"\n"
            try:
                self.process.stdin.write(request)
                await self.process.stdin.drain()
                line = await self.process.stdout.readline()
            except (BrokenPipeError, ConnectionResetError):
                line = b""
            if not line.strip():
                self.broken = True
                raise RuntimeError("the kernel template process exited")
            return int(line)

    async def close(self) -> None:
        """Close the server's stdin: it kills the kernels it forked and exits (killed after ``CLOSE_SECONDS``)."""
        if self.process is not None and self.process.returncode is None:
            self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), CLOSE_SECONDS)
            except asyncio.TimeoutError:
                self.process.kill()
                await self.process.wait()


def forking_provisioner(manager, server: ForkServer):
    """A LocalProvisioner for ``manager`` whose kernel is forked by ``server`` (launched as usual if that fails)."""
    from jupyter_client.provisioning import LocalProvisioner

    class ForkingProvisioner(LocalProvisioner):
        async def launch_kernel(self, cmd, **kwargs):
            if ("ipykernel_launcher" in cmd
                    and os.path.realpath(cmd[0]) == os.path.realpath(sys.executable)):
                cwd = os.path.abspath(kwargs.get("cwd") or os.getcwd())
                try:
                    pid = await server.spawn(cmd[cmd.index("ipykernel_launcher") + 1:],
                                             dict(kwargs.get("env") or os.environ), cwd)
                except Exception:
                    pass
                else:
                    self.process = ForkedProcess(pid)
                    self.pid = self.pgid = pid
                    self.cwd = cwd
                    return self.connection_info
            return await super().launch_kernel(cmd, **kwargs)

    return ForkingProvisioner(kernel_id=manager.kernel_id, kernel_spec=manager.kernel_spec, parent=manager)


__all__ = ["ForkServer", "ForkedProcess", "forking_provisioner", "preload_modules", "INLINE_BACKEND",
           "KERNEL_PRELOAD", "MATPLOTLIB_PRELOAD", "NEVER_PRELOAD"]
