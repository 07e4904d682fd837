"""Lab 04's ingest: find the files of a corpus folder and read them (the chunking: ``engines.chunking``).

A source is one readable, non-empty UTF-8 text file; its id is its path relative to the
corpus root. Each keeps a content hash, a file-type label and a timestamp when one is
visible (a date in the file name or a ``date:`` line at the top). Files that cannot become
a source are reported with the reason, never silently dropped. How a source is cut into
chunks is an ``engines.chunking.policy.ChunkPolicy``.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..engines.chunking.policy import ChunkPolicy  # noqa: F401 (rag.pipeline imports it from here)

FILE_TYPES = {
    ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".rst": "text",
    ".py": "code", ".js": "code", ".ts": "code", ".sql": "code", ".sh": "code", ".c": "code", ".h": "code",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".log": "log",
}
DECISION_RECORD = re.compile(r"adr-\d+", re.IGNORECASE)
DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")
DATE_LINE = re.compile(r"^date:\s*(\d{4}-\d{2}-\d{2})\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class SourceFile:
    """A file read as a source: relative path, text, sha256 of its bytes, type label, timestamp or None."""

    path: str
    text: str
    content_hash: str
    file_type: str
    timestamp: str | None


@dataclass(frozen=True)
class Skipped:
    """A file that did not become a source, and why."""

    path: str
    reason: str


def discover(root: str | Path) -> list[str]:
    """Every regular file under ``root`` (hidden files and folders left out), relative paths, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"corpus must be an existing folder; {str(root)!r} is not")
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        found.append(relative.as_posix())
    return sorted(found)


def file_type(path: str) -> str | None:
    """The type label of a supported file (``decision record`` for names like adr-007.md); None if unsupported."""
    suffix = Path(path).suffix.lower()
    label = FILE_TYPES.get(suffix)
    if label == "markdown" and DECISION_RECORD.search(Path(path).name):
        return "decision record"
    return label


def timestamp_of(path: str, text: str) -> str | None:
    """A date the file shows: in its name, else a ``date: YYYY-MM-DD`` line in its first 20 lines."""
    named = DATE_IN_NAME.search(Path(path).name)
    if named:
        return named.group(1)
    head = "\n".join(text.splitlines()[:20])
    dated = DATE_LINE.search(head)
    return dated.group(1) if dated else None


class Vanished(Exception):
    """The file was listed but is gone when read: it is absent, not unreadable."""


def read_source(root: str | Path, path: str) -> SourceFile | Skipped:
    """The file as a source, or why it is skipped; ``Vanished`` if it no longer exists."""
    label = file_type(path)
    if label is None:
        return Skipped(path, f"unsupported file type {Path(path).suffix or '(no suffix)'!r}")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # a name with bytes that are not UTF-8 cannot be stored as a PostgreSQL text
        return Skipped(path, "file name is not UTF-8")
    try:
        data = (Path(root) / path).read_bytes()
    except FileNotFoundError:
        raise Vanished(path) from None
    except OSError as error:
        return Skipped(path, f"unreadable ({error.strerror or error})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Skipped(path, f"not UTF-8 (byte {error.start})")
    if "\x00" in text:
        return Skipped(path, "holds a NUL byte (binary, not text)")
    if not text.strip():
        return Skipped(path, "empty")
    return SourceFile(path, text, hashlib.sha256(data).hexdigest(), label, timestamp_of(path, text))


def read_all(root: str | Path, paths: list[str]) -> Iterator[SourceFile | Skipped | str]:
    """Each listed file read: a SourceFile, a Skipped, or the bare path of one that vanished."""
    for path in paths:
        try:
            yield read_source(root, path)
        except Vanished:
            yield path

