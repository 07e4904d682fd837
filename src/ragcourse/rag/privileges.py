"""What ``python -m ragcourse index`` needs of the database role it logs in as, checked before it writes.

On the embedded server the role is a superuser and needs nothing. On a server of one's own
the login role needs (README, "Lab 04 on a server of your own"):

- ``CREATE`` on the database, to create the index's schema (or the schema already its own);
- the reader roles: ``ragcourse_reader`` and one ``ragcourse_reader_<tenant>`` a tenant,
  either created by ``index`` itself (``CREATEROLE``) or created beforehand by an
  administrator and granted to the login role (then ``index`` needs no ``CREATEROLE``);
- the ``vector`` extension in the database (``CREATE EXTENSION vector``, once).

``require`` looks at the catalogue and raises ``PrivilegeError``, one line naming what is
missing and the SQL an administrator runs once, before anything is written; ``explain``
turns a privilege error the server raised anyway into the same kind of line.
"""
from __future__ import annotations

from typing import Sequence

README = 'README, "Lab 04 on a server of your own"'


class PrivilegeError(RuntimeError):
    """The login role lacks a privilege the index needs; the message names it and the SQL that grants it."""


def quote(name: str) -> str:
    """A PostgreSQL identifier, double-quoted (for the SQL shown to an administrator)."""
    return '"' + name.replace('"', '""') + '"'


def grant_sql(user: str, database: str, roles: Sequence[str], create_on_database: bool = True) -> list[str]:
    """The statements an administrator runs once so that ``user`` can build an index in ``database``."""
    statements = [f"GRANT CREATE ON DATABASE {quote(database)} TO {quote(user)};"] if create_on_database else []
    for role in roles:
        statements.append(f"CREATE ROLE {quote(role)} NOLOGIN; GRANT {quote(role)} TO {quote(user)};")
    return statements


def _can_set(connection, role: str, version: int) -> bool:
    # PostgreSQL 16 separates SET from membership: a role created under CREATEROLE is the creator's with
    # ADMIN only, and ADMIN lets the creator grant it to itself (PgIndex.create does).
    kinds = ("SET", "MEMBER WITH ADMIN OPTION") if version >= 160000 else ("MEMBER",)
    return any(connection.execute("SELECT pg_has_role(current_user, %s, %s)", [role, kind]).fetchone()[0]
               for kind in kinds)


def missing(connection, schema: str, roles: Sequence[str]) -> tuple[list[str], list[str]]:
    """(what the current role lacks, the SQL that grants it) for an index in ``schema`` read by ``roles``."""
    user, database, superuser, createrole, create_db, version = connection.execute(
        "SELECT current_user, current_database(), rolsuper, rolcreaterole, "
        "has_database_privilege(current_database(), 'CREATE'), current_setting('server_version_num')::int "
        "FROM pg_roles WHERE rolname = current_user").fetchone()
    if superuser:
        return [], []
    lacks, sql = [], []
    owner = connection.execute("SELECT nspowner::regrole::text, pg_has_role(current_user, nspowner, 'USAGE') "
                               "FROM pg_namespace WHERE nspname = %s", [schema]).fetchone()
    if owner is None and not create_db:
        lacks.append(f"CREATE on database {database} (to create schema {schema})")
        sql += grant_sql(user, database, ())
    elif owner is not None and not owner[1]:
        lacks.append(f"ownership of schema {schema} (it belongs to {owner[0]})")
        sql.append(f"ALTER SCHEMA {quote(schema)} OWNER TO {quote(user)}; (or pass --schema with another name)")
    to_create, to_grant = [], []
    for role in roles:
        exists = connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone() is not None
        if not exists and not createrole:
            to_create.append(role)
        elif exists and not _can_set(connection, role, version):
            to_grant.append(role)
    if to_create:
        lacks.append(f"CREATEROLE (to create the reader role{'s' if len(to_create) > 1 else ''} "
                     f"{', '.join(to_create)})")
        sql += grant_sql(user, database, to_create, create_on_database=False)
    if to_grant:
        lacks.append(f"membership in {', '.join(to_grant)}")
        sql += [f"GRANT {quote(role)} TO {quote(user)};" for role in to_grant]
    return lacks, sql


def require(connection, schema: str, roles: Sequence[str]) -> None:
    """PrivilegeError (one line: what is missing, the SQL to run once) unless the index can be built."""
    lacks, sql = missing(connection, schema, roles)
    if lacks:
        user, database = connection.execute("SELECT current_user, current_database()").fetchone()
        raise PrivilegeError(f"role {user} cannot build index {schema!r} in database {database}: it lacks "
                             f"{'; '.join(lacks)}. Nothing was written. An administrator runs once, in that "
                             f"database: {' '.join(sql)} (see {README})")


def is_privilege_error(error: BaseException) -> bool:
    """Whether ``error`` is the server refusing a privilege (SQLSTATE 42501, or a grant the role may not make)."""
    return getattr(error, "sqlstate", None) in ("42501", "0L000", "0LP01")


def explain(error: BaseException, what: str = "the index") -> str:
    """A privilege error the server raised, as one line naming the statement's complaint and where the SQL is."""
    diagnostic = getattr(error, "diag", None)
    text = str(getattr(diagnostic, "message_primary", None) or error).strip().splitlines()[0]
    return (f"the database refused {what}: {text}. Grant the privileges of {README} "
            f"(GRANT CREATE ON DATABASE, the reader roles, membership in them), or {EMBEDDED_HINT}")


EMBEDDED_HINT = "unset RAGCOURSE_DATABASE_URL to use the embedded PostgreSQL that ships with the course"
