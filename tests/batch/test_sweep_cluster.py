"""``sweep --scheduler``: seed sweeps on a Dask cluster give the in-process sweep's table byte for byte.

Kept fast: lesson 01 and a deliberately broken notebook, two seeds, a two-worker
``LocalCluster`` (``--scheduler local:2``) against the in-process engine; plus the
interval of the mean, bad ``--scheduler`` values and Ctrl-C.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ragcourse.cli.main import main
from ragcourse.batch import cluster
from ragcourse.batch.notebooks import KERNELSPEC, NOTEBOOKS_DIR, PROJECT_ROOT
from ragcourse.batch.sweep import MeasureRow, t_quantile
from support.kernels import alive, kernel_processes

# Clusters and kernels against deadlines (Ctrl-C within its wait, a scheduler that does not answer): under make test
# the file runs once prepare has given the cores back.
pytestmark = pytest.mark.timed

LESSON_01 = NOTEBOOKS_DIR / "01-what-is-an-embedding.ipynb"
SEEDS = "1,2"
BROKEN_LINE = ("FAILED 03 seed {seed} 03-broken.ipynb: cell 5 `raise ValueError('broken on purpose')`: "
               "ValueError: broken on purpose")


def broken_notebook(path: Path) -> Path:
    cells = [new_markdown_cell("# broken"), new_code_cell("import math"),
             new_code_cell("SEED = 20260218\nFIGURES_DIR = None\nRESULTS_DIR = None", metadata={"tags": ["parameters"]}),
             new_code_cell("ready = True"), new_code_cell("raise ValueError('broken on purpose')")]
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC)}), path)
    return path


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def run_main(argv: list[str], folder: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv, notebooks_dir=folder)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def lesson_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("notebooks")
    (folder / LESSON_01.name).write_bytes(LESSON_01.read_bytes())
    broken_notebook(folder / "03-broken.ipynb")
    return folder


@pytest.fixture(scope="module")
def sweeps(lesson_folder, tmp_path_factory) -> dict:
    """The same two-seed sweep in process (--jobs 2) and on local:2, and the notebooks folder before and after."""
    before = tree_digest(lesson_folder)
    here, there = tmp_path_factory.mktemp("in-process"), tmp_path_factory.mktemp("cluster")
    started = time.perf_counter()
    in_process = run_main(["sweep", "--seeds", SEEDS, "--out", str(here), "--jobs", "2"], lesson_folder)
    middle = time.perf_counter()
    environment = dict(os.environ)
    on_cluster = run_main(["sweep", "--seeds", SEEDS, "--out", str(there), "--scheduler", "local:2"], lesson_folder)
    print(f"in process {middle - started:.1f} s, local:2 {time.perf_counter() - middle:.1f} s")
    return {"here": (here, *in_process), "there": (there, *on_cluster),
            "before": before, "after": tree_digest(lesson_folder),
            "environment": (environment, dict(os.environ))}


@pytest.mark.notebooks
def test_the_cluster_leaves_this_process_environment_as_it_found_it(sweeps):
    # Dask's nannies set MALLOC_TRIM_THRESHOLD_ (and thread counts) in the process that starts them; every
    # later child inherited it, and an embedded PostgreSQL started afterwards ran lab 04 15 times slower.
    before, after = sweeps["environment"]
    assert "MALLOC_TRIM_THRESHOLD_" not in after or "MALLOC_TRIM_THRESHOLD_" in before
    assert after == before


def table_of(printed: str) -> str:
    """The printed sweep table, from its header to its note (the failures above it carry run times)."""
    lines = printed.splitlines()
    assert lines[-1].startswith("2/4 runs ok (2 lessons x 2 seeds)"), printed
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["lesson", "measure"])
    end = next(i for i, line in enumerate(lines) if line.startswith("(±95%"))
    assert end - start == 8, printed  # header, seven measures of lesson 01, the note
    return "\n".join(lines[start:end + 1])


@pytest.mark.notebooks
def test_the_cluster_sweep_is_byte_identical_to_the_in_process_sweep(sweeps):
    here, _, printed_here, _ = sweeps["here"]
    there, _, printed_there, _ = sweeps["there"]
    assert (there / "sweep.csv").read_bytes() == (here / "sweep.csv").read_bytes()
    assert table_of(printed_there) == table_of(printed_here)
    for name in ("01-sweep.svg", "01-sweep.png"):
        assert (there / "figures" / name).read_bytes() == (here / "figures" / name).read_bytes(), name
    for seed in (1, 2):  # what the lessons recorded comes back byte for byte
        path = Path(f"seed-{seed}") / "results" / "01-headline.json"
        assert (there / path).read_bytes() == (here / path).read_bytes()
    assert "on local:2 (2 worker processes here)" in printed_there.splitlines()[-1]
    rows = (there / "sweep.csv").read_text().splitlines()
    assert rows[0] == "lesson,measure,mean,ci95,min,max,n,seed_1,seed_2"
    assert len(rows) == 8 and all(row.startswith("01,") and ",2," in row for row in rows[1:])


@pytest.mark.notebooks
def test_a_failing_run_is_named_with_lesson_seed_cell_and_error_and_the_rest_completes(sweeps):
    for place in ("here", "there"):
        out, status, printed, _ = sweeps[place]
        assert status == 1, place
        failures = [line for line in printed.splitlines() if line.startswith("FAILED")]
        assert failures == [BROKEN_LINE.format(seed=1), BROKEN_LINE.format(seed=2)], place
        assert (out / "seed-1" / "notebooks" / "03-broken.ipynb").is_file(), "the failed notebook is kept"
    _, _, _, errors = sweeps["there"]
    assert BROKEN_LINE.format(seed=1) in errors.splitlines(), "named on stderr as soon as its seed is back"
    there = sweeps["there"][0]
    assert not (there / "seed-1" / "notebooks" / LESSON_01.name).exists(), "successful notebooks stay on the worker"


@pytest.mark.notebooks
def test_the_cluster_sweep_writes_nothing_into_the_notebooks_folder(sweeps):
    assert sweeps["after"] == sweeps["before"]


@pytest.mark.parametrize("value", ["local:0", "local:x", "local:", "local:-1", "local:65", "tcp://", "localhost",
                                   "http://localhost:8786", "localhost:0", "localhost:70000", ""])
def test_a_malformed_scheduler_is_one_line_naming_the_option_with_status_2(value, lesson_folder, tmp_path,
                                                                           capsys):
    out = tmp_path / "sweep"
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--seeds", SEEDS, "--out", str(out), "--scheduler", value, "1"], notebooks_dir=lesson_folder)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "argument --scheduler" in err and "local:N" in err and "tcp://HOST:8786" in err and repr(value) in err
    assert not out.exists()


def test_a_scheduler_that_does_not_answer_is_one_line_with_status_2_and_nothing_written(lesson_folder, tmp_path,
                                                                                       capsys, monkeypatch):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1.0)
    out = tmp_path / "sweep"
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--seeds", SEEDS, "--out", str(out), "--scheduler", f"127.0.0.1:{port}", "1"],
             notebooks_dir=lesson_folder)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [f"python -m ragcourse sweep: error: argument --scheduler: no Dask scheduler "
                                f"answered at tcp://127.0.0.1:{port} within 1 s"]
    assert not out.exists()


def test_scheduler_addresses_are_read_canonically():
    assert cluster.parse_scheduler("local:02") == "local:2"
    assert cluster.parse_scheduler("10.1.2.3:8786") == "tcp://10.1.2.3:8786"
    assert cluster.parse_scheduler("tls://sched.example:8786") == "tls://sched.example:8786"
    assert cluster.parse_scheduler("tcp://[::1]:8786") == "tcp://[::1]:8786"


# -- the interval of the mean ---------------------------------------------------------------
# the 97.5% points as scipy.stats.t.ppf(0.975, df) gives them (scipy 1.17.1; df = 1: tan(0.475 pi))
@pytest.mark.parametrize("df, t", [(1, 12.706204736174694), (2, 4.302652729749462), (4, 2.7764451051977934),
                                   (9, 2.262157162798205), (19, 2.0930240544083087), (30, 2.0422724563012378),
                                   (999, 1.9623414611334493)])
def test_t_quantile_is_students_97_5_percent_point(df, t):
    assert math.isclose(t_quantile(df), t, rel_tol=1e-12)


def test_the_interval_is_mean_plus_minus_t_s_over_root_n():
    values = [0.25, 0.31, 0.28, 0.27, 0.30]
    row = MeasureRow(1, "m", dict(enumerate(values)))
    mean = sum(values) / 5
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / 4)
    assert row.mean == mean and row.sd == s
    assert row.ci95 == t_quantile(4) * s / math.sqrt(5)
    assert MeasureRow(1, "m", {1: 0.5, 2: None}).ci95 is None, "no interval from one value"


# -- imports and Ctrl-C -----------------------------------------------------------------------
def test_the_in_process_sweep_and_the_command_line_import_no_dask():
    code = ("import sys, ragcourse.__main__, ragcourse.batch.sweep, ragcourse.batch.cluster; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]" and done.stderr == ""


@pytest.mark.notebooks
def test_ctrl_c_cancels_the_cluster_tasks_and_leaves_no_kernel_running(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it, once kernels run on the workers."""
    def own_group_default_sigint():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.setsid()

    out = tmp_path / "sweep"
    env = dict(os.environ, TQDM_DISABLE="1")
    sweep = subprocess.Popen([sys.executable, "-m", "ragcourse", "sweep", "--seeds", "1-8", "--scheduler", "local:1",
                              "--out", str(out), "1"], cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=own_group_default_sigint)
    try:
        root = psutil.Process(sweep.pid)
        deadline = time.monotonic() + 120
        kernels: list[psutil.Process] = []
        while not kernels and time.monotonic() < deadline and sweep.poll() is None:
            time.sleep(0.1)
            kernels = kernel_processes(root)
        assert kernels, "no kernel started on the worker"
        os.killpg(sweep.pid, signal.SIGINT)
        _, err = sweep.communicate(timeout=60)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait()
    assert sweep.returncode == 130, err
    assert "interrupted: cancelled" in err and "seed tasks on local:1" in err
    time.sleep(0.5)
    assert [k.pid for k in kernels if alive(k)] == [], "every kernel was stopped"
