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
the privileges ``create`` needs are checked first by ``privileges.require``. The refresh and
the term statistics are ``ingest.Refresh``, a mixin of ``PgIndex``.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..engines.chunking.policy import ChunkPolicy
from .database import Database, check_schema
from .health import CHECKS, CHUNKS, SOURCES, STORED, TEXTS, Check, HealthReport, file_status
from .ingest import Refresh, RefreshReport
from .privileges import require
from .schema import (DDL, DEFAULT_TENANT, DIMENSION, LEXEME_COUNT, NAMES_CONFIGURATION, OLD_POLICY, POLICY, READ_TABLES,
                     READER_ROLE, SCHEMA_VERSION, SPLIT_NAMES, TENANT_PATTERN, TENANT_TABLES, TEXT_INDEXES,
                     check_tenant, policies, reader_role)

__all__ = ["DEFAULT_TENANT", "DIMENSION", "READER_ROLE", "SCHEMA_VERSION", "SPLIT_NAMES", "TENANT_PATTERN",
           "TENANT_TABLES", "TEXT_INDEXES", "Check", "HealthReport", "PgIndex", "RefreshReport", "check_tenant",
           "counts_by_tenant", "reader_role"]


class PgIndex(Refresh):
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

    # -- what refreshes and health checks share -------------------------------------------
    @property
    def scope(self) -> dict:
        """The health queries' parameters: the tenant a refresh owns (None: every tenant), and the versions."""
        return {"tenant": self.tenant, "chunker": self.policy.version, "embedding": self.embedding_version,
                "encoded": self.encoder is not None}

    # -- vector index -----------------------------------------------------------------------
    def create_hnsw(self, m: int = 16, ef_construction: int = 64) -> float:
        """Build pgvector's HNSW index on the embeddings (cosine); the seconds it took."""
        from ..toolkit.params import check_int

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
