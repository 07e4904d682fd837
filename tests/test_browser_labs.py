"""The labs in a real browser, as a student runs them: the same server, page and checks as ``test_browser.py``.

A file of its own so that, with ``pytest -n 2 --dist loadfile`` (``make test``), the four labs run in
JupyterLab beside the sixteen lessons instead of after them. The fixtures and the run are imported
from ``test_browser``, not copied.
"""
from __future__ import annotations

import pytest
from test_browser import (LAB_RUN_MS, LABS, chromium, lab_server, page, run_in_jupyterlab,  # noqa: F401
                          stored_blocks, sync_playwright_api)

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lab", sorted(LABS), ids=[LABS[n].stem for n in sorted(LABS)])
def test_lab_runs_in_jupyterlab(lab, lab_server, page):
    """A lab as a student runs it: every cell ok, no stderr, its stored tables on the page, a figure."""
    notebook = LABS[lab]
    run_in_jupyterlab(page, lab_server, f"notebooks/labs/{notebook.name}", notebook, f"lab{lab:02d}",
                      stored_blocks(notebook), LAB_RUN_MS, pictures=lab == min(LABS))
