"""Lab 04's index as data: the DDL, the roles and the row-level-security policies (the health checks: ``health``).

Every statement names the schema as ``{s}`` (and the identifier-aware text-search
configuration as ``{names}``); ``PgIndex.sql`` and ``PgIndex.ddl`` fill them in with
``psycopg.sql.Identifier`` and ``Literal``. Values always travel as parameters.

Tenants and roles. Each tenant has a reader role of its own (``reader_role``:
``ragcourse_reader_<tenant>``), recorded in ``{s}.tenants``. The policies on the four
tenant tables let a role see a row only when the row's tenant is the one ``{s}.tenants``
maps *the current role* to: the tenant comes from who the session is, not from a setting it
could change. ``ragcourse_reader`` is the role with no tenant (it sees no rows); the
index's owner is not bound by the policies (it owns the tables), which is why the
application reads as a tenant's role and never as the owner.
"""
from __future__ import annotations

import hashlib
import re

SCHEMA_VERSION = "3"
READER_ROLE = "ragcourse_reader"
ROLE_PREFIX = READER_ROLE + "_"
DEFAULT_TENANT = "public"
TENANT_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
DIMENSION = 384
# A dot followed by a letter or underscore becomes a space: numpy.linalg.solve -> numpy linalg solve.
SPLIT_NAMES = r"regexp_replace(header || ' ' || text, '\.([[:alpha:]_])', ' \1', 'g')"


def schema_number(version: object) -> int:
    """A stored schema version as the whole number it is ("10" is after "9"); None (not recorded) is version 1."""
    text = "1" if version is None else str(version).strip()
    if not text.isdigit():
        raise ValueError(f"schema version must be a whole number; the index records {version!r}")
    return int(text)


def is_current(version: object) -> bool:
    """Whether an index of schema ``version`` has everything this package's ``SCHEMA_VERSION`` writes."""
    return schema_number(version) >= schema_number(SCHEMA_VERSION)


def check_tenant(name: object) -> str:
    """A tenant name: 1-64 letters, digits, ``_``, ``.`` or ``-``."""
    if not isinstance(name, str) or not TENANT_PATTERN.fullmatch(name):
        raise ValueError(f"tenant must be 1-64 letters, digits, '_', '.' or '-'; got {name!r}")
    return name


def reader_role(tenant: str) -> str:
    """The reader role of ``tenant``: ``ragcourse_reader_<tenant>``, cut and given a hash when that would
    pass PostgreSQL's 63 bytes (a role name is quoted, so the tenant's case is kept)."""
    check_tenant(tenant)
    name = ROLE_PREFIX + tenant
    if len(name) <= 63:
        return name
    return f"{ROLE_PREFIX}{tenant[:33]}_{hashlib.sha256(tenant.encode()).hexdigest()[:12]}"


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

DDL = [
    "CREATE SCHEMA IF NOT EXISTS {s}",
    """CREATE TABLE IF NOT EXISTS {s}.schema_meta (
           key text PRIMARY KEY,
           value text NOT NULL)""",
    # one row a tenant: its reader role, and the folder its sources were last refreshed from
    """CREATE TABLE IF NOT EXISTS {s}.tenants (
           tenant text PRIMARY KEY,
           reader text NOT NULL UNIQUE,
           corpus_root text)""",
    """CREATE TABLE IF NOT EXISTS {s}.sources (
           source_id bigserial PRIMARY KEY,
           path text NOT NULL,
           content_hash text NOT NULL,
           file_type text NOT NULL,
           file_time date,
           tenant text NOT NULL,
           indexed_at timestamptz NOT NULL DEFAULT now())""",
    # a path is unique within its tenant (two tenants' folders may both hold README.md); version 2 had UNIQUE (path)
    "ALTER TABLE {s}.sources DROP CONSTRAINT IF EXISTS sources_path_key",
    "CREATE UNIQUE INDEX IF NOT EXISTS sources_tenant_path ON {s}.sources (tenant, path)",
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
    "CREATE INDEX IF NOT EXISTS chunks_source ON {s}.chunks (source_id)",
    "ALTER TABLE {s}.tenants ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE {s}.lexemes ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE {s}.collection ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE {s}.sources ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE {s}.chunks ENABLE ROW LEVEL SECURITY",
]

TENANT_TABLES = ("sources", "chunks", "lexemes", "collection")
TEXT_INDEXES = {"chunks_search_text": "search_text", "chunks_code_text": "code_text"}   # the GIN indexes, by column
POLICY = "tenant_of_role"
OLD_POLICY = "tenant_rows"   # schema version 2's: the tenant from the setting ragcourse.tenant, which any role can set
# The tenant of the current role; NULL (no rows) for a role that reads no tenant. The tenants table's own
# policy lets a role see only its own row of it.
ROLE_TENANT = "(SELECT t.tenant FROM {s}.tenants t WHERE t.reader = current_user)"


def policies() -> list[tuple[str, str]]:
    """(table, statement): every role but the owner sees a row only when it is its own tenant's."""
    own = [("tenants", f"CREATE POLICY {POLICY} ON {{s}}.tenants FOR SELECT USING (reader = current_user)")]
    return own + [(table, f"CREATE POLICY {POLICY} ON {{s}}.{table} FOR SELECT USING (tenant = {ROLE_TENANT})")
                  for table in TENANT_TABLES]


READ_TABLES = "{s}.tenants, {s}.sources, {s}.chunks, {s}.lexemes, {s}.collection"
