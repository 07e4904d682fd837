"""Lab 04 in a real browser, as a student runs it (the run and its checks are ``test_browser_labs.py``'s).

A file of its own because it is the longest browser run (one to two minutes warm): with
``pytest -n 2 --dist loadfile`` (``make test``) a file goes to one worker whole, so lab 04 and
labs 01-03 can run in JupyterLab on the two workers side by side instead of one after the other.
"""
from __future__ import annotations

import pytest
from test_browser import chromium, lab_server, page, sync_playwright_api  # noqa: F401
from test_browser_labs import LABS, run_lab

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lab", [4], ids=[LABS[4].stem])
def test_lab_runs_in_jupyterlab(lab, lab_server, page):
    """Lab 04 as a student runs it: every cell ok, no stderr, its stored tables on the page."""
    run_lab(lab, lab_server, page)
