"""The kernel template's start command names a module that exists (a stale path only fell back quietly)."""
from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys

from ragcourse.batch import forkserver


def test_the_template_command_imports_its_entry_point():
    source = inspect.getsource(forkserver.ForkServer.start)
    module, name = re.search(r'"from (ragcourse[\w.]+) import (_\w+);', source).groups()
    assert callable(getattr(importlib.import_module(module), name))
    done = subprocess.run([sys.executable, "-c", f"from {module} import {name}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
