"""The fork server (``ragcourse.batch.forkserver``) started for real, with notebooks run through it.

A kernel it forks is told apart from one launched the usual way by its parent: the server's
process, whose command line names ``_template_main``. Each test checks that a notebook's outputs
come back from such a kernel, that it had what the server preloaded, that errors are reported,
and that nothing is left running afterwards, the forked kernels included.
"""
from __future__ import annotations

import asyncio
import os
import time

import nbformat
import psutil
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from ragcourse.batch.forkserver import ForkServer, ForkedProcess, forking_provisioner, preload_modules
from ragcourse.batch.kernels import KERNEL_NAME, kernel_environment, start_kernel
from ragcourse.batch.notebooks import KERNELSPEC
from ragcourse.batch.runner import Engine, Job
from support.kernels import alive as process_alive, kernel_processes

pytestmark = pytest.mark.notebooks  # kernels run: not part of `make test-fast`

MARKER_MODULE = "colorsys"  # imported by neither ipykernel nor this test's kernels unless preloaded
WHO = ("import os, sys\n"
       "print(os.getpid(), os.getppid(), os.environ.get('JPY_PARENT_PID'))\n"
       "print(open(f'/proc/{os.getppid()}/cmdline').read().replace(chr(0), ' '))\n"
       f"print({MARKER_MODULE!r} in sys.modules, os.getcwd(), os.environ.get('FORKSERVER_TEST'))")


def alive(pid: int) -> bool:
    try:
        return process_alive(psutil.Process(pid))
    except psutil.NoSuchProcess:
        return False


def kernels_left() -> list[psutil.Process]:
    """Descendants of this process that are kernels or a fork server, still running."""
    return [process for process in kernel_processes(psutil.Process()) if process_alive(process)]


async def run_cells(kernel, sources: list[str]):
    """Execute ``sources`` as code cells in ``kernel`` (errors allowed); the executed notebook."""
    from nbclient import NotebookClient

    nb = new_notebook(cells=[new_code_cell(source) for source in sources])
    client = NotebookClient(nb, km=kernel.manager, kernel_name=KERNEL_NAME, allow_errors=True, timeout=60,
                            coalesce_streams=True)
    client.kc = kernel.client
    for index, cell in enumerate(nb.cells):
        await client.async_execute_cell(cell, index, execution_count=index + 1)
    return nb


def stdout(cell) -> list[str]:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream").splitlines()


def forked_kernel(server: ForkServer, runtime, name: str, cwd, env):
    return start_kernel(str(runtime), name, str(cwd), env, 60,
                        provisioner=lambda manager: forking_provisioner(manager, server))


def test_a_notebook_runs_in_a_kernel_the_server_forked_and_nothing_is_left(tmp_path):
    env = kernel_environment(extra={"FORKSERVER_TEST": "from-the-request"})
    work = tmp_path / "work"
    work.mkdir()

    async def scenario():
        server = ForkServer(kernel_environment(), preload_modules([MARKER_MODULE]), str(tmp_path))
        await server.start()
        try:
            kernel = await forked_kernel(server, tmp_path, "k1", work, env)
            try:
                nb = await run_cells(kernel, [WHO, "total = sum(range(10))\nprint(total)", "1 / 0",
                                              "print('after', total)"])
                pid = kernel.manager.provisioner.pid
                assert isinstance(kernel.manager.provisioner.process, ForkedProcess)
                assert alive(pid)
            finally:
                await kernel.kill()
            assert not alive(pid), "the forked kernel is gone once killed"
            return nb, pid, server.pid, server
        finally:
            await server.close()

    nb, pid, server_pid, server = asyncio.run(scenario())
    ids, parent_line, state = stdout(nb.cells[0])
    assert ids.split() == [str(pid), str(server_pid), str(server_pid)]
    assert "from ragcourse.batch.forkserver import _template_main" in parent_line
    assert state.split() == ["True", str(work), "from-the-request"], "preloaded, in the request's cwd and env"
    assert stdout(nb.cells[1]) == ["45"]
    error = [o for o in nb.cells[2].outputs if o.get("output_type") == "error"]
    assert [(o["ename"], o["evalue"]) for o in error] == [("ZeroDivisionError", "division by zero")]
    assert stdout(nb.cells[3]) == ["after 45"], "the kernel survives a cell's error"
    assert server.process.returncode == 0 and not alive(server_pid)
    assert kernels_left() == []


def test_closing_the_server_kills_the_kernels_it_forked(tmp_path):
    async def scenario():
        server = ForkServer(kernel_environment(), [], str(tmp_path))
        await server.start()
        kernels = [await forked_kernel(server, tmp_path, f"k{n}", tmp_path, kernel_environment()) for n in (1, 2)]
        pids = [kernel.manager.provisioner.pid for kernel in kernels]
        assert all(alive(pid) for pid in pids)
        await server.close()
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        left = [pid for pid in pids if alive(pid)]
        for kernel in kernels:  # only the channels and connection files are left to clean
            kernel.client.stop_channels()
            await kernel.manager.shutdown_kernel(now=True)  # signals to a gone kernel are no error
        assert left == [], "kernels still running after their server closed"
        return pids

    pids = asyncio.run(scenario())
    assert [pid for pid in pids if alive(pid)] == []
    assert kernels_left() == []


def test_a_dead_server_is_marked_broken_and_kernels_are_launched_the_usual_way(tmp_path):
    async def scenario():
        server = ForkServer(kernel_environment(), [MARKER_MODULE], str(tmp_path))
        await server.start()
        server.process.kill()
        await server.process.wait()
        kernel = await forked_kernel(server, tmp_path, "k1", tmp_path, kernel_environment())
        try:
            nb = await run_cells(kernel, [WHO])
            launched = kernel.manager.provisioner.process
        finally:
            await kernel.kill()
        with pytest.raises(RuntimeError, match="template process"):
            await server.spawn([], {}, str(tmp_path))
        return nb, launched, server

    nb, launched, server = asyncio.run(scenario())
    assert server.broken
    assert not isinstance(launched, ForkedProcess)
    ids, parent_line, state = stdout(nb.cells[0])
    assert ids.split()[1] == str(os.getpid()) and "_template_main" not in parent_line
    assert state.split()[0] == "False", f"{MARKER_MODULE} is the server's preload, not a plain kernel's"
    assert kernels_left() == []


def test_spawn_before_start_says_so_and_preload_must_be_names(tmp_path):
    server = ForkServer({}, [], str(tmp_path))
    with pytest.raises(RuntimeError, match="no kernel template process"):
        asyncio.run(server.spawn([], {}, str(tmp_path)))
    with pytest.raises(TypeError, match="preload must be a list of module names"):
        ForkServer({}, "numpy", str(tmp_path))


def test_the_preload_leaves_out_modules_that_hook_into_the_shell():
    chosen = preload_modules(["numpy", "matplotlib.pyplot", "IPython.display", "numpy"])
    assert chosen[0] == "numpy" and chosen.count("numpy") == 1
    assert "matplotlib.backends.backend_agg" in chosen
    assert not [name for name in chosen if name.startswith(("matplotlib.pyplot", "IPython"))]


def test_the_engine_runs_a_notebook_through_the_server_and_reports_its_error(tmp_path):
    """What ``run`` uses: the kernel is forked (its parent is the server), outputs are stored, the error named."""
    cells = [new_code_cell("SEED = 1\nFIGURES_DIR = None", metadata={"tags": ["parameters"]}),
             new_code_cell(WHO), new_code_cell("raise ValueError('broken on purpose')")]
    source = tmp_path / "07-forked.ipynb"
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC)}), source)
    target = tmp_path / "out" / source.name
    [outcome] = Engine(1, progress=False).run([Job(7, source, target, {"SEED": 2})])
    assert not outcome.ok
    # cell 1 is the injected parameters, as papermill writes them
    assert outcome.failure.describe() == "cell 3 `raise ValueError('broken on purpose')`: ValueError: broken on purpose"
    executed = nbformat.read(target, as_version=4)
    who = next(cell for cell in executed.cells if cell.source == WHO)
    assert "from ragcourse.batch.forkserver import _template_main" in stdout(who)[1]
    assert kernels_left() == []


def test_plain_kernels_are_not_forked(tmp_path, monkeypatch):
    """RAGCOURSE_PLAIN_KERNELS=1: the same notebook's kernel is this process's child (the check above can fail)."""
    monkeypatch.setenv("RAGCOURSE_PLAIN_KERNELS", "1")
    source = tmp_path / "07-plain.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(WHO)], metadata={"kernelspec": dict(KERNELSPEC)}), source)
    target = tmp_path / "out" / source.name
    [outcome] = Engine(1, progress=False).run([Job(7, source, target, None)])
    assert outcome.ok, outcome.failure
    ids, parent_line, _ = stdout(nbformat.read(target, as_version=4).cells[0])
    assert ids.split()[1] == str(os.getpid()) and "_template_main" not in parent_line
    assert kernels_left() == []
