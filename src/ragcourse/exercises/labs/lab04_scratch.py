"""Lab 04's scratch databases: a temporary PostgreSQL holding one index of a small subset of the files.

``scratch_index`` starts a temporary embedded PostgreSQL (or uses ``$RAGCOURSE_DATABASE_URL``'s
server), writes the chosen pages as Markdown files (``write_files``), indexes them and, on the
way out, stops and deletes the server (or drops the schema and the roles the checks made). The
subsets: ``small_subset`` (two modules, each its own tenant by ``team_of``, and a sample of
numpy's own pages) and ``trace_subset`` (every page a judged question needs, too). The roles a
check reads as: ``create_role``, ``as_role``, ``visible``.
"""
from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ...rag.database import open_database
from ...engines.chunking.policy import ChunkPolicy
from ...rag.store import PgIndex
from ...rag.schema import READ_TABLES
from .shared import corpus, judged

TENANT_MODULES = {"numpy.fft": "signal-team", "numpy.linalg": "linalg-team"}
OTHER_TENANT = "core-team"
NEW_TENANTS = (("signal_reader", "signal-team"), ("linalg_reader", "linalg-team"))
CORE_SAMPLE = 24          # pages of numpy itself beside the two modules, for the tenant and health checks


def team_of(path: str) -> str:
    """The tenant of a file: its module's team, or ``core-team``."""
    for module, team in TENANT_MODULES.items():
        if path.startswith(module + "."):
            return team
    return OTHER_TENANT


@lru_cache(maxsize=1)
def small_subset() -> tuple[str, ...]:
    """The ids of the tenant and health checks' files: both modules and a sample of numpy's own pages."""
    documents = corpus().documents
    modules = [d.doc_id for d in documents if d.module in TENANT_MODULES]
    core = [d.doc_id for d in documents if d.module == "numpy"]
    step = max(1, len(core) // CORE_SAMPLE)
    return tuple(modules + core[::step][:CORE_SAMPLE])


@lru_cache(maxsize=1)
def trace_subset() -> tuple[str, ...]:
    """The ids of the trace check's files: every page a judged question needs, and the two modules' pages."""
    wanted = {r for q in judged() for r in q.relevant} | set(small_subset())
    return tuple(d.doc_id for d in corpus().documents if d.doc_id in wanted)


def write_files(ids: Sequence[str], folder: Path) -> Path:
    """One Markdown file per page, summary left out (as lab 04 exports them)."""
    folder.mkdir(parents=True)
    by_id = corpus().by_id
    for doc_id in ids:
        (folder / f"{doc_id}.md").write_text(by_id[doc_id].markdown(summary=False), encoding="utf-8")
    return folder


@contextmanager
def scratch_index(schema: str, ids: Sequence[str], encoder=None, tenant_of: Callable[[str], str] | None = None,
                  policy: ChunkPolicy | None = None) -> Iterator[PgIndex]:
    """A temporary database holding one index of ``ids``'s files; stopped and deleted on the way out."""
    workspace = Path(tempfile.mkdtemp(prefix="ragcourse-exercise-"))
    database = index = None
    try:
        folder = write_files(ids, workspace / "files")
        database = open_database(temporary=True)
        index = PgIndex(database, schema, policy or ChunkPolicy.seed("sentences"), encoder, tenant_of)
        index.drop()
        index.refresh(folder)
        yield index
    finally:
        if index is not None:
            try:
                if not database.embedded:   # a server of the user's: leave it as it was
                    _drop_roles(index, [role for role, _ in NEW_TENANTS])
                    index.drop()
            finally:
                index.close()
        if database is not None:
            database.close()
        shutil.rmtree(workspace, ignore_errors=True)


def _drop_roles(index: PgIndex, roles: Sequence[str]) -> None:
    from psycopg import sql

    for role in roles:
        with index.connection.transaction():
            if index.connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
                index.connection.execute(sql.SQL("DROP OWNED BY {r}").format(r=sql.Identifier(role)))
                index.connection.execute(sql.SQL("DROP ROLE {r}").format(r=sql.Identifier(role)))


def create_role(index: PgIndex, role: str) -> None:
    """A role that cannot log in or bypass row-level security, allowed to read the index's tables.

    It may read ``{s}.tenants`` too: the index's own policies look up the current role's tenant there
    (a role the table does not list has none, so those policies show it nothing).
    """
    from psycopg import sql

    with index.connection.transaction():
        if not index.connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
            index.connection.execute(sql.SQL("CREATE ROLE {r} NOLOGIN NOSUPERUSER NOBYPASSRLS")
                                     .format(r=sql.Identifier(role)))
        index.connection.execute(sql.SQL("GRANT USAGE ON SCHEMA {s} TO {r}")
                                 .format(s=sql.Identifier(index.schema), r=sql.Identifier(role)))
        index.connection.execute(sql.SQL(f"GRANT SELECT ON {READ_TABLES} TO {{r}}")
                                 .format(s=sql.Identifier(index.schema), r=sql.Identifier(role)))


@contextmanager
def as_role(index: PgIndex, role: str) -> Iterator:
    """A read-only transaction run as ``role`` (the table owner switches to it; row-level security applies)."""
    connection = index.connection
    with connection.transaction():
        connection.execute("SELECT set_config('transaction_read_only', 'on', true), set_config('role', %s, true)",
                           [role])
        yield connection


def visible(connection, index: PgIndex) -> dict[str, dict[str, int]]:
    """table -> tenant -> rows, as the connection's role sees them."""
    seen: dict[str, dict[str, int]] = {}
    for table in ("sources", "chunks"):
        rows = connection.execute(index.sql(f"SELECT tenant, count(*) FROM {{s}}.{table} GROUP BY 1 ORDER BY 1"))
        seen[table] = dict(rows.fetchall())
    return seen
