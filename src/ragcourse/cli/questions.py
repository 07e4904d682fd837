"""``python -m ragcourse questions``: print a Part 3 query set, to evaluate any retriever on the same questions.

  python -m ragcourse questions judged              # an aligned listing: id, relevant ids, question
  python -m ragcourse questions real-test --json    # one JSON object a line: id, text, relevant, source

Sets: ``self`` (every page's summary line, answered by the page itself; reads the corpus,
a few seconds), ``judged`` (the course's judged questions), ``unanswerable`` (questions the
reference cannot answer: no relevant ids), ``real-dev`` and ``real-test`` (how-to questions
people asked on public pages, with the URL where each was seen). A real question's relevant
ids are as recorded: some name objects today's corpus has no page for (``numpy.ndarray``
methods, ``numpy.lib.stride_tricks``...); ``ragcourse.corpus.queries.answerable_in`` keeps
the questions the corpus can answer and ``coverage`` counts the others. ``source`` is
``ragcourse`` for the sets the course wrote.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..batch.contract import UsageError

SETS = ("self", "judged", "unanswerable", "real-dev", "real-test")
OWN_SOURCE = "ragcourse"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``questions`` command's arguments."""
    parser.add_argument("set", choices=SETS, metavar="SET", help="which set: " + ", ".join(SETS))
    parser.add_argument("--json", action="store_true",
                        help="one JSON object a line (id, text, relevant, source) instead of a listing")


def question_set(name: str) -> list:
    """The named set's questions (``Question`` objects)."""
    from ..corpus import queries

    if name == "self":
        from ..corpus.apidocs import load_corpus

        return queries.self_retrieval(load_corpus())
    if name == "judged":
        return queries.judged_questions()
    if name == "unanswerable":
        return queries.unanswerable_questions()
    if name in ("real-dev", "real-test"):
        return queries.real_questions(name.removeprefix("real-"))
    raise UsageError(f"argument SET: must be one of {', '.join(SETS)}; got {name!r}")


def question_object(question) -> dict:
    """One question as the JSON line prints it."""
    return {"id": question.qid, "text": question.text, "relevant": list(question.relevant),
            "source": question.source or OWN_SOURCE}


def run(args: argparse.Namespace, out) -> int:
    """Print the set; the exit status (0). A reader that stops early (``| head``) ends it quietly."""
    questions = question_set(args.set)
    try:
        _print_set(args, questions, out)
    except BrokenPipeError:
        if out is sys.stdout:   # the interpreter would complain again when it flushes stdout at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _print_set(args: argparse.Namespace, questions: list, out) -> None:
    if args.json:
        for question in questions:
            print(json.dumps(question_object(question), ensure_ascii=False), file=out)
        return
    id_width = max((len(q.qid) for q in questions), default=2)
    shown = [", ".join(q.relevant) if len(q.relevant) < 2 else f"{q.relevant[0]} +{len(q.relevant) - 1}"
             for q in questions]
    relevant_width = max((len(r) for r in shown), default=0)
    for question, relevant in zip(questions, shown):
        print(f"{question.qid:<{id_width}}  {relevant or '-':<{relevant_width}}  {question.text}", file=out)
    print(f"{len(questions)} questions in {args.set} (--json for every relevant id and the source)", file=out)
