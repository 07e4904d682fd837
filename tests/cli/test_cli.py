"""The command line: run, figures, sweep and refresh (engine in ragcourse.batch.runner / ragcourse.batch.sweep).

Kept fast: lesson 01 and tiny notebooks in a temporary notebooks folder, which
``main(..., notebooks_dir=...)`` takes in place of the project's.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ragcourse.cli.main import main
from ragcourse.batch.notebooks import KERNELSPEC, NOTEBOOKS_DIR, PROJECT_ROOT
from ragcourse.batch.runner import Engine, Job

LESSON_01 = NOTEBOOKS_DIR / "01-what-is-an-embedding.ipynb"
IMPORTS = ("import matplotlib.pyplot as plt\n"
           "from ragcourse.toolkit.figures import save_figure, use_house_style\n"
           "from ragcourse.toolkit.results import record_headline\n"
           "use_house_style()")
PARAMETERS = "SEED = 20260218\nFIGURES_DIR = None\nRESULTS_DIR = None"


def write_notebook(path: Path, *code: str) -> Path:
    """A notebook: a title, the imports cell, the parameters cell, then ``code`` cells."""
    cells = [new_markdown_cell(f"# {path.stem}"), new_code_cell(IMPORTS),
             new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]})]
    cells += [new_code_cell(source) for source in code]
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC)}), path)
    return path


def tiny_figure_notebook(path: Path) -> Path:
    return write_notebook(
        path,
        "print('seed', SEED)",
        "fig, ax = plt.subplots()\nax.plot([1, 2, 3], [SEED % 5, 1, 2])\nax.set_title('tiny')\n"
        "save_figure(fig, '02-tiny', FIGURES_DIR)\nplt.show()",
        "record_headline(2, {'seed mod 7': SEED % 7, 'half': SEED / 2}, RESULTS_DIR, seed=SEED)")


def broken_notebook(path: Path) -> Path:
    return write_notebook(path, "ready = True",
                          "raise ValueError('deliberately broken for the test')\nprint('never')",
                          "print('not reached')")


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def outputs_of(path: Path) -> list:
    """Code cells' outputs without execution counts or metadata (what a reader sees)."""
    nb = json.loads(path.read_text())
    return [[{k: v for k, v in o.items() if k not in ("execution_count", "metadata")} for o in c.get("outputs", [])]
            for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def lesson_folder(tmp_path_factory) -> Path:
    """Lesson 01 as shipped, a tiny notebook with a figure (02) and a broken one (03)."""
    folder = tmp_path_factory.mktemp("notebooks")
    shutil.copy(LESSON_01, folder / LESSON_01.name)
    tiny_figure_notebook(folder / "02-tiny-figure.ipynb")
    broken_notebook(folder / "03-broken.ipynb")
    return folder


@pytest.fixture(scope="module")
def full_run(lesson_folder, tmp_path_factory):
    """``run --jobs 2`` over the whole folder: exit status, printed summary, output folder."""
    out = tmp_path_factory.mktemp("build")
    before = tree_digest(lesson_folder)
    capture = _Capture()
    with capture:
        status = main(["run", "--out", str(out), "--jobs", "2"], notebooks_dir=lesson_folder)
    assert tree_digest(lesson_folder) == before, "run must never write into the notebooks folder"
    return status, capture.text, out


class _Capture:
    """Collect stdout (the summary) of an in-process ``main`` call."""

    def __enter__(self):
        import io

        self._saved, sys.stdout = sys.stdout, io.StringIO()
        return self

    def __exit__(self, *exc):
        self.text = sys.stdout.getvalue()
        sys.stdout = self._saved


# -- bad arguments ---------------------------------------------------------------------
@pytest.mark.parametrize("argv, named", [
    (["run", "--jobs", "0"], "--jobs"),
    (["run", "--jobs", "two"], "--jobs"),
    (["run", "--seed", "-1"], "--seed"),
    (["run", "--seed", str(2 ** 32)], "--seed"),
    (["run", "--seed", "1.5"], "--seed"),
    (["run", "17"], "LESSON"),
    (["run", "1-x"], "LESSON"),
    (["refresh", "0"], "LESSON"),
    (["sweep", "--seeds", "5-1"], "--seeds"),
    (["sweep", "--seeds", "1,,2"], "--seeds"),
    (["sweep", "--seeds", "-3"], "--seeds"),
    (["sweep", "1"], "--seeds"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_bad_arguments_give_one_line_naming_the_argument_and_status_2(argv, named, lesson_folder, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv, notebooks_dir=lesson_folder)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert named in err and "error" in err


def test_out_dir_that_is_a_file_or_inside_the_project_notebooks_is_refused(tmp_path, capsys):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    for out in (str(a_file), str(NOTEBOOKS_DIR / "build"), str(PROJECT_ROOT / "figures"), str(PROJECT_ROOT)):
        with pytest.raises(SystemExit) as stop:
            main(["run", "--out", out, "1"])
        assert stop.value.code == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--out" in err, err


def test_the_module_entry_point_exits_2_on_a_bad_lesson():
    done = subprocess.run([sys.executable, "-m", "ragcourse", "run", "99"], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("available: " + ", ".join(
        f"{n:02d}" for n in sorted(int(p.name[:2]) for p in NOTEBOOKS_DIR.glob("[0-9][0-9]-*.ipynb"))))
    assert "LESSON" in done.stderr and "99" in done.stderr


# -- run -------------------------------------------------------------------------------
@pytest.mark.notebooks
def test_a_chosen_lesson_runs_alone_with_papermill_style_parameters(lesson_folder, tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "02-from-an-earlier-run.svg").write_text("<svg/>")  # stale: removed
    with _Capture() as capture:
        status = main(["run", "--out", str(tmp_path), "--seed", "7", "02"], notebooks_dir=lesson_folder)
    assert status == 0, capture.text
    assert sorted(p.name for p in (tmp_path / "notebooks").iterdir()) == ["02-tiny-figure.ipynb"]
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["02-tiny.svg"]
    nb = json.loads((tmp_path / "notebooks" / "02-tiny-figure.ipynb").read_text())
    tags = [c["metadata"].get("tags", []) for c in nb["cells"]]
    at = tags.index(["parameters"])
    assert tags[at + 1] == ["injected-parameters"], "papermill puts its cell right after `parameters`"
    injected = "".join(nb["cells"][at + 1]["source"])
    assert "SEED = 7" in injected and f'FIGURES_DIR = "{tmp_path / "figures"}"' in injected
    assert nb["metadata"]["papermill"]["parameters"]["SEED"] == 7
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    assert all("iopub.execute_input" in c["metadata"]["execution"] for c in code), "timing metadata kept"
    assert "seed 7" in "".join(code[3]["outputs"][0]["text"])
    summary = capture.text.splitlines()
    assert summary[0].split() == ["lesson", "status", "seconds", "figures", "written"]
    assert summary[1].split()[:2] == ["02", "ok"] and summary[1].split()[-1] == "02-tiny.svg"


@pytest.mark.notebooks
def test_a_failing_lesson_is_named_with_cell_and_error_and_the_others_still_run(full_run):
    status, text, out = full_run
    assert status == 1
    rows = {line.split()[0]: line.split()[1] for line in text.splitlines()[1:4]}
    assert rows == {"01": "ok", "02": "ok", "03": "FAILED"}
    failure = [line for line in text.splitlines() if line.startswith("FAILED")]
    assert failure == ["FAILED 03 03-broken.ipynb: cell 5 `raise ValueError('deliberately broken for the test')`: "
                       "ValueError: deliberately broken for the test"]
    assert sorted(p.name for p in (out / "notebooks").iterdir()) == [
        "01-what-is-an-embedding.ipynb", "02-tiny-figure.ipynb", "03-broken.ipynb"]
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["01-keyword-vs-embedding.svg", "02-tiny.svg"]
    broken = json.loads((out / "notebooks" / "03-broken.ipynb").read_text())["cells"]
    assert broken[5]["outputs"][-1]["ename"] == "ValueError"
    assert broken[6].get("outputs") == [], "cells after the error are not run"


@pytest.mark.notebooks
def test_run_at_the_course_seed_prints_what_the_shipped_notebook_stores(full_run, lesson_folder):
    _, _, out = full_run
    executed = outputs_of(out / "notebooks" / LESSON_01.name)
    stored = outputs_of(lesson_folder / LESSON_01.name)
    # the injected-parameters cell has no output; every other code cell prints as stored
    assert [o for o in executed if o] == [o for o in stored if o]


@pytest.mark.notebooks
def test_forked_and_plainly_launched_kernels_give_the_same_outputs(full_run, tmp_path):
    _, _, out = full_run
    target = tmp_path / LESSON_01.name
    [outcome] = Engine(1, progress=False, fork=False).run(
        [Job(1, LESSON_01, target, {"FIGURES_DIR": str(tmp_path / "figures")}, tmp_path / "figures")])
    assert outcome.ok, outcome.failure
    assert outputs_of(target) == outputs_of(out / "notebooks" / LESSON_01.name)
    fresh = (tmp_path / "figures" / "01-keyword-vs-embedding.svg").read_bytes()
    assert fresh == (out / "figures" / "01-keyword-vs-embedding.svg").read_bytes()


# -- figures ---------------------------------------------------------------------------
@pytest.mark.notebooks
def test_figures_regenerates_byte_identical_files_and_replaces_only_figure_files(lesson_folder, full_run,
                                                                                tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "01-old-name.svg").write_text("<svg/>")  # lesson 01 no longer draws this
    (figures / "09-other-lesson.svg").write_text("<svg/>")  # no notebook 09 any more
    (figures / "notes.txt").write_text("kept")
    (figures / "logo.svg").write_text("<svg/>")  # not NN-*: never touched
    before = tree_digest(lesson_folder)
    with _Capture() as first:
        status = main(["figures", "--jobs", "2"], notebooks_dir=lesson_folder, figures_dir=figures)
    assert status == 1, "lesson 03 is broken"
    assert sorted(p.name for p in figures.iterdir()) == [
        "01-keyword-vs-embedding.svg", "02-tiny.svg", "logo.svg", "notes.txt"]
    assert "3 written" not in first.text and "2 written, 0 unchanged, 2 removed" in first.text
    stamps = {p.name: p.stat().st_mtime_ns for p in figures.iterdir()}
    contents = {p.name: p.read_bytes() for p in figures.iterdir()}
    with _Capture() as second:
        main(["figures", "1-2"], notebooks_dir=lesson_folder, figures_dir=figures)
    assert "0 written, 2 unchanged, 0 removed" in second.text
    assert {p.name: p.read_bytes() for p in figures.iterdir()} == contents, "byte-identical from run to run"
    assert {p.name: p.stat().st_mtime_ns for p in figures.iterdir()} == stamps, "unchanged files left alone"
    _, _, out = full_run
    assert contents["01-keyword-vs-embedding.svg"] == (out / "figures" / "01-keyword-vs-embedding.svg").read_bytes()
    assert tree_digest(lesson_folder) == before, "figures never writes into the notebooks folder"


# -- sweep -----------------------------------------------------------------------------
@pytest.mark.notebooks
def test_sweep_csv_holds_exactly_the_numbers_the_notebooks_recorded(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(LESSON_01, folder / LESSON_01.name)
    out = tmp_path / "sweep"
    with _Capture() as capture:
        status = main(["sweep", "--seeds", "1,2", "--out", str(out), "--jobs", "2"], notebooks_dir=folder)
    assert status == 0, capture.text
    with open(out / "sweep.csv", newline="") as stream:
        header = next(csv.reader(stream))
    assert header == ["lesson", "measure", "mean", "ci95", "min", "max", "n", "seed_1", "seed_2"]
    with open(out / "sweep.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    recorded = {seed: json.loads((out / f"seed-{seed}" / "results" / "01-headline.json").read_text())
                for seed in (1, 2)}
    assert [r["measure"] for r in rows] == list(recorded[1]["numbers"])
    for row in rows:
        assert row["lesson"] == "01" and row["n"] == "2"
        values = [recorded[seed]["numbers"][row["measure"]] for seed in (1, 2)]
        assert [float(row["seed_1"]), float(row["seed_2"])] == values
        assert float(row["min"]) == min(values) and float(row["max"]) == max(values)
        assert float(row["mean"]) == sum(values) / 2
        # 95% interval of the mean: t(0.975, 1 df) * s / sqrt(2), s the sample standard deviation
        s = math.sqrt(sum((v - sum(values) / 2) ** 2 for v in values) / 1)
        assert math.isclose(float(row["ci95"]), 12.706204736174707 * s / math.sqrt(2), rel_tol=1e-12)
    assert recorded[1]["seed"] == 1 and recorded[2]["seed"] == 2
    assert recorded[1]["numbers"] != recorded[2]["numbers"], "two seeds, two worlds"
    printed = capture.text.splitlines()
    assert printed[0].split() == ["lesson", "measure", "mean", "±95%", "min", "max", "n", "seed", "1", "seed", "2"]
    assert len({len(line) for line in printed[1:len(rows) + 1]}) <= 2  # fixed width (rstrip aside)
    assert printed[len(rows) + 1].startswith("(±95%: half-width of the 95% interval of the mean, Student t")
    assert (out / "figures" / "01-sweep.svg").exists() and (out / "figures" / "01-sweep.png").exists()


# -- refresh ---------------------------------------------------------------------------
@pytest.mark.notebooks
def test_refresh_stores_clean_outputs_and_leaves_a_failing_notebook_untouched(tmp_path):
    tiny = tiny_figure_notebook(tmp_path / "02-tiny-figure.ipynb")
    broken = broken_notebook(tmp_path / "03-broken.ipynb")
    broken_bytes = broken.read_bytes()
    with _Capture() as capture:
        status = main(["refresh", "--jobs", "2"], notebooks_dir=tmp_path)
    assert status == 1 and "FAILED 03" in capture.text
    assert broken.read_bytes() == broken_bytes
    nb = json.loads(tiny.read_text())
    assert "papermill" not in nb["metadata"] and nb["metadata"]["kernelspec"] == KERNELSPEC
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    assert all("execution" not in c["metadata"] and "papermill" not in c["metadata"] for c in code)
    assert "".join(code[2]["outputs"][0]["text"]) == "seed 20260218\n"
    assert any("image/png" in o.get("data", {}) for o in code[3]["outputs"])
    assert not list(tmp_path.glob("*.svg")), "FIGURES_DIR stays None: no file written"


@pytest.mark.notebooks
def test_the_engine_runs_from_inside_a_running_event_loop(tmp_path):
    """A notebook cell or a Playwright session already runs a loop; the batch must still run."""
    import asyncio

    from ragcourse.batch.runner import run_lessons

    notebook = tiny_figure_notebook(tmp_path / "02-tiny.ipynb")

    async def inside_a_loop():
        return run_lessons({2: notebook}, tmp_path / "out", seed=11, jobs=1, progress=False)

    outcomes = asyncio.run(inside_a_loop())
    assert [o.ok for o in outcomes] == [True]
    assert (tmp_path / "out" / "figures" / "02-tiny.svg").is_file()
