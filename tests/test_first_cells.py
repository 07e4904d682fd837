"""What a notebook imports, and from where: each subpackage offers the names its notebooks use (``toolkit.lazy``),
imported on first use, each name from one subpackage; a notebook's first cell imports from those subpackages,
alphabetised, nothing unused, from few modules."""
from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragcourse.batch.notebooks import lab_notebooks, lesson_notebooks
from ragcourse.toolkit.lazy import lazy_exports

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ragcourse"
OFFERING = ("toolkit", "world", "retrieval", "corpus", "engines", "rag", "labs")   # the subpackages with exports
HEAVY = ("torch", "sentence_transformers", "transformers", "sklearn", "numpy", "matplotlib", "psycopg", "pgserver")
# A first cell imports from at most this many modules of ragcourse: one per subpackage it uses (lab 03 uses six),
# plus a deep import for a name its subpackage does not offer (lab 03's generator MODEL_NAME).
MAX_RAGCOURSE_MODULES = 7
MASTERS = Path(__file__).resolve().parents[1] / "exercises" / "masters"


def offered(subpackage: str) -> list[str]:
    return list(importlib.import_module(f"ragcourse.{subpackage}").__all__)


def submodules(subpackage: str) -> set[str]:
    folder = PACKAGE / subpackage
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {p.parent.name for p in folder.glob("*/__init__.py")}


# ------------------------------------------------------------------------ the subpackages' exports

def test_every_offered_name_resolves_in_a_fresh_interpreter():
    """Each name of each ``__all__`` imports (a renamed function or a typo in a list fails here), and touching it
    keeps it on the package."""
    code = ("import importlib, sys\n"
            f"for sub in {OFFERING!r}:\n"
            "    package = importlib.import_module('ragcourse.' + sub)\n"
            "    for name in package.__all__:\n"
            "        getattr(package, name)\n"
            "        assert name in vars(package), (sub, name)\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "ok", done.stderr[-3000:]


def test_importing_the_subpackages_imports_none_of_their_modules():
    """``import ragcourse.engines`` loads no module of the package and no heavy library; a name does, when touched."""
    code = ("import sys, json\n"
            + "".join(f"import ragcourse.{sub}\n" for sub in OFFERING)
            + "before = sorted(m for m in sys.modules if m.startswith('ragcourse'))\n"
            f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
            "from ragcourse.engines import chunk_corpus\n"
            "after = sorted(m for m in sys.modules if m.startswith('ragcourse'))\n"
            "print(json.dumps([before, heavy, after]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    before, heavy, after = json.loads(done.stdout)
    assert before == sorted(["ragcourse", "ragcourse.toolkit.lazy"] + [f"ragcourse.{sub}" for sub in OFFERING])
    assert heavy == []
    assert "ragcourse.engines.chunking.text_chunks" in after and "ragcourse.engines.dense" not in after


def test_no_name_is_offered_by_two_subpackages():
    where: dict[str, list[str]] = {}
    for sub in OFFERING:
        for name in offered(sub):
            where.setdefault(name, []).append(sub)
    assert {name: subs for name, subs in where.items() if len(subs) > 1} == {}


@pytest.mark.parametrize("subpackage", OFFERING)
def test_no_offered_name_is_a_module_of_its_subpackage(subpackage):
    """Once ``ragcourse.rag.search`` is imported, ``ragcourse.rag.search`` is that module: a function of that name
    offered by the package would be shadowed."""
    assert sorted(set(offered(subpackage)) & submodules(subpackage)) == []


@pytest.mark.parametrize("subpackage", OFFERING)
def test_dir_lists_the_offered_names(subpackage):
    package = importlib.import_module(f"ragcourse.{subpackage}")
    assert set(package.__all__) <= set(dir(package))
    assert package.__all__ == sorted(package.__all__)


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'ragcourse.engines' has no attribute 'no_such_name'"):
        importlib.import_module("ragcourse.engines").no_such_name


def test_a_name_listed_under_two_modules_is_refused():
    with pytest.raises(ValueError, match="'scores' is listed under both 'a' and 'b'"):
        lazy_exports("ragcourse.labs", {"a": ["scores"], "b": ["scores", "other"]})


def test_a_submodule_is_still_importable_from_its_package():
    """``from ragcourse.rag import generator`` (a module, not an offered name) still imports the module."""
    from ragcourse.rag import generator
    assert generator.__name__ == "ragcourse.rag.generator"


# ------------------------------------------------------------------------ the notebooks' first cells

def first_cell(path: Path) -> str:
    cell = next(c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    return "".join(cell["source"])


def imports_of(source: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """``(module, [(name, bound name)])`` per import statement, in order; ``import a.b`` binds ``a``."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            found.append((node.module, [(a.name, a.asname or a.name) for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, [(a.name, a.asname or a.name.split(".")[0])]) for a in node.names]
    return found


def name_order(name: str) -> tuple:
    """isort's order within an import: CONSTANTS, then Classes, then the rest, each alphabetically."""
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[0].isupper() else 2
    return kind, name.lower(), name


def first_cell_problems(source: str, rest: str) -> list[str]:
    """What is wrong with a first cell ``source``, whose notebook's other code is ``rest``."""
    problems = []
    imports = imports_of(source)
    ours = [(module, names) for module, names in imports if module.startswith("ragcourse.")]
    for module, names in ours:
        parts = module.split(".")
        package = importlib.import_module(".".join(parts[:2]))
        deep = [name for name, _ in names if len(parts) > 2 and name in getattr(package, "__all__", ())]
        if deep:
            problems.append(f"import {', '.join(deep)} from {'.'.join(parts[:2])}, not {module}")
        if [n for n, _ in names] != sorted((n for n, _ in names), key=name_order):
            problems.append(f"the names from {module} are not in order")
    modules = [module for module, _ in ours]
    if modules != sorted(modules) or len(set(modules)) != len(modules):
        problems.append(f"the ragcourse modules are not each once, in alphabetical order: {modules}")
    if len(set(modules)) > MAX_RAGCOURSE_MODULES:
        problems.append(f"imports from {len(set(modules))} modules of ragcourse (at most {MAX_RAGCOURSE_MODULES})")
    body = ast.parse(source).body
    code = "\n".join(ast.get_source_segment(source, node) or "" for node in body
                     if not isinstance(node, (ast.Import, ast.ImportFrom))) + "\n" + rest
    unused = [bound for _, names in imports for _, bound in names if not re.search(rf"\b{re.escape(bound)}\b", code)]
    if unused:
        problems.append(f"imported but not used: {unused}")
    return problems


def notebooks() -> list[Path]:
    """The lessons, the labs and the exercises' masters (a student version's first cell is its master's, checked by
    ``tests/exercises``; it would leave unused what the solutions use)."""
    return sorted(p for p in [*lesson_notebooks().values(), *lab_notebooks().values(), *MASTERS.rglob("*.ipynb")])


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: ("master-" if MASTERS in p.parents else "") + p.stem[:24])
def test_the_first_cell_imports_from_the_subpackages(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    rest = "\n".join("".join(c["source"]) for c in cells[1:])
    assert first_cell_problems(first_cell(path), rest) == []


@pytest.mark.parametrize("source, rest, problem", [
    ("from ragcourse.world.corpus import build_world", "build_world(1)", "import build_world from ragcourse.world"),
    ("from ragcourse.world import tokenize, build_world", "tokenize, build_world", "the names from ragcourse.world"),
    ("from ragcourse.world import build_world\nfrom ragcourse.toolkit import check_int", "build_world, check_int",
     "not each once, in alphabetical order"),
    ("from ragcourse.world import build_world, tokenize", "build_world(1)", "imported but not used: ['tokenize']"),
    ("import matplotlib.pyplot as plt\nfrom collections import Counter", "Counter()", "not used: ['plt']"),
], ids=["deep", "names out of order", "modules out of order", "unused", "unused library"])
def test_a_wrong_first_cell_is_seen(source, rest, problem):
    assert any(problem in found for found in first_cell_problems(source, rest))


def test_a_deep_import_of_a_name_no_subpackage_offers_passes():
    source = "from ragcourse.rag import Generator\nfrom ragcourse.rag.generator import MODEL_NAME as GENERATOR"
    assert first_cell_problems(source, "Generator(GENERATOR)") == []
