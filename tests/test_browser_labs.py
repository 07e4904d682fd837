"""A lab in a real browser, as a student runs it: the same server, page and checks as ``test_browser.py``.

One lab runs here, lab 02: it loads the dense model in the kernel and draws a figure from real
embeddings, the display paths the lesson and exercise set in ``test_browser.py`` do not cover.
Every lab's stored outputs are checked by nbval. A file of its own so that, with ``pytest -n 2
--dist loadfile`` (``make test``), it runs beside ``test_browser.py``. The fixtures (``conftest.py``)
and the run (``support.browser``) are the ones ``test_browser.py`` uses.
"""
from __future__ import annotations

import pytest

from support.browser import LAB_RUN_MS, LABS, run_in_jupyterlab, stored_blocks
from support.marks import lab_marks

pytestmark = pytest.mark.browser


HERE = [2]


def run_lab(lab: int, lab_server, page) -> None:
    """Restart and run all of lab ``lab`` in JupyterLab and check the page (the first lab also checks a figure)."""
    notebook = LABS[lab]
    run_in_jupyterlab(page, lab_server, f"notebooks/labs/{notebook.name}", notebook, f"lab{lab:02d}",
                      stored_blocks(notebook), LAB_RUN_MS, pictures=True)


@pytest.mark.parametrize("lab", [pytest.param(n, marks=lab_marks(n)) for n in HERE], ids=[LABS[n].stem for n in HERE])
def test_lab_runs_in_jupyterlab(lab, lab_server, page):
    """A lab as a student runs it: every cell ok, no stderr, its stored tables on the page, a figure."""
    run_lab(lab, lab_server, page)
