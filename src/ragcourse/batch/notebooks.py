"""Finding the lesson notebooks and cleaning their metadata.

Executing them (``run``, ``figures``, ``sweep``, ``refresh``) is ``ragcourse.batch.runner``'s job;
it starts every kernel with ``QUIET_ENV`` (defined with the kernel layer, ``ragcourse.batch.kernels``,
and named here too for the tests that start JupyterLab) and stores outputs after ``clean_metadata``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from .kernels import QUIET_ENV

if TYPE_CHECKING:
    from nbformat import NotebookNode

PROJECT_ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
FIGURES_DIR = PROJECT_ROOT / "figures"
LABS_FOLDER = "labs"   # Part 3: notebooks/labs/NN-*.ipynb, their figures in figures/labs/
LESSON_PATTERN = re.compile(r"^(\d\d)-[a-z0-9-]+\.ipynb$")
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def lesson_notebooks(folder: Path = NOTEBOOKS_DIR) -> dict[int, Path]:
    """Lesson number -> notebook path, for every ``NN-name.ipynb`` in ``folder``."""
    found = {}
    for path in sorted(folder.glob("*.ipynb")):
        match = LESSON_PATTERN.match(path.name)
        if match:
            found[int(match.group(1))] = path
    return found


def lab_notebooks(notebooks_dir: Path = NOTEBOOKS_DIR) -> dict[int, Path]:
    """Lab number -> notebook path, for every ``NN-name.ipynb`` in ``notebooks_dir/labs``."""
    return lesson_notebooks(Path(notebooks_dir) / LABS_FOLDER)


def clean_metadata(nb: NotebookNode) -> None:
    """Drop papermill and timing metadata, set the python3 kernelspec (in place)."""
    nb.metadata.pop("papermill", None)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    for cell in nb.cells:
        for key in ("papermill", "execution", "ExecuteTime"):
            cell.metadata.pop(key, None)
        if cell.cell_type == "code":
            cell.metadata.pop("collapsed", None)


def notebook_parameters(path: Path) -> dict[str, object]:
    """The literal values of a notebook's cell tagged ``parameters`` (what papermill would override)."""
    import ast
    import json

    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(tagged) != 1:
        raise ValueError(f"{Path(path).name} must have exactly one cell tagged parameters, found {len(tagged)}")
    values = {}
    for node in ast.parse("".join(tagged[0]["source"])).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


def lab_parameters() -> dict[int, dict[str, object]]:
    """Every lab notebook's ``notebook_parameters``, by lab number (what the embedding plan is built with)."""
    return {number: notebook_parameters(path) for number, path in lab_notebooks().items()}


__all__ = ["QUIET_ENV", "KERNELSPEC", "NOTEBOOKS_DIR", "FIGURES_DIR", "PROJECT_ROOT", "LABS_FOLDER",
           "lesson_notebooks", "lab_notebooks", "clean_metadata", "notebook_parameters",
           "lab_parameters"]
