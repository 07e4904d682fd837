"""The docs match the tree: CONTRIBUTING's module map names every module of ``src/ragcourse`` and README's layout
every subpackage, neither names one that does not exist, and no tracked file names a path outside the project."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "ragcourse"
MAP_ROW = re.compile(r"^\| `([a-z0-9_.]+)` \|", re.M)           # | `rag.store` | what it holds | used by |
LAYOUT_ROW = re.compile(r"^src/ragcourse/([a-z0-9_]+)/ ", re.M)   # src/ragcourse/rag/   lab 04's RAG system ...
# A path that leaves the project: a sibling folder of it, or the machine's own checkouts (split so that this file
# does not name them itself).
OUTSIDE = re.compile("|".join([r"\.\./" + "shared", "/" + "work/"]))


def modules() -> set[str]:
    """Every module of the package as the map names it (``rag.store``, ``exercises.part1.lesson01``)."""
    return {".".join(path.relative_to(PACKAGE).with_suffix("").parts) for path in PACKAGE.rglob("*.py")
            if path.name not in ("__init__.py", "__main__.py")}


def subpackages() -> set[str]:
    return {path.parent.name for path in PACKAGE.glob("*/__init__.py")}


def test_the_module_map_names_every_module_and_no_other():
    named = MAP_ROW.findall((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert len(named) == len(set(named)), "a module has two rows in CONTRIBUTING's map"
    tree = modules()
    assert sorted(tree - set(named)) == [], "modules missing from CONTRIBUTING's module map"
    assert sorted(set(named) - tree) == [], "CONTRIBUTING's module map names modules that do not exist"


def test_the_readme_layout_names_every_subpackage_and_no_other():
    layout = (ROOT / "README.md").read_text(encoding="utf-8").split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = LAYOUT_ROW.findall(layout)
    assert sorted(subpackages() - set(named)) == [], "subpackages missing from README's layout"
    assert sorted(set(named) - subpackages()) == [], "README's layout names subpackages that do not exist"


def tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True,
                                timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"not a git checkout ({error}): no list of tracked files")
    return [ROOT / name for name in listed.split("\0") if name]


def test_no_tracked_file_names_a_path_outside_the_project():
    found = []
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue   # binary (or a large file stored elsewhere)
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert found == [], "paths outside the project:\n" + "\n".join(found)
