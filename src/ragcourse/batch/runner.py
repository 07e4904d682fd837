"""The batch engine: execute many lesson notebooks at once from one Python process.

One asyncio loop drives every kernel; ``Engine.run`` executes a list of ``Job``s,
``parallel`` at a time, and returns one ``Outcome`` per job (status, seconds, figures
written, and for a failure the cell and the error).

* Every notebook gets a new ``python3`` kernel of this interpreter, started by the kernel
  layer the grader shares (``ragcourse.batch.kernels``). Kernels are booted ahead:
  while ``parallel`` notebooks execute, the next ones start and import the modules
  their notebook imports (one silent request that leaves no trace in the notebook).
* Booting a kernel costs more CPU than most lessons compute (interpreter, ipykernel,
  IPython, matplotlib: ~0.8 s). So kernels are forked from a template process that
  imported those once (``ragcourse.batch.forkserver``); each fork is a fresh process with
  a fresh kernel, shell and namespace. If forking is unavailable or fails, kernels are
  launched the usual way (``RAGCOURSE_PLAIN_KERNELS=1`` forces that).
* Parameters are injected exactly as papermill does (``parameterize_notebook``: an
  ``injected-parameters`` cell after the ``parameters`` cell), then nbclient executes
  the notebook with ``record_timing`` (per-cell ``execution`` metadata) and merged
  stream outputs (so the stored text does not depend on flush timing).
* A finished kernel is killed at once, in the background.

``run_lessons`` serves ``run``, ``figures`` and ``sweep``; ``refresh_lessons`` serves
``refresh``. Nothing heavy is imported at module import.
"""
from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from .forkserver import ForkServer, forking_provisioner, preload_modules
from .kernels import KERNEL_NAME, RunningKernel, SignalFreeLoop, kernel_environment, run_blocking, start_kernel
from .notebooks import clean_metadata
from ..toolkit.lazy import defining_module

# One cell may run this long. Lab 04's test cell writes its 180 generated answers on a cold cache: about ten
# minutes on two quiet cores, and it passed 600 s on a busy machine (seen 2026-12-05); a hung cell still ends.
CELL_TIMEOUT = 1800
STARTUP_TIMEOUT = 120
FIGURE_SUFFIXES = (".svg", ".png")
FIGURE_PATTERN = re.compile(r"^(\d\d)-.+\.(svg|png)$")


# -- what to run and what happened ------------------------------------------------------
@dataclass(frozen=True)
class Job:
    """One notebook to execute.

    ``parameters`` is None to run the notebook as shipped (refresh), else a dict that
    is injected papermill-style. ``in_place`` jobs store clean outputs (no timing or
    papermill metadata) back into ``target`` and only when every cell succeeded; other
    jobs always write the executed notebook, failed or not.
    """

    lesson: int
    source: Path
    target: Path
    parameters: dict | None = None
    figures_dir: Path | None = None
    label: str = ""
    in_place: bool = False

    @property
    def name(self) -> str:
        return self.label or f"{self.lesson:02d}"


@dataclass(frozen=True)
class Failure:
    """Where a notebook stopped (cell index in the executed notebook, its first line) and why."""

    cell_index: int | None
    first_line: str
    ename: str
    evalue: str

    def describe(self) -> str:
        evalue = next((line for line in self.evalue.splitlines() if line.strip()), "")
        where = "" if self.cell_index is None else f"cell {self.cell_index} `{self.first_line}`: "
        return f"{where}{self.ename}: {evalue}"


@dataclass
class Outcome:
    """What happened to one job."""

    job: Job
    ok: bool
    seconds: float = 0.0
    figures: list[str] = field(default_factory=list)
    failure: Failure | None = None


# -- small helpers ------------------------------------------------------------------------
def default_jobs() -> int:
    """Number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _import_notebook_tools():
    """Import nbformat, nbclient and papermill's notebook functions (on first use only).

    jsonschema, pulled in by nbformat, imports ``rfc3987_syntax`` when it is installed;
    that module builds a grammar at import and costs about a second. The runner checks
    no IRI formats, so this process skips that optional module (kernels are unaffected).
    """
    blocked = "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules
    if blocked:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # import fails fast
    try:
        import nbclient
        import nbformat
        from papermill.iorw import load_notebook_node
        from papermill.parameterize import parameterize_notebook
    finally:
        if blocked:
            del sys.modules["rfc3987_syntax"]  # a later explicit import works as usual
    return nbformat, nbclient, load_notebook_node, parameterize_notebook


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def imported_modules(nb) -> list[str]:
    """Absolute module names imported at the top level of the code cells (a notebook or its JSON).

    ``from ragcourse.engines import DenseEncoder`` names ``ragcourse.engines`` and the module that defines
    the name (``toolkit.lazy.defining_module``), since importing the subpackage alone loads nothing."""
    names: list[str] = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse(_source(cell))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
                if node.module.split(".")[0] == "ragcourse" and node.module.count(".") == 1:
                    # a subpackage's offered name: the module behind it (a deeper module is not asked: importing
                    # it here would load what it loads)
                    names.extend(filter(None, (defining_module(node.module, a.name) for a in node.names)))
    return list(dict.fromkeys(names))


def warm_up_code(modules: list[str]) -> str:
    """Code that imports ``modules`` in a kernel and leaves no name behind."""
    return ("def __ragcourse_warm_up():\n"
            "    import importlib\n"
            f"    for name in {modules!r}:\n"
            "        try:\n"
            "            importlib.import_module(name)\n"
            "        except Exception:\n"
            "            pass\n"
            "__ragcourse_warm_up()\n"
            "del __ragcourse_warm_up\n")


def prepare_notebook(job: Job, tools):
    """Read the job's notebook and inject its parameters the way papermill does."""
    nbformat, _, load_notebook_node, parameterize_notebook = tools
    if job.parameters is None:
        return nbformat.read(job.source, as_version=4)
    nb = load_notebook_node(str(job.source))
    nb = parameterize_notebook(nb, job.parameters, kernel_name=KERNEL_NAME, language="python")
    nb.metadata.papermill["input_path"] = str(job.source)
    nb.metadata.papermill["output_path"] = str(job.target)
    return nb


def failure_of(nb, error: BaseException, running: int | None) -> Failure:
    """The failing cell (the one with an error output, else the one running) and the error."""
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return Failure(index, _first_line(cell), output.get("ename", "Error"), output.get("evalue", ""))
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    first = _first_line(nb.cells[running]) if running is not None else ""
    return Failure(running, first, type(error).__name__, lines[-1] if lines else "")


def _first_line(cell) -> str:
    return next((line.strip() for line in _source(cell).splitlines() if line.strip()), "")[:80]


def figures_written(job: Job, since: float) -> list[str]:
    """Figure files ``NN-*`` of the job's lesson in its figures folder modified at or after ``since``."""
    if job.figures_dir is None or not job.figures_dir.is_dir():
        return []
    prefix = f"{job.lesson:02d}-"
    return sorted(p.name for p in job.figures_dir.iterdir()
                  if p.name.startswith(prefix) and p.suffix in FIGURE_SUFFIXES
                  and p.stat().st_mtime >= since)


# -- the engine -----------------------------------------------------------------------------
class Engine:
    """Executes jobs ``parallel`` at a time, with ``ahead`` more kernels booting in advance."""

    def __init__(self, parallel: int, ahead: int | None = None, progress: bool = True,
                 timeout: int = CELL_TIMEOUT, fork: bool = True):
        self.parallel = max(1, parallel)
        self.ahead = self.parallel if ahead is None else max(0, ahead)
        self.progress = progress
        self.timeout = timeout
        self.fork = (fork and hasattr(os, "fork")
                     and os.environ.get("RAGCOURSE_PLAIN_KERNELS", "") in ("", "0"))
        self.env = kernel_environment(mpl_backend=None)  # the kernel's own inline backend, as in JupyterLab
        self.tools = None
        self.template: ForkServer | None = None
        self._context = None
        self._booting: asyncio.Semaphore | None = None
        self._count = 0

    def run(self, jobs: list[Job]) -> list[Outcome]:
        """Execute every job; outcomes in the jobs' order."""
        jobs = [replace(job, source=job.source.resolve(), target=job.target.resolve()) for job in jobs]
        bar = _progress_bar(len(jobs), self.progress)

        def done(outcome: Outcome) -> None:
            if bar is not None:
                bar.set_postfix_str(f"{outcome.job.name} {'ok' if outcome.ok else 'FAILED'}", refresh=False)
                bar.update(1)

        try:
            # From code that already runs an event loop (a notebook cell, a Playwright
            # session) the batch gets its own loop in a worker thread.
            return run_blocking(self._run(jobs, done), loop_factory=SignalFreeLoop, thread_name="ragcourse-batch")
        finally:
            if bar is not None:
                bar.close()

    async def _run(self, jobs: list[Job], done) -> list[Outcome]:
        import jupyter_client.asynchronous  # noqa: F401  (all kernel plumbing, before the thread below)
        import jupyter_client.manager  # noqa: F401
        import jupyter_client.provisioning  # noqa: F401
        import zmq
        import zmq.asyncio

        background: list = []
        tasks: list = []
        # nbclient, nbformat and papermill load in a thread while the first kernels boot
        tools = asyncio.get_running_loop().run_in_executor(None, _import_notebook_tools)
        imports = [_raw_imports(job.source) for job in jobs]
        self._context = zmq.asyncio.Context()
        self._context.setsockopt(zmq.RECONNECT_IVL, 10)  # reach a booting kernel within 10 ms, not 100
        with tempfile.TemporaryDirectory(prefix="ragcourse-kernels-") as runtime:
            try:
                if self.fork and jobs:
                    self.template = ForkServer(self.env, preload_modules(
                        [name for names in imports for name in names]), runtime)
                    await self.template.start()
                alive = asyncio.Semaphore(self.parallel + self.ahead)
                self._booting = asyncio.Semaphore(self.parallel)
                running = asyncio.Semaphore(self.parallel)
                tasks = [asyncio.ensure_future(self._one(job, modules, tools, alive, running, runtime,
                                                         done, background)) for job, modules in zip(jobs, imports)]
                return list(await asyncio.gather(*tasks))
            finally:
                for task in tasks:
                    task.cancel()
                if background:
                    await asyncio.gather(*background, return_exceptions=True)
                if self.template is not None:
                    await self.template.close()
                self._context.destroy(linger=0)

    async def _one(self, job: Job, modules: list[str], tools, alive: asyncio.Semaphore,
                   running: asyncio.Semaphore, runtime: str, done, background: list) -> Outcome:
        async with alive:
            kernel, error = None, None
            async with self._booting:  # a few at a time: the first kernels are ready soonest
                for forked in ([True, False] if self.template is not None else [False]):
                    try:
                        kernel = await self._start_kernel(job, modules, runtime, forked)
                        break
                    except Exception as problem:  # a forked kernel that fails is retried launched plainly
                        error = problem
            if kernel is None:
                outcome = Outcome(job, False, failure=Failure(None, "", "KernelStartError",
                                                              f"{type(error).__name__}: {error}"))
            else:
                try:
                    async with running:
                        self.tools = await tools
                        try:
                            nb = prepare_notebook(job, self.tools)
                        except Exception as error:  # an unreadable notebook fails its own lesson only
                            outcome = Outcome(job, False, failure=Failure(None, "", type(error).__name__,
                                                                          str(error)))
                        else:
                            outcome = await self._execute(job, nb, kernel)
                finally:
                    background.append(asyncio.ensure_future(kernel.kill()))
        done(outcome)
        return outcome

    async def _start_kernel(self, job: Job, modules: list[str], runtime: str, forked: bool) -> RunningKernel:
        """A ready kernel for ``job`` (forked by the template when ``forked``) that imported ``modules``."""
        self._count += 1
        server = self.template if forked else None
        return await start_kernel(runtime, f"k{self._count}", str(job.source.parent), self.env, STARTUP_TIMEOUT,
                                  context=self._context,
                                  provisioner=None if server is None else
                                  (lambda manager: forking_provisioner(manager, server)),
                                  warm_up=warm_up_code(modules) if modules else None)

    async def _execute(self, job: Job, nb, kernel: RunningKernel) -> Outcome:
        nbformat, nbclient, _, _ = self.tools
        started_wall, started = time.time(), time.perf_counter()
        client = nbclient.NotebookClient(
            nb, km=kernel.manager, kernel_name=KERNEL_NAME, timeout=self.timeout,
            record_timing=not job.in_place, allow_errors=False, coalesce_streams=True,
            resources={"metadata": {"path": str(job.source.parent)}})
        client.kc = kernel.client
        running: list[int] = []
        client.on_cell_execute = lambda cell, cell_index: running.append(cell_index)
        failure = None
        try:
            await client.async_execute()
        except Exception as error:  # CellExecutionError, DeadKernelError, CellTimeoutError, ...
            failure = failure_of(nb, error, running[-1] if running else None)
        seconds = time.perf_counter() - started
        if job.in_place:
            if failure is None:
                clean_metadata(nb)
                nbformat.write(nb, job.target)
        else:
            job.target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, job.target)
        return Outcome(job, failure is None, seconds, figures_written(job, started_wall - 1.0), failure)


def _raw_imports(path: Path) -> list[str]:
    try:
        return imported_modules(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError):
        return []


def _progress_bar(total: int, wanted: bool):
    """A tqdm bar over lessons on stderr, or None (not wanted, or tqdm not installed)."""
    if not wanted or total == 0:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="lesson", desc="lessons", file=sys.stderr, dynamic_ncols=True)


# -- the commands' building blocks ------------------------------------------------------------
def run_lessons(notebooks: dict[int, Path], out_dir: Path, seed: int | None = None,
                jobs: int | None = None, progress: bool = True, label: str = "") -> list[Outcome]:
    """Execute ``notebooks`` (lesson -> path) into ``out_dir/notebooks``, figures into ``out_dir/figures``.

    SEED is injected when ``seed`` is given (else the notebook's own default, the course
    seed, stays). What an earlier run left in ``out_dir`` for these lessons (``NN-*``
    notebooks and figures) is removed first; other lessons' files stay. ``label`` names
    the kind in the summary (``lab`` gives ``lab01``); the labs take no SEED.
    """
    out_dir = Path(out_dir).resolve()
    figures_dir = out_dir / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    remove_lesson_figures(figures_dir, set(notebooks))
    for lesson in notebooks:
        for stale in (out_dir / "notebooks").glob(f"{lesson:02d}-*.ipynb"):
            stale.unlink()
    job_list = []
    for lesson, path in sorted(notebooks.items()):
        parameters: dict = {} if seed is None else {"SEED": seed}
        parameters["FIGURES_DIR"] = str(figures_dir)
        job_list.append(Job(lesson, path, out_dir / "notebooks" / path.name, parameters, figures_dir,
                            label=f"{label}{lesson:02d}" if label else ""))
    return Engine(jobs or default_jobs(), progress=progress).run(job_list)


def refresh_lessons(notebooks: dict[int, Path], jobs: int | None = None,
                    progress: bool = True, label: str = "") -> list[Outcome]:
    """Re-execute notebooks in place as shipped (no parameters); store clean outputs on success."""
    job_list = [Job(lesson, path, path, None, None, label=f"{label}{lesson:02d}" if label else "", in_place=True)
                for lesson, path in sorted(notebooks.items())]
    return Engine(jobs or default_jobs(), progress=progress).run(job_list)


def lesson_figure_files(folder: Path) -> dict[str, Path]:
    """Figure files named like ``NN-name.svg|png`` in ``folder``, by name."""
    if not folder.is_dir():
        return {}
    return {p.name: p for p in folder.iterdir()
            if p.is_file() and FIGURE_PATTERN.match(p.name)}


def remove_lesson_figures(folder: Path, lessons: set[int]) -> list[str]:
    """Remove ``NN-*`` figure files of ``lessons`` from ``folder``; the names removed."""
    removed = []
    for name, path in sorted(lesson_figure_files(folder).items()):
        if int(name[:2]) in lessons:
            path.unlink()
            removed.append(name)
    return removed


def sync_figures(fresh: Path, target: Path, lessons: set[int]) -> tuple[list[str], list[str], list[str]]:
    """Make ``target``'s ``NN-*`` figures of ``lessons`` equal to those in ``fresh``.

    Changed or new files are written (atomically), identical ones left alone, and
    ``NN-*`` files of these lessons that ``fresh`` no longer holds are removed. Files
    of other lessons and files not named ``NN-*`` are never touched.
    Returns (written, unchanged, removed) names.
    """
    target.mkdir(parents=True, exist_ok=True)
    new = {name: path for name, path in lesson_figure_files(fresh).items() if int(name[:2]) in lessons}
    old = {name: path for name, path in lesson_figure_files(target).items() if int(name[:2]) in lessons}
    written, unchanged, removed = [], [], []
    for name, path in sorted(new.items()):
        data = path.read_bytes()
        if name in old and old[name].read_bytes() == data:
            unchanged.append(name)
            continue
        handle, temporary = tempfile.mkstemp(prefix=f".{name}-", dir=target)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target / name)
        written.append(name)
    for name in sorted(set(old) - set(new)):
        old[name].unlink()
        removed.append(name)
    return written, unchanged, removed


def regenerate_figures(notebooks: dict[int, Path], figures_dir: Path, jobs: int | None = None,
                       progress: bool = True, every_lesson: bool = True, label: str = ""):
    """Run ``notebooks`` at the course seed in a temporary folder, then sync their figures into ``figures_dir``.

    Only lessons that ran cleanly are synced. With ``every_lesson`` (all notebooks were
    given), ``NN-*`` figures of lessons that have no notebook any more are removed too.
    Returns (outcomes, written, unchanged, removed).
    """
    with tempfile.TemporaryDirectory(prefix="ragcourse-figures-") as scratch:
        outcomes = run_lessons(notebooks, Path(scratch), jobs=jobs, progress=progress, label=label)
        lessons = {o.job.lesson for o in outcomes if o.ok}
        if every_lesson:
            lessons |= {int(name[:2]) for name in lesson_figure_files(figures_dir)} - set(notebooks)
        written, unchanged, removed = sync_figures(Path(scratch) / "figures", figures_dir, lessons)
    return outcomes, written, unchanged, removed


def summary_table(outcomes: list[Outcome], wall: float | None = None) -> str:
    """Fixed-width table (lesson, status, seconds, figures written), then every failure with cell and error."""
    width = max([len("lesson")] + [len(o.job.name) for o in outcomes])
    lines = [f"{'lesson':<{width}}  {'status':<6}  {'seconds':>7}  figures written"]
    for outcome in outcomes:
        figures = ", ".join(outcome.figures) if outcome.figures else "-"
        lines.append(f"{outcome.job.name:<{width}}  {'ok' if outcome.ok else 'FAILED':<6}  "
                     f"{outcome.seconds:>7.2f}  {figures}")
    failed = [o for o in outcomes if not o.ok]
    total = f"{len(outcomes) - len(failed)}/{len(outcomes)} lessons ok"
    if wall is not None:
        total += f", {wall:.1f} s wall"
    lines.append(total)
    for outcome in failed:
        reason = outcome.failure.describe() if outcome.failure else "unknown error"
        lines.append(f"FAILED {outcome.job.name} {outcome.job.source.name}: {reason}")
    return "\n".join(lines)


__all__ = ["Engine", "Job", "Outcome", "Failure", "run_lessons", "refresh_lessons", "regenerate_figures",
           "sync_figures", "summary_table", "default_jobs"]
