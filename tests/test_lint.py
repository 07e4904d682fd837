"""The linter: ruff, pinned in requirements.txt and configured in pyproject.toml, finds nothing in src/ and tests/."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing_in_src_and_tests():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           "src", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "No module named ruff" not in done.stderr, "ruff is not installed: pip install -r requirements.txt"
    assert done.returncode == 0, "ruff's findings (fix them; `ruff check --fix` fixes some):\n" + done.stdout + done.stderr


def test_ruff_is_pinned_to_the_version_installed():
    pinned = re.search(r"^ruff==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert pinned, "requirements.txt pins ruff exactly"
    done = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["ruff", pinned.group(1)], done.stdout + done.stderr
