"""What the lab sets share: the corpus as the labs load it, and the judged questions, read once per process."""
from __future__ import annotations

import numbers
from functools import lru_cache
from typing import Mapping, Sequence

from ...corpus.apidocs import load_corpus
from ...corpus.queries import Question, judged_questions
from ..framework import Mismatch, expect_number, shown

corpus = load_corpus   # cached by ``load_corpus`` itself


@lru_cache(maxsize=1)
def judged() -> tuple[Question, ...]:
    """The 50 judged questions of labs 01-04, resolved against the corpus."""
    return tuple(judged_questions(corpus()))


def expect_report(tried: str, got: Sequence, expected: Sequence, fields: Sequence[str], hint: str, reveal: bool,
                  tolerance: Mapping[str, float]) -> None:
    """A report tuple against the reference, field by field: counts exactly, measures within ``tolerance[field]``.

    A count that differs shows the reference only when ``reveal``; a measure goes through ``expect_number``.
    """
    for field, value, reference in zip(fields, got, expected):
        where = f"{tried}, its {field}"
        if isinstance(reference, int):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value != reference:
                raise Mismatch(where, shown(reference) if reveal else "the reference count (not shown here)",
                               shown(value), hint)
        else:
            expect_number(value, reference, where, hint, tolerance=tolerance[field], reveal=reveal)
