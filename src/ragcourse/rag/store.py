"""Lab 04's index in PostgreSQL: seed 003's three tables, refresh by source, health checks.

One schema holds one index:

- ``sources``: one row per file (path relative to the corpus root, content hash, file type,
  timestamp, tenant);
- ``chunks``: one row per chunk (source, ordinal, character span, text, its hash, the
  chunker and embedding versions, tenant), with its search representations: two generated
  ``tsvector`` columns, each with a GIN index, and a pgvector embedding. ``search_text`` is
  seed 003's (PostgreSQL's ``english`` configuration, whose stop list drops ``where``,
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
role ``ragcourse_reader`` with the tenant set for the transaction.
"""
from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from .database import Database, check_schema
from .ingest import ChunkPolicy, Skipped, SourceFile, discover, read_all

SCHEMA_VERSION = "2"
READER_ROLE = "ragcourse_reader"
DEFAULT_TENANT = "public"
TENANT_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
DIMENSION = 384
# A dot followed by a letter or underscore becomes a space: numpy.linalg.solve -> numpy linalg solve.
SPLIT_NAMES = r"regexp_replace(header || ' ' || text, '\.([[:alpha:]_])', ' \1', 'g')"


def check_tenant(name: object) -> str:
    """A tenant name: 1-64 letters, digits, ``_``, ``.`` or ``-``."""
    if not isinstance(name, str) or not TENANT_PATTERN.fullmatch(name):
        raise ValueError(f"tenant must be 1-64 letters, digits, '_', '.' or '-'; got {name!r}")
    return name


NAMES_CONFIGURATION = [
    # Snowball's English stemmer without a stop file: every word is kept, "where" and "all" too.
    "CREATE TEXT SEARCH DICTIONARY {s}.english_all (TEMPLATE = snowball, Language = english)",
    "CREATE TEXT SEARCH CONFIGURATION {s}.names (COPY = pg_catalog.english)",
    "ALTER TEXT SEARCH CONFIGURATION {s}.names ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, "
    "word, hword, hword_part WITH {s}.english_all",
]
LEXEME_COUNT = (
    # Lexeme occurrences in a tsvector (BM25's document length); immutable, so a generated column can use it.
    "CREATE OR REPLACE FUNCTION {s}.lexeme_count(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE "
    "PARALLEL SAFE AS 'SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest($1)'")


def _ddl(schema: str) -> list[str]:
    """The statements that create the index's tables (the schema name is checked and quoted by the caller)."""
    return [
        "CREATE SCHEMA IF NOT EXISTS {s}",
        """CREATE TABLE IF NOT EXISTS {s}.schema_meta (
               key text PRIMARY KEY,
               value text NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS {s}.sources (
               source_id bigserial PRIMARY KEY,
               path text NOT NULL UNIQUE,
               content_hash text NOT NULL,
               file_type text NOT NULL,
               file_time date,
               tenant text NOT NULL,
               indexed_at timestamptz NOT NULL DEFAULT now())""",
        f"""CREATE TABLE IF NOT EXISTS {{s}}.chunks (
               chunk_id bigserial PRIMARY KEY,
               source_id bigint NOT NULL REFERENCES {{s}}.sources ON DELETE CASCADE,
               ordinal integer NOT NULL,
               start_char integer NOT NULL,
               end_char integer NOT NULL,
               text text NOT NULL,
               content_hash text NOT NULL,
               chunker text NOT NULL,
               embedding_version text,
               tenant text NOT NULL,
               header text NOT NULL DEFAULT '',
               search_text tsvector GENERATED ALWAYS AS (to_tsvector('english', header || ' ' || text)) STORED,
               code_text tsvector GENERATED ALWAYS AS (to_tsvector({{names}}, {SPLIT_NAMES})) STORED,
               code_length integer GENERATED ALWAYS AS ({{s}}.lexeme_count(to_tsvector({{names}}, {SPLIT_NAMES}))) STORED,
               embedding vector({DIMENSION}),
               UNIQUE (source_id, ordinal))""",
        "CREATE INDEX IF NOT EXISTS chunks_search_text ON {s}.chunks USING gin (search_text)",
        # An index built by schema version 1 gains the header and the identifier-aware columns in place.
        "ALTER TABLE {s}.chunks ADD COLUMN IF NOT EXISTS header text NOT NULL DEFAULT ''",
        f"ALTER TABLE {{s}}.chunks ADD COLUMN IF NOT EXISTS code_text tsvector GENERATED ALWAYS AS "
        f"(to_tsvector({{names}}, {SPLIT_NAMES})) STORED",
        f"ALTER TABLE {{s}}.chunks ADD COLUMN IF NOT EXISTS code_length integer GENERATED ALWAYS AS "
        f"({{s}}.lexeme_count(to_tsvector({{names}}, {SPLIT_NAMES}))) STORED",
        "CREATE INDEX IF NOT EXISTS chunks_code_text ON {s}.chunks USING gin (code_text)",
        """CREATE TABLE IF NOT EXISTS {s}.lexemes (
               tenant text NOT NULL,
               lexeme text NOT NULL,
               chunks integer NOT NULL,
               PRIMARY KEY (tenant, lexeme))""",
        """CREATE TABLE IF NOT EXISTS {s}.collection (
               tenant text PRIMARY KEY,
               chunks integer NOT NULL,
               total_length bigint NOT NULL)""",
        "ALTER TABLE {s}.lexemes ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE {s}.collection ENABLE ROW LEVEL SECURITY",
        "CREATE INDEX IF NOT EXISTS chunks_source ON {s}.chunks (source_id)",
        "ALTER TABLE {s}.sources ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE {s}.chunks ENABLE ROW LEVEL SECURITY",
    ]


TENANT_TABLES = ("sources", "chunks", "lexemes", "collection")
TEXT_INDEXES = {"chunks_search_text": "search_text", "chunks_code_text": "code_text"}   # the GIN indexes, by column


def _policies() -> list[tuple[str, str]]:
    """(table, statement): the reader role sees a row only when its tenant is the transaction's."""
    setting = "current_setting('ragcourse.tenant', true)"
    return [(table, f"CREATE POLICY tenant_rows ON {{s}}.{table} FOR SELECT TO {READER_ROLE} "
                    f"USING (tenant = {setting})") for table in TENANT_TABLES]


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
    """One health check: its name, whether it passed, how many rows or files it found, and examples."""

    name: str
    passed: bool
    found: int
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class HealthReport:
    """Every health check of an index."""

    checks: tuple[Check, ...]
    sources: int
    chunks: int

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[str]:
        """The names of the checks that did not pass."""
        return [c.name for c in self.checks if not c.passed]

    def lines(self) -> list[str]:
        """The report as text, one line a check."""
        out = [f"index: {self.sources} sources, {self.chunks} chunks"]
        for c in self.checks:
            more = f"  e.g. {', '.join(c.examples)}" if c.examples else ""
            out.append(f"  {'ok  ' if c.passed else 'FAIL'}  {c.name}: {c.found}{more}")
        out.append("health: " + ("every check passed" if self.passed else "FAILED: " + ", ".join(self.failed)))
        return out


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
                 encoder=None, tenant_of: Callable[[str], str] | None = None):
        self.database = database
        self.schema = check_schema(schema)
        self.policy = policy or ChunkPolicy()
        self.encoder = encoder
        self.tenant_of = tenant_of or (lambda path: DEFAULT_TENANT)
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
    def create(self) -> None:
        """Create the schema, tables, full-text index, reader role and row-level security (idempotent)."""
        import psycopg

        connection = self.connection
        with connection.transaction():
            connection.execute(self.sql("CREATE SCHEMA IF NOT EXISTS {s}"))
            configured = connection.execute(
                "SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace "
                "WHERE n.nspname = %s AND c.cfgname = 'names'", [self.schema]).fetchone()
            if configured is None:
                for statement in NAMES_CONFIGURATION:
                    connection.execute(self.sql(statement))
            connection.execute(self.sql(LEXEME_COUNT))
            for statement in _ddl(self.schema):
                connection.execute(self.ddl(statement))
            role = connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [READER_ROLE]).fetchone()
            if role is None:
                connection.execute(f"CREATE ROLE {READER_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS")
            for table, statement in _policies():
                exists = connection.execute(
                    "SELECT 1 FROM pg_policies WHERE schemaname = %s AND tablename = %s AND policyname = 'tenant_rows'",
                    [self.schema, table]).fetchone()
                if exists is None:
                    connection.execute(self.sql(statement))
            connection.execute(self.sql(f"GRANT USAGE ON SCHEMA {{s}} TO {READER_ROLE}"))
            connection.execute(self.sql(f"GRANT SELECT ON {{s}}.sources, {{s}}.chunks, {{s}}.lexemes, "
                                        f"{{s}}.collection TO {READER_ROLE}"))
            self._set_meta(connection, {"schema_version": SCHEMA_VERSION, "chunker": self.policy.version,
                                        "embedding": self.embedding_version or "none"})
        try:
            with connection.transaction():
                connection.execute(f"GRANT {READER_ROLE} TO CURRENT_USER")
        except psycopg.Error:
            pass  # a superuser (the embedded server's) may switch to any role already

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
    def stored_sources(self) -> dict[str, tuple[str, str]]:
        """path -> (content hash, tenant) of every stored source."""
        with self.connection.transaction():
            rows = self.connection.execute(self.sql("SELECT path, content_hash, tenant FROM {s}.sources")).fetchall()
        return {path: (digest, tenant) for path, digest, tenant in rows}

    def stale_versions(self) -> set[str]:
        """Sources with a chunk whose chunker or embedding version is not the configured one."""
        with self.connection.transaction():
            rows = self.connection.execute(self.sql(
                "SELECT DISTINCT s.path FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
                "WHERE c.chunker <> %s OR c.embedding_version IS DISTINCT FROM %s"),
                [self.policy.version, self.embedding_version]).fetchall()
        return {path for (path,) in rows}

    def refresh(self, root: str | Path, progress: Callable[[int, int], None] | None = None) -> RefreshReport:
        """Bring the index in line with the files under ``root``, one transaction per source."""
        started = time.perf_counter()
        root = Path(root)
        self.create()
        with self.connection.transaction():
            self._set_meta(self.connection, {"corpus_root": str(root.resolve()), "chunker": self.policy.version,
                                             "embedding": self.embedding_version or "none"})
        stored = self.stored_sources()
        stale = self.stale_versions()
        paths = discover(root)
        added, updated, unchanged, skipped, kept = [], [], [], [], []
        seen: set[str] = set()
        pending: list[SourceFile] = []
        for item in read_all(root, paths):
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
        chunks_written, embedded = self._write_sources(pending, progress, first_load=not stored and bool(pending))
        removed, listed = [], set(paths)
        for path in sorted(set(stored) - seen):
            if path in listed or _absent(root / path):   # vanished when read, or nothing there
                removed.append(path)
            else:  # there, but not a regular file (a directory, say): a failed observation keeps the rows
                skipped.append(Skipped(path, "unreadable (not a regular file)"))
                kept.append(path)
        for path in removed:
            with self.connection.transaction():
                row = self.connection.execute(self.sql("SELECT source_id FROM {s}.sources WHERE path = %s"),
                                              [path]).fetchone()
                if row is not None:
                    self._count_terms(row[0], -1)
                self.connection.execute(self.sql("DELETE FROM {s}.sources WHERE path = %s"), [path])
        with self.connection.transaction():
            self.connection.execute(self.sql("ANALYZE {s}.sources, {s}.chunks, {s}.lexemes, {s}.collection"))
        return RefreshReport(tuple(added), tuple(updated), tuple(unchanged), tuple(removed), tuple(skipped),
                             tuple(kept), chunks_written, embedded, time.perf_counter() - started)

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
        row = self.connection.execute(self.sql(
            "INSERT INTO {s}.sources (path, content_hash, file_type, file_time, tenant) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET content_hash = excluded.content_hash, "
            "file_type = excluded.file_type, file_time = excluded.file_time, tenant = excluded.tenant, "
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
        """Every health check; ``root`` defaults to the corpus root the index was last refreshed from."""
        connection = self.connection
        meta = self.meta()
        root = Path(root) if root is not None else Path(meta.get("corpus_root", "."))
        with connection.transaction():
            count = lambda q, p=(): connection.execute(self.sql(q), p).fetchone()[0]  # noqa: E731
            listing = lambda q, p=(): [r[0] for r in connection.execute(self.sql(q), p).fetchall()]  # noqa: E731
            n_sources = count("SELECT count(*) FROM {s}.sources")
            n_chunks = count("SELECT count(*) FROM {s}.chunks")
            orphans = listing("SELECT c.chunk_id::text FROM {s}.chunks c LEFT JOIN {s}.sources s USING (source_id) "
                              "WHERE s.source_id IS NULL ORDER BY 1")
            empty_sources = listing("SELECT s.path FROM {s}.sources s WHERE NOT EXISTS "
                                    "(SELECT 1 FROM {s}.chunks c WHERE c.source_id = s.source_id) ORDER BY 1")
            chunkers = listing("SELECT DISTINCT chunker FROM {s}.chunks WHERE chunker <> %s ORDER BY 1",
                               [self.policy.version])
            wrong_chunker = count("SELECT count(*) FROM {s}.chunks WHERE chunker <> %s", [self.policy.version])
            wrong_embedding = count("SELECT count(*) FROM {s}.chunks WHERE embedding_version IS DISTINCT FROM %s",
                                    [self.embedding_version])
            versions = listing("SELECT DISTINCT coalesce(embedding_version, 'none') FROM {s}.chunks "
                               "WHERE embedding_version IS DISTINCT FROM %s ORDER BY 1", [self.embedding_version])
            no_vector = count("SELECT count(*) FROM {s}.chunks WHERE embedding IS NULL") if self.encoder else 0
            bad_spans = listing("SELECT s.path || '#' || c.ordinal FROM {s}.chunks c JOIN {s}.sources s USING "
                                "(source_id) WHERE c.end_char <= c.start_char OR length(c.text) <> c.end_char - "
                                "c.start_char ORDER BY 1")
            stored = connection.execute(self.sql("SELECT path, content_hash FROM {s}.sources ORDER BY path")).fetchall()
            stale_statistics = listing(
                # over the chunks of a stored source (an orphan chunk is its own check's finding)
                "SELECT t.tenant FROM (SELECT c.tenant, count(*) AS n, sum(c.code_length) AS total FROM {s}.chunks c "
                "JOIN {s}.sources USING (source_id) GROUP BY c.tenant) t FULL JOIN {s}.collection c USING (tenant) "
                "WHERE c.chunks IS DISTINCT FROM t.n OR c.total_length IS DISTINCT FROM t.total ORDER BY 1")
            texts = (connection.execute(self.sql(
                "SELECT s.path || '#' || c.ordinal, CASE WHEN c.header = '' THEN c.text "
                "ELSE c.header || E'\\n' || c.text END FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
                "ORDER BY s.path, c.ordinal")).fetchall() if self.encoder is not None else [])
        window, too_long = self.encoder_window(), []
        if window is not None and texts:
            counts = self.encoder.token_counts([text for _, text in texts])
            too_long = [f"{citation} ({n} tokens)" for (citation, _), n in zip(texts, counts) if n > window]
        missing, unreadable, changed = [], [], []
        for path, digest in stored:
            status = _file_status(root / path, digest)
            {"missing": missing, "unreadable": unreadable, "changed": changed}.get(status, []).append(path)
        checks = (
            Check("chunks without a source", not orphans, len(orphans), tuple(orphans[:3])),
            Check("sources without a chunk", not empty_sources, len(empty_sources), tuple(empty_sources[:3])),
            Check(f"chunks not made by {self.policy.version}", wrong_chunker == 0, wrong_chunker, tuple(chunkers[:3])),
            Check(f"chunks not embedded by {self.embedding_version or 'no model'}", wrong_embedding == 0,
                  wrong_embedding, tuple(versions[:3])),
            Check("chunks without an embedding", no_vector == 0, no_vector),
            Check("chunk spans that do not match their text", not bad_spans, len(bad_spans), tuple(bad_spans[:3])),
            Check(f"chunks longer than the encoder's window ({window} tokens): their tail is never embedded",
                  not too_long, len(too_long), tuple(too_long[:3])),
            Check("tenants whose BM25 term statistics do not match their chunks (refresh to recompute)",
                  not stale_statistics, len(stale_statistics), tuple(stale_statistics[:3])),
            Check("sources whose file is missing", not missing, len(missing), tuple(missing[:3])),
            Check("sources whose file cannot be read", not unreadable, len(unreadable), tuple(unreadable[:3])),
            Check("sources whose file changed since indexing", not changed, len(changed), tuple(changed[:3])),
        )
        return HealthReport(checks, n_sources, n_chunks)

    # -- queries ----------------------------------------------------------------------------
    @contextmanager
    def reader(self, tenant: str = DEFAULT_TENANT, exact: bool = True) -> Iterator:
        """A read-only transaction as ``ragcourse_reader`` for ``tenant`` (row-level security applies).

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
            # One round trip: read-only, the reader role, the tenant, and (exact) no index scans,
            # each for this transaction only. HNSW serves only index scans; bitmap scans stay on.
            connection.execute(
                "SELECT set_config('transaction_read_only', 'on', true), set_config('role', %s, true), "
                "set_config('ragcourse.tenant', %s, true), set_config('enable_indexscan', %s, true)",
                [READER_ROLE, tenant, "off" if exact else "on"])
            yield connection


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


def counts_by_tenant(index: PgIndex) -> dict[str, int]:
    """Chunks per tenant, as the table owner sees them (row-level security does not apply to it)."""
    with index.connection.transaction():
        rows = index.connection.execute(index.sql("SELECT tenant, count(*) FROM {s}.chunks GROUP BY 1 ORDER BY 1"))
        return dict(rows.fetchall())
