"""``python -m ragcourse search``: any Part 3 retriever over the numpy reference, from the shell.

  python -m ragcourse search "how do I glue two arrays end to end" --retriever bm25 -k 5
  python -m ragcourse search --file questions.txt --retriever dense      # JSON lines out
  python -m ragcourse search "solve a linear system" --where module=numpy.linalg --user "linalg + fft"

Each retriever uses its lab's chunks, cut from the pages with their summary line:
``lexical`` (lab 01's baseline scorer) and ``bm25`` (lab 01's last step, at full strength)
lab 01's paragraphs (800 characters), ``tfidf`` and ``dense`` lab 02's word windows (60
words, 20 overlap); ``hybrid`` is the configuration lab 03 chose on the real dev questions
(``catalogue.HYBRID``): recursive chunks of 800 characters with the page title and section
heading written in front, BM25 at full strength and dense, 100 candidates a path fused by RRF
(k = 10);
``postgres`` is the package's pipeline at its default setting (``rag.pipeline.DEFAULT_SETTING``, what
lab 04 kept) over its index (built by ``python -m
ragcourse index``: recursive 800-character chunks with headers and summary lines): BM25 in
PostgreSQL and pgvector, 30 candidates each, fused with the dense path weighted 3, ordered by the learned
combination of both paths'
evidence (``rerank.LearnedOrder``, fitted on the real dev questions), each page once, to k pages
(searched deeper when the candidates hold fewer; ``rag.pipeline.RankedPages``, its counts on stderr).
Results are documents, each with the chunk that won it. ``--where`` and ``--user`` filter
inside the search (before the top k is cut), so a filter never leaves fewer than k results
when k visible pages match (``postgres``: within 1,000 candidates a path); ``hybrid`` ranks only
the pages of its candidates (30 visible chunks a path), so it returns fewer than k when k is
larger than those pages. The model loads once per call, however many questions the file holds.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from ..batch.contract import UsageError, whole_number_from
from ..engines.catalogue import answers
from ..engines.dense import ModelUnavailable

RETRIEVERS = ("lexical", "bm25", "tfidf", "dense", "hybrid", "postgres")
MAX_K = 1000


def k_value(text: str) -> int:
    """``-k``: a whole number from 1 to 1000."""
    return whole_number_from(text, 1, MAX_K)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``search`` command's arguments."""
    parser.add_argument("question", nargs="?", help="the question (or use --file)")
    parser.add_argument("--retriever", choices=RETRIEVERS, default="bm25",
                        help="which retriever answers (default: bm25)")
    parser.add_argument("-k", type=k_value, default=5, metavar="K", help="documents to return (default: 5)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    parser.add_argument("--file", type=Path, metavar="QUESTIONS.txt",
                        help="one question a line; JSON lines out, one object a question")
    parser.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                        help="only pages with this module or kind, e.g. module=numpy.linalg (repeatable)")
    parser.add_argument("--user", metavar="NAME",
                        help="only pages this permission group may see (lab 03's groups, e.g. 'random only')")


def questions_from(args: argparse.Namespace) -> list[str]:
    """The questions to answer; UsageError (naming the argument) when there are none or both forms."""
    if args.file is not None and args.question is not None:
        raise UsageError("argument QUESTION: give a question or --file, not both")
    if args.file is not None:
        try:
            lines = args.file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"argument --file: cannot read {str(args.file)!r} as UTF-8 text ({error})") from None
        questions = [line.strip() for line in lines if line.strip()]
        if not questions:
            raise UsageError(f"argument --file: {str(args.file)!r} holds no question (one a line)")
        return questions
    if args.question is None or not args.question.strip():
        raise UsageError("argument QUESTION: the question is empty; type one, or pass --file")
    return [args.question.strip()]


def allowed_pages(args: argparse.Namespace) -> frozenset[str] | None:
    """The pages ``--where`` and ``--user`` leave visible (None: no filter); ValueError for a bad one."""
    if not args.where and args.user is None:
        return None
    from ..corpus.apidocs import load_corpus
    from ..engines.filters import user_named, where_filter

    documents = load_corpus().documents
    allowed = where_filter(args.where, documents)
    if args.user is not None:
        allowed &= user_named(args.user).visible(documents)
    return allowed


def result_object(question: str, retriever: str, hits: Sequence) -> dict:
    """The JSON form of one answered question."""
    return {"question": question, "retriever": retriever,
            "results": [{"doc_id": h.doc_id, "chunk": h.chunk, "score": round(h.score, 6)} for h in hits]}


def _answers(name: str, questions: list[str], allowed: frozenset[str] | None = None) -> list[list]:
    """Each question's document hits from the named in-memory retriever (built once)."""
    return answers(name, questions, allowed=allowed)


def run(args: argparse.Namespace, out) -> int:
    """Answer the questions; the exit status (0).

    Bad input raises UsageError (or the ValueError of the check that found it); a retriever whose
    model is not installed is a bad ``--retriever`` (UsageError naming the fix); a database that does
    not answer, or no index, for ``postgres`` is a command error (exit status 1).
    """
    questions = questions_from(args)
    allowed = allowed_pages(args)
    try:
        if args.retriever == "postgres":
            from .postgres import postgres_document_hits
            from ..rag.search import check_question

            answers = postgres_document_hits([check_question(q) for q in questions], allowed, args.k)
        else:
            answers = _answers(args.retriever, questions, allowed)
    except ModelUnavailable as error:
        raise UsageError(f"--retriever {args.retriever}: {error}") from None
    for question, hits in zip(questions, answers):
        top = [h for h in hits if allowed is None or h.doc_id in allowed][:args.k]
        if args.file is not None or args.json:
            print(json.dumps(result_object(question, args.retriever, top), ensure_ascii=False), file=out)
            continue
        print(f"{args.retriever}: {question}", file=out)
        if not top:
            print("  (no visible page matches the question)" if allowed is not None
                  else "  (no document shares a word with the question)", file=out)
        for rank, hit in enumerate(top, start=1):
            print(f"  {rank:>2}  {hit.score:8.4f}  {hit.doc_id}#{hit.chunk}", file=out)
    return 0
