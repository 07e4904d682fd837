"""OpenMP threads sleep while they wait in every process the course starts (issue 54: three processes of
two torch threads on two cores ran 3 to 10 times slower with libgomp's default spinning;
``benchmarks/wait_policy.py``)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ragcourse.batch.kernels import QUIET_ENV, kernel_environment
from ragcourse.cli.main import PROCESS_DEFAULTS, apply_process_defaults

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_line_sets_the_policy_unless_the_user_did():
    assert apply_process_defaults({}) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert apply_process_defaults({"OMP_WAIT_POLICY": "ACTIVE"}) == {"OMP_WAIT_POLICY": "ACTIVE"}


def test_python_dash_m_ragcourse_runs_with_the_policy_set_before_torch_loads():
    # the entry point sets it first; nothing imported before it loads torch (libgomp reads it once)
    code = ("import os, sys; os.environ.pop('OMP_WAIT_POLICY', None); sys.argv = ['ragcourse', '--help']\n"
            "import ragcourse.cli.main as m\n"
            "assert 'torch' not in sys.modules\n"
            "try:\n    m.entry_point()\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('OMP_WAIT_POLICY'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "PASSIVE"


def test_batch_kernels_and_make_and_jupyterlab_kernels_get_it():
    assert QUIET_ENV["OMP_WAIT_POLICY"] == PROCESS_DEFAULTS["OMP_WAIT_POLICY"]
    assert kernel_environment()["OMP_WAIT_POLICY"] == "PASSIVE"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^export OMP_WAIT_POLICY := PASSIVE$", makefile, re.MULTILINE)
    assert "ipykernel install" in makefile and "--env OMP_WAIT_POLICY PASSIVE" in makefile
