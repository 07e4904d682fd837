"""Part 3's query sets: self-retrieval, judged user questions, and questions the corpus cannot answer.

- Self-retrieval: every document's summary line asks for that document (the summary is
  never indexed, so the query is a short paraphrase the index has not seen verbatim).
- Judged: questions typed the way a user types them, each with the ids that answer it and
  a style (``word-form``, ``paraphrase``, ``exact-name``, ``plain``); kept in
  ``data/questions.json``. The course's authors wrote each question while reading the page
  it targets, aiming at one style, and listed by hand the pages that answer it. Those lists
  were then completed by pooling (``data/pooling.json``): the top 10 pages of lab 01's
  lexical and BM25 retrievers and lab 02's dense retriever, every unlisted page judged by a
  written rule, and the pages judged relevant added after the listed ones.
- Unanswerable: questions nothing in the numpy reference answers (lab 04 measures
  abstention on them). Their ``style`` says how far they are from it: ``off-domain`` (other
  libraries, other subjects) or ``near-domain`` (things people ask numpy to do that it does
  not: GPUs, HDF5, sparse matrices, image files, time zones, clustering), phrased like the
  real questions.
- Real: how-to questions people asked on public Q&A and tutorial pages, each with the URL
  where its title was seen and the numpy ids its accepted answer uses; split once into
  ``dev`` and ``test`` (kept in ``data/real_questions.json``). Some answers name objects
  the corpus has no page for: ``coverage`` counts them and ``answerable_in`` keeps the rest.
- Fresh: more real questions, none in the sets above, collected by the same rules after
  every design choice of labs 01-04 had been made, each also with the passage of its first
  judged page that holds the answer (``data/fresh_questions.json``). The file was committed
  with its sha256 (``FRESH_SHA256``) before any system was scored on it, and a test fails if
  it changes: it is the confirmatory set that nothing has steered, read once per lab.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

from .apidocs import ApiCorpus


@dataclass(frozen=True)
class Question:
    """A query with its id, its text, the ids that answer it (empty: unanswerable), its style and source.

    ``source`` is the URL where a real question was seen; empty for the sets the course wrote.
    ``passage`` (fresh questions only) is an excerpt of the first relevant page that holds the answer.
    """

    qid: str
    text: str
    relevant: tuple[str, ...] = ()
    style: str = ""
    source: str = ""
    passage: str = ""


def self_retrieval(corpus: ApiCorpus) -> list[Question]:
    """One question per document: its summary line, answered by the document itself."""
    return [Question(f"s:{d.doc_id}", d.title, (d.doc_id,), "self") for d in corpus.documents]


@lru_cache(maxsize=1)
def _question_file() -> dict:
    return json.loads(resources.files(__package__).joinpath("data", "questions.json").read_text("utf-8"))


@lru_cache(maxsize=1)
def pooling() -> dict:
    """The pooling record: what was pooled (retrievers, depth), the rule, and each pooled page's judgement."""
    return json.loads(resources.files(__package__).joinpath("data", "pooling.json").read_text("utf-8"))


def pooled_relevant(qid: str) -> tuple[str, ...]:
    """The pages pooling added to a judged question (judged relevant, not listed by hand), in page order."""
    judged = pooling()["judgements"].get(qid, {})
    return tuple(page for page, verdict in judged.items() if verdict["relevant"])


def judged_questions(corpus: ApiCorpus | None = None, pooled: bool = True) -> list[Question]:
    """The judged user questions; with ``corpus``, every relevant id is checked to exist.

    ``pooled=False`` gives the pages listed by hand only (before pooling completed them).
    """
    questions = [Question(q["qid"], q["question"],
                          tuple(q["relevant"]) + (pooled_relevant(q["qid"]) if pooled else ()), q["style"])
                 for q in _question_file()["judged"]]
    if corpus is not None:
        known = corpus.by_id
        unknown = sorted({r for q in questions for r in q.relevant if r not in known})
        if unknown:
            raise ValueError(f"judged questions name ids the corpus does not hold: {unknown}")
    return questions


def unanswerable_questions() -> list[Question]:
    """Questions the numpy reference cannot answer (no relevant ids)."""
    return [Question(q["qid"], q["question"], style=q["kind"]) for q in _question_file()["unanswerable"]]


def judgements(questions: list[Question]) -> dict[str, tuple[str, ...]]:
    """qid -> relevant ids, for the questions that have any."""
    return {q.qid: q.relevant for q in questions if q.relevant}


REAL_SPLITS = ("dev", "test", "all")


@lru_cache(maxsize=1)
def _real_file() -> dict:
    return json.loads(resources.files(__package__).joinpath("data", "real_questions.json").read_text("utf-8"))


SPLIT_SEED = 20260218
DEV_SIZE = 110


def real_split(qids: list[str], seed: int = SPLIT_SEED, dev_size: int = DEV_SIZE) -> dict[str, str]:
    """The split rule, applied once when the set was grown to 321 questions: the qids ordered by
    the hex sha256 of ``f"{seed}:{qid}"``, the first ``dev_size`` are ``dev`` and the rest ``test``.
    It reads the qids only, never a result."""
    order = sorted(qids, key=lambda qid: hashlib.sha256(f"{seed}:{qid}".encode("utf-8")).hexdigest())
    dev = set(order[:dev_size])
    return {qid: "dev" if qid in dev else "test" for qid in qids}


def real_questions(split: str = "test", corpus: ApiCorpus | None = None) -> list[Question]:
    """Real how-to questions about numpy: ``dev`` (settings are chosen on it), ``test`` (reported, never tuned on) or ``all``.

    Each is the title of a public Q&A thread or tutorial heading, verbatim but for a leading
    tag, with ``source`` the URL where it was seen and ``relevant`` the 1-3 numpy ids its
    accepted or main answer uses, best first; ``style`` is ``real``, or ``real-doubtful``
    when an id does not come from the answer shown. The split was made once by
    ``real_split``: 110 of the 321 questions are dev, chosen by a seeded hash of their qids.

    Without ``corpus`` the ids are as recorded (any public numpy object). With ``corpus``
    each id becomes the page that documents it (an alias such as ``numpy.char.add`` is the
    same object as ``numpy.add``) and ids without a page are left out, so a question whose
    answer has no page keeps an empty ``relevant``: it is not unanswerable, the corpus just
    lacks the page. Evaluate on ``answerable_in(corpus, questions)`` and print
    ``coverage(questions, corpus)`` so the dropped questions are counted.
    """
    if split not in REAL_SPLITS:
        raise ValueError(f"split must be one of {', '.join(REAL_SPLITS)}; got {split!r}")
    questions = [Question(q["qid"], q["question"], tuple(q["relevant"]),
                          "real-doubtful" if q["doubtful"] else "real", q["url"])
                 for q in _real_file()["questions"] if split in ("all", q["split"])]
    if corpus is not None:
        questions = [replace(q, relevant=pages_for(q.relevant, corpus)) for q in questions]
    return questions


def pages_for(ids: tuple[str, ...] | list[str], corpus: ApiCorpus) -> tuple[str, ...]:
    """The corpus pages that document ``ids``, in order, without repeats: an id or alias the
    corpus knows is its page; a name for the same object (``real_questions.json``'s ``aliases``)
    is that object's page; an id the corpus has no page for is left out."""
    table = corpus.alias_table
    same_object = _real_file()["aliases"]
    pages: list[str] = []
    for name in ids:
        page = table.get(name) or table.get(same_object.get(name, ""))
        if page is not None and page not in pages:
            pages.append(page)
    return tuple(pages)


@dataclass(frozen=True)
class Coverage:
    """How many questions have a page in the corpus for at least one id of their judged answer."""

    covered: int
    total: int
    uncovered: tuple[str, ...]   # qids of the questions with no page for any of their ids

    @property
    def dropped(self) -> int:
        return self.total - self.covered

    @property
    def share(self) -> float:
        return self.covered / self.total if self.total else 0.0

    def __str__(self) -> str:
        return (f"{self.covered} of {self.total} questions have a page for their answer ({self.share:.0%}); "
                f"{self.dropped} dropped: {', '.join(self.uncovered) or 'none'}")


def coverage(questions: list[Question], corpus: ApiCorpus) -> Coverage:
    """The questions whose relevant ids name at least one page of ``corpus`` (see ``pages_for``)."""
    uncovered = tuple(q.qid for q in questions if not pages_for(q.relevant, corpus))
    return Coverage(len(questions) - len(uncovered), len(questions), uncovered)


def answerable_in(corpus: ApiCorpus, questions: list[Question]) -> list[Question]:
    """The questions ``corpus`` can answer, their ``relevant`` made its pages; print ``coverage`` beside it."""
    resolved = [replace(q, relevant=pages_for(q.relevant, corpus)) for q in questions]
    return [q for q in resolved if q.relevant]


# The sha256 of data/fresh_questions.json, committed with the file before any system was scored on it.
FRESH_SHA256 = "d985ca8f5c168f3cddbc85e758626f8e1aca8bb643e4abc12efd93a633c20809"


def fresh_file_bytes() -> bytes:
    """The fresh set's file as stored (its sha256 is ``FRESH_SHA256``)."""
    return resources.files(__package__).joinpath("data", "fresh_questions.json").read_bytes()


@lru_cache(maxsize=1)
def _fresh_file() -> dict:
    return json.loads(fresh_file_bytes().decode("utf-8"))


def fresh_questions(corpus: ApiCorpus | None = None) -> list[Question]:
    """The fresh real questions (style ``real`` or ``real-doubtful``, ``source`` their URL, ``passage`` the
    answer's excerpt of the first relevant page); with ``corpus``, ids become its pages as in
    ``real_questions``. Read once per lab, after every choice is made."""
    questions = [Question(q["qid"], q["question"], tuple(q["relevant"]),
                          "real-doubtful" if q["doubtful"] else "real", q["url"], q["passage"])
                 for q in _fresh_file()["questions"]]
    if corpus is not None:
        questions = [replace(q, relevant=pages_for(q.relevant, corpus)) for q in questions]
    return questions


def _flat(text: str) -> str:
    return " ".join(text.split())


def passage_chunks(passage: str, chunk_texts: list[str]) -> tuple[int, ...]:
    """The positions of the chunks (of one page) that hold ``passage``, whitespace aside: every chunk that
    holds it whole; if a cut split it, the chunks that hold its longest piece (at least a third of it)."""
    import difflib

    wanted = _flat(passage)
    whole = tuple(i for i, text in enumerate(chunk_texts) if wanted in _flat(text))
    if whole or not wanted:
        return whole
    pieces = []
    for i, text in enumerate(chunk_texts):
        flat = _flat(text)
        match = difflib.SequenceMatcher(None, wanted, flat, autojunk=False).find_longest_match(0, len(wanted), 0, len(flat))
        pieces.append(match.size)
    best = max(pieces, default=0)
    return tuple(i for i, size in enumerate(pieces) if size == best and size * 3 >= len(wanted))
