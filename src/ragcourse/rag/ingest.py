"""Lab 04's ingest: find the files of a corpus folder, read them, and refresh an index from them.

A source is one readable, non-empty UTF-8 text file; its id is its path relative to the
corpus root. Each keeps a content hash, a file-type label and a timestamp when one is
visible (a date in the file name or a ``date:`` line at the top). Files that cannot become
a source are reported with the reason, never silently dropped. How a source is cut into
chunks is an ``engines.chunking.policy.ChunkPolicy``.

``Refresh`` is ``store.PgIndex``'s refresh (a mixin of it): the files in, one transaction per
source, the term statistics kept in step; ``RefreshReport`` says what it did, file by file.
"""
from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from .health import DAMAGED_SOURCES, STALE_TENANTS, absent
from .schema import DEFAULT_TENANT, TEXT_INDEXES, check_tenant, schema_number

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


def _to_date(text: str | None):
    import datetime

    if text is None:
        return None
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        return None


class Refresh:
    """``PgIndex``'s refresh, kept here with the files it reads: bring the index in line with a folder.

    One transaction per source (a first load: one in all), the BM25 term statistics kept in step
    with each source's rows, and whatever the health checks find damaged written again. A mixin:
    it uses the index's connection, ``sql``, ``policy``, ``encoder``, tenants and ``create``.
    """

    def stored_sources(self) -> dict[str, tuple[str, str]]:
        """path -> (content hash, tenant) of every stored source this index's refreshes own."""
        with self.connection.transaction():
            rows = self.connection.execute(self.sql("SELECT path, content_hash, tenant FROM {s}.sources s "
                                                    "WHERE %(tenant)s::text IS NULL OR s.tenant = %(tenant)s"),
                                           self.scope).fetchall()
        return {path: (digest, tenant) for path, digest, tenant in rows}

    def stale_versions(self) -> set[str]:
        """Sources to write again: a chunk of another chunker or embedding version, a chunk whose span does not
        match its text or (with an encoder) without a vector, or no chunk at all."""
        with self.connection.transaction():
            rows = self.connection.execute(self.sql(
                "SELECT DISTINCT s.path FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
                "WHERE (c.chunker <> %(chunker)s OR c.embedding_version IS DISTINCT FROM %(embedding)s) "
                "AND (%(tenant)s::text IS NULL OR s.tenant = %(tenant)s)"), self.scope).fetchall()
            damaged = self.connection.execute(self.sql(DAMAGED_SOURCES), self.scope).fetchall()
        return {path for (path,) in rows} | {path for (path,) in damaged}

    def corpus_root(self) -> str | None:
        """The folder this index's sources were last refreshed from (its tenant's, with ``tenant``)."""
        meta = self.meta()
        if self.tenant is None:
            return meta.get("corpus_root")
        with self.connection.transaction():
            row = self.connection.execute(self.sql("SELECT corpus_root FROM {s}.tenants WHERE tenant = %s"),
                                          [self.tenant]).fetchone() if schema_number(meta.get("schema_version")) >= 3 else None
        if row is not None and row[0] is not None:
            return row[0]
        # an index of schema version 2 or before, or a tenant loaded without a folder: the schema's own
        return meta.get("corpus_root") if self.tenant == DEFAULT_TENANT else None

    def refresh(self, root: str | Path, progress: Callable[[int, int], None] | None = None) -> RefreshReport:
        """Bring the index in line with the files under ``root``, one transaction per source.

        Besides changed files, a refresh writes again every source a health check finds damaged
        (no chunk, a span that does not match, a missing vector, an old version), deletes chunks
        without a source, and recomputes the BM25 term statistics whenever they do not match
        the chunks: whatever ``health`` reports, except unreadable files, a refresh repairs.
        """
        started = time.perf_counter()
        root = Path(root)
        paths = discover(root)
        items = list(read_all(root, paths))
        tenants = {self.tenant_of(item.path) for item in items if isinstance(item, SourceFile)}
        self.create(tenants | ({self.tenant} if self.tenant else set()))
        with self.connection.transaction():
            meta = {"chunker": self.policy.version, "embedding": self.embedding_version or "none"}
            if self.tenant is None or (self.tenant == DEFAULT_TENANT and self._only_tenant()):
                meta["corpus_root"] = str(root.resolve())
            self._set_meta(self.connection, meta)
            self.connection.execute(self.sql("UPDATE {s}.tenants SET corpus_root = %s WHERE tenant = ANY(%s)"),
                                    [str(root.resolve()), [self.tenant] if self.tenant else sorted(tenants)])
        stored = self.stored_sources()
        stale = self.stale_versions()
        added, updated, unchanged, skipped, kept = [], [], [], [], []
        seen: set[str] = set()
        pending: list[SourceFile] = []
        for item in items:
            if isinstance(item, str):
                continue  # vanished between listing and reading: absent
            seen.add(item.path)
            if isinstance(item, Skipped):
                skipped.append(item)
                if item.path in stored:
                    kept.append(item.path)
                continue
            before = stored.get(item.path)
            if before == (item.content_hash, self.tenant_of(item.path)) and item.path not in stale:
                unchanged.append(item.path)
                continue
            (updated if before else added).append(item.path)
            pending.append(item)
        chunks_written, embedded = self._write_sources(pending, progress, first_load=bool(pending) and self._empty())
        removed, listed = [], set(paths)
        for path in sorted(set(stored) - seen):
            if path in listed or absent(root / path):   # vanished when read, or nothing there
                removed.append(path)
            else:  # there, but not a regular file (a directory, say): a failed observation keeps the rows
                skipped.append(Skipped(path, "unreadable (not a regular file)"))
                kept.append(path)
        for path in removed:
            with self.connection.transaction():
                row = self.connection.execute(self.sql("SELECT source_id FROM {s}.sources WHERE path = %s AND "
                                                       "tenant = %s"), [path, stored[path][1]]).fetchone()
                if row is not None:
                    self._count_terms(row[0], -1)
                    self.connection.execute(self.sql("DELETE FROM {s}.sources WHERE source_id = %s"), [row[0]])
        self._repair_statistics()
        return RefreshReport(tuple(added), tuple(updated), tuple(unchanged), tuple(removed), tuple(skipped),
                             tuple(kept), chunks_written, embedded, time.perf_counter() - started)

    def _empty(self) -> bool:
        with self.connection.transaction():
            return self.connection.execute(self.sql("SELECT NOT EXISTS (SELECT 1 FROM {s}.sources)")).fetchone()[0]

    def _only_tenant(self) -> bool:
        """Whether no source of another tenant than this index's is stored (so the schema's root is its)."""
        with self.connection.transaction():
            return self.connection.execute(self.sql("SELECT NOT EXISTS (SELECT 1 FROM {s}.sources WHERE tenant <> %s)"),
                                           [self.tenant]).fetchone()[0]

    def _repair_statistics(self) -> None:
        """Delete chunks without a source; recompute the term statistics if they do not match the chunks (every
        tenant's: they are counted together); then the planner's statistics. One transaction."""
        with self.connection.transaction():
            orphans = self.connection.execute(self.sql(
                "DELETE FROM {s}.chunks c WHERE NOT EXISTS (SELECT 1 FROM {s}.sources s WHERE s.source_id = "
                "c.source_id)")).rowcount
            every = dict(self.scope, tenant=None)
            stale = self.connection.execute(self.sql(STALE_TENANTS), every).fetchone()
            if orphans or stale:
                self._count_all_terms()
        with self.connection.transaction():
            self.connection.execute(self.sql("ANALYZE {s}.sources, {s}.chunks, {s}.lexemes, {s}.collection"))

    def _drop_text_indexes(self) -> None:
        """Drop the full-text GIN indexes, in the open transaction."""
        for name in TEXT_INDEXES:
            self.connection.execute(self.sql(f"DROP INDEX IF EXISTS {{s}}.{name}"))

    def _create_text_indexes(self) -> None:
        """Build the full-text GIN indexes, in the open transaction."""
        for name, column in TEXT_INDEXES.items():
            self.connection.execute(self.sql(f"CREATE INDEX IF NOT EXISTS {name} ON {{s}}.chunks USING gin ({column})"))

    def _count_all_terms(self) -> None:
        """The term statistics recomputed from the chunk rows, in the open transaction."""
        self.connection.execute(self.sql("DELETE FROM {s}.lexemes"))
        self.connection.execute(self.sql("DELETE FROM {s}.collection"))
        self.connection.execute(self.sql(
            "INSERT INTO {s}.lexemes SELECT c.tenant, u.lexeme, count(*) FROM {s}.chunks c, "
            "unnest(c.code_text) u GROUP BY c.tenant, u.lexeme"))
        self.connection.execute(self.sql(
            "INSERT INTO {s}.collection SELECT tenant, count(*), sum(code_length) FROM {s}.chunks "
            "GROUP BY tenant"))

    def update_statistics(self) -> None:
        """Recompute BM25's term statistics from the chunk rows, and the planner's statistics."""
        with self.connection.transaction():
            self._count_all_terms()
        with self.connection.transaction():
            self.connection.execute(self.sql("ANALYZE {s}.sources, {s}.chunks, {s}.lexemes, {s}.collection"))

    def _count_terms(self, source_id: int, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) a source's chunks in the term statistics, in the open transaction."""
        self.connection.execute(self.sql(
            "INSERT INTO {s}.lexemes (tenant, lexeme, chunks) SELECT c.tenant, u.lexeme, %s * count(*) "
            "FROM {s}.chunks c, unnest(c.code_text) u WHERE c.source_id = %s GROUP BY c.tenant, u.lexeme "
            "ON CONFLICT (tenant, lexeme) DO UPDATE SET chunks = {s}.lexemes.chunks + excluded.chunks"),
            [sign, source_id])
        self.connection.execute(self.sql(
            "INSERT INTO {s}.collection (tenant, chunks, total_length) SELECT tenant, %s * count(*), "
            "%s * coalesce(sum(code_length), 0) FROM {s}.chunks WHERE source_id = %s GROUP BY tenant "
            "ON CONFLICT (tenant) DO UPDATE SET chunks = {s}.collection.chunks + excluded.chunks, "
            "total_length = {s}.collection.total_length + excluded.total_length"), [sign, sign, source_id])
        if sign < 0:
            self.connection.execute(self.sql("DELETE FROM {s}.lexemes WHERE chunks <= 0"))
            self.connection.execute(self.sql("DELETE FROM {s}.collection WHERE chunks <= 0"))

    def _write_sources(self, sources: Sequence[SourceFile], progress, first_load: bool = False) -> tuple[int, int]:
        """Chunk and embed every source (all at once, before any transaction), then write each in its own
        transaction; ``first_load`` (an empty index) writes them all in one instead.

        A first load leaves the term statistics and the two GIN indexes until every row is in, and
        builds them once: kept in step source by source they were most of a build (686 pages, 1,411
        chunks: 4.0-6.3 s that way, 2.0-2.4 s this way). A failure leaves the index empty, as it was.
        """
        chunked = [(source, self.policy.chunks(source.text)) for source in sources]
        texts = [getattr(chunk, "indexed_text", chunk.text) for _, chunks in chunked for chunk in chunks]
        embedded = 0
        vectors = iter(())
        if self.encoder is not None and texts:
            matrix = self.encoder.encode(texts)
            embedded = self.encoder.last.embedded
            vectors = iter(matrix)
        prepared = [(source, [(chunk, next(vectors) if self.encoder is not None else None) for chunk in chunks])
                    for source, chunks in chunked]
        if not first_load:
            return self._write_each(prepared, self.write_source, progress), embedded
        with self.connection.transaction():
            self._drop_text_indexes()
            written = self._write_each(prepared, self._insert_source, progress)
            self._count_all_terms()
            self._create_text_indexes()
        return written, embedded

    def _write_each(self, prepared: Sequence[tuple[SourceFile, list[tuple]]], write, progress) -> int:
        """``write(source, rows)`` for each source, in pipeline mode (statements sent without waiting for
        each reply; transactions are ``write``'s or the caller's); the chunks written."""
        written = 0
        with self.connection.pipeline():
            for number, (source, rows) in enumerate(prepared, start=1):
                write(source, rows)
                written += len(rows)
                if progress is not None:
                    progress(number, len(prepared))
        return written

    def write_source(self, source: SourceFile, rows: Sequence[tuple]) -> None:
        """Replace one source and its chunks in a single transaction (all or nothing)."""
        with self.connection.transaction():
            self._insert_source(source, rows, count_terms=True)

    def _insert_source(self, source: SourceFile, rows: Sequence[tuple], count_terms: bool = False) -> None:
        """Write (or replace) one source and its chunks in the open transaction; ``count_terms`` keeps the
        term statistics in step."""
        tenant = check_tenant(self.tenant_of(source.path))
        if self.tenant is None:   # the refresh owns every tenant: a file that moved tenant leaves its old one
            for (moved,) in self.connection.execute(self.sql("SELECT source_id FROM {s}.sources WHERE path = %s "
                                                             "AND tenant <> %s"), [source.path, tenant]).fetchall():
                if count_terms:
                    self._count_terms(moved, -1)
                self.connection.execute(self.sql("DELETE FROM {s}.sources WHERE source_id = %s"), [moved])
        row = self.connection.execute(self.sql(
            "INSERT INTO {s}.sources (path, content_hash, file_type, file_time, tenant) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant, path) DO UPDATE SET content_hash = "
            "excluded.content_hash, file_type = excluded.file_type, file_time = excluded.file_time, "
            "indexed_at = now() RETURNING source_id, xmax = 0"),   # xmax = 0: the row is new
            [source.path, source.content_hash, source.file_type, _to_date(source.timestamp), tenant]).fetchone()
        source_id, new = row
        if not new:   # a new source has no chunks yet: nothing to take away or delete
            if count_terms:
                self._count_terms(source_id, -1)
            self.connection.execute(self.sql("DELETE FROM {s}.chunks WHERE source_id = %s"), [source_id])
        for chunk, vector in rows:
            self.insert_chunk(source_id, tenant, chunk, vector)
        if count_terms:
            self._count_terms(source_id, 1)

    def insert_chunk(self, source_id: int, tenant: str, chunk, vector) -> None:
        """One chunk row (a method of its own so that a test can make it fail half-way)."""
        embedding = None if vector is None else np.asarray(vector, dtype=np.float32)
        self.connection.execute(self.sql(
            "INSERT INTO {s}.chunks (source_id, ordinal, start_char, end_char, text, content_hash, chunker, "
            "embedding_version, tenant, header, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"),
            [source_id, chunk.ordinal, chunk.start, chunk.end, chunk.text, chunk.content_hash,
             self.policy.version, self.embedding_version, tenant, getattr(chunk, "header", ""), embedding])
