"""The course website (issue 28): built once from the committed notebooks, then read as a reader would.

The session fixture builds the site with ``site/build.py`` (Jupyter Book 1.x, every Sphinx
warning an error, nothing executed) in the site's own environment ``.venv/site`` into a
temporary folder, and times it. Plain Python then checks the files: every internal link of
every page resolves, nothing named for a master or a solution was published, ``notebooks/``
and ``figures/`` are unchanged. Headless Chromium (Debian's ``/usr/bin/chromium`` through
Playwright, the flags of ``tests/test_browser.py``) reads the site over http on 127.0.0.1:
each lesson page shows the first line of its first documented block, each lab page the header
of its first printed table, each page at least one figure that loads; no page asks for
anything outside the site; the search page finds "reciprocal rank fusion". Screenshots of the
landing page, a lesson, a lab, the API reference and a search go to ``test-output/site/``.

Accessibility (issue 53): axe-core (``support.browser.axe_findings``) checks every page in the light and
in the dark colour mode (Chromium's ``prefers-color-scheme``, which the theme follows): any serious
or critical finding fails, and the counts per rule go to ``test-output/site/axe-MODE.json``. A
figure whose notebook cell does not describe it (``show_figure``) has no alt text: counted apart
(``image-alt``), and none may remain (every figure of the lessons and labs describes itself).

The whole module carries the ``browser`` marker: the build takes half a minute, too slow for
``make test-fast``. Without Playwright or Chromium the browser tests skip, unless
``RAGCOURSE_REQUIRE_BROWSER=1`` (CI), where that is an error; the build and the link checks
run either way.
"""
from __future__ import annotations

import functools
import hashlib
import html.parser
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from support.audit_memo import AuditMemo, setup_key
from support.browser import AXE_BLOCKING, AXE_RUN, axe_counts, axe_findings, axe_script
from support.notebooks import stored_stdout

pytestmark = [pytest.mark.browser, pytest.mark.timed]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
DOCUMENTED = ROOT / "tests" / "documented"
SITE_PYTHON = ROOT / ".venv" / "site" / "bin" / "python"
SITE_STAMP = ROOT / ".venv" / "site" / ".installed"
OUTPUT_DIR = ROOT / "test-output" / "site"
NUMBERED = re.compile(r"^(\d\d)-[a-z0-9-]+\.ipynb$")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic", "--no-proxy-server"]
VIEWPORT = {"width": 1400, "height": 1000}
REQUIRE_BROWSER = os.environ.get("RAGCOURSE_REQUIRE_BROWSER") == "1"
PAGE_MS = 30_000


def numbered(folder: Path) -> dict[str, Path]:
    """``NN`` -> notebook, for ``folder/NN-name.ipynb``."""
    return {m.group(1): p for p in sorted(folder.glob("*.ipynb")) if (m := NUMBERED.match(p.name))}


LESSONS = numbered(NOTEBOOKS)
LABS = numbered(NOTEBOOKS / "labs")


def page_of(notebook: Path) -> str:
    """The site path of a notebook's page."""
    return notebook.relative_to(ROOT).with_suffix(".html").as_posix()


def lesson_header(number: str) -> str:
    """The first non-blank line of the lesson's first documented block."""
    text = (DOCUMENTED / f"{number}-1.txt").read_text()
    return next(line.rstrip() for line in text.split("\n") if line.strip())


_NUMBER = re.compile(r"^[-+]?[\d.,%]+$")


def first_table_header(printed: str) -> str | None:
    """The header of the first fixed-width table in printed text: a line of three or more
    titles (no bare numbers) followed by two rows of the same width."""
    lines = printed.split("\n")
    for i, line in enumerate(lines[:-2]):
        titles = line.split()
        if len(titles) < 3 or any(_NUMBER.match(t) for t in titles):
            continue
        if all(row.strip() and (len(row) == len(line) or len(row.rstrip()) == len(line.rstrip()))
               for row in lines[i + 1:i + 3]):
            return line.rstrip()
    return None


def _tree_digest(*folders: Path) -> str:
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# ---------------------------------------------------------------------------- the build

class Build:
    def __init__(self, site: Path, seconds: float, log: str):
        self.site, self.seconds, self.log = site, seconds, log


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Build:
    """The site, built once into a temporary folder with warnings as errors."""
    if not SITE_STAMP.exists():  # a fresh clone: `make test` makes it first; pytest alone does it here
        made = subprocess.run(["make", "-s", str(SITE_STAMP.relative_to(ROOT))], cwd=ROOT,
                              capture_output=True, text=True)
        if made.returncode != 0:
            pytest.fail(f"could not make the site environment:\n{made.stdout}\n{made.stderr}",
                        pytrace=False)
    folder = tmp_path_factory.mktemp("site")
    before = _tree_digest(NOTEBOOKS, ROOT / "figures")
    started = time.monotonic()
    done = subprocess.run([str(SITE_PYTHON), str(ROOT / "site" / "build.py"),
                           "--out", str(folder / "html"), "--work", str(folder / "work")],
                          cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    log = done.stdout + done.stderr
    if done.returncode != 0:
        pytest.fail(f"site build failed (exit status {done.returncode}):\n{log[-6000:]}", pytrace=False)
    assert _tree_digest(NOTEBOOKS, ROOT / "figures") == before, "building the site changed notebooks/ or figures/"
    return Build(folder / "html", seconds, log)


@pytest.mark.slow
def test_build_is_strict(built_site):
    assert "--warningiserror" in (ROOT / "site" / "build.py").read_text()
    assert "build succeeded" in built_site.log
    assert not re.search(r"\bWARNING\b", built_site.log), "the build printed a warning"
    # Its time is reported, not asserted (a timed test fails on a busy machine, not on a slow build).
    print(f"site build: {built_site.seconds:.0f} s")


def test_every_lesson_lab_and_exercise_has_a_page(built_site):
    missing = [page_of(p) for p in [*LESSONS.values(), *LABS.values()]
               if not (built_site.site / page_of(p)).is_file()]
    assert not missing, f"no page for {missing}"
    assert (built_site.site / "index.html").is_file()
    assert (built_site.site / "api" / "index.html").is_file()


def test_exercises_are_student_versions_only(built_site):
    published = [p.relative_to(built_site.site).as_posix() for p in built_site.site.rglob("*")]
    leaked = [p for p in published if re.search(r"master|solution", p, re.IGNORECASE)]
    assert not leaked, f"published: {leaked}"
    student = sorted(p for p in (NOTEBOOKS / "exercises").rglob("*.ipynb")
                     if not re.search(r"master|solution|\.ipynb_checkpoints", str(p.relative_to(NOTEBOOKS)),
                                      re.IGNORECASE)) if (NOTEBOOKS / "exercises").is_dir() else []
    missing = [page_of(p) for p in student if not (built_site.site / page_of(p)).is_file()]
    assert not missing, f"exercise notebooks without a page: {missing}"


class _Links(html.parser.HTMLParser):
    """Every href/src of a page, and every id it defines."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            elif name in ("href", "src") and value and tag in ("a", "link", "script", "img", "source", "iframe"):
                self.links.append(value)


@functools.cache
def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def test_every_internal_link_resolves(built_site):
    site = built_site.site
    broken = []
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > len(LESSONS) + len(LABS)
    for page in pages:
        if "_static" in page.relative_to(site).parts:
            continue
        for link in _parse(page).links:
            parsed = urllib.parse.urlsplit(link)
            if parsed.scheme or parsed.netloc:
                if parsed.scheme in ("http", "https"):
                    broken.append(f"{page.relative_to(site)}: leaves the site: {link}")
                continue
            if not parsed.path:  # "#anchor" on the same page
                if parsed.fragment and parsed.fragment not in _parse(page).ids:
                    broken.append(f"{page.relative_to(site)}: no anchor {link}")
                continue
            target = (page.parent / urllib.parse.unquote(parsed.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if site.resolve() not in target.parents and target != site.resolve():
                broken.append(f"{page.relative_to(site)}: outside the site: {link}")
            elif not target.is_file():
                broken.append(f"{page.relative_to(site)}: missing {link}")
            elif parsed.fragment and target.suffix == ".html" and parsed.fragment not in _parse(target).ids:
                broken.append(f"{page.relative_to(site)}: no anchor {link}")
    assert not broken, f"{len(broken)} broken links, first ones:\n" + "\n".join(broken[:20])


def _load_build_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_build", ROOT / "site" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figure_descriptions_become_the_cells_alt(tmp_path):
    """build.py: an output's ``alt`` (else its described text) becomes the cell's image alt for myst-nb;
    matplotlib's ``<Figure size ...>`` is no description; the HTML <img> for JupyterLab is dropped."""
    build = _load_build_module()

    def figure(text, alt=None, html=None):
        data = {"image/png": "iVBORw0KGgo=", "text/plain": [text]}
        if html:
            data["text/html"] = [html]
        return {"output_type": "display_data", "data": data,
                "metadata": {"image/png": {"alt": alt}} if alt else {}}

    described = {"cell_type": "code", "metadata": {}, "source": "show_figure(fig, d)", "outputs": [
        figure("Recall against k: a rises from 0.1 to 0.5.", alt="Recall against k: a rises from 0.1 to 0.5.",
               html='<img class="ragcourse-figure" src="data:image/png;base64,iVBORw0KGgo=" alt="Recall">'),
        {"output_type": "display_data", "data": {"text/html": ["<details>...</details>"], "text/plain": ["v"]},
         "metadata": {}}]}
    text_only = {"cell_type": "code", "metadata": {"mystnb": {"image": {"width": "80%"}}}, "source": "",
                 "outputs": [figure("Share against k, from 1 to 5.")]}
    plain = {"cell_type": "code", "metadata": {}, "source": "plt.show()",
             "outputs": [figure("<Figure size 700x400 with 2 Axes>")]}
    nb = {"cells": [{"cell_type": "markdown", "source": "x"}, described, text_only, plain]}
    notebook = NOTEBOOKS / "01-example.ipynb"
    assert build.describe_figures(notebook, nb) == [3]
    assert described["metadata"]["mystnb"]["image"]["alt"] == "Recall against k: a rises from 0.1 to 0.5."
    assert "text/html" not in described["outputs"][0]["data"], "the page would show the data-URI PNG, not the SVG"
    assert described["outputs"][1]["data"]["text/html"] == ["<details>...</details>"]
    assert text_only["metadata"]["mystnb"]["image"] == {"width": "80%", "alt": "Share against k, from 1 to 5."}
    assert "mystnb" not in plain["metadata"]

    two = {"cell_type": "code", "metadata": {}, "source": "", "outputs": [figure("one"), figure("two")]}
    with pytest.raises(SystemExit, match="one figure per cell"):
        build.describe_figures(notebook, {"cells": [two]})

    page = tmp_path / "page.html"
    page.write_text('<img alt="../_images/a.svg" src="../_images/a.svg" /><img alt="A figure." src="b.svg" />')
    assert build.drop_file_name_alts(tmp_path) == 1
    assert page.read_text() == '<img src="../_images/a.svg" /><img alt="A figure." src="b.svg" />'


def test_lab_tables_are_found():
    """The lab check below needs a table header in each lab's stored output."""
    for number, notebook in LABS.items():
        assert first_table_header(stored_stdout(notebook)), f"lab {number}: no printed table found"


# ---------------------------------------------------------------------------- the browser

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A page left before its last file arrived (the browser closed the connection): not an error."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@pytest.fixture(scope="session")
def site_url(built_site):
    """The built site over http on 127.0.0.1 (a free port), as a static host would serve it."""
    handler = functools.partial(_QuietHandler, directory=str(built_site.site))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _browser_unavailable(reason: str):
    if REQUIRE_BROWSER:
        pytest.fail(f"{reason} (RAGCOURSE_REQUIRE_BROWSER=1 makes this an error); "
                    "run .ci/install-browser.sh", pytrace=False)
    pytest.skip(f"{reason}; run .ci/install-browser.sh (RAGCOURSE_REQUIRE_BROWSER=1 makes this an error)")


@pytest.fixture(scope="module")   # not session: an open sync Playwright holds the thread's event loop until it exits
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _browser_unavailable("the playwright package is not installed")
    if not CHROMIUM.exists():
        _browser_unavailable(f"{CHROMIUM} is missing")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def reader(browser, site_url):
    """A fresh page that may only talk to the site: anything else is recorded and refused."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(PAGE_MS)
    page.outside_requests = []

    def only_the_site(route):
        if route.request.url.startswith(site_url) or route.request.url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            page.outside_requests.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_site)
    yield page
    context.close()


def _open(page, url: str) -> None:
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{url}: {response.status if response else 'no response'}"


def _printed_lines(page) -> set[str]:
    """Every line the page shows in a cell output, trailing spaces dropped."""
    texts = page.eval_on_selector_all("div.cell_output pre", "els => els.map(e => e.textContent)")
    return {line.rstrip() for text in texts for line in text.split("\n")}


def _figures_loaded(page) -> list[str]:
    """The figures in cell outputs that have loaded with a natural width above zero."""
    page.wait_for_function("""() => [...document.querySelectorAll('div.cell_output img')]
                                      .every(img => img.complete)""")
    return page.eval_on_selector_all(
        "div.cell_output img", "imgs => imgs.filter(i => i.complete && i.naturalWidth > 0).map(i => i.src)")


def _check_page(page, site_url: str, notebook: Path, header: str, what: str) -> None:
    _open(page, site_url + page_of(notebook))
    assert header in _printed_lines(page), f"{what}: the page does not show {header!r}"
    figures = _figures_loaded(page)
    assert figures, f"{what}: no figure loaded on the page"
    assert any(urllib.parse.urlsplit(src).path.endswith(".svg") for src in figures), \
        f"{what}: no figure is vector (SVG): {figures}"
    assert not page.outside_requests, f"{what}: the page asked for {page.outside_requests}"


@pytest.mark.parametrize("number", sorted(LESSONS))
def test_lesson_page(reader, site_url, number):
    _check_page(reader, site_url, LESSONS[number], lesson_header(number), f"lesson {number}")


@pytest.mark.parametrize("number", sorted(LABS))
def test_lab_page(reader, site_url, number):
    header = first_table_header(stored_stdout(LABS[number]))
    assert header, f"lab {number}: no printed table in the stored outputs"
    _check_page(reader, site_url, LABS[number], header, f"lab {number}")


def test_search_finds_reciprocal_rank_fusion(reader, site_url):
    _open(reader, site_url + "search.html?q=" + urllib.parse.quote_plus("reciprocal rank fusion"))
    reader.wait_for_selector("#search-results ul.search li")
    results = reader.eval_on_selector_all("#search-results ul.search li a",
                                          "links => links.map(a => a.textContent.trim())")
    assert any("Hybrid search" in title for title in results), f"search results: {results}"
    assert not reader.outside_requests, f"the search page asked for {reader.outside_requests}"


def test_screenshots_for_a_reader(reader, site_url):
    """The pages a reader meets first, saved for a person to look at (``test-output/site/``)."""
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    lesson, lab = LESSONS["06"], LABS["01"]
    shots = {
        "landing": "index.html",
        "lesson-06": page_of(lesson),
        "lab-01": page_of(lab),
        "api": "api/index.html",
        "search": "search.html?q=" + urllib.parse.quote_plus("reciprocal rank fusion"),
    }
    for name, path in shots.items():
        _open(reader, site_url + path)
        reader.wait_for_load_state("networkidle")
        if name == "search":
            reader.wait_for_selector("#search-results ul.search li")
        reader.screenshot(path=str(OUTPUT_DIR / f"{name}.png"))
        assert (OUTPUT_DIR / f"{name}.png").stat().st_size > 10_000
    # Code and output are told apart: an output frame's background differs from a code cell's.
    _open(reader, site_url + page_of(lesson))
    code, output = reader.evaluate("""() => [
        getComputedStyle(document.querySelector('div.cell_input')).backgroundColor,
        getComputedStyle(document.querySelector('div.cell_output .output')).backgroundColor]""")
    assert code != output, f"code cells and outputs share the background {code}"
    assert not reader.outside_requests, f"pages asked for {reader.outside_requests}"


# ---------------------------------------------------------------------------- accessibility (issue 53)

MODES = ("light", "dark")
PENDING_RULE = "image-alt"          # figures of notebooks whose figure cell does not call show_figure yet
FIGURE = "div.cell_output"          # where a notebook's figures sit on a page
FIGURES_BEFORE_SHOW_FIGURE = 0      # every figure of the lessons and labs describes itself (show_figure)

PAGE_STATE = """() => {
  const figures = [...document.querySelectorAll('div.cell_output img')].map((img) => {
    const style = getComputedStyle(img);
    return {background: style.backgroundColor, filter: style.filter};
  });
  return {theme: document.documentElement.dataset.theme, figures};
}"""


def site_pages(site: Path) -> list[str]:
    """Every page of the site, but ``_static`` and the landing stub (``index.html`` only redirects)."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if "_static" not in p.relative_to(site).parts and p.relative_to(site).as_posix() != "index.html")


class Audit:
    """axe's findings on every page in one colour mode, and what each page's theme and figures looked like."""

    def __init__(self, mode: str):
        self.mode = mode
        self.findings: dict[str, list[dict]] = {}
        self.states: dict[str, dict] = {}
        self.seconds = 0.0
        self.memo = ""

    def all(self) -> list[dict]:
        return [finding for findings in self.findings.values() for finding in findings]

    def pending(self) -> list[tuple[str, dict]]:
        """(page, element) for each figure without alt text in a notebook's output."""
        return [(page, node) for page, findings in self.findings.items() for f in findings
                if f["id"] == PENDING_RULE for node in f["nodes"] if node["marked"]]

    def blocking(self) -> list[tuple[str, str, dict]]:
        """(page, rule, element) for each serious or critical finding, the pending figures left out."""
        return [(page, f"{f['id']} ({f['impact']})", node) for page, findings in self.findings.items()
                for f in findings if f["impact"] in AXE_BLOCKING
                for node in f["nodes"] if not (f["id"] == PENDING_RULE and node["marked"])]

    def report(self) -> str:
        counts = axe_counts(self.all())
        lines = [f"axe-core, {self.mode} mode, {len(self.findings)} pages ({self.memo}) in {self.seconds:.0f} s: "
                 f"{sum(counts.values())} elements fail a rule"]
        pages = {rule: sum(1 for findings in self.findings.values() if rule in axe_counts(findings)) for rule in counts}
        lines += [f"  {rule}: {n} on {pages[rule]} pages" for rule, n in counts.items()]
        lines.append(f"  of which pending ({PENDING_RULE}, figures not yet described): {len(self.pending())}")
        return "\n".join(lines)


@pytest.fixture(scope="module")
def audit(browser, site_url, built_site):
    """``audit(mode)``: axe on every page in that colour mode, once per module."""
    audits: dict[str, Audit] = {}

    def run(mode: str) -> Audit:
        if mode in audits:
            return audits[mode]
        result = Audit(mode)
        memo = AuditMemo(built_site.site, site_url, setup_key(
            axe=hashlib.sha256(axe_script().encode()).hexdigest(), run=AXE_RUN, state=PAGE_STATE, marker=FIGURE,
            chromium=browser.version, viewport=VIEWPORT, mode=mode))
        context = browser.new_context(viewport=VIEWPORT, color_scheme=mode)
        page = context.new_page()
        page.set_default_timeout(PAGE_MS)
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        started = time.monotonic()
        try:
            for path in site_pages(built_site.site):
                kept = memo.recall(path)
                if kept is None:
                    requested.clear()
                    _open(page, site_url + path)
                    kept = {"state": page.evaluate(PAGE_STATE), "findings": axe_findings(page, marker=FIGURE)}
                    memo.keep(path, list(requested), kept)
                result.states[path], result.findings[path] = kept["state"], kept["findings"]
        finally:
            context.close()
        memo.save()
        result.seconds = time.monotonic() - started
        result.memo = memo.summary()
        OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
        (OUTPUT_DIR / f"axe-{mode}.json").write_text(json.dumps(
            {"mode": mode, "counts": axe_counts(result.all()), "pending_figures": len(result.pending()),
             "pages": {p: f for p, f in result.findings.items() if f}}, indent=1))
        audits[mode] = result
        return result

    return run


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_accessibility_no_serious_or_critical_finding(audit, mode):
    """Every page, in this colour mode: no serious or critical axe-core finding (pending figures apart)."""
    result = audit(mode)
    print(result.report())
    wrong_theme = sorted(p for p, state in result.states.items() if state["theme"] != mode)
    assert not wrong_theme, f"the theme did not switch to {mode} on {wrong_theme[:5]}"
    dimmed = sorted({p for p, state in result.states.items() for figure in state["figures"]
                     if figure["background"] != "rgb(255, 255, 255)" or figure["filter"] != "none"})
    assert not dimmed, f"{mode} mode: figures not on white or filtered on {dimmed[:5]}"
    blocking = result.blocking()
    detail = "\n".join(f"  {page}: {rule}: {node['target']}: {node['html'][:120]}" for page, rule, node in blocking[:25])
    assert not blocking, f"{len(blocking)} serious or critical findings in {mode} mode\n{result.report()}\n{detail}"
    assert len(result.pending()) <= FIGURES_BEFORE_SHOW_FIGURE, (
        f"{len(result.pending())} figures without alt text: a figure added since issue 53 must describe itself "
        "(show_figure, CONTRIBUTING.md)")


@pytest.mark.parametrize("mode", MODES)
def test_every_figure_has_alt_text(audit, mode):
    pending = audit(mode).pending()
    pages = sorted({page for page, _ in pending})
    assert not pending, (f"{len(pending)} figures without alt text ({PENDING_RULE}, critical) in {mode} mode, "
                         f"on {len(pages)} pages: {', '.join(pages)}")
