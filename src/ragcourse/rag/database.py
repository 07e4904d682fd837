"""Lab 04's database: a real PostgreSQL with pgvector, embedded by default.

By default the PyPI package ``pgserver`` starts PostgreSQL 16 (with pgvector) from a data
folder of our own, in about a second, and stops it when the last handle closes (at the
latest when the Python process exits). A temporary server also gets a watchdog process
(``rag.watchdog``) that stops it and deletes its folder if this process is killed, which
skips pgserver's ``atexit`` hook. ``$RAGCOURSE_DATABASE_URL`` points the same code at an
existing server instead; that server needs the ``vector`` extension.

Every statement is sent with its values as parameters (psycopg 3); identifiers such as a
schema name are checked against a strict pattern and quoted by ``psycopg.sql``.
"""
from __future__ import annotations

import os
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..engines.dense import cache_dir
from . import watchdog

URL_VARIABLE = "RAGCOURSE_DATABASE_URL"
SCHEMA_PATTERN = re.compile(r"[a-z_][a-z0-9_]{0,62}")
EMBEDDED_HINT = f"unset {URL_VARIABLE} to use the embedded PostgreSQL that ships with the course"


class DatabaseUnavailable(RuntimeError):
    """No database answers, or the one that answers lacks what lab 04 needs (pgvector)."""


def check_schema(name: object) -> str:
    """A schema name: lower-case letters, digits and underscores, starting with a letter or ``_``."""
    if not isinstance(name, str) or not SCHEMA_PATTERN.fullmatch(name):
        raise ValueError(f"schema must be 1-63 lower-case letters, digits or underscores, not starting "
                         f"with a digit; got {name!r}")
    return name


def safe_url(url: str) -> str:
    """The URL without its password, fit to print."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


@dataclass
class Database:
    """A PostgreSQL to connect to: its URI, whether we started it, and the server handle if so."""

    uri: str
    embedded: bool
    data_dir: Path | None = None
    _server: object = field(default=None, repr=False)
    _watchdog: object = field(default=None, repr=False)   # the subprocess.Popen of a temporary server's watchdog

    @property
    def watchdog_pid(self) -> int | None:
        """The PID of the watchdog that cleans up after this process if it is killed; None if there is none."""
        return self._watchdog.pid if self._watchdog is not None else None

    def connect(self, autocommit: bool = True, vector: bool = True):
        """A new psycopg connection, with the pgvector type registered unless ``vector=False``.

        Autocommit by default, so that every ``with connection.transaction():`` block is a
        real transaction that commits at its end (on a connection that is not in
        autocommit mode, psycopg would nest the block as a savepoint in a transaction left
        open by the first statement, and nothing would be committed).
        """
        import psycopg
        from pgvector.psycopg import register_vector

        try:
            connection = psycopg.connect(self.uri, autocommit=autocommit, connect_timeout=10)
        except psycopg.OperationalError as error:
            where = f"the embedded PostgreSQL in {self.data_dir}" if self.embedded else safe_url(self.uri)
            hint = ("delete that folder to start a fresh one" if self.embedded else
                    f"check that the server runs and that {URL_VARIABLE} is right, or {EMBEDDED_HINT}")
            raise DatabaseUnavailable(f"cannot connect to {where} ({str(error).strip()}): {hint}") from None
        if not vector:
            return connection
        try:
            register_vector(connection)
        except psycopg.ProgrammingError:
            connection.close()
            raise DatabaseUnavailable(self._no_vector_message()) from None
        return connection

    def ensure_vector(self) -> str:
        """Create the ``vector`` extension if needed; its version. DatabaseUnavailable without pgvector."""
        import psycopg

        with self.connect(autocommit=True, vector=False) as connection:
            try:
                connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as error:
                if getattr(error, "sqlstate", None) == "42501":   # installed, but this role may not create it
                    user, database = connection.execute("SELECT current_user, current_database()").fetchone()
                    raise DatabaseUnavailable(
                        f"role {user} may not create the extension vector in database {database} (it needs a "
                        f"superuser): an administrator runs once, in that database: CREATE EXTENSION vector; "
                        f'(see README, "Lab 04 on a server of your own"), or {EMBEDDED_HINT}') from None
                raise DatabaseUnavailable(self._no_vector_message()) from None
            return connection.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]

    def _no_vector_message(self) -> str:
        return (f"the PostgreSQL at {safe_url(self.uri)} has no pgvector extension: install it "
                f"(https://github.com/pgvector/pgvector) or {EMBEDDED_HINT}")

    def describe(self) -> str:
        """One line naming the server: version, pgvector, and where it runs."""
        with self.connect(autocommit=True) as connection:
            version = connection.execute("SHOW server_version").fetchone()[0]
            row = connection.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        vector = f"pgvector {row[0]}" if row else "no pgvector"
        where = (f"embedded (pgserver), data in {self.data_dir}" if self.embedded
                 else f"{safe_url(self.uri)} (from {URL_VARIABLE})")
        return f"PostgreSQL {version.split()[0]} with {vector}, {where}"

    def close(self) -> None:
        """Stop the embedded server (and delete its folder if it was temporary); no-op for a URL.

        The watchdog, if any, is ended after the server stopped (it would exit by itself once
        ``postmaster.pid`` is gone); if stopping fails, it stays, to clean up when this process ends.
        """
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        if self._watchdog is not None:
            watchdog.stop_watchdog(self._watchdog)
            self._watchdog = None


def default_data_dir() -> Path:
    """Where the commands keep their embedded database: ``<cache dir>/postgres``."""
    return cache_dir() / "postgres"


def _start_embedded(data_dir: Path, temporary: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        try:
            import pgserver
        except ImportError:
            raise DatabaseUnavailable("the embedded PostgreSQL needs the package pgserver: run `make course` "
                                      "(or `.venv/bin/pip install -r requirements.txt`)") from None
        try:
            return pgserver.get_server(data_dir, cleanup_mode="delete" if temporary else "stop")
        except Exception as error:  # pgserver raises plain exceptions with initdb's or pg_ctl's output
            raise DatabaseUnavailable(f"the embedded PostgreSQL did not start in {data_dir} ({error}); "
                                      "delete that folder to start a fresh one") from None


def _start_watchdog(server):
    """A watchdog for a temporary server (see ``rag.watchdog`` for why only those); None where it cannot run."""
    if os.name != "posix":
        return None
    from pgserver._commands import POSTGRES_BIN_PATH

    try:
        return watchdog.start_watchdog(os.getpid(), Path(server.pgdata), POSTGRES_BIN_PATH / "pg_ctl", temporary=True,
                                       pg_user=getattr(server, "system_user", None),
                                       lock_file=getattr(server, "lock_path", None))
    except OSError as error:
        warnings.warn(f"no watchdog for the embedded PostgreSQL in {server.pgdata} ({error}): if this process is "
                      "killed, that server keeps running and its folder stays", RuntimeWarning, stacklevel=3)
        return None


def open_database(url: str | None = None, data_dir: str | Path | None = None,
                  temporary: bool = False) -> Database:
    """The database to use: ``url``, else ``$RAGCOURSE_DATABASE_URL``, else the embedded server.

    The embedded server keeps its data in ``data_dir`` (default ``<cache dir>/postgres``);
    ``temporary=True`` uses a fresh folder that is deleted when the database is closed, or by
    a watchdog process if this process is killed first. The extension ``vector`` is created
    if it is missing.
    """
    url = url or os.environ.get(URL_VARIABLE) or None
    if url is not None:
        database = Database(url, embedded=False)
    else:
        if temporary:
            folder = Path(tempfile.mkdtemp(prefix="ragcourse-pg-"))
        else:
            folder = Path(data_dir) if data_dir is not None else default_data_dir()
            folder.parent.mkdir(parents=True, exist_ok=True)
        server = _start_embedded(folder, temporary)
        database = Database(server.get_uri(), embedded=True, data_dir=folder, _server=server,
                            _watchdog=_start_watchdog(server) if temporary else None)
    database.ensure_vector()
    return database


_LAB_DATABASE: Database | None = None


def lab_database() -> Database:
    """The notebook's database: one per Python process, started on first use (temporary unless a URL is set).

    Running the cell again returns the same database; after ``close_lab_database()`` the
    next call starts a fresh one.
    """
    global _LAB_DATABASE
    if _LAB_DATABASE is None or (_LAB_DATABASE.embedded and _LAB_DATABASE._server is None):
        _LAB_DATABASE = open_database(temporary=True)
    return _LAB_DATABASE


def close_lab_database() -> None:
    """Stop the notebook's database (an embedded one is deleted with its folder)."""
    global _LAB_DATABASE
    if _LAB_DATABASE is not None:
        _LAB_DATABASE.close()
        _LAB_DATABASE = None
