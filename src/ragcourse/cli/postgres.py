"""What ``index``, ``ask`` and ``search --retriever postgres`` (the pipeline over lab 04's PostgreSQL index) share.

The database is the embedded PostgreSQL kept in ``<cache dir>/postgres`` (started for the
command and stopped after it), or the server named by ``$RAGCOURSE_DATABASE_URL``; the
line naming it goes to stderr, so ``--json`` output stays clean. The default corpus is
the numpy reference exported as Markdown, each page with its summary line (as
``rag.pipeline.DEFAULT_SETTING`` indexes it), into the cache folder; each
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
    """The database and the index in ``schema`` for ``tenant``, chunked by ``policy`` (None: the default setting's)."""
    from ..engines.dense import DenseEncoder
    from ..rag.database import open_database
    from ..engines.chunking.policy import ChunkPolicy
    from ..rag.pipeline import DEFAULT_SETTING
    from ..rag.store import DEFAULT_TENANT, PgIndex

    database = open_database()
    print(f"database: {database.describe()}", file=sys.stderr)
    chunking = DEFAULT_SETTING.chunk_policy() if policy is None else ChunkPolicy(policy)
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
    """``rag.health.check_ready`` as one line naming the ``index`` command that repairs it (exit status 1)."""
    from ..rag.health import IndexNotReady, check_ready

    where = (f" --corpus {corpus}" if corpus is not None else "") + (f" --tenant {tenant}" if tenant else "")
    try:
        check_ready(index)
    except IndexNotReady as problem:
        if not problem.repair:
            raise CommandError(f"{problem}: run `python -m ragcourse index{where}` first") from None
        raise CommandError(f"{problem}: run `python -m ragcourse index{where} {problem.repair}` to bring it up to "
                           "date") from None


def postgres_document_hits(questions: list[str], allowed=None, k: int = 10) -> list[list]:
    """``search --retriever postgres``: the pipeline's ranked list of ``k`` pages at ``rag.pipeline.DEFAULT_SETTING``,
    as documents (``rag.pipeline.PipelineRetriever``; ``allowed`` keeps those pages, before the list is cut).

    The same list lab 04's ladder measures on ``dev`` and compares with the other retrievers on ``test``.
    What making the lists passed over goes to stderr in one line (``--json`` output stays clean).
    """
    from ..rag.pipeline import DEFAULT_SETTING, PipelineRetriever

    _, schema = schema_for(argparse.Namespace(corpus=None, schema=None))
    database, index = open_index(schema)
    try:
        require_index(index, schema, None)
        retriever = PipelineRetriever(DEFAULT_SETTING.pipeline(index, index.encoder, pages=k))
        found = retriever.search_many(questions, allowed)
    finally:
        index.close()
        database.close()
    print(f"pages: {k} asked a question; {retriever.deepened} of {len(questions)} questions searched deeper, "
          f"{retriever.short} got fewer; passed over {retriever.folded} chunks of a page already listed and "
          f"{retriever.filtered_out} pages filtered out", file=sys.stderr)
    return found
