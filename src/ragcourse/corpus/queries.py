"""Part 3's query sets: self-retrieval, judged user questions, and questions the corpus cannot answer.

- Self-retrieval: every document's summary line asks for that document (the summary is
  never indexed, so the query is a short paraphrase the index has not seen verbatim).
- Judged: questions typed the way a user types them, each with the ids that answer it and
  a style (``word-form``, ``paraphrase``, ``exact-name``, ``plain``); kept in
  ``data/questions.json``.
- Unanswerable: questions nothing in the numpy reference answers (lab 04 measures
  abstention on them).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .apidocs import ApiCorpus


@dataclass(frozen=True)
class Question:
    """A query with its id, its text, the ids that answer it (empty: unanswerable) and its style."""

    qid: str
    text: str
    relevant: tuple[str, ...] = ()
    style: str = ""


def self_retrieval(corpus: ApiCorpus) -> list[Question]:
    """One question per document: its summary line, answered by the document itself."""
    return [Question(f"s:{d.doc_id}", d.title, (d.doc_id,), "self") for d in corpus.documents]


@lru_cache(maxsize=1)
def _question_file() -> dict:
    return json.loads(resources.files(__package__).joinpath("data", "questions.json").read_text("utf-8"))


def judged_questions(corpus: ApiCorpus | None = None) -> list[Question]:
    """The judged user questions; with ``corpus``, every relevant id is checked to exist."""
    questions = [Question(q["qid"], q["question"], tuple(q["relevant"]), q["style"])
                 for q in _question_file()["judged"]]
    if corpus is not None:
        known = corpus.by_id
        unknown = sorted({r for q in questions for r in q.relevant if r not in known})
        if unknown:
            raise ValueError(f"judged questions name ids the corpus does not hold: {unknown}")
    return questions


def unanswerable_questions() -> list[Question]:
    """Questions the numpy reference cannot answer (no relevant ids)."""
    return [Question(q["qid"], q["question"]) for q in _question_file()["unanswerable"]]


def judgements(questions: list[Question]) -> dict[str, tuple[str, ...]]:
    """qid -> relevant ids, for the questions that have any."""
    return {q.qid: q.relevant for q in questions if q.relevant}
