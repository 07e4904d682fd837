"""Seed sweeps on a Dask distributed cluster: ``python -m ragcourse sweep --scheduler ...``.

``--scheduler ADDRESS`` connects to a running Dask scheduler; ``--scheduler local:N``
starts a ``LocalCluster`` of N single-threaded worker processes on this machine. Each
seed is one task (``run_seed``): on its worker it runs that seed's lessons with the
same batch engine as an in-process sweep (``runner.Engine``: pre-started kernels,
forked from a template when it can), in a temporary folder, and returns what the
lessons recorded, byte for byte (the ``NN-headline.json`` files) plus each lesson's
status and, for a failed lesson, its executed notebook. The sweep writes those files
into DIR and builds its table from them exactly as an in-process sweep does, so the
same seeds give a byte-identical ``sweep.csv``. Nothing is written under the
project's ``notebooks/`` or ``figures/``, on the worker or here.

Why the engine runs inside a Dask worker as it is: worker processes are daemonic
multiprocessing children of their nanny (``distributed.worker.daemon: true``), and a
daemonic process may not start *multiprocessing* children. The engine starts none: it
launches kernels (and the kernel template that forks them) with ``subprocess``, and
the template forks in its own, non-daemonic process. So no worker or nanny setting is
needed. The task runs in a worker thread, where no event loop runs, so the engine gets
its own loop there, as it does in a plain script.

* What a worker needs: this project installed from the same requirements (the lesson
  notebooks travel with the tasks; the package does not). A worker whose ``world``,
  ``retrieval`` or ``lesson`` code differs from the sweep's fails every task with a
  message saying so (``package_fingerprint``), rather than returning other numbers.
* Ctrl-C here cancels the tasks: queued ones never start, and a running one notices
  its cancellation within ``STOP_POLL`` seconds, stops its engine (which kills its
  kernels) and returns. The workers of ``local:N`` ignore SIGINT (``dask_setup``, their
  preload), so the terminal's Ctrl-C reaches only this process, which cancels cleanly.

dask and distributed are imported inside the functions that need them: an in-process
sweep runs without them installed, and importing this module imports neither.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
import socket
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from .kernels import SignalFreeLoop
from .runner import Engine, Failure, Job, Outcome, _progress_bar
from .sweep import results_dir, sweep_jobs

CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler (or to start local workers)
STOP_POLL = 0.2  # how often a running task checks whether it was cancelled
IDLE_WAIT = 10.0  # after Ctrl-C, how long to wait for cancelled running tasks to stop
LOCAL = "local:"
MAX_LOCAL_WORKERS = 64
SCHEMES = ("tcp", "tls", "ws", "wss")
ADDRESS = re.compile(r"(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*)"
                     r":(?P<port>[0-9]{1,5})")
FINGERPRINTED = ("world", "retrieval", "toolkit")  # the code a lesson's numbers come from
TASK_PREFIX = "ragcourse-seed-"
SCHEDULER_HELP = (f"local:N (N from 1 to {MAX_LOCAL_WORKERS} worker processes started here) "
                  "or the address of a running Dask scheduler, such as tcp://HOST:8786")


class SchedulerError(Exception):
    """The ``--scheduler`` cannot be used: a one-line reason."""


def parse_scheduler(text: str) -> str:
    """``local:N`` or ``[scheme://]host:port`` (scheme tcp, tls, ws or wss; tcp when omitted).

    Returns the canonical form (``local:2``, ``tcp://host:8786``); raises ValueError
    with a one-line message saying what is allowed.
    """
    value = text.strip()
    problem = f"must be {SCHEDULER_HELP}; got {text!r}"
    if value.startswith(LOCAL):
        count = value[len(LOCAL):]
        if not (count.isascii() and count.isdigit()) or not 1 <= int(count) <= MAX_LOCAL_WORKERS:
            raise ValueError(problem)
        return f"{LOCAL}{int(count)}"
    match = ADDRESS.fullmatch(value)
    if match is None or not 1 <= int(match["port"]) <= 65535 or (match["scheme"] or "tcp") not in SCHEMES:
        raise ValueError(problem)
    return f"{match['scheme'] or 'tcp'}://{match['host']}:{int(match['port'])}"


@lru_cache(maxsize=1)
def package_fingerprint() -> str:
    """SHA-256 over the source of the subpackages the lessons compute with (and the package's ``__init__``)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    files = [root / "__init__.py"] + sorted(p for name in FINGERPRINTED for p in (root / name).rglob("*.py"))
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


# -- the worker's side ------------------------------------------------------------------
def dask_setup(worker=None) -> None:
    """Preload of the ``local:N`` workers: ignore SIGINT (Ctrl-C is the sweep's to handle)."""
    import signal

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _cancellation():
    """A function telling whether the running Dask task was cancelled (always False outside a worker)."""
    try:
        from distributed import get_worker

        worker = get_worker()
        key = worker.get_current_task()
        tasks = worker.state.tasks
    except Exception:
        return lambda: False

    def cancelled() -> bool:
        task = tasks.get(key)
        return task is None or task.state == "cancelled"
    return cancelled


def _run_engine(engine: Engine, jobs: list[Job], cancelled) -> tuple[list[Outcome], bool]:
    """``engine.run(jobs)`` without a progress bar, stopped (every kernel killed) once ``cancelled()``.

    Returns (outcomes, stopped); a stopped run returns no outcomes.
    """
    jobs = [replace(job, source=job.source.resolve(), target=job.target.resolve()) for job in jobs]
    handle: dict = {}
    finished = threading.Event()

    async def batch() -> list[Outcome]:
        handle["loop"], handle["task"] = asyncio.get_running_loop(), asyncio.current_task()
        return await engine._run(jobs, lambda outcome: None)

    def watch() -> None:
        while not finished.wait(STOP_POLL):
            if "task" in handle and cancelled():
                handle["stopped"] = True
                handle["loop"].call_soon_threadsafe(handle["task"].cancel)
                return

    watcher = threading.Thread(target=watch, name="ragcourse-sweep-watch", daemon=True)
    watcher.start()
    try:
        with asyncio.Runner(loop_factory=SignalFreeLoop) as runner:
            return runner.run(batch()), False
    except asyncio.CancelledError:
        if handle.get("stopped"):
            return [], True
        raise
    finally:
        finished.set()


def run_seed(seed: int, notebooks: dict[int, tuple[str, bytes]], parallel: int, fingerprint: str) -> dict:
    """The task: run one seed's lessons here (``parallel`` at once) in a temporary folder.

    ``notebooks`` is lesson -> (file name, notebook bytes). Returns plain data:
    ``{"seed", "stopped", "worker", "lessons": [{"lesson", "ok", "seconds", "failure",
    "headline", "notebook"}]}``, where ``headline`` is the bytes the lesson recorded (or
    None), ``failure`` is ``(cell_index, first_line, ename, evalue)`` or None and
    ``notebook`` the executed notebook of a failed lesson (else None).
    """
    mine = package_fingerprint()
    if mine != fingerprint:
        raise RuntimeError(f"worker {socket.gethostname()} has other ragcourse code ({mine[:12]}) than the sweep "
                           f"({fingerprint[:12]}): install the same version of the project on every worker")
    cancelled = _cancellation()
    lessons = []
    with tempfile.TemporaryDirectory(prefix=f"{TASK_PREFIX}{seed}-") as scratch:
        scratch_dir = Path(scratch)
        folder = scratch_dir / "lessons"
        folder.mkdir()
        paths = {}
        for lesson, (name, data) in sorted(notebooks.items()):
            paths[lesson] = folder / Path(name).name
            paths[lesson].write_bytes(data)
        outcomes, stopped = _run_engine(Engine(parallel, progress=False), sweep_jobs(paths, [seed], scratch_dir),
                                        cancelled)
        for outcome in outcomes:
            lesson = outcome.job.lesson
            headline = results_dir(scratch_dir, seed) / f"{lesson:02d}-headline.json"
            failure = outcome.failure
            lessons.append({
                "lesson": lesson, "ok": outcome.ok, "seconds": outcome.seconds,
                "failure": None if failure is None else (failure.cell_index, failure.first_line, failure.ename,
                                                         failure.evalue),
                "headline": headline.read_bytes() if headline.exists() else None,
                "notebook": (outcome.job.target.read_bytes()
                             if not outcome.ok and outcome.job.target.exists() else None)})
    return {"seed": seed, "stopped": stopped, "worker": f"{socket.gethostname()}:{os.getpid()}", "lessons": lessons}


def _running_sweep_tasks(prefix: str, dask_worker=None) -> int:
    """On a worker: how many of this sweep's tasks still occupy a thread (cancelled ones included)."""
    return sum(1 for task in dask_worker.state.executing if str(task.key).startswith(prefix))


# -- the sweep's side ---------------------------------------------------------------------
class Cluster:
    """A connected Dask client (and the ``LocalCluster`` it started, if any); close it when done."""

    def __init__(self, client, local=None, description: str = "a Dask cluster"):
        self.client, self.local, self.description = client, local, description

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for part in (self.client, self.local):
            if part is not None:
                try:
                    part.close()
                except Exception:
                    pass

    def run_seeds(self, notebooks: dict[int, Path], seeds: list[int], out_dir: Path, parallel: int = 1,
                  progress: bool = True) -> list[Outcome]:
        """One task per seed; headline files (and failed notebooks) written into ``out_dir``.

        Returns one Outcome per (seed, lesson) in the order of ``sweep_jobs``. A failed
        lesson is named on stderr as soon as its seed comes back; a task that fails as a
        whole (a worker lost, other code on the worker) fails each lesson of its seed.
        """
        from distributed import as_completed

        out_dir = Path(out_dir).resolve()
        jobs = sweep_jobs(notebooks, seeds, out_dir)
        by_run = {(job.parameters["SEED"], job.lesson): job for job in jobs}
        payload = {lesson: (path.name, Path(path).read_bytes()) for lesson, path in sorted(notebooks.items())}
        if not self.client.nthreads():
            print(f"note: {self.description} has no workers yet; the tasks wait for some to join", file=sys.stderr)
        [shared] = self.client.scatter([payload], broadcast=True, hash=False)
        prefix = f"{TASK_PREFIX}{uuid.uuid4().hex[:12]}-"
        fingerprint = package_fingerprint()
        futures = {self.client.submit(run_seed, seed, shared, parallel, fingerprint, key=f"{prefix}{seed}",
                                      pure=False, retries=0): seed for seed in seeds}
        outcomes: dict[tuple[int, int], Outcome] = {}
        bar = _progress_bar(len(jobs), progress)
        try:
            for future in as_completed(futures):
                seed = futures[future]
                finished = self._collect(future, seed, notebooks, by_run, out_dir)
                future.release()
                for outcome in finished:
                    outcomes[(seed, outcome.job.lesson)] = outcome
                    if not outcome.ok:
                        _notice(bar, f"FAILED {outcome.job.name} {outcome.job.source.name}: "
                                     f"{outcome.failure.describe() if outcome.failure else 'unknown error'}")
                if bar is not None:
                    ok = all(o.ok for o in finished)
                    bar.set_postfix_str(f"seed {seed} {'ok' if ok else 'FAILED'}", refresh=False)
                    bar.update(len(finished))
        except KeyboardInterrupt:
            self._cancel(list(futures), prefix)
            raise
        finally:
            if bar is not None:
                bar.close()
            shared.release()
        return [outcomes[(job.parameters["SEED"], job.lesson)] for job in jobs]

    @staticmethod
    def _collect(future, seed: int, notebooks: dict[int, Path], by_run: dict, out_dir: Path) -> list[Outcome]:
        """Outcomes of one seed's task; its headline files and failed notebooks written into ``out_dir``."""
        if future.status != "finished":
            try:
                error = future.exception()
            except BaseException as problem:  # cancelled by someone else
                error = problem
            failure = Failure(None, "", type(error).__name__, str(error) or repr(error))
            return [Outcome(by_run[(seed, lesson)], False, failure=failure) for lesson in sorted(notebooks)]
        result = future.result()
        outcomes = []
        for item in result["lessons"]:
            job = by_run[(seed, item["lesson"])]
            if item["headline"] is not None:
                target = results_dir(out_dir, seed) / f"{item['lesson']:02d}-headline.json"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(item["headline"])
            if item["notebook"] is not None:
                job.target.parent.mkdir(parents=True, exist_ok=True)
                job.target.write_bytes(item["notebook"])
            failure = None if item["failure"] is None else Failure(*item["failure"])
            outcomes.append(Outcome(job, item["ok"], item["seconds"], [], failure))
        return outcomes

    def _cancel(self, futures: list, prefix: str) -> None:
        """Cancel what has not finished; wait (a while) until running tasks have stopped their kernels."""
        pending = [future for future in futures if not future.done()]
        try:
            self.client.cancel(pending)
            deadline = time.monotonic() + IDLE_WAIT
            while time.monotonic() < deadline:
                if not any(self.client.run(_running_sweep_tasks, prefix).values()):
                    break
                time.sleep(STOP_POLL)
        except Exception:
            pass
        print(f"interrupted: cancelled {len(pending)} of {len(futures)} seed tasks on {self.description}",
              file=sys.stderr)


def _notice(bar, text: str) -> None:
    if bar is not None:
        bar.write(text, file=sys.stderr)
    else:
        print(text, file=sys.stderr)


# What a nanny sets before it spawns its worker. Dask's default also sets MALLOC_TRIM_THRESHOLD_, and
# sets all of them with ``os.environ.update`` in *this* process, where they outlive the cluster and reach
# every later child: with MALLOC_TRIM_THRESHOLD_ set, glibc stops raising its mmap threshold, and an
# embedded PostgreSQL started afterwards mapped and zeroed memory for each large allocation (lab 04's
# full-text queries ran 15 times slower, 87 against 5-7 ms each). So the nannies get the thread
# settings only, passed to the worker process itself, and this process's environment is put back.
WORKER_ENVIRONMENT = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@contextlib.contextmanager
def _environment_kept():
    """Start nannies without touching this process's environment (see WORKER_ENVIRONMENT)."""
    import dask

    before = dict(os.environ)
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": {},
                              "distributed.nanny.environ": dict(WORKER_ENVIRONMENT)}):
            yield
    finally:
        for name in set(os.environ) - set(before):
            del os.environ[name]
        os.environ.update(before)


def open_cluster(spec: str, timeout: float | None = None) -> Cluster:
    """Connect to ``spec`` (from ``parse_scheduler``) or start ``local:N``; SchedulerError when it cannot.

    ``timeout`` (default ``CONNECT_TIMEOUT``) bounds the wait for the scheduler or the local workers.
    """
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    try:
        import distributed
    except ImportError:
        raise SchedulerError("needs the dask and distributed packages; install requirements.txt") from None
    if spec.startswith(LOCAL):
        workers = int(spec[len(LOCAL):])
        local = None
        try:
            with _environment_kept():
                local = distributed.LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                    dashboard_address=None, silence_logs=logging.ERROR, preload=[__name__],
                    death_timeout=timeout)
            client = distributed.Client(local, timeout=timeout)
        except Exception as error:
            if local is not None:
                local.close()
            raise SchedulerError(f"could not start {workers} local workers: {type(error).__name__}: "
                                 f"{str(error).splitlines()[0] if str(error) else ''}") from None
        return Cluster(client, local, f"local:{workers} ({workers} worker processes here)")
    try:
        client = distributed.Client(spec, timeout=timeout)
    except Exception:
        raise SchedulerError(f"no Dask scheduler answered at {spec} within {timeout:g} s") from None
    try:
        workers = len(client.nthreads())
    except Exception:
        workers = 0
    return Cluster(client, None, f"{spec} ({workers} workers when the sweep started)")


__all__ = ["Cluster", "SchedulerError", "open_cluster", "parse_scheduler", "run_seed", "package_fingerprint"]
