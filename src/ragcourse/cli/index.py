"""``python -m ragcourse index``: build, refresh or check lab 04's PostgreSQL index.

  python -m ragcourse index                       # build the index of the numpy reference
  python -m ragcourse index --refresh             # re-index what changed, drop what is gone
  python -m ragcourse index --check               # the health checks only (exit 1 if one fails)
  python -m ragcourse index --corpus ~/notes      # any folder of text files, in its own index
  python -m ragcourse index --corpus ~/a --tenant a   # a folder into tenant a of the shared index

Which database, corpus folder and schema: ``ragcourse.cli.postgres``.
Exit status: 0 done, 1 a failed health check or an unusable database or index, 2 a bad argument.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..batch.contract import CommandError, UsageError
from ..engines.chunking.policy import DEFAULT_POLICY, POLICIES, WINDOW_TOKENS
from .postgres import open_index, privileges, schema_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def run(args: argparse.Namespace, out) -> int:
    """Build, refresh or check an index; the exit status."""
    root, schema = schema_for(args)
    if args.check and args.refresh:
        raise UsageError("argument --check: give --check or --refresh, not both")
    database, index = open_index(schema, args.policy, args.tenant)
    command = _command(args, root, schema)
    try:
        with privileges(f"the index {schema!r}"):
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
    """Print the health report, each failed check with the command that repairs it; 0 if every check passed."""
    report = index.health(root)
    for line in report.lines(command):
        print(line, file=out)
    return 0 if report.passed else 1
