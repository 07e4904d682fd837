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

The name channel (lab 04's third path, ``search.candidates(names=True)``) is a statement over these
tables too (it stores nothing, so needs no DDL), with what it reads of the question. Full text
matches whole words and MiniLM reads a misspelt name as other word pieces, so ``np.linespace``
finds neither ``numpy.linspace``'s words nor its meaning; the name channel compares the
question's name-like tokens with every page's name forms by trigram similarity, in PostgreSQL,
and is fused with the two other paths by RRF.

- **Name-like tokens** (``name_tokens``): runs of ASCII letters, digits, underscores and dots
  that start with a letter or ``_`` and hold a dot between two name parts (``np.linespace``,
  ``numpy.linalg.slove``, ``arr.cumsum``), an underscore (``set_printoptions``) or are called
  (``argsrot(``), with at least ``MIN_LETTERS`` letters in all (so ``e.g`` and ``i.e`` are not
  names). A plain word is not one: ``argsrot`` alone is left to the other paths. Distinct,
  lower-case, in order of appearance, at most ``MAX_NAME_TOKENS`` (a question of 20,000
  characters cannot hold many more; the rest are not compared).
- **A page's name forms**, derived in SQL from ``sources.path`` as ``Passage.doc_id`` derives
  the page's id (the file name less its suffix): the id (``numpy.linalg.solve``), its
  ``np.`` form (``np.linalg.solve``), the id without ``numpy.`` (``linalg.solve``) and its last
  part (``solve``). Nothing is stored: the forms follow ``sources`` through every refresh
  (a page removed is gone from the channel with its row), and row-level security keeps the
  reader to its own tenant's sources and chunks, as on the other paths.
- **Similarity**: pg_trgm's definition, computed by hand because the embedded PostgreSQL
  (pgserver 16) ships without the extension: each word (a run of ASCII letters and digits,
  lower-cased) padded with two spaces before and one after, its 3-character substrings; the
  similarity of two strings is the number of trigrams they share over the number of distinct
  trigrams in either. A page scores the best similarity of any (token, form) pair and is kept
  when that reaches ``NAME_THRESHOLD`` (pg_trgm's default 0.3).
- **Rows**: each kept page's first chunk (lowest ordinal), best score first, ties by chunk id
  (a total order, so a deeper search's first rows are a shallower one's: ``PathMemo``), at most
  the path's limit.

The tokens reach SQL as one array parameter; no character of the question reaches the statement.
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


# -- the name channel ------------------------------------------------------------------------
NAME_THRESHOLD = 0.3        # pg_trgm's default similarity threshold
MIN_LETTERS = 4             # letters a name-like token holds at least
MAX_NAME_TOKENS = 64        # name-like tokens compared, the first in the question
NAME_TOKEN = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(\s*\()?")
LETTER = re.compile(r"[A-Za-z]")

# One word's trigrams, pg_trgm's way: the word padded '  w ' and cut into every 3-character substring.
_GRAMS = ("SELECT DISTINCT {key}, substr(w.padded, i, 3) AS gram FROM {rows} CROSS JOIN LATERAL (SELECT '  ' || m[1] "
          "|| ' ' AS padded FROM regexp_matches(lower({text}), '[a-z0-9]+', 'g') AS m) w "
          "CROSS JOIN LATERAL generate_series(1, length(w.padded) - 2) AS i")
NAME_CHANNEL_SQL = (
    "WITH tokens AS (SELECT t.token, t.n FROM unnest(%(tokens)s::text[]) WITH ORDINALITY AS t(token, n)), "
    r"pages AS (SELECT s.source_id, regexp_replace(regexp_replace(s.path, '^.*/', ''), '\.[^.]*$', '') AS doc "
    "FROM {s}.sources s), "
    "forms AS (SELECT DISTINCT p.source_id, f.form FROM pages p CROSS JOIN LATERAL (VALUES (p.doc), "
    r"(regexp_replace(p.doc, '^numpy\.', 'np.')), (regexp_replace(p.doc, '^numpy\.', '')), "
    r"(regexp_replace(p.doc, '^.*\.', ''))) AS f(form)), "
    f"form_grams AS ({_GRAMS.format(key='f.source_id, f.form', rows='forms f', text='f.form')}), "
    f"token_grams AS ({_GRAMS.format(key='t.n', rows='tokens t', text='t.token')}), "
    "form_sizes AS (SELECT source_id, form, count(*) AS size FROM form_grams GROUP BY source_id, form), "
    "token_sizes AS (SELECT n, count(*) AS size FROM token_grams GROUP BY n), "
    "shared AS (SELECT fg.source_id, fg.form, tg.n, count(*) AS common FROM form_grams fg "
    "JOIN token_grams tg USING (gram) GROUP BY fg.source_id, fg.form, tg.n), "
    "scored AS (SELECT sh.source_id, max(sh.common::float8 / (fs.size + ts.size - sh.common)) AS score "
    "FROM shared sh JOIN form_sizes fs USING (source_id, form) JOIN token_sizes ts USING (n) GROUP BY sh.source_id), "
    "ranked AS (SELECT DISTINCT ON (sc.source_id) c.chunk_id, sc.score FROM scored sc JOIN {s}.chunks c "
    "USING (source_id) WHERE sc.score >= %(threshold)s ORDER BY sc.source_id, c.ordinal) "
    "SELECT c.chunk_id, s.path, c.ordinal, c.start_char, c.end_char, c.text, c.tenant, r.score "
    "FROM ranked r JOIN {s}.chunks c USING (chunk_id) JOIN {s}.sources s USING (source_id) "
    "ORDER BY r.score DESC, c.chunk_id LIMIT %(limit)s")


def name_tokens(question: str) -> list[str]:
    """The question's name-like tokens, lower-case, distinct, in order (at most ``MAX_NAME_TOKENS``)."""
    found = []
    for match in NAME_TOKEN.finditer(question):
        token, called = match.group(1), match.group(2) is not None
        if ("." in token or "_" in token or called) and len(LETTER.findall(token)) >= MIN_LETTERS:
            found.append(token.lower())
    return list(dict.fromkeys(found))[:MAX_NAME_TOKENS]


def name_statement(index, question: str, limit: int) -> tuple[object, dict] | None:
    """The name channel's statement and parameters for ``question``; None when it holds no name-like token."""
    tokens = name_tokens(question)
    if not tokens:
        return None
    return index.sql(NAME_CHANNEL_SQL), {"tokens": tokens, "threshold": NAME_THRESHOLD, "limit": limit}


def check_names(names: object) -> bool:
    """Whether to run the name channel: True or False."""
    if not isinstance(names, bool):
        raise ValueError(f"names must be True or False; got {names!r}")
    return names


def name_rows(connection, index, question: str, limit: int, tenant: str, memo=None) -> list:
    """The name channel's rows in an open reader session of ``tenant`` (row-level security applies), best first;
    with a ``memo`` (``search.PathMemo``) a question asked before is answered from memory."""
    from .search import _passages

    def fetch(depth: int) -> list:
        statement = name_statement(index, question, depth)
        return [] if statement is None else _passages(connection.execute(*statement, prepare=False).fetchall())

    if memo is None:
        return fetch(limit)
    return memo.rows(("names", index.schema, tenant, question), limit, fetch)
