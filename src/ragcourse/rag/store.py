"""Lab 04's index in PostgreSQL: the RAG baseline design's three tables, refresh by source, health checks.

One schema holds one index:

- ``sources``: one row per file (path relative to the corpus root, content hash, file type,
  timestamp, tenant);
- ``chunks``: one row per chunk (source, ordinal, character span, text, its hash, the
  chunker and embedding versions, tenant), with its search representations: two generated
  ``tsvector`` columns, each with a GIN index, and a pgvector embedding. ``search_text`` is
  the RAG baseline design's (PostgreSQL's ``english`` configuration, whose stop list drops ``where``,
  ``all`` and ``any`` and whose parser keeps ``np.where`` as one token); ``code_text`` splits
  dotted names at their dots and uses the schema's own ``names`` configuration (English
  stemming, no stop list), so that an identifier can be found by its parts;
- ``lexemes`` and ``collection``: term statistics for BM25 inside the database (per tenant:
  how many chunks hold each lexeme of ``code_text``; how many chunks and lexemes in all),
  kept in step with the chunks inside each source's own transaction, so a refresh that
  fails half-way leaves them matching the rows it left (a first load counts them once, in
  its own single transaction; ``update_statistics`` recomputes them from scratch, for rows
  written some other way);
- ``schema_meta``: what the index was built with (schema version, chunker, embedding model,
  corpus root).

Refresh re-indexes a source when its content, its chunker version, its embedding version
or its tenant changed, and does so in one transaction per source: a failure half-way
leaves the source's previous rows as they were. The first load of an empty index is one
transaction instead (all sources, then the term statistics and the full-text indexes, once):
a failure leaves the index empty, as it was. Only a file that is absent removes its
rows; one that cannot be read or decoded keeps them (a failed observation is not absence)
and is reported. Row-level security keeps each tenant to its own rows: queries run as the
tenant's own reader role (``schema.reader_role``), and the policies take the tenant from
the role, so a reader cannot choose another (``schema``'s docstring). The DDL and the
policies are data in ``schema``, the health checks a table in ``health`` (with the reports);
the privileges ``create`` needs are checked first by ``privileges.require``.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from ..engines.chunking.policy import ChunkPolicy
from .database import Database, check_schema
from .health import (CHECKS, CHUNKS, DAMAGED_SOURCES, SOURCES, STALE_TENANTS, STORED, TEXTS, Check, HealthReport,
                     RefreshReport, absent, file_status)
from .ingest import Skipped, SourceFile, discover, read_all
from .privileges import require
from .schema import (DDL, DEFAULT_TENANT, DIMENSION, LEXEME_COUNT, NAMES_CONFIGURATION, OLD_POLICY, POLICY, READ_TABLES,
                     READER_ROLE, SCHEMA_VERSION, SPLIT_NAMES, TENANT_PATTERN, TENANT_TABLES, TEXT_INDEXES,
                     check_tenant, policies, reader_role, schema_number)

__all__ = ["DEFAULT_TENANT", "DIMENSION", "READER_ROLE", "SCHEMA_VERSION", "SPLIT_NAMES", "TENANT_PATTERN",
           "TENANT_TABLES", "TEXT_INDEXES", "Check", "HealthReport", "PgIndex", "RefreshReport", "check_tenant",
           "counts_by_tenant", "reader_role"]


def _to_date(text: str | None):
    import datetime

    if text is None:
        return None
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        return None


class PgIndex:
    """One index (one schema) in a database: build, refresh, check, and query sessions."""

    def __init__(self, database: Database, schema: str = "ragcourse", policy: ChunkPolicy | None = None,
                 encoder=None, tenant_of: Callable[[str], str] | None = None, tenant: str | None = None):
        """``tenant_of`` maps a file's path to its tenant (every file ``public`` by default), and a refresh
        owns every source of the schema; ``tenant`` instead puts every file of the folder in that one
        tenant, and a refresh reads, writes and removes that tenant's sources only (the others' stay)."""
        self.database = database
        self.schema = check_schema(schema)
        self.policy = policy or ChunkPolicy()
        self.encoder = encoder
        if tenant is not None and tenant_of is not None:
            raise ValueError("give tenant or tenant_of, not both")
        self.tenant = None if tenant is None else check_tenant(tenant)
        self.tenant_of = tenant_of or (lambda path, t=self.tenant or DEFAULT_TENANT: t)
        self._connection = None

    # -- plumbing ---------------------------------------------------------------------------
    @property
    def connection(self):
        """The index's own connection (the table owner), opened on first use."""
        if self._connection is None or self._connection.closed:
            self._connection = self.database.connect()
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def sql(self, statement: str):
        """``statement`` with ``{s}`` replaced by the quoted schema name."""
        from psycopg import sql

        return sql.SQL(statement).format(s=sql.Identifier(self.schema))

    def ddl(self, statement: str):
        """``sql`` for a statement that may also name the schema's ``names`` text-search configuration."""
        from psycopg import sql

        names = sql.Literal(f'"{self.schema}".names')
        return sql.SQL(statement).format(s=sql.Identifier(self.schema), names=names)

    @property
    def names_configuration(self) -> str:
        """The ``regconfig`` text of the schema's identifier-aware configuration."""
        return f'"{self.schema}".names'

    @property
    def embedding_version(self) -> str | None:
        """What the chunk rows record as their embedding: model and package revision, or None."""
        if self.encoder is None:
            return None
        from ..engines.dense import MODEL_NAME

        return f"{MODEL_NAME}@{self.encoder.revision}"

    # -- schema -----------------------------------------------------------------------------
    def create(self, tenants: Sequence[str] = ()) -> None:
        """Create (or bring to this version) the schema, tables, full-text indexes, row-level security and the
        reader roles: ``ragcourse_reader`` and one for each of ``tenants`` (idempotent, one transaction).

        The privileges this needs are checked first (``privileges.require``): without them a
        ``PrivilegeError`` names what is missing and the SQL that grants it, and nothing is written.
        """
        tenants = sorted({check_tenant(t) for t in tenants})
        roles = {tenant: reader_role(tenant) for tenant in tenants}
        connection = self.connection
        with connection.transaction():
            require(connection, self.schema, [READER_ROLE, *roles.values()])
            connection.execute(self.sql("CREATE SCHEMA IF NOT EXISTS {s}"))
            configured = connection.execute(
                "SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace "
                "WHERE n.nspname = %s AND c.cfgname = 'names'", [self.schema]).fetchone()
            if configured is None:
                for statement in NAMES_CONFIGURATION:
                    connection.execute(self.sql(statement))
            connection.execute(self.sql(LEXEME_COUNT))
            for statement in DDL:
                connection.execute(self.ddl(statement))
            for table, statement in policies():
                connection.execute(self.sql(f"DROP POLICY IF EXISTS {OLD_POLICY} ON {{s}}.{table}"))
                exists = connection.execute(
                    "SELECT 1 FROM pg_policies WHERE schemaname = %s AND tablename = %s AND policyname = %s",
                    [self.schema, table, POLICY]).fetchone()
                if exists is None:
                    connection.execute(self.sql(statement))
            for role in [READER_ROLE, *roles.values()]:
                self._ensure_role(role)
            for tenant, role in roles.items():
                connection.execute(self.sql("INSERT INTO {s}.tenants (tenant, reader) VALUES (%s, %s) "
                                            "ON CONFLICT (tenant) DO UPDATE SET reader = excluded.reader"),
                                   [tenant, role])
            self._set_meta(connection, {"schema_version": SCHEMA_VERSION, "chunker": self.policy.version,
                                        "embedding": self.embedding_version or "none"})

    def _ensure_role(self, role: str) -> None:
        """The reader role ``role``: created if missing (NOLOGIN), granted to the owner so that it can act as it,
        and given read access to the schema, in the open transaction."""
        from psycopg import sql

        connection, name = self.connection, sql.Identifier(role)
        if connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone() is None:
            connection.execute(sql.SQL("CREATE ROLE {} NOLOGIN NOSUPERUSER NOBYPASSRLS").format(name))
        if not connection.execute("SELECT pg_has_role(current_user, %s, CASE WHEN current_setting("
                                  "'server_version_num')::int >= 160000 THEN 'SET' ELSE 'MEMBER' END)",
                                  [role]).fetchone()[0]:
            connection.execute(sql.SQL("GRANT {} TO CURRENT_USER").format(name))
        schema = sql.Identifier(self.schema)
        connection.execute(sql.SQL("GRANT USAGE ON SCHEMA {s} TO {r}").format(s=schema, r=name))
        connection.execute(sql.SQL(f"GRANT SELECT ON {READ_TABLES} TO {{r}}").format(s=schema, r=name))

    def drop(self) -> None:
        """Remove the schema and everything in it."""
        with self.connection.transaction():
            self.connection.execute(self.sql("DROP SCHEMA IF EXISTS {s} CASCADE"))

    def _set_meta(self, connection, values: dict[str, str]) -> None:
        for key, value in values.items():
            connection.execute(self.sql("INSERT INTO {s}.schema_meta VALUES (%s, %s) "
                                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"), [key, value])

    def meta(self) -> dict[str, str]:
        """The schema_meta table as a dict."""
        with self.connection.transaction():
            rows = self.connection.execute(self.sql("SELECT key, value FROM {s}.schema_meta")).fetchall()
        return dict(rows)

    def exists(self) -> bool:
        """Whether the schema's tables are there."""
        with self.connection.transaction():
            row = self.connection.execute("SELECT to_regclass(%s)", [f"{self.schema}.chunks"]).fetchone()
        return row[0] is not None

    # -- refresh ----------------------------------------------------------------------------
    @property
    def scope(self) -> dict:
        """The health queries' parameters: the tenant a refresh owns (None: every tenant), and the versions."""
        return {"tenant": self.tenant, "chunker": self.policy.version, "embedding": self.embedding_version,
                "encoded": self.encoder is not None}

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

    # -- vector index -----------------------------------------------------------------------
    def create_hnsw(self, m: int = 16, ef_construction: int = 64) -> float:
        """Build pgvector's HNSW index on the embeddings (cosine); the seconds it took."""
        from ..lesson.params import check_int

        check_int("m", m, 2, 100)
        check_int("ef_construction", ef_construction, 4, 1000)
        started = time.perf_counter()
        with self.connection.transaction():
            self.connection.execute(self.sql("DROP INDEX IF EXISTS {s}.chunks_embedding_hnsw"))
            self.connection.execute(self.sql(
                f"CREATE INDEX chunks_embedding_hnsw ON {{s}}.chunks USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"))
        return time.perf_counter() - started

    def has_hnsw(self) -> bool:
        with self.connection.transaction():
            row = self.connection.execute("SELECT to_regclass(%s)", [f"{self.schema}.chunks_embedding_hnsw"]).fetchone()
        return row[0] is not None

    def encoder_window(self) -> int | None:
        """Tokens the configured encoder reads of a chunk, special tokens included (None without an encoder)."""
        if self.encoder is None or not hasattr(self.encoder, "token_counts"):
            return None
        return int(getattr(self.encoder, "max_tokens", 256))

    # -- health -----------------------------------------------------------------------------
    def health(self, root: str | Path | None = None) -> HealthReport:
        """Every health check of ``health.CHECKS``, in its order (of this index's tenant only, with ``tenant``);
        ``root`` defaults to the corpus root the index was last refreshed from."""
        connection = self.connection
        root = Path(root) if root is not None else Path(self.corpus_root() or ".")
        scope, window = self.scope, self.encoder_window()
        labels = {"chunker": self.policy.version, "embedding": self.embedding_version or "no model", "window": window}
        checks = []
        with connection.transaction():
            run = lambda query: connection.execute(self.sql(query), scope)  # noqa: E731
            n_sources, n_chunks = run(SOURCES).fetchone()[0], run(CHUNKS).fetchone()[0]
            measured = self._measure(root, run(STORED).fetchall(),
                                     run(TEXTS).fetchall() if self.encoder is not None else [], window)
            for check in CHECKS:
                if check.sql is None:
                    found, examples = len(measured[check.measure]), measured[check.measure][:3]
                elif check.encoded and self.encoder is None:
                    found, examples = 0, []
                else:
                    found = run(check.sql).fetchone()[0]
                    examples = [row[0] for row in run(check.sample + " LIMIT 3")] if found and check.sample else []
                checks.append(Check(check.label.format(**labels), found == 0, found, tuple(examples), check.repair,
                                    check.note))
        return HealthReport(tuple(checks), n_sources, n_chunks)

    def _measure(self, root: Path, stored: Sequence[tuple[str, str]], texts: Sequence[tuple[str, str]],
                 window: int | None) -> dict[str, list[str]]:
        """What the checks without SQL find: ``window`` (chunks over the encoder's window, with their tokens)
        and each ``file_status`` but ``ok`` (the stored sources whose file is missing, unreadable or changed)."""
        measured: dict[str, list[str]] = {"window": [], "missing": [], "unreadable": [], "changed": []}
        if window is not None and texts:
            counts = self.encoder.token_counts([text for _, text in texts])
            measured["window"] = [f"{citation} ({n} tokens)" for (citation, _), n in zip(texts, counts) if n > window]
        for path, digest in stored:
            measured.get(file_status(root / path, digest), []).append(path)
        return measured

    # -- queries ----------------------------------------------------------------------------
    @contextmanager
    def reader(self, tenant: str = DEFAULT_TENANT, exact: bool = True) -> Iterator:
        """A read-only transaction as ``tenant``'s reader role (row-level security applies).

        The role's policies show it its own tenant's rows and no others, whatever the session
        sets; a tenant the index does not hold gets ``ragcourse_reader``, which sees no rows.
        ``exact=True`` turns index scans off for the transaction, so vector search is
        exhaustive even when an HNSW index exists. Full text reads the table in these sessions
        whatever the scans allowed: the tenant policy must be applied before any operator that
        is not leakproof, and ``@@`` is not, so the planner cannot use the GIN indexes
        (``benchmarks/lab04_scale.py`` prints the plans, with and without the policy).
        """
        check_tenant(tenant)
        connection = self.connection
        if connection.info.transaction_status != 0:  # psycopg.pq.TransactionStatus.IDLE
            raise RuntimeError("a reader session must not be opened inside another transaction: "
                               "its role would outlive it")
        with connection.transaction():
            # One round trip: read-only, the tenant's role (looked up as the owner, before the switch), the
            # tenant as a setting (for display: no policy reads it), and (exact) no index scans, each for this
            # transaction only. HNSW serves only index scans; bitmap scans stay on.
            connection.execute(self.sql(
                "SELECT set_config('transaction_read_only', 'on', true), set_config('role', coalesce("
                "(SELECT reader FROM {s}.tenants WHERE tenant = %s), %s), true), "
                "set_config('ragcourse.tenant', %s, true), set_config('enable_indexscan', %s, true)"),
                [tenant, READER_ROLE, tenant, "off" if exact else "on"])
            yield connection


def counts_by_tenant(index: PgIndex) -> dict[str, int]:
    """Chunks per tenant, as the table owner sees them (row-level security does not apply to it)."""
    with index.connection.transaction():
        rows = index.connection.execute(index.sql("SELECT tenant, count(*) FROM {s}.chunks GROUP BY 1 ORDER BY 1"))
        return dict(rows.fetchall())
