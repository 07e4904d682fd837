"""Build the course website from the committed notebooks: offline, nothing executed.

    .venv/site/bin/python site/build.py [--out build/site] [--work build/site-work]

(``make site`` runs it with the site's own environment, see ``site/requirements.txt``.)

What it does, in order:

1. Stages the book's source in ``WORK/book``: the files of ``site/`` and *copies* of the
   notebooks (``notebooks/`` itself is only read). In the copies, a figure cell that writes
   ``figures/NN-name.svg`` with ``save_figure`` also gets that committed SVG beside its stored
   PNG, so the page shows the sharp vector figure; a link to the repository's README points at
   the landing page instead. Each figure's description (the ``alt`` that ``show_figure`` puts in
   the output's metadata, else its text when that is not matplotlib's ``<Figure size ...>``)
   becomes the ``alt`` of its ``<img>``; a figure without one is listed in the build log.
2. Picks what goes in: the lessons (``notebooks/NN-*.ipynb``), the labs
   (``notebooks/labs/NN-*.ipynb``) and whatever student exercise notebooks exist under
   ``notebooks/exercises/`` at build time. Never a folder named ``masters`` or ``solutions``,
   nor a file whose name says ``solution`` or ``master``.
3. Writes the API reference by walking ``src/ragcourse`` on disk: one page per package, one
   ``automodule`` per module, so a reorganised package needs no change here. Third-party
   libraries its modules import that this environment lacks are mocked for autodoc.
4. Writes ``_toc.yml`` and ``_config.yml``, copies MathJax 2.7 beside ``_static`` (no CDN), and
   runs ``jupyter-book build --warningiserror --keep-going``.
5. Moves the HTML to ``OUT`` (``build/site/index.html`` is the landing page). An ``<img>`` whose
   ``alt`` is only its own file name (docutils writes that when a figure has no description) loses
   it, so the accessibility check (``tests/site/test_site.py``) counts it as an image without alt.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

SITE = Path(__file__).resolve().parent
ROOT = SITE.parent
NOTEBOOKS = ROOT / "notebooks"
FIGURES = ROOT / "figures"
PACKAGE = ROOT / "src" / "ragcourse"

NUMBERED = re.compile(r"^\d\d-[a-z0-9-]+\.ipynb$")
FORBIDDEN_FOLDERS = {"masters", "master", "solutions", "solution"}
FORBIDDEN_WORDS = ("solution", "master")
SAVE_FIGURE = re.compile(r"save_figure\(\s*\w+\s*,\s*[\"']([^\"']+)[\"']")
MARKDOWN_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)\)")
INLINE_FIGURE_TEXT = re.compile(r"^<Figure size \d+x\d+ with \d+ Axes>$")   # matplotlib's text for a figure
FIGURE_HTML_CLASS = "ragcourse-figure"       # ragcourse.toolkit.figures.FIGURE_CLASS (not imported: no matplotlib here)
FILE_NAME_ALT = re.compile(r'<img alt="([^"]+)" src="\1"')
SITE_FILES_NOT_COPIED = {"build.py", "requirements.txt", "__pycache__", "_config.yml"}


# ------------------------------------------------------------------------ what goes in

def lessons() -> list[Path]:
    """``notebooks/NN-*.ipynb``, in order."""
    return sorted(p for p in NOTEBOOKS.glob("*.ipynb") if NUMBERED.match(p.name))


def labs() -> list[Path]:
    """``notebooks/labs/NN-*.ipynb``, in order."""
    return sorted(p for p in (NOTEBOOKS / "labs").glob("*.ipynb") if NUMBERED.match(p.name))


def is_published_exercise(path: Path) -> bool:
    """A student exercise notebook: never a master or a solution, nor a checkpoint copy."""
    parts = path.relative_to(NOTEBOOKS).parts
    if any(part.lower() in FORBIDDEN_FOLDERS or part.startswith(".") for part in parts[:-1]):
        return False
    name = path.name.lower()
    return not any(word in name for word in FORBIDDEN_WORDS)


def exercises() -> list[Path]:
    """The student exercise notebooks that exist now: lessons' first, then labs'."""
    folder = NOTEBOOKS / "exercises"
    found = [p for p in folder.rglob("*.ipynb") if is_published_exercise(p)] if folder.is_dir() else []
    return sorted(found, key=lambda p: (len(p.relative_to(folder).parts), str(p.relative_to(folder))))


# ------------------------------------------------------------------------ staging the notebooks

def svg_for(notebook: Path, name: str) -> str | None:
    """The committed ``figures/[labs/]NAME.svg`` for a notebook's figure, if it exists."""
    folder = FIGURES / notebook.parent.relative_to(NOTEBOOKS)
    if notebook.parent.relative_to(NOTEBOOKS).parts[:1] == ("exercises",):
        return None
    path = folder / f"{name}.svg"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def add_svg_figures(notebook: Path, nb: dict) -> int:
    """Give each PNG output of a ``save_figure`` cell the committed SVG beside it; returns how many."""
    added = 0
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", []))
        names = SAVE_FIGURE.findall(source)
        pngs = [o for o in cell.get("outputs", [])
                if o.get("output_type") in ("display_data", "execute_result")
                and "image/png" in o.get("data", {})]
        if not names or len(names) != len(pngs):
            continue
        for name, output in zip(names, pngs):
            svg = svg_for(notebook, name)
            if svg is not None:
                output["data"]["image/svg+xml"] = svg
                added += 1
    return added


def figure_outputs(cell: dict) -> list[dict]:
    """The outputs of a code cell that show a figure (a PNG)."""
    return [o for o in cell.get("outputs", [])
            if o.get("output_type") in ("display_data", "execute_result") and "image/png" in o.get("data", {})]


def figure_description(output: dict) -> str | None:
    """A figure output's description: its PNG's ``alt`` metadata, else its text unless that is
    matplotlib's ``<Figure size ...>``; None when it has neither."""
    alt = output.get("metadata", {}).get("image/png", {}).get("alt")
    text = alt if isinstance(alt, str) else "".join(output.get("data", {}).get("text/plain", ""))
    text = " ".join(text.split())
    return text if text and not INLINE_FIGURE_TEXT.match(text) else None


def describe_figures(notebook: Path, nb: dict) -> list[int]:
    """Give each figure cell's images its description as ``alt``; returns the undescribed figures' cells.

    myst-nb takes an image's ``alt`` from the cell's metadata (``mystnb.image.alt``), not from the
    output's, so the description goes there; a cell with two differently described figures stops
    the build (one figure per cell). The HTML ``<img>`` that ``show_figure`` adds for JupyterLab is
    dropped from the copy, so the page shows the PNG (or the committed SVG) with that ``alt``."""
    undescribed = []
    for index, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code" or not (outputs := figure_outputs(cell)):
            continue
        descriptions = [figure_description(o) for o in outputs]
        for output in outputs:
            markup = "".join(output["data"].get("text/html", ""))
            if markup.startswith(f'<img class="{FIGURE_HTML_CLASS}"'):
                del output["data"]["text/html"]
        if None in descriptions:
            undescribed += [index] * descriptions.count(None)
            continue
        if len(set(descriptions)) > 1:
            raise SystemExit(f"site: {notebook.relative_to(ROOT)}: cell {index} shows {len(descriptions)} figures "
                             "with different descriptions; the site gives a cell one alt (one figure per cell)")
        image = cell.setdefault("metadata", {}).setdefault("mystnb", {}).setdefault("image", {})
        image["alt"] = descriptions[0]
    return undescribed


def drop_file_name_alts(site: Path) -> int:
    """Remove ``alt="<its own src>"`` from every page's images; returns how many were removed.

    docutils writes an image's file name as its ``alt`` when it has none: a screen reader would
    read a hash. Without it, the image counts as one without alt text, which it is."""
    removed = 0
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed, count = FILE_NAME_ALT.subn(r'<img src="\1"', text)
        if count:
            page.write_text(fixed, encoding="utf-8")
            removed += count
    return removed


def retarget_links(notebook: Path, staged: Path, book: Path, nb: dict, published: set[Path]) -> None:
    """Relative links in the markdown cells of a staged copy, for the book.

    The README becomes the landing page; a page of ``site/`` (the glossary) is linked where the
    book puts it; a published notebook stays a page; another file of
    the repository (a figure, a source file) is copied beside the copy, as Sphinx expects. A
    link to a notebook that is not published (a master, a solution) becomes plain text, and so
    does, in an exercise notebook only, a link to an exercise that has not landed yet. Any
    other broken link is left alone, so the build stops on it."""
    is_exercise = "exercises" in notebook.relative_to(NOTEBOOKS).parts[:-1]

    def forbidden(path: Path) -> bool:
        return (any(part.lower() in FORBIDDEN_FOLDERS for part in path.relative_to(ROOT).parts[:-1])
                or any(word in path.name.lower() for word in FORBIDDEN_WORDS))

    def fix(match: re.Match) -> str:
        bang, text, target = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)
        path_part = target.partition("#")[0]
        original = (notebook.parent / path_part).resolve()
        if ROOT not in original.parents:
            return match.group(0)
        if original == ROOT / "README.md":
            return f"{bang}[{text}]({os.path.relpath(book / 'intro.md', staged.parent)})"
        if original.parent == SITE and original.suffix == ".md" and original.is_file():
            return f"{bang}[{text}]({os.path.relpath(book / original.name, staged.parent)})"
        if original in published:
            return match.group(0)
        unpublished_notebook = original.suffix == ".ipynb" and original.is_file()
        if unpublished_notebook or (not original.exists() and is_exercise):
            why = "not published" if unpublished_notebook else "not there yet"
            print(f"site: {notebook.relative_to(ROOT)}: link to {target} ({why}) shown as text")
            return text
        if original.is_file() and not forbidden(original):
            copy = staged.parent / path_part
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(original, copy)
        return match.group(0)

    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = "".join(cell.get("source", []))
            cell["source"] = MARKDOWN_LINK.sub(fix, source)


def stage_notebook(notebook: Path, book: Path, published: set[Path]) -> Path:
    """Copy one notebook into the book (same path under ``notebooks/``), adjusted as above."""
    staged = book / notebook.relative_to(ROOT)
    staged.parent.mkdir(parents=True, exist_ok=True)
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    add_svg_figures(notebook, nb)
    undescribed = describe_figures(notebook, nb)
    if undescribed:
        print(f"site: {notebook.relative_to(ROOT)}: {len(undescribed)} figure(s) without a description "
              f"(cell {', '.join(map(str, undescribed))}): no alt text on the page")
    retarget_links(notebook, staged, book, nb, published)
    staged.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return staged


# ------------------------------------------------------------------------ the API pages

def package_tree() -> dict[str, list[str]]:
    """Package name -> its public modules (not subpackages), from the files under src/ragcourse.

    Private names (``_x``) are left out, and so is anything named for a solution or a master."""
    tree: dict[str, list[str]] = {}
    def public(part: str) -> bool:
        return not part.startswith((".", "_")) and not any(w in part.lower() for w in FORBIDDEN_WORDS)

    for init in sorted(PACKAGE.rglob("__init__.py")):
        folder = init.parent
        if not all(public(part) for part in folder.relative_to(PACKAGE.parent).parts):
            continue
        name = ".".join(folder.relative_to(PACKAGE.parent).parts)
        tree[name] = sorted(f"{name}.{p.stem}" for p in folder.glob("*.py") if public(p.stem))
    return tree


def third_party_imports() -> set[str]:
    """Top-level names of every library the package's modules import."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n != "ragcourse" and n not in sys.stdlib_module_names}


def missing_libraries() -> list[str]:
    """The imported libraries this environment does not have: autodoc mocks them."""
    return sorted(n for n in third_party_imports() if importlib.util.find_spec(n) is None)


def first_docstring_line(module: str) -> str:
    """The first paragraph of a module's docstring, on one line, read without importing it."""
    parts = module.split(".")
    path = PACKAGE.parent.joinpath(*parts)
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return paragraph.replace("|", "\\|")


def api_page_name(package: str) -> str:
    return "api/index" if package == "ragcourse" else f"api/{package}"


def write_api_pages(book: Path) -> list[str]:
    """One page per package (automodule for the package and each module); returns the packages."""
    tree = package_tree()
    pages = []
    for package, modules in tree.items():
        children = sorted(p for p in tree if p.rpartition(".")[0] == package)
        page = api_page_name(package)
        lines = ["# API reference" if package == "ragcourse" else f"# `{package}`", ""]
        if package == "ragcourse":
            lines += [
                "`ragcourse` is the helper package every notebook imports, documented here from",
                "its docstrings. Each page below is one subpackage; every module on it lists its",
                "classes and functions with their signatures. To find what a cell calls, search",
                "this site for the name.",
                "",
            ]
        lines += ["```{eval-rst}", f".. automodule:: {package}", "```", ""]
        if children:
            lines += ["| subpackage | what it holds |", "|---|---|"]
            lines += [f"| {{py:mod}}`{child} <{child}>` | {first_docstring_line(child)} |"
                      for child in children]
            lines.append("")
        if modules:
            lines += ["| module | what it holds |", "|---|---|"]
            lines += [f"| {{py:mod}}`{module.rpartition('.')[2]} <{module}>` | {first_docstring_line(module)} |"
                      for module in modules]
            lines.append("")
        for module in modules:
            lines += [f"## `{module.rpartition('.')[2]}`", "", "```{eval-rst}", f".. automodule:: {module}",
                      "   :members:", "   :show-inheritance:", "```", ""]
        target = book / f"{page}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines), encoding="utf-8")
        pages.append(package)
    return pages


# ------------------------------------------------------------------------ table of contents

def doc_name(path: Path, book: Path) -> str:
    return path.relative_to(book).with_suffix("").as_posix()


def write_toc(book: Path, staged_lessons: list[Path], staged_labs: list[Path],
              staged_exercises: list[Path], api_packages: list[str]) -> None:
    """``_toc.yml``: landing page, the three parts, the exercises, the glossary and the API reference."""
    part1 = [p for p in staged_lessons if int(p.name[:2]) <= 6]
    part2 = [p for p in staged_lessons if int(p.name[:2]) > 6]
    chapters = lambda paths: [{"file": doc_name(p, book)} for p in paths]  # noqa: E731
    parts = [
        {"caption": "Part 1 · Embeddings and vector search", "chapters": chapters(part1)},
        {"caption": "Part 2 · The retrieval pipeline", "chapters": chapters(part2)},
        {"caption": "Part 3 · Labs on real text", "chapters": chapters(staged_labs)},
    ]
    exercise_chapter = {"file": "exercises"}
    if staged_exercises:
        exercise_chapter["sections"] = chapters(staged_exercises)
    parts.append({"caption": "Practice", "chapters": [exercise_chapter]})

    packages = sorted(api_packages)

    def api_entry(package: str) -> dict:
        entry: dict = {"file": api_page_name(package)}
        subs = [api_entry(p) for p in packages if p.rpartition(".")[0] == package]
        if subs:
            entry["sections"] = subs
        return entry

    parts.append({"caption": "Reference", "chapters": [{"file": "glossary"}, api_entry("ragcourse")]})
    toc = {"format": "jb-book", "root": "intro", "parts": parts}
    (book / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False, allow_unicode=True),
                                   encoding="utf-8")


# ------------------------------------------------------------------------ configuration

def write_config(book: Path) -> None:
    """``site/_config.yml`` plus what is only known at build time (the mocked libraries)."""
    config = yaml.safe_load((SITE / "_config.yml").read_text(encoding="utf-8"))
    sphinx_config = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx_config["autodoc_mock_imports"] = missing_libraries()
    (book / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
                                      encoding="utf-8")


def copy_mathjax(book: Path) -> None:
    """MathJax 2.7 from the ``jupyter-server-mathjax`` package, served as ``_static/mathjax``.

    It reaches the output through ``html_extra_path`` (``_mathjax/_static/mathjax``), not
    ``html_static_path``: Jupyter Book links every script it finds in a static folder into
    every page, and MathJax loads its own parts."""
    spec = importlib.util.find_spec("jupyter_server_mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("site: jupyter-server-mathjax is missing; run `make site` (it installs "
                         "site/requirements.txt into .venv/site)")
    static = Path(next(iter(spec.submodule_search_locations))) / "static"
    shutil.copytree(static, book / "_mathjax" / "_static" / "mathjax",
                    ignore=shutil.ignore_patterns("localization", "unpacked", "SVG", "*.md"))


# ------------------------------------------------------------------------ the build

def stage(book: Path) -> dict[str, list[Path]]:
    """Everything the build reads, under ``book``."""
    if book.exists():
        shutil.rmtree(book)
    shutil.copytree(SITE, book, ignore=lambda folder, names: [
        n for n in names if n in SITE_FILES_NOT_COPIED or n.endswith(".pyc")] if Path(folder) == SITE
        else [n for n in names if n == "__pycache__"])
    chosen = {"lessons": lessons(), "labs": labs(), "exercises": exercises()}
    published = {p.resolve() for paths in chosen.values() for p in paths}
    staged = {kind: [stage_notebook(p, book, published) for p in paths]
              for kind, paths in chosen.items()}
    api_packages = write_api_pages(book)
    write_toc(book, staged["lessons"], staged["labs"], staged["exercises"], api_packages)
    write_config(book)
    copy_mathjax(book)
    return staged


def build(out: Path, work: Path) -> float:
    """Stage, build with warnings as errors, move the HTML to ``out``; returns the seconds taken."""
    started = time.monotonic()
    work = work.resolve()
    out = out.resolve()
    if work.exists():
        shutil.rmtree(work)
    book = work / "book"
    staged = stage(book)
    env = dict(os.environ, PYTHONHASHSEED="0", MPLBACKEND="agg", JUPYTER_PLATFORM_DIRS="1",
               JUPYTER_PREFER_ENV_PATH="1")
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    command = [str(jupyter_book), "build", str(book), "--path-output", str(work),
               "--builder", "html", "--warningiserror", "--keep-going"]
    done = subprocess.run(command, cwd=ROOT, env=env)
    if done.returncode != 0:
        raise SystemExit(f"site: jupyter-book build failed (exit status {done.returncode}); "
                         "every warning is an error, see above")
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(work / "_build" / "html"), str(out))
    without_alt = drop_file_name_alts(out)
    seconds = time.monotonic() - started
    print(f"site: {len(staged['lessons'])} lessons, {len(staged['labs'])} labs, "
          f"{len(staged['exercises'])} exercise notebooks; {without_alt} image(s) without alt text; "
          f"built in {seconds:.0f} s; "
          f"open {os.path.relpath(out / 'index.html')} or run "
          f"`python -m http.server -d {os.path.relpath(out)}`")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site",
                        help="where the HTML goes (default: build/site)")
    parser.add_argument("--work", type=Path, default=None,
                        help="staging and doctrees (default: OUT next to it, with -work)")
    args = parser.parse_args(argv)
    work = args.work or args.out.with_name(args.out.name + "-work")
    build(args.out, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
