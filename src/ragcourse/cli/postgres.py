"""What ``index``, ``ask`` (lab 04's PostgreSQL baseline) and ``search --retriever postgres`` share.

The database is the embedded PostgreSQL kept in ``<cache dir>/postgres`` (started for the
command and stopped after it), or the server named by ``$RAGCOURSE_DATABASE_URL``; the
line naming it goes to stderr, so ``--json`` output stays clean. The default corpus is
the numpy reference exported as Markdown, each page with its summary line (lab 04's final
setting), into the cache folder; each
corpus folder gets its own schema, and an index is never refreshed from a folder other
than the one it was built from. ``--tenant NAME`` (without ``--schema``) uses the shared index
``ragcourse`` instead, where each tenant's rows come from its own folder and are read as its
own reader role; a refresh of one tenant leaves the others' rows alone.

On a server of one's own the login role needs a few privileges (``rag.privileges``); without
them, and for any privilege the server refuses, the command prints one line naming what is
missing and the SQL an administrator runs once, and exits 1 with nothing written
(``CommandError``).
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from contextlib import contextmanager
from pathlib import Path

from ..batch.contract import CommandError, UsageError

DEFAULT_SCHEMA = "ragcourse"


def default_corpus() -> Path:
    """The numpy reference as Markdown in the cache folder, exported on first use."""
    from ..corpus.apidocs import export_markdown, load_corpus
    from ..engines.dense import cache_dir

    corpus = load_corpus()
    # "-summaries": an export from before the summary line was kept is not reused
    folder = cache_dir() / f"numpy-{corpus.numpy_version}-{corpus.fingerprint()[:12]}-summaries"
    if not folder.is_dir():
        export_markdown(corpus, folder, summaries=True)
    return folder


def schema_for(args: argparse.Namespace, need_root: bool = True) -> tuple[Path | None, str]:
    """(corpus folder, schema name) the arguments choose; UsageError for a bad folder, name or tenant.

    ``--schema`` wins; else ``--tenant`` means the shared index ``ragcourse`` (so that ``ask
    --tenant NAME`` finds what ``index --corpus DIR --tenant NAME`` loaded); else a folder gets its own schema and the numpy reference ``ragcourse``. ``need_root=False``
    (ask) does not export the numpy reference just to name its folder.
    """
    from ..rag.database import check_schema
    from ..rag.schema import check_tenant

    tenant = getattr(args, "tenant", None)
    if tenant is not None:
        try:
            check_tenant(tenant)
        except ValueError as error:
            raise UsageError(f"argument --tenant: {error}") from None
    if args.corpus is None:
        root = default_corpus() if need_root else None
        schema = args.schema or DEFAULT_SCHEMA
    else:
        root = args.corpus.expanduser()
        if not root.is_dir():
            raise UsageError(f"argument --corpus: {str(args.corpus)!r} is not a folder")
        digest = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:10]
        schema = args.schema or (DEFAULT_SCHEMA if tenant is not None else f"corpus_{digest}")
    try:
        check_schema(schema)
    except ValueError as error:
        raise UsageError(f"argument --schema: {error}") from None
    return root, schema


def open_index(schema: str, policy: str | None = None, tenant: str | None = None):
    """The database and the index in ``schema`` for ``tenant``, chunked by ``policy`` (None: lab 04's kept system's)."""
    from ..rag.database import open_database
    from ..engines.dense import DenseEncoder
    from ..labs.ladder import KEPT
    from ..rag.ingest import ChunkPolicy
    from ..rag.store import DEFAULT_TENANT, PgIndex

    database = open_database()
    print(f"database: {database.describe()}", file=sys.stderr)
    chunking = KEPT.chunk_policy() if policy is None else ChunkPolicy(policy)
    return database, PgIndex(database, schema, chunking, DenseEncoder(), tenant=tenant or DEFAULT_TENANT)


@contextmanager
def privileges(what: str):
    """A privilege the server refuses (or ``require`` finds missing) as one line, exit status 1."""
    import psycopg

    from ..rag.privileges import PrivilegeError, explain, is_privilege_error

    try:
        yield
    except PrivilegeError as error:
        raise CommandError(str(error)) from None
    except psycopg.Error as error:
        if is_privilege_error(error):
            raise CommandError(explain(error, what)) from None
        raise


def require_index(index, schema: str, corpus: Path | None, tenant: str | None = None) -> None:
    from ..rag.store import SCHEMA_VERSION

    where = (f" --corpus {corpus}" if corpus is not None else "") + (f" --tenant {tenant}" if tenant else "")
    if not index.exists():
        raise CommandError(f"no index {schema!r} yet: run `python -m ragcourse index{where}` first")
    meta = index.meta()
    if meta.get("schema_version", "1") < SCHEMA_VERSION:
        raise CommandError(f"index {schema!r} was built by an older version (schema {meta.get('schema_version')}, "
                           f"not {SCHEMA_VERSION}): run `python -m ragcourse index{where} --refresh` to bring it up "
                           "to date")
    built_with = meta.get("chunker")
    if built_with != index.policy.version:
        index.policy = _policy_from_version(built_with)


def _policy_from_version(version: str | None):
    """The ChunkPolicy an index records (so queries report health against what it was built with)."""
    import re

    from ..rag.ingest import ChunkPolicy

    match = re.fullmatch(r"(\w+)-v1(?:\((?:size=(\d+),overlap=(\d+)(,unit=tokens)?,?)?(headers)?\))?", version or "")
    if not match:
        return ChunkPolicy()
    name, size, overlap, tokens, headers = match.groups()
    if size is None:
        return ChunkPolicy(name, headers=bool(headers))
    return ChunkPolicy(name, int(size), int(overlap), unit="tokens" if tokens else "characters",
                       headers=bool(headers))


def postgres_document_hits(questions: list[str], allowed=None) -> list[list]:
    """``search --retriever postgres``: lab 04's kept system's ranked list (``ladder.KEPT``), as documents
    (``rag.pipeline.PipelineRetriever``; ``allowed`` keeps those pages of each list).

    The same list lab 04's ladder measures on ``dev`` and compares with the other retrievers on ``test``.
    """
    from ..rag.pipeline import PipelineRetriever

    _, schema = schema_for(argparse.Namespace(corpus=None, schema=None))
    database, index = open_index(schema)
    try:
        require_index(index, schema, None)
        from ..labs.ladder import KEPT

        return PipelineRetriever(KEPT.pipeline(index, index.encoder)).search_many(questions, allowed)
    finally:
        index.close()
        database.close()
