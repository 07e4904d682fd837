"""Lab 04's index reports: what a refresh did, and its health checks with the command that repairs each."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .ingest import Skipped


@dataclass(frozen=True)
class RefreshReport:
    """What one refresh did, file by file."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    kept: tuple[str, ...] = ()        # skipped files whose earlier rows were kept
    chunks_written: int = 0
    embedded: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """One line of counts."""
        return (f"{len(self.added)} added, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
                f"{len(self.removed)} removed, {len(self.skipped)} skipped ({len(self.kept)} kept their rows); "
                f"{self.chunks_written} chunks written, {self.embedded} texts embedded, {self.seconds:.1f} s")


@dataclass(frozen=True)
class Check:
    """One health check: its name, whether it passed, how many rows or files it found, and examples.

    ``repair`` says what repairs a failure (``schema.REPAIRS``): ``refresh`` (``PgIndex.refresh``,
    ``index --refresh``), ``policy`` (a refresh with a policy whose chunks fit the encoder's window)
    or ``files`` (the files first, then a refresh). A ``note`` is a count worth seeing that does
    not make the index unhealthy: chunks longer than the encoder's window are searched whole by
    full text and by their first window of tokens on the dense path, a cost the chosen chunking
    accepts (lab 04 measured it), so the report counts them and names examples, and passes.
    """

    name: str
    passed: bool
    found: int
    examples: tuple[str, ...] = ()
    repair: str = "refresh"
    note: bool = False


REPAIR_TEXT = {
    "refresh": "{command} --refresh",
    "policy": "{command} --refresh --policy sentences (chunks packed to the encoder's window)",
    "files": "make the files readable (or delete them), then {command} --refresh",
}


@dataclass(frozen=True)
class HealthReport:
    """Every health check of an index."""

    checks: tuple[Check, ...]
    sources: int
    chunks: int

    @property
    def passed(self) -> bool:
        """No check failed (a note counts, but does not fail)."""
        return not self.failed

    @property
    def failed(self) -> list[str]:
        """The names of the checks that did not pass (notes left out)."""
        return [c.name for c in self.checks if not c.passed and not c.note]

    def repairs(self, command: str = "python -m ragcourse index") -> list[str]:
        """The commands that repair the failed checks, each once, in the checks' order."""
        return list(dict.fromkeys(REPAIR_TEXT[c.repair].format(command=command)
                                  for c in self.checks if not c.passed and not c.note))

    def lines(self, command: str = "python -m ragcourse index") -> list[str]:
        """The report as text, one line a check, then (when one failed) the command that repairs each."""
        out = [f"index: {self.sources} sources, {self.chunks} chunks"]
        for c in self.checks:
            more = f"  e.g. {', '.join(c.examples)}" if c.examples else ""
            fix = f"  (fix: {REPAIR_TEXT[c.repair].format(command=command)})" if not (c.passed or c.note) else ""
            label = "ok  " if c.passed else "note" if c.note else "FAIL"
            out.append(f"  {label}  {c.name}: {c.found}{more}{fix}")
        out.append("health: " + ("every check passed" if self.passed else "FAILED: " + ", ".join(self.failed)))
        return out



def _absent(path: Path) -> bool:
    """Whether nothing is at ``path`` (as ``_file_status`` calls ``missing``); a directory there is not absent."""
    try:
        path.stat()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _file_status(path: Path, digest: str) -> str:
    """``ok``, ``missing`` (no such file), ``unreadable`` (there, but reading fails) or ``changed``."""
    import hashlib

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"
    return "ok" if hashlib.sha256(data).hexdigest() == digest else "changed"
