"""JupyterLab in headless Chromium, as the browser tests drive it (``tests/test_browser.py``, ``test_browser_labs.py``,
``tests/exercises/test_exercise_browser.py``; their fixtures ``chromium``, ``lab_server`` and ``page`` are in
``conftest.py``), and axe-core, which the site's test runs too.

One JupyterLab server (from the project environment, on 127.0.0.1, a free port, a fresh token) serves a
*copy* of ``notebooks/`` from a temporary folder, with its own config, data, runtime, settings, workspace
and HOME folders there, so nothing of the student's setup is read or written. ``run_in_jupyterlab`` opens
a notebook, clears its stored outputs, runs "Restart Kernel and Run All Cells" (confirming the dialog as a
student would) and checks what the browser shows. Screenshots go to ``test-output/browser/``.
"""
from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ragcourse.batch.notebooks import NOTEBOOKS_DIR, PROJECT_ROOT, QUIET_ENV, lab_notebooks, lesson_notebooks
from ragcourse.engines.dense import cache_dir

from .notebooks import blocks_in_order, normalise_block

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
VIEWPORT = {"width": 1400, "height": 1000}
OUTPUT_DIR = PROJECT_ROOT / "test-output" / "browser"
REQUIRE_BROWSER = os.environ.get("RAGCOURSE_REQUIRE_BROWSER") == "1"

SERVER_START_SECONDS = 90
LESSON_OPEN_MS = 60_000
LESSON_RUN_MS = 60_000  # restart + run all; a lesson should finish well inside this
LAB_RUN_MS = 600_000    # a lab: seconds with a warm embedding cache, minutes with a cold one

# Settings of the test server only (its own user-settings folder). "windowingMode": "none"
# attaches every cell to the page, so long notebooks render fully and can be searched.
USER_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
}
# The "Jupyter news" plugin is switched off for the test server (labconfig in its config dir).
PAGE_CONFIG = {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}


def project_python() -> Path:
    """The project environment's interpreter: ``.venv/bin/python`` (else the running one)."""
    venv_python = PROJECT_ROOT / ".venv" / "bin" / "python"
    return venv_python if venv_python.exists() else Path(sys.executable)


@functools.cache
def prefix_of(python: Path) -> Path:
    """``sys.prefix`` of an interpreter (the environment it belongs to)."""
    done = subprocess.run([str(python), "-c", "import sys; print(sys.prefix)"],
                          capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def browser_unavailable(reason: str, fix: str):
    if REQUIRE_BROWSER:
        pytest.fail(f"{reason} (RAGCOURSE_REQUIRE_BROWSER=1 makes this an error); {fix}",
                    pytrace=False)
    pytest.skip(f"{reason}; {fix} (RAGCOURSE_REQUIRE_BROWSER=1 makes this an error)")


# ---------------------------------------------------------------------------- the server

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def _server_environment(home: Path, python: Path) -> dict[str, str]:
    """A clean environment: the project's jupyter and kernel, nothing from the student's setup."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JUPYTER", "JUPYTERLAB", "IPYTHON", "MPL", "PYTHONSTARTUP"))}
    env.update(QUIET_ENV)
    env.update({
        "HOME": str(home / "home"),
        "XDG_CONFIG_HOME": str(home / "home" / ".config"),
        "XDG_CACHE_HOME": str(home / "home" / ".cache"),
        "XDG_DATA_HOME": str(home / "home" / ".local" / "share"),
        "JUPYTER_PREFER_ENV_PATH": "1",
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "IPYTHONDIR": str(home / "ipython"),
        "MPLCONFIGDIR": str(home / "matplotlib"),
        "PYTHONNOUSERSITE": "1",
        "PATH": os.pathsep.join([str(python.parent), env.get("PATH", "")]),
        # the labs' embedding cache is shared with every other run: no text is embedded twice
        "RAGCOURSE_CACHE_DIR": str(cache_dir()),
    })
    return env


class LabServer:
    """One JupyterLab server for the whole session, on loopback, with a copy of notebooks/."""

    def __init__(self, home: Path):
        self.home = home
        self.root = home / "root"
        self.python = project_python()
        self.port = _free_port()
        self.token = secrets.token_hex(24)
        self.log_path = home / "jupyterlab.log"
        self.env = _server_environment(home, self.python)
        self.process: subprocess.Popen | None = None
        self._log = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def prepare(self) -> None:
        shutil.copytree(NOTEBOOKS_DIR, self.root / "notebooks",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        for name in ("home", "config", "data", "runtime", "ipython", "matplotlib", "workspaces"):
            (self.home / name).mkdir(parents=True, exist_ok=True)
        for plugin, values in USER_SETTINGS.items():
            write_json(self.home / "settings" / f"{plugin}.jupyterlab-settings", values)
        write_json(self.home / "config" / "labconfig" / "page_config.json", PAGE_CONFIG)

    def command(self) -> list[str]:
        return [
            str(self.python), "-m", "jupyterlab",
            "--no-browser", "--allow-root",
            "--ip=127.0.0.1", f"--port={self.port}", "--port-retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.terminals_enabled=False",
            "--LanguageServerManager.autodetect=False",
            f"--LabApp.user_settings_dir={self.home / 'settings'}",
            f"--LabApp.workspaces_dir={self.home / 'workspaces'}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]

    def start(self) -> None:
        self.prepare()
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            self.command(), cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.process.returncode}:\n{self.log()}")
            try:
                self.api("status")
                return
            except OSError:
                time.sleep(0.25)
        raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_SECONDS} s:\n{self.log()}")

    def api(self, path: str):
        request = urllib.request.Request(f"{self.base_url}/api/{path}",
                                         headers={"Authorization": f"token {self.token}"})
        with _NO_PROXY.open(request, timeout=5) as response:
            return json.load(response)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def kernel_specs(self) -> dict:
        """name -> (resource dir, argv) as the server's environment resolves them."""
        code = ("import json; from jupyter_client.kernelspec import KernelSpecManager as M; m = M(); "
                "print(json.dumps({n: [m.get_kernel_spec(n).resource_dir, m.get_kernel_spec(n).argv] "
                "for n in m.find_kernel_specs()}))")
        done = subprocess.run([str(self.python), "-c", code], env=self.env, cwd=self.root,
                              capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the server shuts its kernels down
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)  # our own process group only
                self.process.wait(timeout=10)
        if self._log is not None:
            self._log.close()



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
    if not page.evaluate("() => typeof window.axe === 'object' && typeof window.axe.run === 'function'"):
        page.evaluate(axe_script())   # as axe-playwright-python's Axe.run does: no <script> added to the page
    return page.evaluate(AXE_RUN, [selector, marker])


def axe_script() -> str:
    """axe-core's script, as axe-playwright-python ships it."""
    try:
        from axe_playwright_python.base import AXE_SCRIPT
    except ImportError:
        pytest.fail("axe-playwright-python is not installed: .venv/bin/pip install -r requirements.txt", pytrace=False)
    return AXE_SCRIPT


def axe_counts(findings: list[dict]) -> dict[str, int]:
    """``"rule (impact)"`` -> elements, over a list of findings (of one page or many)."""
    counts: dict[str, int] = {}
    for finding in findings:
        key = f"{finding['id']} ({finding['impact']})"
        counts[key] = counts.get(key, 0) + len(finding["nodes"])
    return dict(sorted(counts.items()))


# ----------------------------------------------------------------------- in the browser

FIND_PANEL = """(path) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return false;
  for (const widget of app.shell.widgets('main')) {
    const ctx = widget.context, session = widget.sessionContext;
    if (ctx && ctx.path === path && ctx.isReady && widget.content && widget.content.model
        && session && session.isReady && session.session && session.session.kernel
        && session.session.kernel.connectionStatus === 'connected'
        && session.session.kernel.status === 'idle') {
      window.__lesson = widget;
      app.shell.activateById(widget.id);
      return true;
    }
  }
  return false;
}"""

START_RESTART_RUN_ALL = """async () => {
  const app = window.jupyterapp;
  if (app.shell.leftCollapsed === false) app.shell.collapseLeft();
  await app.commands.execute('notebook:clear-all-cell-outputs');
  window.__run = {done: false, result: null, error: null};
  app.commands.execute('notebook:restart-run-all').then(
    (result) => { window.__run.done = true; window.__run.result = result; },
    (error) => { window.__run.done = true; window.__run.error = String(error); });
}"""

RUN_FINISHED = """() => {
  const panel = window.__lesson;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  if (!window.__run.done || !kernel || kernel.status !== 'idle') return false;
  if (window.__run.result !== true) return true;  // stopped early: report what is there
  for (const cell of panel.content.model.cells) {
    if (cell.type === 'code' && cell.sharedModel.getSource().trim() && cell.executionCount === null)
      return false;
  }
  return true;
}"""

NOTEBOOK_STATE = """() => {
  const panel = window.__lesson, node = panel.content.node;
  const cells = [];
  for (const cell of panel.content.model.cells) {
    if (cell.type !== 'code') continue;
    const outputs = [];
    for (let i = 0; i < cell.outputs.length; i++) outputs.push(cell.outputs.get(i).toJSON());
    cells.push({source: cell.sharedModel.getSource(), count: cell.executionCount, outputs});
  }
  const text = (selector) => Array.from(node.querySelectorAll(selector), (el) => el.textContent);
  const images = Array.from(node.querySelectorAll('.jp-OutputArea-output img'),
                            (img) => ({complete: img.complete, width: img.naturalWidth,
                                       height: img.naturalHeight}));
  return {
    run: window.__run,
    kernelName: panel.sessionContext.kernelDisplayName,
    cells,
    stdout: text('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"]'),
    stderr: text('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'),
    errorNodes: text('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'),
    images,
  };
}"""

KERNEL_PYTHON = """async () => {
  const kernel = window.__lesson.sessionContext.session.kernel;
  const future = kernel.requestExecute({
    code: 'import sys; print(sys.executable); print(sys.prefix)',
    silent: false, store_history: false});
  let text = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') text += msg.content.text;
  };
  await future.done;
  return text;
}"""

SCROLL_TO_TEXT = """(needle) => {
  const node = window.__lesson.content.node;
  for (const el of node.querySelectorAll('.jp-OutputArea-output')) {
    if (el.textContent.includes(needle)) {
      el.scrollIntoView({block: 'center'});
      return true;
    }
  }
  return false;
}"""

SCROLL_TO_FIGURE = """() => {
  const img = window.__lesson.content.node.querySelector('.jp-OutputArea-output img');
  if (!img) return false;
  img.scrollIntoView({block: 'center'});
  return true;
}"""

SCROLL_TO_TROUBLE = """() => {
  const node = window.__lesson.content.node;
  const bad = node.querySelector('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    || node.querySelector('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]');
  if (bad) bad.scrollIntoView({block: 'center'});
}"""

SHUT_DOWN = """async () => {
  const panel = window.__lesson;
  if (!panel) return;
  panel.context.model.dirty = false;
  await panel.sessionContext.shutdown();
}"""


def settle(page) -> None:
    page.wait_for_timeout(400)  # let layout and images settle before a screenshot


def screenshot(page, name: str) -> Path:
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUTPUT_DIR / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def _problems(state: dict, name: str, blocks: list[str], kernel_text: str, python: Path) -> list[str]:
    """Everything wrong with what the browser shows after the run, in words."""
    problems = []
    run = state["run"]
    if run["error"] or run["result"] is not True:
        problems.append(f"restart-run-all did not report success: {run}")
    code_cells = [cell for cell in state["cells"] if cell["source"].strip()]
    counts = [cell["count"] for cell in code_cells]
    if counts != list(range(1, len(code_cells) + 1)):
        problems.append(f"execution counts are not 1..{len(code_cells)} (fresh kernel, in order): "
                        f"{counts}")
    for index, cell in enumerate(state["cells"], 1):
        for output in cell["outputs"]:
            if output.get("output_type") == "error":
                problems.append(f"code cell {index} raised {output.get('ename')}: "
                                f"{output.get('evalue')}")
            elif output.get("output_type") == "stream" and output.get("name") == "stderr":
                problems.append(f"code cell {index} wrote to stderr: {output.get('text')!r:.300}")
    for text in state["stderr"] + state["errorNodes"]:
        problems.append(f"error/stderr output on the page: {text!r:.300}")

    page_stdout = "".join(state["stdout"])
    shown_lines = {line.rstrip() for line in page_stdout.split("\n")}
    for number, found in enumerate(blocks_in_order(page_stdout, blocks), 1):
        if not found:
            block_lines = normalise_block(blocks[number - 1]).split("\n")
            missing = [line for line in block_lines if line not in shown_lines]
            detail = (f"first line not on the page: {missing[0]!r}" if missing else
                      "every line is on the page, but not contiguous or not in course order")
            problems.append(f"expected block {name}-{number} is not shown verbatim; {detail}")

    drawn = [image for image in state["images"] if image["complete"] and image["width"] > 0]
    if not drawn:
        problems.append(f"no figure drawn: images in outputs {state['images']}")

    lines = kernel_text.split("\n")
    expected_prefix = prefix_of(python)
    if len(lines) < 2 or Path(lines[1]).resolve() != expected_prefix.resolve():
        problems.append(f"the kernel is not the project's Python {python} "
                        f"(prefix {expected_prefix}); it reports {kernel_text!r}")
    return problems


def _table_line(blocks: list[str]) -> str:
    """The documented line that looks most like a table row (most column gaps), for the picture."""
    lines = [line for block in blocks for line in normalise_block(block).split("\n")]
    return max(lines, key=lambda line: line.count("  "), default="")



LESSONS = lesson_notebooks()
LABS = lab_notebooks()


def stored_blocks(path: Path) -> list[str]:
    """What a lab's committed notebook printed, cell by cell (cells nbval ignores left out)."""
    blocks = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code" or "NBVAL_IGNORE_OUTPUT" in "".join(cell["source"]):
            continue
        text = "".join("".join(o["text"]) for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream" and o.get("name") == "stdout")
        if text.strip():
            blocks.append(text)
    return blocks



def run_in_jupyterlab(page, lab_server, path: str, notebook: Path, name: str, blocks: list[str],
                      run_ms: int, pictures: bool) -> None:
    """Open ``path``, restart and run all, and check what the page shows against ``blocks``."""
    page.goto(f"{lab_server.base_url}/lab/tree/{path}?reset&token={lab_server.token}")
    try:
        opened = time.monotonic()
        page.wait_for_function(FIND_PANEL, arg=path, timeout=LESSON_OPEN_MS, polling=250)
        open_seconds = time.monotonic() - opened

        page.evaluate(START_RESTART_RUN_ALL)
        started = time.monotonic()
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=10_000)  # "Restart"
        page.wait_for_function(RUN_FINISHED, timeout=run_ms, polling=250)
        run_seconds = time.monotonic() - started
        page.wait_for_function(
            "() => Array.from(window.__lesson.content.node.querySelectorAll("
            "'.jp-OutputArea-output img')).every((img) => img.complete)", timeout=10_000)

        state = page.evaluate(NOTEBOOK_STATE)
        kernel_text = page.evaluate(KERNEL_PYTHON)
        problems = _problems(state, name, blocks, kernel_text, project_python())
        write_json(OUTPUT_DIR / f"{notebook.stem}.json", {
            "notebook": name, "open_seconds": round(open_seconds, 2),
            "restart_run_all_seconds": round(run_seconds, 2),
            "code_cells": len(state["cells"]), "figures": len(state["images"]),
            "kernel": state["kernelName"], "kernel_python": kernel_text.split("\n")[:2],
            "expected_blocks": len(blocks), "problems": problems})
        assert not problems, f"{notebook.name} in JupyterLab:\n  " + "\n  ".join(problems)

        if pictures:  # pictures for a human to look at
            anchor = _table_line(blocks)
            if anchor and page.evaluate(SCROLL_TO_TEXT, anchor):
                settle(page)
                screenshot(page, f"{notebook.stem}-table")
            if page.evaluate(SCROLL_TO_FIGURE):
                settle(page)
                screenshot(page, f"{notebook.stem}-figure")
    except BaseException:
        try:
            page.evaluate(SCROLL_TO_TROUBLE)
            settle(page)
            shot = screenshot(page, f"{notebook.stem}-FAILED")
            dialogs = page.locator(".jp-Dialog").all_inner_texts()
            print(f"screenshot of the failure: {shot}\nopen dialogs: {dialogs}\n"
                  f"server log tail:\n{lab_server.log()}")
        except Exception as error:  # the page itself may be gone
            print(f"no failure screenshot: {error}")
        raise
    finally:
        try:
            page.evaluate(SHUT_DOWN)
        except Exception:
            pass
