"""The labs in a real browser, as a student runs them: the same server, page and checks as ``test_browser.py``.

A file of its own so that, with ``pytest -n 2 --dist loadfile`` (``make test``), labs 01-03 run in
JupyterLab beside the sixteen lessons instead of after them; lab 04, the longest, has its own file
(``test_browser_lab04.py``) for the same reason. The fixtures and the run are imported from
``test_browser``, not copied.
"""
from __future__ import annotations

import pytest
from test_browser import (LAB_RUN_MS, LABS, chromium, lab_server, page, run_in_jupyterlab,  # noqa: F401
                          stored_blocks, sync_playwright_api)

pytestmark = pytest.mark.browser


HERE = [n for n in sorted(LABS) if n != 4]   # lab 04: test_browser_lab04.py


def run_lab(lab: int, lab_server, page) -> None:
    """Restart and run all of lab ``lab`` in JupyterLab and check the page (the first lab also checks a figure)."""
    notebook = LABS[lab]
    run_in_jupyterlab(page, lab_server, f"notebooks/labs/{notebook.name}", notebook, f"lab{lab:02d}",
                      stored_blocks(notebook), LAB_RUN_MS, pictures=lab == min(LABS))


@pytest.mark.parametrize("lab", HERE, ids=[LABS[n].stem for n in HERE])
def test_lab_runs_in_jupyterlab(lab, lab_server, page):
    """A lab as a student runs it: every cell ok, no stderr, its stored tables on the page, a figure."""
    run_lab(lab, lab_server, page)
