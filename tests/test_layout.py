"""The package's layout: subpackages only, no folder of more than 15 modules, and imports that run one way.

The rules, read from the bottom up:

* ``toolkit`` (parameter checks, tables, figures, headline records, stored sweeps) stands alone;
* ``world`` (the fictional world) may use ``toolkit``;
* ``retrieval`` (the techniques the lessons teach, shared with the labs) may use both;
* Part 3 never uses the fictional world: ``corpus`` (the real corpus and its question sets)
  may use ``toolkit``; ``engines`` (chunk, encode, index, search, fuse) may use ``corpus``,
  ``retrieval`` and ``toolkit``; ``rag`` (lab 04's PostgreSQL system) may use the engines;
  ``labs`` (the labs' own measurements) may use all of Part 3, and the RAG system never
  imports a lab's measurements;
* ``batch`` (running notebooks) and ``exercises`` (checks and grading) sit above them;
* ``cli`` (the command line) is on top, and nothing imports it.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ragcourse"
MAX_MODULES = 15
PART3 = {"corpus", "engines", "rag", "labs"}
TOP = {"batch", "exercises", "cli"}
SUBPACKAGES = ("toolkit", "world", "retrieval", "corpus", "engines", "rag", "labs", "batch", "exercises", "cli")
FORBIDDEN = {
    "toolkit": {"world", "retrieval"} | PART3 | TOP,
    "world": {"retrieval"} | PART3 | TOP,
    "retrieval": PART3 | TOP,
    "corpus": {"world", "retrieval", "engines", "rag", "labs"} | TOP,
    "engines": {"world", "rag", "labs"} | TOP,
    "rag": {"world", "labs"} | TOP,
    "labs": {"world"} | TOP,
    "batch": PART3 | {"exercises", "cli"},
    "exercises": {"cli"},
    "cli": set(),
}


def imported_modules(source: str, module: str, is_package: bool = False) -> list[str]:
    """Absolute names of the ragcourse modules that ``source`` (the module ``module``) imports.

    In a package's ``__init__`` (``is_package``), ``.`` is the package itself, not its parent."""
    package_parts = module.split(".") if is_package else module.split(".")[:-1]
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[:len(package_parts) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                names += [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            else:
                names.append(node.module or "")
    return [name for name in names if name == "ragcourse" or name.startswith("ragcourse.")]


def subpackage_of(module: str) -> str | None:
    """``world`` for ``ragcourse.world.corpus``; None for the top-level modules."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in SUBPACKAGES) else None


def is_package(module: str) -> bool:
    """True for ``ragcourse.engines`` (its source is an ``__init__.py``), False for ``ragcourse.engines.dense``."""
    return (PACKAGE.parent / module.replace(".", "/") / "__init__.py").is_file()


def violations(source: str, module: str) -> list[str]:
    """Every import of ``source`` that breaks the direction rules, as 'importer -> imported'."""
    own = subpackage_of(module)
    if own is None:
        return []
    found = []
    for target in imported_modules(source, module, is_package(module)):
        if subpackage_of(target) in FORBIDDEN[own]:
            found.append(f"{module} -> {target}")
    return found


def package_modules() -> dict[str, str]:
    """Every module of the package, by its dotted name, with its source."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(relative.parts)
        modules[name.removesuffix(".__init__")] = path.read_text()
    return modules


def test_only_init_and_main_sit_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py"]
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} <= set(SUBPACKAGES)


def test_no_folder_holds_more_than_fifteen_modules():
    """A folder that grows past fifteen modules is split by what it holds (as labs/ was into corpus, engines, rag)."""
    folders = {path.parent for path in PACKAGE.rglob("*.py")}
    crowded = {str(folder.relative_to(PACKAGE.parent)): n for folder in folders
               if (n := len([p for p in folder.glob("*.py") if p.name != "__init__.py"])) > MAX_MODULES}
    assert crowded == {}


def test_every_subpackage_has_rules():
    assert set(FORBIDDEN) == set(SUBPACKAGES)
    assert all("cli" in forbidden for name, forbidden in FORBIDDEN.items() if name != "cli"), "nothing imports cli"


def test_imports_run_one_way():
    broken = [v for name, source in package_modules().items() for v in violations(source, name)]
    assert broken == []


def test_no_circle_between_subpackages():
    edges = {sub: set() for sub in SUBPACKAGES}
    for name, source in package_modules().items():
        own = subpackage_of(name)
        for target in imported_modules(source, name, is_package(name)):
            other = subpackage_of(target)
            if own and other and other != own:
                edges[own].add(other)

    def reaches(start: str, goal: str, seen: frozenset = frozenset()) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt}))
                   for nxt in edges[start])

    assert [sub for sub in SUBPACKAGES if reaches(sub, sub)] == []


@pytest.mark.parametrize("line, module", [
    ("from ..retrieval.search import KeywordIndex", "ragcourse.world.corpus"),
    ("from ragcourse.batch import runner", "ragcourse.retrieval.fusion"),
    ("import ragcourse.world.rng", "ragcourse.toolkit.tables"),
    ("from ..world import corpus", "ragcourse.corpus.apidocs"),
    ("from ..labs.ladder import stage_scores", "ragcourse.rag.pipeline"),
    ("from ..rag.store import PgIndex", "ragcourse.engines.dense"),
    ("from ..cli import search", "ragcourse.labs.practice"),
    ("from ragcourse.cli.main import main", "ragcourse.batch.runner"),
    ("from ..engines.dense import DenseEncoder", "ragcourse.corpus.queries"),
])
def test_a_forbidden_import_is_caught(line, module):
    assert violations(line, module) == [f"{module} -> " + imported_modules(line, module)[0]]


def test_allowed_imports_pass():
    assert violations("from ..toolkit.params import check_int\nfrom .rng import make_rng",
                      "ragcourse.world.llm") == []
    assert imported_modules("from . import rng", "ragcourse.world.text") == ["ragcourse.world.rng"]


def test_a_packages_init_is_read_from_the_package_itself():
    """``from ..toolkit.lazy import lazy_exports`` in ``world/__init__.py`` names ``ragcourse.toolkit.lazy``, so an
    ``__init__`` that imported against the grain (``from ..labs import ...`` in ``engines``) is caught."""
    assert imported_modules("from ..toolkit.lazy import lazy_exports", "ragcourse.world", is_package=True) == [
        "ragcourse.toolkit.lazy"]
    assert imported_modules("from .lazy import lazy_exports", "ragcourse.toolkit", is_package=True) == [
        "ragcourse.toolkit.lazy"]
    assert violations("from ..labs.practice import rrf", "ragcourse.engines") == [
        "ragcourse.engines -> ragcourse.labs.practice"]


def test_the_tests_have_one_conftest():
    """Fixtures live in ``tests/conftest.py``; a second conftest.py would shadow the first.

    pytest imports every conftest.py outside a package under the one module name ``conftest``,
    so which file that name means then depends on collection order (a fresh clone's CI failed so).
    """
    tests = Path(__file__).parent
    found = sorted(p.relative_to(tests).as_posix() for p in tests.rglob("conftest.py"))
    assert found == ["conftest.py"], f"move fixtures into tests/conftest.py, not {found}"


def imports_of_test_files(source: str) -> list[str]:
    """The modules ``source`` imports that are test files, conftest, or helpers kept beside them (relative
    imports, ``tests.*``, ``test_*``, ``*_support``) rather than in ``tests/support/``."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return [name for name in names if name.startswith(".") or name.split(".")[0] in ("conftest", "tests")
            or name.split(".")[0].startswith("test_") or name.split(".")[0].endswith("_support")]


def test_no_test_file_imports_another_test_file_or_conftest():
    """What two test files share lives in ``tests/support/`` (fixtures in ``conftest.py``): a test file that
    imports another has that file's fixtures and constants under its own name, and depends on which
    directories pytest put on ``sys.path``."""
    tests = Path(__file__).parent
    found = {path.relative_to(tests).as_posix(): wrong for path in sorted(tests.rglob("*.py"))
             if "support" not in path.relative_to(tests).parts and (wrong := imports_of_test_files(path.read_text()))}
    assert found == {}, f"import these from tests/support/ instead: {found}"


@pytest.mark.parametrize("source, wrong", [
    ("from test_browser import page", ["test_browser"]),
    ("import conftest", ["conftest"]),
    ("from .test_lab04_database import FakeEncoder", [".test_lab04_database"]),
    ("from tests.support.database import SMALL", ["tests.support.database"]),
    ("from cli_support import run_main", ["cli_support"]),
    ("from support.database import SMALL\nimport ragcourse.rag\nfrom ragcourse import cli", []),
], ids=["test file", "conftest", "relative", "tests package", "helper beside the tests", "support and package"])
def test_an_import_of_a_test_file_is_seen(source, wrong):
    assert imports_of_test_files(source) == wrong


def test_every_lab_has_its_marks():
    """``support.marks`` says what each lab's notebook and each lab's exercise set reads: a new lab needs a line."""
    from ragcourse.batch.notebooks import lab_notebooks
    from ragcourse.exercises.framework import EXERCISE_SETS, is_lab_set, set_number
    from support.marks import EXERCISE_GROUPS, LAB_GROUPS

    assert set(LAB_GROUPS) == set(lab_notebooks())
    assert set(EXERCISE_GROUPS) == {set_number(name) for name in EXERCISE_SETS if is_lab_set(name)}


def classes_defined_twice(modules: dict[str, str]) -> dict[str, list[str]]:
    """Every class name that two modules define at their top level (private ones too): name -> the modules.

    Sphinx resolves a class by its bare name across the whole site, so two classes of one name make every
    cross-reference to either ambiguous (the site builds with warnings as errors); a reader meets the same
    trap in a traceback or a search.
    """
    where: dict[str, list[str]] = {}
    for name, source in modules.items():
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(name)
    return {cls: found for cls, found in sorted(where.items()) if len(found) > 1}


def test_no_class_name_is_defined_twice():
    twice = classes_defined_twice(package_modules())
    assert twice == {}, "rename one of each (say what it is): " + "; ".join(
        f"{cls} in {' and '.join(found)}" for cls, found in twice.items())


def test_a_class_defined_twice_is_seen():
    """Two modules that each define ``Answer`` (as the grader's wire and the RAG reader once did) are caught;
    a nested class, a function and an import of the same name are not definitions at the top level."""
    modules = {
        "ragcourse.exercises.wire": "class Answer:\n    pass\nclass Link:\n    pass\n",
        "ragcourse.rag.reader": "from dataclasses import dataclass\n@dataclass\nclass Answer:\n    text: str\n",
        "ragcourse.labs.ladder": "from ..rag.reader import Answer\ndef Link():\n    class Answer:\n        pass\n",
    }
    assert classes_defined_twice(modules) == {"Answer": ["ragcourse.exercises.wire", "ragcourse.rag.reader"]}
    assert classes_defined_twice({"a": "class _Parser: pass", "b": "class _Parser: pass"}) == {"_Parser": ["a", "b"]}



MAX_LINES = 500


def long_modules(modules: dict[str, str], limit: int = MAX_LINES) -> dict[str, int]:
    """Every module of more than ``limit`` physical lines: name -> its lines."""
    return {name: n for name, source in sorted(modules.items()) if (n := len(source.splitlines())) > limit}


def test_no_module_is_over_five_hundred_lines():
    """A module past 500 lines is split by concept (what it holds), not cut in half."""
    assert long_modules(package_modules()) == {}


def test_a_long_module_is_seen():
    modules = {"ragcourse.rag.store": "x = 1\n" * 501, "ragcourse.rag.search": "x = 1\n" * 500,
               "ragcourse.rag.reader": '"""a docstring\n' + "\n" * 499 + '"""\n'}
    assert long_modules(modules) == {"ragcourse.rag.store": 501, "ragcourse.rag.reader": 501}
