"""Shared fixtures: where the project's notebooks and documented blocks live."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR, PROJECT_ROOT, lesson_notebooks

DOCUMENTED_DIR = Path(__file__).parent / "documented"
ALL_LESSONS = list(range(1, 17))


def documented_blocks(lesson: int) -> list[str]:
    """The course's printed blocks for one lesson, in order."""
    return [p.read_text() for p in sorted(DOCUMENTED_DIR.glob(f"{lesson:02d}-*.txt"))]


def stored_stdout(path: Path) -> str:
    """Everything the stored code cells of a notebook printed to stdout, in order."""
    nb = json.loads(path.read_text())
    parts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stdout":
                text = output["text"]
                parts.append("".join(text) if isinstance(text, list) else text)
    return "".join(parts)


def normalise_block(text: str) -> str:
    """Trailing spaces dropped per line, leading and trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def blocks_in_order(haystack: str, blocks: list[str]) -> list[bool]:
    """For each block, whether it appears as whole lines after the previous block's match."""
    text = "\n" + normalise_block(haystack) + "\n"
    found, position = [], 0
    for block in blocks:
        needle = "\n" + normalise_block(block) + "\n"
        at = text.find(needle, position)
        found.append(at >= 0)
        if at >= 0:
            position = at + len(needle) - 1
    return found


@pytest.fixture(scope="session")
def notebooks() -> dict[int, Path]:
    return lesson_notebooks()


def lesson_notebook(lesson: int) -> Path:
    """The lesson's notebook; all sixteen exist, so a missing one fails the test."""
    path = lesson_notebooks().get(lesson)
    if path is None:
        pytest.fail(f"lesson {lesson:02d} has no notebook notebooks/{lesson:02d}-*.ipynb")
    return path


# The accessibility check (issue 53): axe-core, as bundled by axe-playwright-python (pinned in requirements.txt;
# its axe.min.js is injected into the page, nothing is fetched), run in the headless Chromium the browser tests
# drive. A finding is one rule failed by one element; "serious" and "critical" ones fail a test.
AXE_BLOCKING = ("serious", "critical")

AXE_RUN = """async ([selector, marker]) => {
  if (selector && !document.querySelector(selector)) throw new Error('no element matches ' + selector);
  const results = await axe.run(selector ? {include: [selector]} : document, {resultTypes: ['violations']});
  return results.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => {
      const element = document.querySelector(n.target[0]);
      return {target: n.target.join(' '), html: n.html.slice(0, 200),
              marked: Boolean(marker && element && element.closest(marker))};
    })}));
}"""


def axe_findings(page, selector: str | None = None, marker: str | None = None) -> list[dict]:
    """axe-core's violations on ``page`` (within every element ``selector`` matches, else the whole document).

    Each is ``{id, impact, help, nodes}``; a node is ``{target, html, marked}``, ``marked`` when the
    element sits inside ``marker`` (a CSS selector: e.g. a notebook's cell outputs)."""
    try:
        from axe_playwright_python.base import AXE_SCRIPT
    except ImportError:
        pytest.fail("axe-playwright-python is not installed: .venv/bin/pip install -r requirements.txt", pytrace=False)
    if not page.evaluate("() => typeof window.axe === 'object' && typeof window.axe.run === 'function'"):
        page.evaluate(AXE_SCRIPT)   # as axe-playwright-python's Axe.run does: no <script> added to the page
    return page.evaluate(AXE_RUN, [selector, marker])


def axe_counts(findings: list[dict]) -> dict[str, int]:
    """``"rule (impact)"`` -> elements, over a list of findings (of one page or many)."""
    counts: dict[str, int] = {}
    for finding in findings:
        key = f"{finding['id']} ({finding['impact']})"
        counts[key] = counts.get(key, 0) + len(finding["nodes"])
    return dict(sorted(counts.items()))


def described_figure(cells: list[dict]) -> dict:
    """The one stored output whose PNG carries an ``alt`` (a figure shown with ``show_figure``); its alt must
    equal its text, the description."""
    found = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])
             if "alt" in o.get("metadata", {}).get("image/png", {})]
    assert len(found) == 1, "the figure cell no longer shows one described figure (show_figure)"
    assert found[0]["metadata"]["image/png"]["alt"] == "".join(found[0]["data"]["text/plain"])
    return found[0]


def stored_figure_description(cells: list[dict]) -> str:
    """The committed figure's description, as a screen reader gets it."""
    return "".join(described_figure(cells)["data"]["text/plain"])


__all__ = ["ALL_LESSONS", "AXE_BLOCKING", "described_figure", "stored_figure_description", "DOCUMENTED_DIR", "NOTEBOOKS_DIR", "PROJECT_ROOT", "axe_counts",
           "axe_findings", "blocks_in_order", "documented_blocks", "normalise_block", "lesson_notebook",
           "stored_stdout"]


# Every text the labs embed is embedded once, before the first test that needs it (``python -m ragcourse
# prepare``), so no test pays another's cold cost.
#
# - ``make test`` sets RAGCOURSE_PREPARE=background: the controlling process starts ``prepare`` beside the
#   tests, the tests that need embeddings are moved to the end of the run, and each of them waits for it
#   (the lessons, the unit tests, the exercises and the site need no embedding, and the suite alone keeps
#   only about one of the two cores busy). Its log is summarised at the end of the run.
# - RAGCOURSE_PREPARED=1: the cache is filled already (``make test-fast``, or ``prepare`` was run by hand).
# - Otherwise a plain single-process ``pytest`` that selects the labs runs ``prepare`` before the first test;
#   under pytest-xdist without RAGCOURSE_PREPARE=background the workers do not (two would embed the same
#   texts side by side): run ``prepare`` first.
# What each test that reads the labs' embeddings waits for: the groups of ``prepare``'s plan it needs
# (first match wins; ``all`` is every group). Everything else runs at once, beside ``prepare``.
NEEDS_EMBEDDINGS = (
    ("notebooks/labs/01-", ()), ("test_lab_runs_in_jupyterlab[01-", ()), ("exercises/labs/lab01-", ()),
    ("notebooks/labs/02-", ("questions", "lab 02")), ("test_lab_runs_in_jupyterlab[02-", ("questions", "lab 02")),
    ("tests/labs/test_dense_numbers.py", ("questions", "lab 02")),
    ("tests/corpus/test_pooling.py", ("questions", "lab 02")),
    ("exercises/labs/lab02-", ("questions", "lab 02")),
    # lab 04 ends by comparing its final system with every retriever of the search command (labs 01-03's)
    ("notebooks/labs/04-", ("all",)), ("test_lab_runs_in_jupyterlab[04-", ("all",)),
    ("exercises/labs/lab04-", ("questions", "lab 04")),
    ("exercises/labs/lab03-", ("all",)),
    ("notebooks/labs/", ("all",)), ("test_lab_runs_in_jupyterlab", ("all",)),
    ("tests/cli/test_search_command.py", ("all",)),
    ("[lab01-", ()), ("[lab02-", ("questions", "lab 02")), ("[lab04-", ("questions", "lab 04")), ("[lab03-", ("all",)),
    ("tests/exercises/test_lab_exercises.py", ("all",)), ("tests/exercises/test_exercise_grading.py", ("all",)),
    ("tests/exercises/test_grading_masters.py", ("all",)),
    # not for embeddings: these time themselves (pages within 30 s, cells within their deadline), so they run
    # when prepare has given the cores back (see pytest_configure)
    ("tests/test_browser.py", ("all",)), ("tests/exercises/test_exercise_browser.py", ("all",)),
    ("tests/site/test_site.py", ("all",)), ("tests/exercises/test_grader_hostile.py", ("all",)),
    ("tests/exercises/test_grader_signals.py", ("all",)), ("tests/exercises/test_lending.py", ("all",)),
    ("tests/batch/test_sweep_cluster.py", ("all",)),
    # not for the shared cache either (each embeds into caches of its own): they run the real model hard, so they
    # wait for prepare rather than slow it (and its first estimate) down
    ("tests/engines/test_batch_invariance.py", ("all",)), ("tests/rag/test_cross_encoder_invariance.py", ("all",)),
    # the cross-encoder's tests: its training pairs rank the chunks of lab 04's index by their cached vectors
    ("tests/rag/test_cross_encoder.py", ("questions", "lab 04")),
)   # tests/rag/ embeds its own few texts in its own cache
PREPARE_STATUS = "RAGCOURSE_PREPARE_STATUS"   # file the background step writes its exit status to
PREPARE_WAIT = 30 * 60                         # seconds a test waits for it before failing
PREPARE_NICENESS = 5                           # how far the tests step back while it runs (os.nice)
RANX_STATUS = "RAGCOURSE_RANX_STATUS"         # file the background ranx compile writes its exit status to


def needed_groups(nodeid: str) -> tuple[str, ...]:
    """The groups of the labs' embeddings a test reads (empty: none)."""
    for marker, groups in NEEDS_EMBEDDINGS:
        if marker in nodeid:
            return groups
    return ()


def needs_embeddings(nodeid: str) -> bool:
    """Whether the test reads the labs' embeddings (and so must wait for ``prepare``)."""
    return bool(needed_groups(nodeid))


def pytest_configure(config):
    import os
    import subprocess
    import sys
    import tempfile

    if os.environ.get("RAGCOURSE_PREPARE") != "background" or os.environ.get("RAGCOURSE_PREPARED") \
            or hasattr(config, "workerinput"):
        return
    folder = Path(tempfile.mkdtemp(prefix="ragcourse-prepare-"))
    log, status, progress = folder / "prepare.log", folder / "status", folder / "progress"
    script = ("import subprocess, sys; "
              "code = subprocess.call([sys.executable, '-m', 'ragcourse', 'prepare', '--progress', sys.argv[3], "
              "'--keys', sys.argv[4]], stdout=open(sys.argv[1], 'w'), stderr=subprocess.STDOUT); "
              "open(sys.argv[2], 'w').write(str(code))")
    environment = dict(os.environ, TQDM_DISABLE="1")
    environment.pop("OMP_NUM_THREADS", None)   # the encoder sets its own thread count
    # Everything the tests and the labs' kernels ask the encoder for is logged (not prepare's own requests),
    # and checked against prepare's plan at the end (``plan_coverage``).
    os.environ["RAGCOURSE_EMBED_LOG"] = str(folder / "requested")
    config._ragcourse_plan = (folder / "planned", folder / "requested")
    config._ragcourse_prepare = subprocess.Popen([sys.executable, "-c", script, str(log), str(status),
                                                  str(progress), str(folder / "planned")], env=environment)
    os.environ[PREPARE_STATUS] = str(status)   # the xdist workers start after this and inherit it
    # ranx's numba functions, compiled once into numba's disk cache beside prepare, rather than once in each
    # worker that meets them (python -m ragcourse.batch.compile_ranx; seconds when the cache exists)
    ranx_status = folder / "ranx"
    compile_script = ("import subprocess, sys; code = subprocess.call([sys.executable, '-m', "
                      "'ragcourse.batch.compile_ranx'], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT); "
                      "open(sys.argv[1], 'w').write(str(code))")
    config._ragcourse_ranx = subprocess.Popen([sys.executable, "-c", compile_script, str(ranx_status)],
                                              env=dict(os.environ))
    os.environ[RANX_STATUS] = str(ranx_status)
    # prepare's encoder runs on every core; beside two busy workers its threads wait for each other at every
    # step (measured: 388 s alone, 1,065 s beside the tests). The tests (this process, so the workers it
    # starts, and their kernels) step back while it runs: they take what it leaves. The files that time
    # themselves (browser pages, the grader's deadlines) wait for it instead (NEEDS_EMBEDDINGS).
    os.nice(PREPARE_NICENESS)
    config._ragcourse_prepare_log = log
    if hasattr(config.option, "loadscopereorder"):   # keep our file order (xdist would sort by test count)
        config.option.loadscopereorder = False


# (lab 04: 110 s warm, about 650 cold, when it generates its 180 answers.)
# The files that take longest, in seconds, as measured in a warm ``make test`` (a timeline of each worker,
# 2026-12-02; the grader's files of 2026-12-03 scaled from a run under load 6, 527 s then for the 160 s
# measured here; the site's of 2026-12-05 alone under load 5: 374 s, 310 of them axe-core on 60 pages in two
# colour modes; the browser file's 2026-12-05 axe check of each lesson in JupyterLab, about 100 s more); the
# others take a few seconds each. Only their order matters: xdist gives a worker its next file when the one it
# runs is nearly done, so two long files handed out last would run one after the other.
SECONDS = {
    "tests/test_browser.py": 140, "tests/exercises/test_exercise_grading.py": 60,
    "tests/exercises/test_grading_masters.py": 77, "tests/exercises/test_grader_signals.py": 12,
    "tests/exercises/test_lending.py": 8,
    "tests/test_notebook_runs.py": 45,
    "notebooks/labs/04-postgres-baseline.ipynb": 650, "tests/test_browser_labs.py": 60,
    "tests/site/test_site.py": 380, "tests/exercises/test_exercise_checks.py": 68,
    "tests/exercises/test_lab_exercises.py": 31, "tests/retrieval/test_library_crosschecks.py": 29,
    "notebooks/labs/03-rag-practice.ipynb": 28, "notebooks/labs/02-evaluation-chunks-and-dense.ipynb": 26,
    "notebooks/labs/01-lexical-baseline.ipynb": 22, "tests/rag/test_lab04_database.py": 20,
    "tests/exercises/test_exercise_browser.py": 20, "tests/exercises/test_grader_hostile.py": 49,
}


def readiness(nodeid: str) -> int:
    """When a test can start: 0 at once, 1 after lab 02's texts, 2 after lab 04's, 3 after all of them."""
    groups = needed_groups(nodeid)
    return 3 if "all" in groups else 2 if "lab 04" in groups else 1 if "lab 02" in groups else 0


def pytest_collection_modifyitems(config, items):
    import os

    if not os.environ.get(PREPARE_STATUS):
        return
    # Files in the order their tests can start (pytest-xdist hands out whole files, in this order: see
    # pytest_configure), the longest first among equals (so that the last files handed out are short ones
    # and the two workers finish together); inside a file, its tests in the order they can start.
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    ranked = sorted(files.items(), key=lambda file: (max(readiness(i.nodeid) for i in file[1]),
                                                     -SECONDS.get(file[0], 0), -len(file[1])))
    items[:] = [item for _, group in ranked for item in sorted(group, key=lambda i: readiness(i.nodeid))]


class PrepareGate:
    """Holds back each test that needs embeddings until ``prepare`` has cached the groups it reads."""

    def __init__(self, status: Path):
        self.status = status
        self.progress = status.with_name("progress")

    def ready(self, groups: tuple[str, ...]) -> bool:
        if self.status.exists():
            code = self.status.read_text().strip()
            if code != "0":
                pytest.fail(f"python -m ragcourse prepare failed with status {code}; "
                            f"its log: {self.status.with_name('prepare.log')}")
            return True
        done = set(self.progress.read_text().split("\n")) if self.progress.exists() else set()
        return "all" not in groups and set(groups) <= done

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        import os
        import time

        if "ranx" in item.nodeid:   # a test that calls ranx waits for its compile (any status: it can compile itself)
            ranx_done = Path(os.environ[RANX_STATUS])   # set with PREPARE_STATUS, which registers this gate
            deadline = time.monotonic() + PREPARE_WAIT
            while not ranx_done.exists() and time.monotonic() < deadline:
                time.sleep(1)
        groups = needed_groups(item.nodeid)
        if not groups:
            return
        deadline = time.monotonic() + PREPARE_WAIT
        while not self.ready(groups):
            if time.monotonic() > deadline:
                pytest.fail(f"python -m ragcourse prepare did not finish within {PREPARE_WAIT // 60} minutes "
                            f"(its log: {self.status.with_name('prepare.log')})")
            time.sleep(1)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    import os

    # Registered as a plugin (not a conftest hook) so that it also sees the notebooks' nbval items.
    status = os.environ.get(PREPARE_STATUS)
    if status and not session.config.pluginmanager.has_plugin("ragcourse-prepare-gate"):
        session.config.pluginmanager.register(PrepareGate(Path(status)), "ragcourse-prepare-gate")


def pytest_terminal_summary(terminalreporter, config):
    compiling = getattr(config, "_ragcourse_ranx", None)
    if compiling is not None and compiling.poll() is None:   # no selected test called ranx: do not leave it running
        compiling.terminate()
        compiling.wait()
    process = getattr(config, "_ragcourse_prepare", None)
    if process is None:
        return
    if process.poll() is None:   # nothing selected needed it: do not leave it embedding
        process.terminate()
        process.wait()
        terminalreporter.write_line("prepare: stopped (no selected test needed the embeddings)")
        return
    lines = config._ragcourse_prepare_log.read_text().strip().splitlines()
    terminalreporter.write_sep("-", "python -m ragcourse prepare (ran beside the tests)")
    for line in lines[-12:]:
        terminalreporter.write_line(line)
    verdict = getattr(config, "_ragcourse_plan_verdict", None)
    if verdict:
        terminalreporter.write_line(verdict)


PLAN_COVERAGE = 0.998   # share of the texts the labs' kernels ask for that prepare must have planned


def plan_coverage(planned: Path, requested: Path) -> tuple[int, int]:
    """(texts asked for by a lab's kernel that were planned, texts asked for by a lab's kernel), from the files
    ``prepare --keys`` and ``$RAGCOURSE_EMBED_LOG`` wrote. A lab's kernel runs in ``notebooks/labs`` (the
    lab exercise sets, in ``notebooks/exercises/labs``, embed answers of their own and are not counted)."""
    plan = set(planned.read_text("ascii").split())
    asked = {line.split("\t")[0] for line in requested.read_text("utf-8").splitlines()
             if "\t" in line and Path(line.split("\t", 1)[1]).parts[-2:] == ("notebooks", "labs")}
    return len(asked & plan), len(asked)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """``make test``: the labs asked for nothing ``prepare`` did not plan (at least ``PLAN_COVERAGE`` of it)."""
    files = getattr(session.config, "_ragcourse_plan", None)
    if not files or not all(f.exists() for f in files) or hasattr(session.config, "workerinput"):
        return
    covered, asked = plan_coverage(*files)
    if not asked:
        return
    share = covered / asked
    verdict = (f"embedding plan: {covered} of the {asked} distinct texts the labs' kernels asked for were planned "
               f"({share:.2%}; at least {PLAN_COVERAGE:.1%} required)")
    if share < PLAN_COVERAGE:
        verdict += ": FAILED, add what the labs embed to ragcourse.labs.embedding_plan"
        session.exitstatus = 1
    session.config._ragcourse_plan_verdict = verdict


def pytest_collection_finish(session):
    import os
    import sys

    if os.environ.get("RAGCOURSE_PREPARED") or os.environ.get(PREPARE_STATUS) \
            or hasattr(session.config, "workerinput") or not any(needs_embeddings(item.nodeid)
                                                                for item in session.items):
        return
    from ragcourse.cli.main import main

    status = main(["prepare"])
    if status:
        sys.exit(f"python -m ragcourse prepare failed with status {status}")
    os.environ["RAGCOURSE_PREPARED"] = "1"


@pytest.fixture(scope="module")
def database():
    """One temporary embedded PostgreSQL for a whole test file (or $RAGCOURSE_DATABASE_URL's server).

    It lives here rather than in ``tests/rag/conftest.py``: a second ``conftest`` module
    shadows this one for the files that ``from conftest import`` its helpers.
    """
    from ragcourse.rag.database import open_database

    db = open_database(temporary=True)
    yield db
    db.close()
