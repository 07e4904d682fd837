"""The students' path in a real browser: JupyterLab + headless Chromium, one lesson and one lab.

One JupyterLab server (from the project environment, on 127.0.0.1, a free port, a fresh
token) serves a *copy* of ``notebooks/`` from a temporary folder, with its own config,
data, runtime, settings, workspace and HOME folders there, so nothing of the student's setup is
read or written. For each notebook it runs (``BROWSER_LESSONS`` here, lab 02 in
``test_browser_labs.py``) the test opens it in Chromium,
clears the stored outputs, runs "Restart Kernel and Run All Cells" (confirming the dialog
as a student would) and then checks what the browser shows: every code cell ran, in order,
in a fresh kernel of the project's Python; no error and nothing on stderr; the lesson's
documented blocks (``tests/documented/NN-K.txt``, or a lab's stored
outputs) on the page, in order; at least one figure drawn.
Screenshots go to ``test-output/browser/``. The lab runs from ``tests/test_browser_labs.py``
(a server of its own, so the two files run side by side under ``pytest -n 2 --dist loadfile``).

Accessibility (issue 53): lesson 01 opened as a student first sees it (stored outputs, not run) is
checked once with axe-core (``support.browser.axe_findings``) in the notebook's outputs, what the course
writes: no serious or critical finding, and its figure has its description as alt text.
JupyterLab's own widgets have findings the course cannot fix (its code editors have no
accessible name, the cell list's ``feed`` role, the heading-collapse button): axe's counts for the
whole page and the whole notebook are printed and saved to ``test-output/browser/axe-jupyterlab.json``,
not asserted. A small notebook whose figure was shown with ``show_figure`` checks that its
description reaches JupyterLab's page as the image's alt.

Skips when Playwright or ``/usr/bin/chromium`` is missing, unless
``RAGCOURSE_REQUIRE_BROWSER=1`` (CI), where that is an error. ``.ci/install-browser.sh``
installs Debian's Chromium; no browser is ever downloaded.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from support.browser import (AXE_BLOCKING, FIND_PANEL, LESSON_OPEN_MS, LESSON_RUN_MS, LESSONS, OUTPUT_DIR, SHUT_DOWN,
                             VIEWPORT, axe_counts, axe_findings, prefix_of, project_python, run_in_jupyterlab,
                             write_json)
from support.notebooks import documented_blocks

pytestmark = [pytest.mark.browser, pytest.mark.timed]


# The browser runs one notebook of each kind, chosen for the display paths they cover: lesson 01
# (documented tables, a figure), lab 02 (``test_browser_labs.py``: the dense model loading in a
# kernel, a figure from real embeddings) and lesson 01's exercise set
# (``tests/exercises/test_exercise_browser.py``: a check's messages, an answer typed in). Every
# notebook's stored outputs are checked by nbval (``make test`` runs ``--nbval`` over
# ``notebooks/``) and the lessons' documented blocks by ``tests/test_documented.py``.
BROWSER_LESSONS = (1,)


# --------------------------------------------------------------------------------- tests

def test_server_is_isolated_and_configured(lab_server, page):
    """The test server's own settings apply, and python3 is the project environment's kernel."""
    served = lab_server.api("kernelspecs")
    assert served["default"] == "python3", served
    resolved = lab_server.kernel_specs()
    resource_dir, argv = resolved["python3"]
    env_kernels = prefix_of(project_python()) / "share" / "jupyter" / "kernels"
    assert Path(resource_dir).resolve().parent == env_kernels.resolve(), (
        f"the python3 kernel spec comes from {resource_dir}, not from {env_kernels}")
    # jupyter_client swaps a bare "python" for the server's interpreter: the project's python
    assert argv[0] in ("python", "python3", str(project_python())), argv

    page.goto(f"{lab_server.base_url}/lab?reset&token={lab_server.token}")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.restored")
    page.evaluate("() => window.jupyterapp.restored")
    settings = page.evaluate("""async () => {
      const app = window.jupyterapp;
      const tracker = await app.serviceManager.settings.fetch('@jupyterlab/notebook-extension:tracker');
      return {windowing: tracker.settings.windowingMode,
              announcements: app.isPluginActivated('@jupyterlab/apputils-extension:announcements')};
    }""")
    assert settings == {"windowing": "none", "announcements": False}, settings


@pytest.mark.slow
@pytest.mark.parametrize("lesson", BROWSER_LESSONS, ids=[LESSONS[n].stem for n in BROWSER_LESSONS])
def test_lesson_runs_in_jupyterlab(lesson, lab_server, page):
    notebook = LESSONS[lesson]
    run_in_jupyterlab(page, lab_server, f"notebooks/{notebook.name}", notebook, f"{lesson:02d}",
                      documented_blocks(lesson), LESSON_RUN_MS, pictures=lesson == min(LESSONS))



# ------------------------------------------------------------------------- accessibility (issue 53)

A11Y_LESSON = 1
OUTPUTS = ".jp-OutputArea-output"        # where a notebook's outputs render
NOTEBOOK_SCOPE = "[data-course-axe-scope]"
OUTPUTS_SCOPE = f"{NOTEBOOK_SCOPE} {OUTPUTS}"   # what the assertions check: the notebook's outputs
DESCRIBED_NOTEBOOK = "described-figure.ipynb"

MARK_NOTEBOOK = """() => {
  window.__lesson.content.node.setAttribute('data-course-axe-scope', '');
  return window.__lesson.content.node.querySelectorAll('.jp-Cell').length;
}"""

OUTPUT_IMAGES = """() => Array.from(window.__lesson.content.node.querySelectorAll('.jp-OutputArea-output img'),
  (img) => ({alt: img.getAttribute('alt'), complete: img.complete, width: img.naturalWidth,
             mime: img.closest('.jp-OutputArea-output').dataset.mimeType}))"""


def _open_as_stored(page, lab_server, path: str) -> None:
    """Open ``path`` in JupyterLab with its stored outputs (nothing run), every image loaded."""
    page.goto(f"{lab_server.base_url}/lab/tree/{path}?reset&token={lab_server.token}")
    page.wait_for_function(FIND_PANEL, arg=path, timeout=LESSON_OPEN_MS, polling=250)
    page.wait_for_function("() => Array.from(window.__lesson.content.node.querySelectorAll("
                           "'.jp-OutputArea-output img')).every((img) => img.complete)", timeout=10_000)


def _audit_notebook(page, selector: str = OUTPUTS_SCOPE) -> list[dict]:
    """axe inside the open notebook: its outputs (default), or all of it (``NOTEBOOK_SCOPE``)."""
    assert page.evaluate(MARK_NOTEBOOK) > 0, "the notebook shows no cells"
    return axe_findings(page, selector, marker=OUTPUTS)


def _blocking(findings: list[dict]) -> list[str]:
    return [f"{f['id']} ({f['impact']}): {node['target']}: {node['html'][:120]}" for f in findings
            if f["impact"] in AXE_BLOCKING for node in f["nodes"] if not (f["id"] == "image-alt" and node["marked"])]


@pytest.fixture(scope="module")
def lesson_audit(lab_server, chromium):
    """axe on lesson 01 as stored, once: findings on the whole page, in the notebook, in its outputs."""
    context = chromium.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(LESSON_OPEN_MS)
    try:
        _open_as_stored(page, lab_server, f"notebooks/{LESSONS[A11Y_LESSON].name}")
        audit = {"jupyterlab": axe_findings(page), "notebook": _audit_notebook(page, NOTEBOOK_SCOPE),
                 "outputs": _audit_notebook(page)}
        write_json(OUTPUT_DIR / "axe-jupyterlab.json", {
            "lesson": LESSONS[A11Y_LESSON].name, "whole_page": axe_counts(audit["jupyterlab"]),
            "whole_notebook": axe_counts(audit["notebook"]), "outputs (asserted)": axe_counts(audit["outputs"])})
        yield audit
    finally:
        try:
            page.evaluate(SHUT_DOWN)
        except Exception:
            pass
        context.close()


def test_lesson_notebook_accessibility_in_jupyterlab(lesson_audit):
    """Lesson 01 in JupyterLab: no serious or critical finding in its outputs (pending figures apart)."""
    print(f"axe-core, whole JupyterLab page (not asserted): {axe_counts(lesson_audit['jupyterlab'])}")
    print(f"axe-core, the whole notebook (not asserted): {axe_counts(lesson_audit['notebook'])}")
    print(f"axe-core, the notebook's outputs: {axe_counts(lesson_audit['outputs'])}")
    blocking = _blocking(lesson_audit["outputs"])
    assert not blocking, f"{len(blocking)} serious or critical findings in the outputs:\n  " + "\n  ".join(blocking[:20])


def test_lesson_figures_have_alt_text_in_jupyterlab(lesson_audit):
    pending = [node["target"] for f in lesson_audit["outputs"] if f["id"] == "image-alt"
               for node in f["nodes"] if node["marked"]]
    assert not pending, f"{len(pending)} figures without alt text (image-alt, critical) in lesson 01: {pending}"


CLOSE_LESSON = """async () => {
  const panel = window.__lesson;
  panel.context.model.dirty = false;
  await panel.sessionContext.shutdown();
  panel.dispose();
  window.__lesson = null;
}"""


@pytest.fixture(scope="module")
def lab_app(lab_server, chromium):
    """One JupyterLab page for the other lessons: the app loads once, and each lesson opens in it
    (``docmanager:open``), as a student opens one notebook after another."""
    context = chromium.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(LESSON_OPEN_MS)
    try:
        page.goto(f"{lab_server.base_url}/lab?reset&token={lab_server.token}")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.restored")
        page.evaluate("() => window.jupyterapp.restored")
        yield page
    finally:
        context.close()


@pytest.mark.parametrize("lesson", sorted(set(LESSONS) - {A11Y_LESSON}), ids=lambda n: f"lesson{n:02d}")
def test_every_other_lesson_in_jupyterlab(lab_app, lesson):
    """Each other lesson, opened as stored, once: no serious or critical finding in its outputs, and every
    figure has alt text (its description)."""
    path = f"notebooks/{LESSONS[lesson].name}"
    lab_app.evaluate("async (path) => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", path)
    lab_app.wait_for_function(FIND_PANEL, arg=path, timeout=LESSON_OPEN_MS, polling=250)
    try:
        lab_app.wait_for_function("() => Array.from(window.__lesson.content.node.querySelectorAll("
                                  "'.jp-OutputArea-output img')).every((img) => img.complete)", timeout=10_000)
        findings = _audit_notebook(lab_app)
    finally:
        lab_app.evaluate(CLOSE_LESSON)
    blocking = _blocking(findings)
    assert not blocking, f"{len(blocking)} serious or critical findings in lesson {lesson:02d}'s outputs:\n  " + \
        "\n  ".join(blocking[:20])
    pending = [node["target"] for f in findings if f["id"] == "image-alt" for node in f["nodes"] if node["marked"]]
    assert not pending, f"{len(pending)} figures without alt text in lesson {lesson:02d}: {pending}"


def test_a_described_figure_reaches_jupyterlab_with_its_alt(lab_server, page):
    """A figure shown with ``show_figure``, opened as stored (untrusted): JupyterLab renders the HTML <img>
    with the description as alt, and the values table; axe finds nothing serious in its outputs."""
    import nbformat
    from matplotlib.figure import Figure

    from ragcourse.toolkit.figures import describe_series, figure_output, values_output

    sizes, recall = [200, 800, 3200], [0.351, 0.386, 0.310]
    fig = Figure(figsize=(5, 3), dpi=100)
    ax = fig.subplots()
    ax.plot(sizes, recall, marker="o")
    ax.set_xlabel("max_chars")
    ax.set_ylabel("Recall@5")
    description = describe_series("Recall@5", "max_chars", sizes, {"judged questions": recall})
    data, metadata = figure_output(fig, description)
    values = values_output([("max_chars", "Recall@5"), *zip(sizes, recall)])
    cell = nbformat.v4.new_code_cell("show_figure(fig, description, table=values)", execution_count=1, outputs=[
        nbformat.v4.new_output("display_data", data=data, metadata=metadata),
        nbformat.v4.new_output("display_data", data=values)])
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A described figure"), cell],
                                        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                 "language": "python"}})
    nbformat.write(notebook, lab_server.root / DESCRIBED_NOTEBOOK)
    try:
        _open_as_stored(page, lab_server, DESCRIBED_NOTEBOOK)
        images = page.evaluate(OUTPUT_IMAGES)
        assert images == [{"alt": description, "complete": True, "width": images[0]["width"], "mime": "text/html"}], images
        assert images[0]["width"] > 100
        summary = page.locator(f"{OUTPUTS} details summary")
        assert summary.inner_text().strip() == "The values plotted in the figure above"
        findings = _audit_notebook(page)
        assert not [f for f in findings if f["id"] == "image-alt"], axe_counts(findings)
        assert not _blocking(findings), axe_counts(findings)
    finally:
        try:
            page.evaluate(SHUT_DOWN)
        except Exception:
            pass
