"""Fixtures and hooks: PostgreSQL, the browser, the full-text pages; the markers at work; ``prepare`` beside the tests.

What the tests share besides fixtures lives in ``tests/support/``: no test file imports another, nor this one.

The markers (``pyproject.toml``; what each means and when to add one: CONTRIBUTING.md, "Checks before you
commit") are declared on the tests. Two kinds of test cannot carry them in their source, and get them here
(``pytest_collection_modifyitems``): nbval's items for the notebooks (``support.marks.notebook_marks``), and a
test that uses the ``database`` fixture, marked ``database``.

Every text the labs embed is embedded once, before the first test that needs it (``python -m ragcourse
prepare``), so no test pays another's cold cost:

- ``make test`` sets RAGCOURSE_PREPARE=background: the controlling process starts ``prepare`` beside the
  tests, and each test marked ``embeddings("group", ...)`` waits for the groups of its plan it names (``"all"``:
  for all of it), and each test marked ``timed`` for all of it (see ``waits_for``). The tests that wait are
  handed out last (see ``pytest_collection_modifyitems``), and the suite alone keeps only about one of the two
  cores busy. ``prepare``'s log is summarised at the end of the run.
- RAGCOURSE_PREPARED=1: the cache is filled already (``prepare`` was run by hand).
- Otherwise a plain single-process ``pytest`` that selects a test marked ``embeddings`` with a group runs
  ``prepare`` before the first test; under pytest-xdist without RAGCOURSE_PREPARE=background the workers do
  not (two would embed the same texts side by side): run ``prepare`` first.
"""
from __future__ import annotations

from pathlib import Path

import pytest

PREPARE_STATUS = "RAGCOURSE_PREPARE_STATUS"   # file the background step writes its exit status to
PREPARE_WAIT = 30 * 60                         # seconds a test waits for it before failing
PREPARE_NICENESS = 5                           # how far the tests step back while it runs (os.nice)
RANX_STATUS = "RAGCOURSE_RANX_STATUS"         # file the background ranx compile writes its exit status to


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def database():
    """One temporary embedded PostgreSQL for a whole test file (or $RAGCOURSE_DATABASE_URL's server). A test that
    uses it is marked ``database`` (``pytest_collection_modifyitems``)."""
    from ragcourse.rag.database import open_database

    db = open_database(temporary=True)
    yield db
    db.close()


@pytest.fixture(scope="module")
def pages(database, tmp_path_factory):
    """Six numpy pages (``support.database.PAGES``), one chunk a page, indexed with the fake encoder."""
    from ragcourse.rag.store import PgIndex
    from support.database import PAGES, WHOLE_PAGE, FakeEncoder, write_corpus

    root = write_corpus(tmp_path_factory.mktemp("names"), PAGES)
    index = PgIndex(database, schema="t_full_text_names", policy=WHOLE_PAGE, encoder=FakeEncoder())
    index.drop()
    index.refresh(root)
    yield index
    index.drop()
    index.close()


@pytest.fixture(scope="module")
def sync_playwright_api():
    from support.browser import CHROMIUM, browser_unavailable

    if not CHROMIUM.exists():
        browser_unavailable(f"{CHROMIUM} is not installed", "install Debian's chromium with .ci/install-browser.sh")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_unavailable("the Python package playwright is not installed in this environment",
                            "install it with .venv/bin/pip install -r requirements.txt")
    return sync_playwright


@pytest.fixture(scope="module")
def chromium(sync_playwright_api, tmp_path_factory):
    """Headless Chromium (Debian's), with a home folder of its own for crash reports and caches."""
    import os

    from support.browser import CHROMIUM, CHROMIUM_ARGS

    home = tmp_path_factory.mktemp("browser-home")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache")}
    with sync_playwright_api() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=CHROMIUM_ARGS, env=env)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def lab_server(chromium, tmp_path_factory):
    """A JupyterLab server of the file's own, on a copy of ``notebooks/`` (``support.browser.LabServer``)."""
    from support.browser import LabServer

    server = LabServer(tmp_path_factory.mktemp("jupyterlab"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(chromium):
    from support.browser import LESSON_OPEN_MS, VIEWPORT

    context = chromium.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(LESSON_OPEN_MS)
    yield page
    context.close()


# ---------------------------------------------------------------- the markers at work

def reads_plan(item) -> tuple[str, ...]:
    """The groups of ``prepare``'s plan a test reads: those its ``embeddings`` marks name (none: it embeds texts
    of its own, or nothing)."""
    return tuple(dict.fromkeys(group for mark in item.iter_markers("embeddings") for group in mark.args))


def waits_for(item) -> tuple[str, ...]:
    """The groups a test waits for under ``make test``: those it reads; ``("all",)`` for a ``timed`` test (it
    checks deadlines, so it runs once ``prepare`` has given the cores back: pages within 30 s, a cell within
    its deadline)."""
    return ("all",) if item.get_closest_marker("timed") else reads_plan(item)


def readiness(item) -> int:
    """When a test can start under ``make test``: 0 at once, else 1 + the place in ``prepare``'s order of the
    last group it waits for (``all``: the last place)."""
    from ragcourse.labs.embedding_schedule import GROUP_ORDER

    groups = waits_for(item)
    if "all" in groups:
        return len(GROUP_ORDER)
    return max((GROUP_ORDER.index(group) + 1 for group in groups), default=0)


# xdist (``--dist loadfile``) hands out whole files in the order of the collection and gives a worker its next
# file when the one it runs is nearly done, so two long files handed out last run one after the other while the
# other worker waits. Files go in the order their tests can start (``readiness``), and among equals the costliest
# first, ranked by the costliest kind of test a file holds as its markers say (make test's timelines, 2026-12-02
# to 12-05): the generating model (lab 04's notebook generates 180 answers: 110 s warm, 650 s cold), the browser
# (the site 380 s warm, JupyterLab 140 s), notebooks and kernels (10-80 s a file), PostgreSQL, the encoder; then
# the rest. Within a kind, files with a ``slow`` test first; then more tests first (xdist's own order).
COSTLIEST_FIRST = ("generator", "browser", "notebooks", "database", "embeddings")


def cost_rank(items) -> tuple[int, bool]:
    """The place in ``COSTLIEST_FIRST`` of the costliest marker among ``items`` (after the last: none), and
    whether none of them is ``slow``."""
    names = {mark.name for item in items for mark in item.iter_markers()}
    kind = min((COSTLIEST_FIRST.index(name) for name in names & set(COSTLIEST_FIRST)), default=len(COSTLIEST_FIRST))
    return kind, "slow" not in names


@pytest.hookimpl(tryfirst=True)   # before ``-m`` deselects by marker
def pytest_collection_modifyitems(config, items):
    import os

    from ragcourse.labs.embedding_schedule import GROUP_ORDER

    for item in items:
        if item.path.suffix == ".ipynb":
            from support.marks import notebook_marks

            for mark in notebook_marks(item.path):
                item.add_marker(mark)
        if "database" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("database"):
            item.add_marker(pytest.mark.database)
    unknown = {f"{item.nodeid}: {group!r}" for item in items for group in reads_plan(item)
               if group not in GROUP_ORDER + ("all",)}
    if unknown:
        raise pytest.UsageError(f"embeddings() names the groups of prepare's plan {GROUP_ORDER} or 'all', not:\n  "
                                + "\n  ".join(sorted(unknown)))
    if not os.environ.get(PREPARE_STATUS):
        return
    # Inside a file, its tests in the order they can start.
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    ranked = sorted(files.values(), key=lambda tests: (max(readiness(i) for i in tests), cost_rank(tests), -len(tests)))
    items[:] = [item for tests in ranked for item in sorted(tests, key=readiness)]


# ---------------------------------------------------------------- prepare beside make test

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
              "'--keys', sys.argv[4], '--no-generation'], stdout=open(sys.argv[1], 'w'), stderr=subprocess.STDOUT); "
              "open(sys.argv[2], 'w').write(str(code))")
    environment = dict(os.environ, TQDM_DISABLE="1")
    environment.pop("OMP_NUM_THREADS", None)   # the encoder sets its own thread count
    # Everything the tests and the labs' kernels ask the encoder for is logged (not prepare's own requests),
    # and checked against prepare's plan at the end (``plan_coverage``).
    os.environ["RAGCOURSE_EMBED_LOG"] = str(folder / "requested")
    config._ragcourse_plan = (folder / "planned", folder / "requested")
    # and every prompt the labs give the local model, checked against the generation plan (``generation_coverage``;
    # prepare leaves it to the labs here, which answer their own beside it)
    os.environ["RAGCOURSE_GENERATION_LOG"] = str(folder / "prompts")
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
    # starts, and their kernels) step back while it runs: they take what it leaves. The tests that time
    # themselves (browser pages, the grader's deadlines) wait for it instead (``timed``).
    os.nice(PREPARE_NICENESS)
    config._ragcourse_prepare_log = log
    if hasattr(config.option, "loadscopereorder"):   # keep our file order (xdist would sort by test count)
        config.option.loadscopereorder = False


class PrepareGate:
    """Holds back each test that waits for ``prepare`` (``waits_for``) until it has cached the groups named, and
    each test marked ``ranx`` until ranx's functions are compiled."""

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

        if item.get_closest_marker("ranx"):   # waits for the compile (any status: it can compile itself)
            ranx_done = Path(os.environ[RANX_STATUS])   # set with PREPARE_STATUS, which registers this gate
            deadline = time.monotonic() + PREPARE_WAIT
            while not ranx_done.exists() and time.monotonic() < deadline:
                time.sleep(1)
        groups = waits_for(item)
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
    for line in (verdict or "").splitlines():
        terminalreporter.write_line(line)


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
    prompts = Path(files[1]).with_name("prompts")
    if prompts.exists():
        from ragcourse.labs.generation_plan import COVERAGE, coverage

        planned, asked = coverage(prompts)
        if asked:
            line = (f"generation plan: {planned} of the {asked} prompts the labs gave the model were planned "
                    f"({planned / asked:.1%}; at least {COVERAGE:.0%} required)")
            if planned / asked < COVERAGE:
                line += (": FAILED, record the labs' prompts again: RAGCOURSE_GENERATION_LOG=/tmp/prompts make "
                         "refresh, then python -m ragcourse prepare --record-generation /tmp/prompts")
                session.exitstatus = 1
            session.config._ragcourse_plan_verdict += "\n" + line


def pytest_collection_finish(session):
    import os
    import sys

    if os.environ.get("RAGCOURSE_PREPARED") or os.environ.get(PREPARE_STATUS) \
            or hasattr(session.config, "workerinput") or not any(reads_plan(item) for item in session.items):
        return
    from ragcourse.cli.main import main

    status = main(["prepare"])
    if status:
        sys.exit(f"python -m ragcourse prepare failed with status {status}")
    os.environ["RAGCOURSE_PREPARED"] = "1"
