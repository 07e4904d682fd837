"""``python -m ragcourse index`` and ``ask``: lab 04's PostgreSQL baseline from the shell.

  python -m ragcourse index                       # build the index of the numpy reference
  python -m ragcourse index --refresh             # re-index what changed, drop what is gone
  python -m ragcourse index --check               # the health checks only (exit 1 if one fails)
  python -m ragcourse index --corpus ~/notes      # any folder of text files, in its own index
  python -m ragcourse index --corpus ~/a --tenant a   # a folder into tenant a of the shared index
  python -m ragcourse ask "what did we decide" --tenant a   # answered from tenant a's rows alone
  python -m ragcourse ask "how do I join two arrays end to end" [--json] [--trace]

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
missing and the SQL an administrator runs once, and exits 1 with nothing written.

Exit status: 0 done, 1 a failed health check or an unusable database or index, 2 a bad argument.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from contextlib import contextmanager
from pathlib import Path

from ..rag.ingest import DEFAULT_POLICY, POLICIES, WINDOW_TOKENS

DEFAULT_SCHEMA = "ragcourse"


class CommandError(Exception):
    """A problem with the database or the index (exit status 1), with the fix in its message."""


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``index`` command's arguments."""
    parser.add_argument("--corpus", type=Path, metavar="DIR",
                        help="folder of text files to index (default: the numpy reference, exported)")
    parser.add_argument("--schema", metavar="NAME", help="the index's schema (default: one per corpus folder)")
    parser.add_argument("--policy", choices=POLICIES, default=None,
                        help="chunking policy (default: lab 04's kept system, recursive chunks of 800 characters with "
                             f"the page title and section in front; {DEFAULT_POLICY} packs sentences to {WINDOW_TOKENS} "
                             "of the encoder's tokens)")
    parser.add_argument("--refresh", action="store_true", help="re-index changed files, remove deleted ones")
    parser.add_argument("--check", action="store_true", help="run the health checks only")
    parser.add_argument("--hnsw", action="store_true", help="also build pgvector's HNSW index")
    parser.add_argument("--tenant", metavar="NAME",
                        help="load the folder into this tenant of the shared index 'ragcourse' (or of --schema); "
                             "other tenants' rows are left alone (default: tenant public of the folder's own index)")


def add_ask_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``ask`` command's arguments."""
    parser.add_argument("question", help="the question")
    parser.add_argument("--corpus", type=Path, metavar="DIR", help="ask the index of this folder (default: numpy)")
    parser.add_argument("--schema", metavar="NAME", help="ask this index (default: the corpus's)")
    parser.add_argument("--tenant", metavar="NAME",
                        help="answer from this tenant's rows only, in the shared index 'ragcourse' unless --schema "
                             "or --corpus says otherwise (default: public)")
    parser.add_argument("--json", action="store_true", help="the answer and its whole trace as one JSON object")
    parser.add_argument("--trace", action="store_true", help="print every stage after the answer")
    parser.add_argument("--reranker-model", metavar="PATH",
                        help="a sentence-transformers CrossEncoder folder to rerank with (default: MiniLM max-sim)")


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
    """(corpus folder, schema name) the arguments choose; ValueError for a bad folder, name or tenant.

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
            raise ValueError(f"argument --tenant: {error}") from None
    if args.corpus is None:
        root = default_corpus() if need_root else None
        schema = args.schema or DEFAULT_SCHEMA
    else:
        root = args.corpus.expanduser()
        if not root.is_dir():
            raise ValueError(f"argument --corpus: {str(args.corpus)!r} is not a folder")
        digest = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:10]
        schema = args.schema or (DEFAULT_SCHEMA if tenant is not None else f"corpus_{digest}")
    try:
        check_schema(schema)
    except ValueError as error:
        raise ValueError(f"argument --schema: {error}") from None
    return root, schema


def _open(schema: str, policy: str | None = None, tenant: str | None = None):
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
def _privileges(what: str):
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


def _command(args: argparse.Namespace, root: Path | None, schema: str) -> str:
    """The ``index`` command line that names this index (for the repairs the health report prints)."""
    parts = ["python -m ragcourse index"]
    if args.corpus is not None:
        parts.append(f"--corpus {root}")
    if args.schema is not None:
        parts.append(f"--schema {schema}")
    if getattr(args, "tenant", None) is not None:
        parts.append(f"--tenant {args.tenant}")
    return " ".join(parts)


def run_index(args: argparse.Namespace, out) -> int:
    """Build, refresh or check an index; the exit status."""
    root, schema = schema_for(args)
    if args.check and args.refresh:
        raise ValueError("argument --check: give --check or --refresh, not both")
    database, index = _open(schema, args.policy, args.tenant)
    command = _command(args, root, schema)
    try:
        with _privileges(f"the index {schema!r}"):
            built = index.exists()
            tenant = f" (tenant {index.tenant})" if args.tenant is not None else ""
            if built:
                stored_root = index.corpus_root()
                if stored_root and Path(stored_root) != root.resolve():
                    raise CommandError(f"index {schema!r}{tenant} was built from {stored_root}, not {root.resolve()}; "
                                       f"pass --schema NAME{' or another --tenant' if tenant else ''} to build "
                                       "another index")
                built = stored_root is not None or bool(index.stored_sources())   # this tenant's rows are there
            if args.check:
                if not built:
                    raise CommandError(f"no index {schema!r}{tenant} yet: run `{command}` first")
                return _print_health(index, root, out, command)
            if built and not args.refresh:
                print(f"index {schema!r}{tenant} exists ({index.meta().get('chunker')}); --refresh updates it, "
                      "--check checks it", file=out)
                return _print_health(index, root, out, command)
            report = index.refresh(root)
            print(f"index {schema!r}{tenant} from {root}: {report.summary()}", file=out)
            for skipped in report.skipped:
                kept = " (earlier rows kept)" if skipped.path in report.kept else ""
                print(f"  skipped {skipped.path}: {skipped.reason}{kept}", file=out)
            if args.hnsw:
                print(f"HNSW index built in {index.create_hnsw():.1f} s", file=out)
            return _print_health(index, root, out, command)
    finally:
        index.close()
        database.close()


def _print_health(index, root: Path, out, command: str = "python -m ragcourse index") -> int:
    report = index.health(root)
    for line in report.lines(command):
        print(line, file=out)
    return 0 if report.passed else 1


def run_ask(args: argparse.Namespace, out) -> int:
    """Answer one question with citations; the exit status."""
    from ..labs.ladder import KEPT
    from ..rag.search import check_question
    from ..rag.rerank import make_reranker
    from ..rag.store import DEFAULT_TENANT

    question = check_question(args.question)
    if args.reranker_model is not None and not Path(args.reranker_model).exists():
        raise ValueError(f"argument --reranker-model: {args.reranker_model!r} does not exist")
    root, schema = schema_for(args, need_root=False)
    tenant = args.tenant or DEFAULT_TENANT
    database, index = _open(schema, tenant=tenant)
    try:
        with _privileges(f"a reader session for tenant {tenant!r}"):
            _require(index, schema, args.corpus, args.tenant)
            reranker = None if args.reranker_model is None else make_reranker(index.encoder, args.reranker_model)
            baseline = KEPT.pipeline(index, index.encoder, reranker=reranker)
            trace = baseline.ask(question, tenant)
        if args.json:
            print(json.dumps(trace.to_dict(), ensure_ascii=False), file=out)
            return 0
        print(trace.answer.text, file=out)
        if args.trace:
            print("", file=out)
            for line in trace.lines():
                print(line, file=out)
        return 0
    finally:
        index.close()
        database.close()


def _require(index, schema: str, corpus: Path | None, tenant: str | None = None) -> None:
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


def postgres_document_hits(questions: list[str]) -> list[list]:
    """``search --retriever postgres``: lab 04's kept system's ranked list (``ladder.KEPT``), as documents.

    The same list lab 04's ladder measures on ``dev`` and compares with the other retrievers on ``test``.
    """
    from ..engines.retrievers import DocumentHit

    _, schema = schema_for(argparse.Namespace(corpus=None, schema=None))
    database, index = _open(schema)
    try:
        _require(index, schema, None)
        from ..labs.ladder import KEPT

        results = []
        for trace in KEPT.pipeline(index, index.encoder).ask_many(questions):
            seen, hits = set(), []
            for sp in trace.stage("reranked"):
                if sp.passage.doc_id not in seen:
                    seen.add(sp.passage.doc_id)
                    hits.append(DocumentHit(sp.passage.doc_id, sp.passage.ordinal, sp.score))
            results.append(hits)
        return results
    finally:
        index.close()
        database.close()
