"""A lab's report on questions people asked: per-question measures, rows per system, and paired comparisons.

A lab reads its held-out questions once, in its report cell: ``held_out(corpus)`` hands out the fresh
``test`` set (``corpus.queries.fresh_questions``, only those whose answer has a page: ``coverage`` says
how many were dropped); every lab develops on the earlier real questions (``real_questions("all")``).
``print_measures`` prints hit@1, Recall@5 and MRR for any named question sets (the judged
questions are shown beside ``test`` as a worked set), and ``add_paired`` adds a system-against-system
comparison per set and measure to a ``significance.Family``, which judges the comparisons answering one
question together (Holm); ``paired`` is one such comparison on its own.

Scoring a ``HeldOut`` list (``scores``, so ``paired`` and ``add_paired`` too) records where it was scored:
the file of the first caller outside this package, which for a notebook is the cell (ipykernel names a
cell's code by a hash of its source, so running the same cell again is the same place). Scoring the same
held-out set from a second place in one run raises, so a lab that reads ``test`` in two cells fails
loudly instead of choosing on it quietly.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..corpus.apidocs import ApiCorpus
from ..corpus.queries import Coverage, Question, answerable_in, coverage, fresh_questions, judgements
from ..toolkit.tables import Column, print_table
from ..retrieval.metrics import hit_at_k, per_question, recall_at_k, reciprocal_rank, reciprocal_rank_at_k
from ..retrieval.significance import Family, PairedComparison, compare

Runs = Mapping[str, Sequence[str]]
MEASURES: dict[str, tuple[Callable[..., float], tuple[int, ...]]] = {
    "hit@1": (hit_at_k, (1,)), "recall@5": (recall_at_k, (5,)), "mrr": (reciprocal_rank, ())}
# Measures a lab may ask for by name without adding a column to every headline table.
MORE_MEASURES: dict[str, tuple[Callable[..., float], tuple[int, ...]]] = {
    "hit@5": (hit_at_k, (5,)), "mrr@10": (reciprocal_rank_at_k, (10,))}


class HeldOut(list):
    """The real ``test`` questions of a run, to be scored in one place only (see ``held_out``)."""

    def __init__(self, questions: Sequence[Question], coverage: Coverage):
        super().__init__(questions)
        self.coverage = coverage


class TestReadTwice(RuntimeError):
    """The held-out questions were scored from a second place in the same run."""


_PACKAGE = Path(__file__).resolve().parents[1]
_READ_AT: dict[frozenset, str] = {}


def held_out(corpus: ApiCorpus) -> HeldOut:
    """The answerable fresh ``test`` questions, marked so that scoring them in two places raises.

    The set was collected and frozen by hash after the labs' designs were fixed
    (``corpus.queries.fresh_questions``): no result has steered it. The earlier real ``test`` split
    is part of every lab's ``dev`` now (``real_questions("all")``).
    """
    real = fresh_questions()
    return HeldOut(answerable_in(corpus, real), coverage(real, corpus))


def _scoring_place() -> str:
    """The file of the first caller outside the package (a notebook cell's code, a script, a test file)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        try:
            inside = Path(name).resolve().is_relative_to(_PACKAGE)
        except (OSError, ValueError):
            inside = False
        if not inside:
            return name
        frame = frame.f_back
    return "<unknown>"


def note_test_read(questions: HeldOut) -> None:
    """Record where ``questions`` are scored; ``TestReadTwice`` if they were scored somewhere else in this run."""
    key = frozenset(q.qid for q in questions)
    place = _scoring_place()
    first = _READ_AT.setdefault(key, place)
    if first != place:
        raise TestReadTwice(
            f"the held-out test questions were already scored in another cell or file ({first}); a lab reads "
            f"test once, in one cell, after every choice is made. Restart the kernel to read it again from the top.")


def forget_test_reads() -> None:
    """Forget every recorded test read (for the tests of the guard itself)."""
    _READ_AT.clear()


def scores(runs: Runs, questions: Sequence[Question], name: str) -> list[float]:
    """Per-question values of the measure ``name`` (``hit@1``, ``hit@5``, ``recall@5``, ``mrr``,
    ``mrr@10``) in question order.

    Held-out questions (``held_out``) may be scored from one place in a run only (``note_test_read``).
    """
    if name not in MEASURES and name not in MORE_MEASURES:
        raise ValueError(f"measure must be one of {', '.join([*MEASURES, *MORE_MEASURES])}; got {name!r}")
    if isinstance(questions, HeldOut):
        note_test_read(questions)
    function, args = MEASURES.get(name) or MORE_MEASURES[name]
    return per_question(runs, judgements(list(questions)), function, *args)


def print_measures(runs: Mapping[str, Mapping[str, Runs]], sets: Mapping[str, Sequence[Question]]) -> None:
    """One row per system and named question set: n, hit@1, Recall@5, MRR. ``runs[system][set name]``."""
    rows = []
    for system, by_set in runs.items():
        for set_name, questions in sets.items():
            values = [sum(scores(by_set[set_name], questions, m)) / len(questions) for m in MEASURES]
            rows.append([system, set_name, len(questions), *values])
    width = max([22, *(len(system) for system in runs)])   # 22 unless a system's name is longer
    print_table(rows, [Column("system", width, align="<"), Column("questions", 10, align="<"), Column("n", 4),
                       Column("hit@1", 7, ".3f"), Column("R@5", 7, ".3f"), Column("MRR", 7, ".3f")])


def paired(runs_a: Runs, runs_b: Runs, questions: Sequence[Question], measure: str,
           names: tuple[str, str]) -> PairedComparison:
    """System A against B on the same questions (``compare``: McNemar and Tango for 0/1 scores, else randomisation)."""
    return compare(scores(runs_a, questions, measure), scores(runs_b, questions, measure), names=names)


def add_paired(family: Family, runs: Mapping[str, Mapping[str, Runs]], a: str, b: str,
               sets: Mapping[str, Sequence[Question]], measures: Sequence[str] = ("hit@1", "recall@5"),
               prefix: str = "") -> None:
    """Add ``a`` against ``b`` to ``family`` for each named question set and measure, labelled
    ``f"{prefix}{set name} {measure}"`` (``runs[system][set name]``, as ``print_measures`` reads them)."""
    for set_name, questions in sets.items():
        for name in measures:
            family.add(f"{prefix}{set_name} {name}", scores(runs[a][set_name], questions, name),
                       scores(runs[b][set_name], questions, name), (a, b))
