"""Lab 04's index health as data, and its report: what each health check found (a refresh's: ``ingest.RefreshReport``).

``CHECKS`` is the health checks' table, one ``HealthCheck`` a row: the label a report prints,
the SQL that counts what the check finds and the SQL that lists up to three examples of it,
and what repairs it. ``PgIndex.health`` runs the table in one loop. A row without SQL is
measured outside the database, by ``PgIndex.health``, from the rows ``STORED`` and ``TEXTS``
return: the files behind the stored sources (``file_status``) and the chunks' lengths in the
encoder's tokens. Every query names the schema as ``{s}`` (``PgIndex.sql`` fills it in) and
takes its values as parameters: ``%(tenant)s`` (NULL for every tenant of the index, or one
tenant's name: its rows only), ``%(chunker)s``, ``%(embedding)s`` and ``%(encoded)s``
(``PgIndex.scope``).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..engines.chunking.policy import ChunkPolicy
from .schema import SCHEMA_VERSION, is_current

IN_SCOPE = "(%(tenant)s::text IS NULL OR {t}.tenant = %(tenant)s)"


class IndexNotReady(RuntimeError):
    """An index a query cannot use as it stands. ``repair`` is the ``index`` option that fixes it:
    "" (build it) or "--refresh" (bring it up to date)."""

    def __init__(self, message: str, repair: str):
        super().__init__(message)
        self.repair = repair


def check_ready(index) -> None:
    """``IndexNotReady`` unless ``index`` (a ``PgIndex``) exists and was built at this package's schema
    version or later (compared as numbers, ``schema.is_current``). Then ``index.policy`` becomes the
    chunking the index records (``ChunkPolicy.from_version``), so a query's health report describes
    what it was built with."""
    if not index.exists():
        raise IndexNotReady(f"no index {index.schema!r} yet", "")
    meta = index.meta()
    stored = meta.get("schema_version")
    try:
        current = is_current(stored)
    except ValueError as error:
        raise IndexNotReady(f"index {index.schema!r}: {error}", "--refresh") from None
    if not current:
        raise IndexNotReady(f"index {index.schema!r} was built by an older version (schema {stored}, not "
                            f"{SCHEMA_VERSION})", "--refresh")
    built_with = meta.get("chunker")
    if built_with != index.policy.version:
        try:
            index.policy = ChunkPolicy.from_version(built_with)
        except ValueError as error:
            raise IndexNotReady(f"index {index.schema!r}: {error}", "--refresh") from None


def scoped(query: str) -> str:
    """``query`` with ``{in_c}`` / ``{in_s}`` as the scope condition on ``c`` (chunks) / ``s`` (sources)."""
    return query.replace("{in_c}", IN_SCOPE.format(t="c")).replace("{in_s}", IN_SCOPE.format(t="s"))


def counted(listing: str) -> str:
    """A query counting the rows of ``listing``."""
    return f"SELECT count(*) FROM ({listing}) found"


SOURCES = scoped("SELECT count(*) FROM {s}.sources s WHERE {in_s}")
CHUNKS = scoped("SELECT count(*) FROM {s}.chunks c WHERE {in_c}")
STORED = scoped("SELECT path, content_hash FROM {s}.sources s WHERE {in_s} ORDER BY path")
TEXTS = scoped("SELECT s.path || '#' || c.ordinal, CASE WHEN c.header = '' THEN c.text "
               "ELSE c.header || E'\\n' || c.text END FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
               "WHERE {in_c} ORDER BY s.path, c.ordinal")
# sources to write again: no chunk, a span that does not match its text, or (with an encoder) no vector
DAMAGED_SOURCES = scoped(
    "SELECT s.path FROM {s}.sources s WHERE {in_s} AND (NOT EXISTS (SELECT 1 FROM {s}.chunks c "
    "WHERE c.source_id = s.source_id) OR EXISTS (SELECT 1 FROM {s}.chunks c WHERE "
    "c.source_id = s.source_id AND (c.end_char <= c.start_char OR length(c.text) <> "
    "c.end_char - c.start_char OR (%(encoded)s AND c.embedding IS NULL))))")
ORPHANS = scoped("SELECT c.chunk_id::text FROM {s}.chunks c LEFT JOIN {s}.sources s USING (source_id) "
                 "WHERE s.source_id IS NULL AND {in_c} ORDER BY 1")
EMPTY_SOURCES = scoped("SELECT s.path FROM {s}.sources s WHERE {in_s} AND NOT EXISTS "
                       "(SELECT 1 FROM {s}.chunks c WHERE c.source_id = s.source_id) ORDER BY 1")
BAD_SPANS = scoped("SELECT s.path || '#' || c.ordinal FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
                   "WHERE (c.end_char <= c.start_char OR length(c.text) <> c.end_char - c.start_char) AND {in_c} "
                   "ORDER BY 1")
# The tenants whose BM25 term statistics do not match a recount of the chunks of their stored sources (an
# orphan chunk is its own check's finding): the collection row (chunks, total length), or the lexeme
# counts, which can differ while the collection row matches.
STALE_TENANTS = (
    "SELECT tenant FROM ((SELECT tenant FROM (SELECT c.tenant, count(*) AS n, sum(c.code_length) AS total "
    "FROM {s}.chunks c JOIN {s}.sources USING (source_id) GROUP BY c.tenant) t "
    "FULL JOIN {s}.collection USING (tenant) WHERE collection.chunks IS DISTINCT FROM t.n "
    "OR collection.total_length IS DISTINCT FROM t.total) UNION (SELECT tenant FROM ("
    "(SELECT c.tenant, u.lexeme, count(*)::integer AS chunks "
    "FROM {s}.chunks c JOIN {s}.sources USING (source_id), unnest(c.code_text) u "
    "GROUP BY 1, 2) EXCEPT ALL (SELECT tenant, lexeme, chunks FROM {s}.lexemes) UNION ALL "
    "((SELECT tenant, lexeme, chunks FROM {s}.lexemes) EXCEPT ALL (SELECT c.tenant, u.lexeme, "
    "count(*)::integer FROM {s}.chunks c JOIN {s}.sources USING (source_id), unnest(c.code_text) u "
    "GROUP BY 1, 2))) d)) stale WHERE (%(tenant)s::text IS NULL OR tenant = %(tenant)s) ORDER BY 1")


@dataclass(frozen=True)
class HealthCheck:
    """One row of the health table.

    ``label`` is the name a report prints (``{chunker}``, ``{embedding}`` and ``{window}``
    filled in); ``sql`` counts what the check finds (rows, sources or tenants) and ``sample``
    lists examples of them (their first column; ``PgIndex.health`` keeps three), or None.
    A row with no ``sql`` is measured outside the database: ``measure`` names what
    (``window``, or a ``file_status``: ``missing``, ``unreadable``, ``changed``).
    ``encoded`` checks run only with an encoder (without one they find 0); ``repair`` and
    ``note`` are ``Check``'s.
    """

    label: str
    sql: str | None = None
    sample: str | None = None
    measure: str | None = None
    repair: str = "refresh"
    note: bool = False
    encoded: bool = False


WINDOW = ("chunks longer than the encoder's window ({window} tokens): full text reads them whole, the dense "
          "path their first {window} tokens")
CHECKS = (
    HealthCheck("chunks without a source", counted(ORPHANS), ORPHANS),
    HealthCheck("sources without a chunk", counted(EMPTY_SOURCES), EMPTY_SOURCES),
    HealthCheck("chunks not made by {chunker}",
                scoped("SELECT count(*) FROM {s}.chunks c WHERE chunker <> %(chunker)s AND {in_c}"),
                scoped("SELECT DISTINCT chunker FROM {s}.chunks c WHERE chunker <> %(chunker)s AND {in_c} "
                       "ORDER BY 1")),
    HealthCheck("chunks not embedded by {embedding}",
                scoped("SELECT count(*) FROM {s}.chunks c WHERE embedding_version IS DISTINCT FROM %(embedding)s "
                       "AND {in_c}"),
                scoped("SELECT DISTINCT coalesce(embedding_version, 'none') FROM {s}.chunks c "
                       "WHERE embedding_version IS DISTINCT FROM %(embedding)s AND {in_c} ORDER BY 1")),
    HealthCheck("chunks without an embedding", scoped("SELECT count(*) FROM {s}.chunks c WHERE embedding IS NULL "
                                                      "AND {in_c}"), encoded=True),
    HealthCheck("chunk spans that do not match their text", counted(BAD_SPANS), BAD_SPANS),
    # a cost the chosen chunking accepts: counted and named, never a failure
    HealthCheck(WINDOW, measure="window", repair="policy", note=True),
    HealthCheck("tenants whose BM25 term statistics do not match their chunks (refresh to recompute)",
                counted(STALE_TENANTS), STALE_TENANTS),
    HealthCheck("sources whose file is missing", measure="missing"),
    HealthCheck("sources whose file cannot be read", measure="unreadable", repair="files"),
    HealthCheck("sources whose file changed since indexing", measure="changed"),
)


@dataclass(frozen=True)
class Check:
    """One health check: its name, whether it passed, how many rows or files it found, and examples.

    ``repair`` says what repairs a failure (its row of ``CHECKS``): ``refresh`` (``PgIndex.refresh``,
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


def absent(path: Path) -> bool:
    """Whether nothing is at ``path`` (as ``file_status`` calls ``missing``); a directory there is not absent."""
    try:
        path.stat()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def file_status(path: Path, digest: str) -> str:
    """``ok``, ``missing`` (no such file), ``unreadable`` (there, but reading fails) or ``changed``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"
    return "ok" if hashlib.sha256(data).hexdigest() == digest else "changed"
