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
- ``headings``: one chunk per Markdown heading and the text under it (any length);
- ``recursive``: lab 03's recursive splitter (``engines.splitters.recursive_split``: section,
  paragraph, sentence, word, character, merged up to ``size`` characters, no overlap), each
  piece located in the file so that it stays an exact slice.

Sizes are counted in one of two units. The RAG baseline design's policy counts characters (2,000 with 300
of overlap): a chunk of 2,000 characters is often 400 or more of MiniLM's tokens, and the
encoder reads only its first 256, so the rest of the chunk never reaches the dense path.
The default therefore counts the encoder's own tokens (``unit="tokens"``): sentences are
packed up to ``WINDOW_TOKENS``, so every chunk fits the encoder's window with its two
special tokens. ``PgIndex.health`` names any chunk that does not.
"""
from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

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
TITLE_LINE = re.compile(r"^# (.+)$", re.MULTILINE)
SECTION_LINE = re.compile(r"^## (.+)$", re.MULTILINE)
FENCE_LINE = re.compile(r"^```", re.MULTILINE)
POLICIES = ("fixed", "sentences", "headings", "recursive")
RECURSIVE_SIZE = 800          # lab 03's winning chunk size, in characters
DEFAULT_POLICY = "sentences"
UNITS = ("characters", "tokens")
DEFAULT_SIZE = 2000           # the RAG baseline design's policy, in characters
DEFAULT_OVERLAP = 300
WINDOW_TOKENS = 254           # MiniLM reads 256 tokens, two of them [CLS] and [SEP]
WINDOW_OVERLAP = 40
HEADER_RESERVE = 32           # tokens kept free for a chunk's header when headers are on
DEFAULT_UNIT = "tokens"
POLICY_VERSION = "v1"         # the chunkers' own version, in every ``ChunkPolicy.version``

Spans = list[tuple[int, int]]
Length = Callable[[int, int], int]


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
    header: str = ""

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def indexed_text(self) -> str:
        """What is embedded and indexed for full text: the header (when there is one), a new line, the text."""
        return f"{self.header}\n{self.text}" if self.header else self.text


def header_of(text: str, start: int) -> str:
    """A chunk's header: the file's ``# `` title and the ``## `` section the chunk starts in, joined by `` > ``."""
    title = TITLE_LINE.search(text)
    sections = [m.group(1).strip() for m in SECTION_LINE.finditer(text) if m.start() <= start]
    parts = ([title.group(1).strip()] if title else []) + sections[-1:]
    return " > ".join(parts)


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


def sentence_spans(text: str, size: int = DEFAULT_SIZE, overlap: int = DEFAULT_OVERLAP,
                   length: Length | None = None, windows: Callable[[int, int], Spans] | None = None) -> Spans:
    """Whole sentences packed up to ``size``; each chunk after the first repeats about ``overlap``.

    ``length(start, end)`` measures a span (characters by default); a sentence longer than
    ``size`` is cut by ``windows(start, end)`` (fixed windows of characters by default).
    """
    _check_sizes(size, overlap)
    if length is None:
        length = lambda a, b: b - a  # noqa: E731
    if windows is None:
        windows = lambda a, b: [(a + x, a + y) for x, y in fixed_spans(text[a:b], size, overlap)]  # noqa: E731
    pieces: Spans = []
    for start, end in sentence_bounds(text):
        if length(start, end) <= size:
            pieces.append((start, end))
        else:
            pieces.extend(windows(start, end))
    spans: Spans = []
    first = 0
    while first < len(pieces):
        last = first
        while last + 1 < len(pieces) and length(pieces[first][0], pieces[last + 1][1]) <= size:
            last += 1
        spans.append((pieces[first][0], pieces[last][1]))
        if last == len(pieces) - 1:
            break
        following = last + 1
        while following - 1 > first and length(pieces[following - 1][0], pieces[last][1]) <= overlap:
            following -= 1
        while following <= last and length(pieces[following][0], pieces[last + 1][1]) > size:
            following += 1  # the overlap must leave room for the next new sentence
        first = following
    return spans


class TokenRuler:
    """Token counts of any span of one text, from a single pass of a tokenizer with offsets.

    A token counts towards ``[start, end)`` when it lies wholly inside it, so a span that
    starts and ends at white space counts what the tokenizer would count for its text alone
    (special tokens excluded). ``windows`` cuts a span into fixed windows of whole tokens.
    """

    def __init__(self, text: str, tokenizer, size: int, overlap: int):
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False,
                            verbose=False)
        offsets = [(a, b) for a, b in encoded["offset_mapping"] if b > a]
        self.starts = [a for a, _ in offsets]
        self.ends = [b for _, b in offsets]
        self.size, self.overlap = size, overlap

    def __call__(self, start: int, end: int) -> int:
        return max(0, bisect_right(self.ends, end) - bisect_left(self.starts, start))

    def windows(self, start: int, end: int) -> Spans:
        first, stop = bisect_left(self.starts, start), bisect_right(self.ends, end)
        if stop <= first:
            return [(start, end)]
        spans, step = [], self.size - self.overlap
        for a in range(first, stop, step):
            b = min(a + self.size, stop)
            spans.append((self.starts[a], self.ends[b - 1]))
            if b == stop:
                break
        return spans


def heading_spans(text: str) -> Spans:
    """One span per Markdown heading (outside code fences) and the text under it; text before the first too."""
    fences = [m.start() for m in FENCE_LINE.finditer(text)]

    def in_fence(position: int) -> bool:
        return sum(1 for f in fences if f < position) % 2 == 1

    starts = [0] + [m.start() for m in HEADING_LINE.finditer(text) if m.start() > 0 and not in_fence(m.start())]
    ends = starts[1:] + [len(text)]
    return [(a, b) for a, b in zip(starts, ends) if text[a:b].strip()]


def recursive_spans(text: str, size: int = RECURSIVE_SIZE) -> Spans:
    """Lab 03's recursive chunks of ``text`` (no overlap), each found where it sits in ``text``.

    The splitter strips white space from each piece, so the pieces are searched for in order;
    only the white space between them is left out of every span.
    """
    from ..engines.splitters import recursive_split

    spans: Spans = []
    cursor = 0
    for piece in recursive_split(text, size):
        start = text.find(piece, cursor)
        if start < 0:   # cannot happen for a stripped piece of text taken in order; say so if it does
            raise RuntimeError(f"recursive chunk not found in its text after position {cursor}")
        spans.append((start, start + len(piece)))
        cursor = start + len(piece)
    return spans or [(0, len(text))]


def _check_sizes(size: int, overlap: int) -> None:
    check_int("size", size, 1, 10 ** 7)
    check_int("overlap", overlap, 0, size - 1)


@dataclass(frozen=True)
class ChunkPolicy:
    """A chunking policy by name with its sizes and their unit; ``version`` is what the chunk rows record.

    ``unit="tokens"`` counts the encoder's tokens (``tokenizer``: a Hugging Face fast tokenizer;
    MiniLM's own is loaded when none is given). ``headings`` has no size: its chunks can be
    any length, which ``PgIndex.health`` reports against the encoder's window.

    ``headers=True`` gives each chunk a header (``header_of``: the page title and the section
    it starts in), written in front of the chunk's text for the encoder and for full text
    (lab 03's contextual headers). The stored text stays an exact slice of the file; in
    tokens, ``HEADER_RESERVE`` of the ``size`` are left for the header.
    """

    name: str = DEFAULT_POLICY
    size: int | None = None
    overlap: int | None = None
    unit: str | None = None     # the policy's own: characters for ``recursive``, else ``DEFAULT_UNIT``
    headers: bool = False
    tokenizer: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.name not in POLICIES:
            raise ValueError(f"chunking policy must be one of {', '.join(POLICIES)}; got {self.name!r}")
        if self.unit is None:
            object.__setattr__(self, "unit", "characters" if self.name == "recursive" else DEFAULT_UNIT)
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {self.unit!r}")
        tokens = self.unit == "tokens"
        if self.name == "recursive":
            if tokens:
                raise ValueError("the recursive policy counts characters: use unit='characters'")
            if self.size is None:
                object.__setattr__(self, "size", RECURSIVE_SIZE)
            if self.overlap is None:
                object.__setattr__(self, "overlap", 0)
        if self.size is None:
            object.__setattr__(self, "size", WINDOW_TOKENS if tokens else DEFAULT_SIZE)
        if self.overlap is None:
            object.__setattr__(self, "overlap", WINDOW_OVERLAP if tokens else DEFAULT_OVERLAP)
        _check_sizes(self.size, self.overlap)
        if not isinstance(self.headers, bool):
            raise ValueError(f"headers must be True or False; got {self.headers!r}")
        if self.headers and self.unit == "tokens" and self.size <= HEADER_RESERVE + self.overlap:
            raise ValueError(f"size must exceed {HEADER_RESERVE} tokens for the header plus the overlap "
                             f"({self.overlap}); got {self.size}")

    @classmethod
    def recursive(cls, headers: bool = True) -> "ChunkPolicy":
        """Lab 03's winning units: recursive chunks of 800 characters, with the page title and section in front."""
        return cls("recursive", RECURSIVE_SIZE, 0, unit="characters", headers=headers)

    @classmethod
    def seed(cls, name: str = DEFAULT_POLICY) -> "ChunkPolicy":
        """The RAG baseline design's policy (the course's starting point for lab 04): 2,000 characters with 300
        of overlap, counted in characters."""
        return cls(name, DEFAULT_SIZE, DEFAULT_OVERLAP, unit="characters")

    def _version_fields(self) -> list[str]:
        """What ``version`` records after the name: sizes (not for ``headings``), a token unit, headers."""
        sizes = [] if self.name == "headings" else [f"size={self.size}", f"overlap={self.overlap}"]
        unit = ["unit=tokens"] if self.name != "headings" and self.unit == "tokens" else []
        return sizes + unit + (["headers"] if self.headers else [])

    @property
    def version(self) -> str:
        """What the chunk rows record, e.g. ``recursive-v1(size=800,overlap=0,headers)`` (``from_version`` reads it)."""
        fields = self._version_fields()
        return f"{self.name}-{POLICY_VERSION}" + (f"({','.join(fields)})" if fields else "")

    @classmethod
    def from_version(cls, version: object) -> "ChunkPolicy":
        """The policy whose ``version`` is ``version`` (what an index records); ValueError for any other text.

        The fields are read back as ``_version_fields`` writes them, and the policy they give must
        write ``version`` again, so the two cannot drift apart."""
        text = version if isinstance(version, str) else ""
        name, marker, rest = text.partition(f"-{POLICY_VERSION}")
        inside = rest[1:-1] if rest.startswith("(") and rest.endswith(")") else None if rest else ""
        fields: dict[str, str] = {}
        for part in (inside or "").split(",") if inside else []:
            key, _, value = part.partition("=")
            fields[key] = value
        known = {"size", "overlap", "unit", "headers"}
        if not marker or name not in POLICIES or inside is None or not set(fields) <= known:
            raise ValueError(f"chunker version {version!r} is not one this package writes "
                             f"(e.g. {cls.recursive().version!r})")
        numbers = {key: int(fields[key]) for key in ("size", "overlap") if fields.get(key, "").isdigit()}
        unit = fields.get("unit") or (None if name == "headings" else "characters")
        try:
            policy = cls(name, numbers.get("size"), numbers.get("overlap"), unit=unit, headers="headers" in fields)
        except ValueError as error:
            raise ValueError(f"chunker version {version!r}: {error}") from None
        if policy.version != text:
            raise ValueError(f"chunker version {version!r} is not one this package writes (read back: "
                             f"{policy.version!r})")
        return policy

    def _tokenizer(self):
        if self.tokenizer is None:
            from ..engines.dense import load_tokenizer

            object.__setattr__(self, "tokenizer", load_tokenizer())
        return self.tokenizer

    def spans(self, text: str) -> Spans:
        """The character spans of ``text`` under this policy."""
        if self.name == "headings":
            return heading_spans(text)
        if self.name == "recursive":
            return recursive_spans(text, self.size)
        if self.unit == "tokens":
            size = self.size - HEADER_RESERVE if self.headers else self.size
            ruler = TokenRuler(text, self._tokenizer(), size, self.overlap)
            if self.name == "fixed":
                return ruler.windows(0, len(text)) if text else [(0, 0)]
            return sentence_spans(text, size, self.overlap, ruler, ruler.windows)
        if self.name == "fixed":
            return fixed_spans(text, self.size, self.overlap)
        return sentence_spans(text, self.size, self.overlap)

    def chunks(self, text: str) -> list[ChunkSpan]:
        """The chunks of ``text``, numbered from 0, each an exact slice of it."""
        return [ChunkSpan(n, a, b, text[a:b], header_of(text, a) if self.headers else "")
                for n, (a, b) in enumerate(self.spans(text))]


def read_all(root: str | Path, paths: list[str]) -> Iterator[SourceFile | Skipped | str]:
    """Each listed file read: a SourceFile, a Skipped, or the bare path of one that vanished."""
    for path in paths:
        try:
            yield read_source(root, path)
        except Vanished:
            yield path

