"""Lab 04's ingest: find the files of a corpus folder, read them, and cut them into chunks.

A source is one readable, non-empty UTF-8 text file; its id is its path relative to the
corpus root. Each keeps a content hash, a file-type label and a timestamp when one is
visible (a date in the file name or a ``date:`` line at the top). Files that cannot become
a source are reported with the reason, never silently dropped.

Three chunking policies, each a function from a text to character spans, so that every
chunk is an exact slice ``text[start:end]`` of its file:

- ``fixed``: windows of ``size`` characters, each starting ``size - overlap`` after the last;
- ``sentences`` (the default): whole sentences packed up to ``size`` characters, the next
  chunk starting with the sentences that cover the last ``overlap`` characters;
- ``headings``: one chunk per Markdown heading and the text under it (any length).

Sizes are characters (2,000 and 300 by default, as in seed 003), not tokens.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..lesson.params import check_int

FILE_TYPES = {
    ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".rst": "text",
    ".py": "code", ".js": "code", ".ts": "code", ".sql": "code", ".sh": "code", ".c": "code", ".h": "code",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".log": "log",
}
DECISION_RECORD = re.compile(r"adr-\d+", re.IGNORECASE)
DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")
DATE_LINE = re.compile(r"^date:\s*(\d{4}-\d{2}-\d{2})\s*$", re.IGNORECASE | re.MULTILINE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
HEADING_LINE = re.compile(r"^#{1,6} ", re.MULTILINE)
FENCE_LINE = re.compile(r"^```", re.MULTILINE)
POLICIES = ("fixed", "sentences", "headings")
DEFAULT_POLICY = "sentences"
DEFAULT_SIZE = 2000
DEFAULT_OVERLAP = 300

Spans = list[tuple[int, int]]


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


@dataclass(frozen=True)
class ChunkSpan:
    """One chunk of a source: its ordinal, character span, text and sha256 of the text."""

    ordinal: int
    start: int
    end: int
    text: str

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


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


def fixed_spans(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP) -> Spans:
    """Windows of ``size`` characters starting every ``size - overlap`` characters; the last one may be shorter."""
    _check_sizes(size, overlap)
    spans, start = [], 0
    while True:
        end = min(start + size, len(text))
        spans.append((start, end))
        if end == len(text):
            return spans
        start = end - overlap


def sentence_bounds(text: str) -> Spans:
    """The spans of the sentences of ``text``: cut after ``.``, ``!`` or ``?`` and at blank lines."""
    bounds, start = [], 0
    for match in SENTENCE_END.finditer(text):
        if match.start() > start:
            bounds.append((start, match.start()))
        start = match.end()
    if start < len(text):
        bounds.append((start, len(text)))
    return [(a, b) for a, b in bounds if text[a:b].strip()]


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` by ``sentence_bounds``' rule, as strings."""
    return [text[a:b] for a, b in sentence_bounds(text)]


def sentence_spans(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP) -> Spans:
    """Whole sentences packed up to ``size`` characters; each chunk after the first repeats ~``overlap``.

    A sentence longer than ``size`` is cut into fixed windows of its own.
    """
    _check_sizes(size, overlap)
    pieces: Spans = []
    for start, end in sentence_bounds(text):
        if end - start <= size:
            pieces.append((start, end))
        else:
            pieces.extend((start + a, start + b) for a, b in fixed_spans(text[start:end], size, overlap))
    spans: Spans = []
    first = 0
    while first < len(pieces):
        last = first
        while last + 1 < len(pieces) and pieces[last + 1][1] - pieces[first][0] <= size:
            last += 1
        spans.append((pieces[first][0], pieces[last][1]))
        if last == len(pieces) - 1:
            break
        following = last + 1
        while following - 1 > first and pieces[last][1] - pieces[following - 1][0] <= overlap:
            following -= 1
        while pieces[last + 1][1] - pieces[following][0] > size:
            following += 1  # the overlap must leave room for the next new sentence
        first = following
    return spans


def heading_spans(text: str) -> Spans:
    """One span per Markdown heading (outside code fences) and the text under it; text before the first too."""
    fences = [m.start() for m in FENCE_LINE.finditer(text)]

    def in_fence(position: int) -> bool:
        return sum(1 for f in fences if f < position) % 2 == 1

    starts = [0] + [m.start() for m in HEADING_LINE.finditer(text) if m.start() > 0 and not in_fence(m.start())]
    ends = starts[1:] + [len(text)]
    return [(a, b) for a, b in zip(starts, ends) if text[a:b].strip()]


def _check_sizes(size: int, overlap: int) -> None:
    check_int("size", size, 1, 10 ** 7)
    check_int("overlap", overlap, 0, size - 1)


@dataclass(frozen=True)
class ChunkPolicy:
    """A chunking policy by name with its sizes; ``version`` is what the chunk rows record."""

    name: str = DEFAULT_POLICY
    size: int = DEFAULT_SIZE
    overlap: int = DEFAULT_OVERLAP

    def __post_init__(self):
        if self.name not in POLICIES:
            raise ValueError(f"chunking policy must be one of {', '.join(POLICIES)}; got {self.name!r}")
        _check_sizes(self.size, self.overlap)

    @property
    def version(self) -> str:
        if self.name == "headings":
            return "headings-v1"
        return f"{self.name}-v1(size={self.size},overlap={self.overlap})"

    def spans(self, text: str) -> Spans:
        """The character spans of ``text`` under this policy."""
        if self.name == "fixed":
            return fixed_spans(text, self.size, self.overlap)
        if self.name == "sentences":
            return sentence_spans(text, self.size, self.overlap)
        return heading_spans(text)

    def chunks(self, text: str) -> list[ChunkSpan]:
        """The chunks of ``text``, numbered from 0, each an exact slice of it."""
        return [ChunkSpan(n, a, b, text[a:b]) for n, (a, b) in enumerate(self.spans(text))]


def read_all(root: str | Path, paths: list[str]) -> Iterator[SourceFile | Skipped | str]:
    """Each listed file read: a SourceFile, a Skipped, or the bare path of one that vanished."""
    for path in paths:
        try:
            yield read_source(root, path)
        except Vanished:
            yield path

