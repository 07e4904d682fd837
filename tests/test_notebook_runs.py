"""Notebooks run at another SEED (the course's own engine, and papermill), and reject a bad SEED early.

Every lesson runs at the smallest and the largest SEED it accepts through ``run_lessons``
(what ``python -m ragcourse run --seed S`` does: papermill's parameter injection, then warm
kernels), one engine run a seed for all sixteen. Papermill itself runs one lesson at the
largest SEED and the three bad-SEED cases, so that a batch user's path stays covered; the
four kinds of bad value are unit-tested on ``check_seed`` (``tests/toolkit/test_tables_params.py``).
"""
import json

import pytest
from support.notebooks import ALL_LESSONS, lesson_notebook, stored_stdout

pytestmark = pytest.mark.notebooks
# The smallest and the largest SEED the lessons accept: the libraries of lesson 04 once took SEED as a
# signed 32-bit value and crashed from 2**31 up (ragcourse.retrieval.libraries.library_seed).
EDGE_SEEDS = (0, 2 ** 32 - 1)


def execute(path, out, parameters):
    import papermill

    return papermill.execute_notebook(str(path), str(out), parameters=parameters, cwd=str(path.parent),
                                      progress_bar=False, log_output=False, kernel_name="python3")


def assert_clean(out, lesson: int, figures) -> None:
    """No error and nothing on stderr; other numbers than the stored ones; the figure written to ``figures``."""
    nb = json.loads(out.read_text())
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error"
            assert output.get("name") != "stderr", output.get("text")
    printed = stored_stdout(out)
    assert printed and printed != stored_stdout(lesson_notebook(lesson)), "another SEED must print other numbers"
    assert list(figures.glob(f"{lesson:02d}-*.svg")), "FIGURES_DIR receives the lesson's figure"


@pytest.fixture(scope="module")
def edge_runs(tmp_path_factory):
    """seed -> (output folder, lesson -> Outcome): every lesson at each edge SEED, one engine run a seed."""
    from ragcourse.batch.notebooks import lesson_notebooks
    from ragcourse.batch.runner import run_lessons

    runs = {}
    for seed in EDGE_SEEDS:
        out = tmp_path_factory.mktemp(f"seed{seed}")
        outcomes = run_lessons(lesson_notebooks(), out, seed=seed, jobs=1, progress=False)
        runs[seed] = out, {o.job.lesson: o for o in outcomes}
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("seed", EDGE_SEEDS, ids=lambda s: f"seed{s}")
@pytest.mark.parametrize("lesson", ALL_LESSONS, ids=lambda n: f"lesson{n:02d}")
def test_runs_clean_at_the_smallest_and_largest_seed(edge_runs, lesson, seed):
    out, outcomes = edge_runs[seed]
    outcome = outcomes[lesson]
    assert outcome.ok, outcome.failure
    assert_clean(out / "notebooks" / lesson_notebook(lesson).name, lesson, out / "figures")


def test_papermill_runs_a_lesson_at_the_largest_seed(tmp_path):
    """Lesson 04 is the one whose libraries once crashed from 2**31 up."""
    path = lesson_notebook(4)
    out = tmp_path / path.name
    execute(path, out, {"SEED": EDGE_SEEDS[-1], "FIGURES_DIR": str(tmp_path / "figures")})
    assert_clean(out, 4, tmp_path / "figures")


@pytest.mark.parametrize("lesson, bad", [(1, "abc"), (7, 1.5), (16, 2 ** 32)], ids=["lesson01-string",
                                                                                   "lesson07-float",
                                                                                   "lesson16-too-big"])
def test_bad_seed_fails_right_after_the_parameters(lesson, bad, tmp_path):
    import papermill

    path = lesson_notebook(lesson)
    out = tmp_path / path.name
    with pytest.raises(papermill.PapermillExecutionError) as failure:
        execute(path, out, {"SEED": bad})
    assert failure.value.ename == "ValueError"
    assert "SEED must be an integer in [0, 2**32)" in failure.value.evalue
    code = [c for c in json.loads(out.read_text())["cells"] if c["cell_type"] == "code"]
    failed = [i for i, c in enumerate(code) if any(o["output_type"] == "error" for o in c.get("outputs", []))]
    # imports, parameters, papermill's injected parameters, then validation
    assert failed == [3]
