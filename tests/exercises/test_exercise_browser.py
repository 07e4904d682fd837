"""A student's path through an exercise notebook in JupyterLab, in headless Chromium.

The server, the browser and the page are ``tests/test_browser.py``'s (the fixtures in ``conftest.py``,
the scripts in ``support.browser``): exercise set 01 as shipped is opened, restarted and run
top to bottom (no error, every check "not done yet"); then a wrong ``keyword_score`` (repeats
counted) is typed into its answer cell and run with Shift+Enter, and Shift+Enter on the check
cell below must show "not passed yet" with what was tried, expected and got; then the correct
one, whose check must pass. Screenshots go to ``test-output/browser/``.
"""
from __future__ import annotations

import time

import pytest

from support.browser import (FIND_PANEL, LESSON_OPEN_MS, LESSON_RUN_MS, NOTEBOOK_STATE, RUN_FINISHED, SCROLL_TO_TEXT,
                             SHUT_DOWN, START_RESTART_RUN_ALL, screenshot, settle)

pytestmark = [pytest.mark.browser, pytest.mark.timed]

NAME = "01-what-is-an-embedding"
PATH = f"notebooks/exercises/{NAME}.ipynb"
ANSWER = ("def keyword_score(query_text, document_text): "
          "return len(set(tokenize(query_text)) & set(tokenize(document_text)))")
# A student's first try: every query token found in the document counts, repeats included.
WRONG = ("def keyword_score(query_text, document_text): "
         "return sum(t in set(tokenize(document_text)) for t in tokenize(query_text))")
PASSED = "q2 · Build it · the keyword score: passed, 3/3 points"
NOT_YET = "q2 · Build it · the keyword score: not passed yet"
CHECK_MS = 60_000

CELL_STARTING_WITH = """(start) => {
  const cells = window.__lesson.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    if (cells.get(i).sharedModel.getSource().startsWith(start)) return i;
  }
  return -1;
}"""

CELL_TEXT = """(index) => {
  const cell = window.__lesson.content.model.cells.get(index);
  const texts = [];
  for (let i = 0; i < cell.outputs.length; i++) {
    const output = cell.outputs.get(i).toJSON();
    texts.push(output.text || (output.data && output.data['text/plain']) || output.evalue || '');
  }
  return {source: cell.sharedModel.getSource(), outputs: texts.join(''), count: cell.executionCount};
}"""


def test_typing_an_answer_makes_its_check_pass(lab_server, page):
    page.goto(f"{lab_server.base_url}/lab/tree/{PATH}?reset&token={lab_server.token}")
    try:
        page.wait_for_function(FIND_PANEL, arg=PATH, timeout=LESSON_OPEN_MS, polling=250)
        page.evaluate(START_RESTART_RUN_ALL)
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=10_000)  # "Restart"
        page.wait_for_function(RUN_FINISHED, timeout=LESSON_RUN_MS, polling=250)
        state = page.evaluate(NOTEBOOK_STATE)
        assert state["run"]["result"] is True and not state["stderr"] and not state["errorNodes"], state["run"]
        code = [cell for cell in state["cells"] if cell["source"].strip()]
        assert [cell["count"] for cell in code] == list(range(1, len(code) + 1)), "fresh kernel, top to bottom"

        answer = page.evaluate(CELL_STARTING_WITH, "def keyword_score")
        check = answer + 1
        assert "exercises.check(\"q2\"" in page.evaluate(CELL_TEXT, check)["source"]
        assert "keyword score: not done yet" in page.evaluate(CELL_TEXT, check)["outputs"]

        editor = page.locator(".jp-Notebook .jp-Cell").nth(answer).locator(".cm-content")
        for typed, expected in ((WRONG, NOT_YET), (ANSWER, PASSED)):   # wrong first, as a student would
            editor.click()
            page.keyboard.press("Control+A")
            page.keyboard.type(typed)
            page.keyboard.press("Shift+Enter")  # runs the answer cell; the check cell below becomes the active one
            started = time.monotonic()
            page.keyboard.press("Shift+Enter")  # runs the check
            page.wait_for_function(f"() => ({CELL_TEXT})({check}).outputs.includes({expected!r})",
                                   timeout=CHECK_MS, polling=250)
            if typed == WRONG:
                shown = page.evaluate(CELL_TEXT, check)["outputs"]
                assert "expected:" in shown and "got:" in shown and "hint:" in shown, shown
                assert "set(tokenize" not in shown, "the message must not show the solution"
                if page.evaluate(SCROLL_TO_TEXT, NOT_YET):
                    settle(page)
                    screenshot(page, f"exercises-{NAME}-wrong-first")
        assert page.evaluate(CELL_TEXT, answer)["source"] == ANSWER, "the editor changed what was typed"
        print(f"check passed {time.monotonic() - started:.1f} s after Shift+Enter")
        if page.evaluate(SCROLL_TO_TEXT, PASSED):
            settle(page)
            screenshot(page, f"exercises-{NAME}-passed")
    except BaseException:
        try:
            screenshot(page, f"exercises-{NAME}-FAILED")
            print(f"server log tail:\n{lab_server.log()}")
        except Exception as error:
            print(f"no failure screenshot: {error}")
        raise
    finally:
        try:
            page.evaluate(SHUT_DOWN)
        except Exception:
            pass
