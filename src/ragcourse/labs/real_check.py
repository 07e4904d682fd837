"""A lab's conclusion checked on questions people asked: the same systems on the judged set and on real ``test``.

Every lab ends by putting its headline systems beside each other twice: on the questions the
course wrote (``judged``) and on real how-to questions (``real_questions("test")``, only
those whose answer has a page: ``coverage`` says how many were dropped). Each row gives hit@1
(the first page is right), Recall@5 and MRR; each comparison the lab's prose draws is a paired
test over the same questions (``retrieval.significance.compare``) with its 95% interval,
p-value and verdict. Nothing here is tuned: ``test`` is read once, by the lab's last section.
``print_measures`` prints the same rows for any named question sets, and ``add_paired`` adds a
system-against-system comparison per set and measure to a ``significance.Family``, which judges
the comparisons answering one question together (Holm).

``held_out`` hands out the real ``test`` questions as a ``HeldOut`` list, and scoring one
(``scores``, so ``paired`` and ``print_headline`` too) records where it was scored: the file
of the first caller outside this package, which for a notebook is the cell (ipykernel names
a cell's code by a hash of its source, so running the same cell again is the same place).
Scoring the same held-out set from a second place in one run raises, so a lab that reads
``test`` in two cells fails loudly instead of choosing on it quietly.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..corpus.apidocs import ApiCorpus
from ..corpus.queries import (Coverage, Question, answerable_in, coverage, fresh_questions, judgements,
                              real_questions)
from ..toolkit.tables import Column, print_table
from ..retrieval.metrics import hit_at_k, per_question, recall_at_k, reciprocal_rank, reciprocal_rank_at_k
from ..retrieval.significance import Family, PairedComparison, compare

Runs = Mapping[str, Sequence[str]]
MEASURES: dict[str, tuple[Callable[..., float], tuple[int, ...]]] = {
    "hit@1": (hit_at_k, (1,)), "recall@5": (recall_at_k, (5,)), "mrr": (reciprocal_rank, ())}
# Measures a lab may ask for by name without adding a column to every headline table.
MORE_MEASURES: dict[str, tuple[Callable[..., float], tuple[int, ...]]] = {
    "hit@5": (hit_at_k, (5,)), "mrr@10": (reciprocal_rank_at_k, (10,))}


@dataclass(frozen=True)
class QuestionSets:
    """The judged questions and the real ``test`` questions the corpus can answer, with the real set's coverage."""

    judged: list[Question]
    real: list[Question]
    real_coverage: Coverage

    def by_name(self) -> dict[str, list[Question]]:
        return {"judged": self.judged, "real test": self.real}


def judged_and_real(corpus: ApiCorpus, judged: list[Question]) -> QuestionSets:
    """``judged`` beside the answerable real ``test`` questions (read once, at a lab's end)."""
    real = real_questions("test")
    return QuestionSets(judged, answerable_in(corpus, real), coverage(real, corpus))


class HeldOut(list):
    """The real ``test`` questions of a run, to be scored in one place only (see ``held_out``)."""

    def __init__(self, questions: Sequence[Question], coverage: Coverage):
        super().__init__(questions)
        self.coverage = coverage


class TestReadTwice(RuntimeError):
    """The held-out questions were scored from a second place in the same run."""


_PACKAGE = Path(__file__).resolve().parents[1]
_READ_AT: dict[frozenset, str] = {}


HELD_OUT_SETS = ("fresh", "test")


def held_out(corpus: ApiCorpus, questions: str = "fresh") -> HeldOut:
    """The answerable held-out questions, marked so that scoring them in two places raises.

    ``fresh`` (the default) is the set collected and frozen by hash after the labs' designs were fixed
    (``corpus.queries.fresh_questions``): no result has steered it. ``test`` is the earlier real ``test``
    split, which labs 03 and 04 still read until they move to the fresh set; earlier results on real
    questions shaped the designs those labs compare, so it is no longer a clean held-out set.
    """
    if questions not in HELD_OUT_SETS:
        raise ValueError(f"questions must be one of {', '.join(HELD_OUT_SETS)}; got {questions!r}")
    real = fresh_questions() if questions == "fresh" else real_questions("test")
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


def print_headline(runs: Mapping[str, Mapping[str, Runs]], sets: QuestionSets) -> None:
    """One row per system and question set: n, hit@1, Recall@5, MRR. ``runs[system][set name]``."""
    print_measures(runs, sets.by_name())


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


def print_paired(runs: Mapping[str, Mapping[str, Runs]], a: str, b: str, sets: QuestionSets,
                 measures: Sequence[str] = ("hit@1", "recall@5")) -> dict[tuple[str, str], PairedComparison]:
    """Print ``a`` against ``b`` on each question set and measure; the comparisons by (set, measure)."""
    found = {}
    for set_name, questions in sets.by_name().items():
        for name in measures:
            result = paired(runs[a][set_name], runs[b][set_name], questions, name, (a, b))
            found[(set_name, name)] = result
            print(f"{set_name:<9} {name:<8} {result}")
    return found


def add_paired(family: Family, runs: Mapping[str, Mapping[str, Runs]], a: str, b: str,
               sets: Mapping[str, Sequence[Question]], measures: Sequence[str] = ("hit@1", "recall@5"),
               prefix: str = "") -> None:
    """Add ``a`` against ``b`` to ``family`` for each named question set and measure, labelled
    ``f"{prefix}{set name} {measure}"`` (``runs[system][set name]``, as ``print_measures`` reads them)."""
    for set_name, questions in sets.items():
        for name in measures:
            family.add(f"{prefix}{set_name} {name}", scores(runs[a][set_name], questions, name),
                       scores(runs[b][set_name], questions, name), (a, b))
