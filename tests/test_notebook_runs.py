"""Notebooks run under papermill at another SEED, and reject a bad SEED early."""
import json

import pytest
from conftest import ALL_LESSONS, lesson_notebook, stored_stdout

pytestmark = pytest.mark.notebooks
# The smallest and the largest SEED the lessons accept: the libraries of lesson 04 once took SEED as a
# signed 32-bit value and crashed from 2**31 up (ragcourse.retrieval.libraries.library_seed).
EDGE_SEEDS = (0, 2 ** 32 - 1)


def execute(path, out, parameters):
    import papermill

    return papermill.execute_notebook(str(path), str(out), parameters=parameters, cwd=str(path.parent),
                                      progress_bar=False, log_output=False, kernel_name="python3")


@pytest.mark.parametrize("seed", EDGE_SEEDS, ids=lambda s: f"seed{s}")
@pytest.mark.parametrize("lesson", ALL_LESSONS, ids=lambda n: f"lesson{n:02d}")
def test_runs_clean_at_the_smallest_and_largest_seed(lesson, seed, tmp_path):
    path = lesson_notebook(lesson)
    out = tmp_path / path.name
    execute(path, out, {"SEED": seed, "FIGURES_DIR": str(tmp_path / "figures")})
    nb = json.loads(out.read_text())
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error"
            assert output.get("name") != "stderr", output.get("text")
    printed = stored_stdout(out)
    assert printed and printed != stored_stdout(path), "another SEED must print other numbers"
    assert list((tmp_path / "figures").glob(f"{lesson:02d}-*.svg")), "FIGURES_DIR receives the lesson's figure"


@pytest.mark.parametrize("bad", [-1, 2 ** 32, 1.5, "abc"], ids=["negative", "too-big", "float", "string"])
@pytest.mark.parametrize("lesson", [1, 7, 16], ids=lambda n: f"lesson{n:02d}")
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
