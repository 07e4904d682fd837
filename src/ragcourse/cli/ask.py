"""``python -m ragcourse ask``: answer a question with citations from lab 04's PostgreSQL index.

  python -m ragcourse ask "how do I join two arrays end to end" [--json] [--trace]
  python -m ragcourse ask "what did we decide" --tenant a   # answered from tenant a's rows alone

It runs lab 04's kept system (``labs.ladder.KEPT``) over the index ``index`` built; which
database, corpus folder and schema: ``ragcourse.cli.postgres``.
Exit status: 0 answered, 1 an unusable database or index, 2 a bad argument or question.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..batch.contract import UsageError
from .postgres import open_index, privileges, require_index, schema_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def run(args: argparse.Namespace, out) -> int:
    """Answer one question with citations; the exit status."""
    from ..labs.ladder import KEPT
    from ..rag.search import check_question
    from ..rag.rerank import make_reranker
    from ..rag.store import DEFAULT_TENANT

    question = check_question(args.question)
    if args.reranker_model is not None and not Path(args.reranker_model).exists():
        raise UsageError(f"argument --reranker-model: {args.reranker_model!r} does not exist")
    root, schema = schema_for(args, need_root=False)
    tenant = args.tenant or DEFAULT_TENANT
    database, index = open_index(schema, tenant=tenant)
    try:
        with privileges(f"a reader session for tenant {tenant!r}"):
            require_index(index, schema, args.corpus, args.tenant)
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
