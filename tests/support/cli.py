"""What the command-line tests share: ``main`` run in this process, its status, stdout and stderr."""
from __future__ import annotations

from ragcourse.cli.main import main


def run_main(argv: list[str], capsys, **where) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``main(argv, **where)``; a usage error's ``SystemExit`` is its status."""
    try:
        status = main(argv, **where)
    except SystemExit as stop:
        status = stop.code
    out, err = capsys.readouterr()
    return status, out, err
