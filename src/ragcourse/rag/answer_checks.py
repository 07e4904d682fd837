"""Measures of a written answer that need no judge model, computed from its text.

A numpy answer names functions, so what it names can be read off the text and checked:

- ``NameIndex.mentioned(text)``: the reference pages an answer names, written the ways people write
  them: ``np.concatenate``, ``numpy.concatenate``, ``linalg.solve`` (a dotted tail of a page's name),
  and a page's last name part when it is called (``concatenate(``, ``.reshape(``) or put in backticks
  (`` `where` ``). A bare word is not a mention: "where" and "sum" are English too.
- **correct**: the answer names a judged page of the question.
- **grounded**: every page it names appears in the passages it was given (the page's last name part
  as a word of a passage, or the passage is that page): nothing named comes from the model's memory.
- **abstained**: it says the documents do not hold the answer (``generator.abstains``).
- **cited right**: it cites a passage, and a cited passage belongs to a judged page.

``tests/rag/test_answer_checks.py`` holds each rule against written examples, right and wrong, and
lab 04 prints how often each measure agrees with a reading of 60 answers (``data/answer_readings.json``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection, Iterable, Mapping, Sequence

from .passages import ScoredPassage
from .reader import Answer

_PREFIXED = re.compile(r"(?<![\w.])(?:np|numpy)((?:\.[A-Za-z_]\w*)+)")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
_CALLED = re.compile(r"(?<![\w])\.?([A-Za-z_]\w*)\(")
_TICKED = re.compile(r"`([A-Za-z_][\w.]*)(?:\([^`]*\))?`")


@dataclass(frozen=True)
class NameIndex:
    """The corpus's page ids, and the short forms that point at them."""

    pages: frozenset[str]
    by_last: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, page_ids: Iterable[str]) -> "NameIndex":
        pages = frozenset(page_ids)
        by_last: dict[str, list[str]] = {}
        for page in sorted(pages):
            by_last.setdefault(page.rsplit(".", 1)[-1], []).append(page)
        # a short name points at numpy.<name> when that page exists (``sum`` is numpy.sum, not ndarray.sum)
        resolved = {last: (f"numpy.{last}",) if f"numpy.{last}" in pages else tuple(found)
                    for last, found in by_last.items()}
        return cls(pages, resolved)

    def dotted(self, name: str) -> tuple[str, ...]:
        """The page a dotted name points at: the longest leading part that is a page, with ``numpy.`` in front
        if it has none (``np.linalg.solve(a)``, ``linalg.solve``, ``numpy.array.T``)."""
        parts = name.split(".")
        if parts[0] == "np":
            parts[0] = "numpy"
        if parts[0] != "numpy":
            parts = ["numpy", *parts]
        for end in range(len(parts), 1, -1):
            candidate = ".".join(parts[:end])
            if candidate in self.pages:
                return (candidate,)
        return ()

    def mentioned(self, text: str) -> list[str]:
        """The pages ``text`` names, in order of first mention, each once."""
        found: list[str] = []
        for match in _PREFIXED.finditer(text):
            found.extend(self.dotted("numpy" + match.group(1)))
        for match in _DOTTED.finditer(text):
            head = match.group(1).split(".", 1)[0]
            if head not in ("np", "numpy"):
                found.extend(self.dotted(match.group(1)))
        for match in _CALLED.finditer(text):
            found.extend(self.by_last.get(match.group(1), ()))
        for match in _TICKED.finditer(text):
            name = match.group(1)
            found.extend(self.dotted(name) if "." in name else self.by_last.get(name, ()))
        return list(dict.fromkeys(found))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def correct(answer: Answer, relevant: Collection[str], names: NameIndex) -> bool:
    """The answer does not abstain and names one of the question's judged pages."""
    return not answer.abstained and any(page in relevant for page in names.mentioned(answer.text))


def ungrounded(text: str, passages: Sequence[ScoredPassage], names: NameIndex) -> list[str]:
    """The pages the answer names that no given passage mentions (nor is)."""
    words: set[str] = set()
    sources = set()
    for scored in passages:
        words |= _words(scored.passage.text)
        sources.add(scored.passage.doc_id)
    return [page for page in names.mentioned(text)
            if page not in sources and page.rsplit(".", 1)[-1] not in words]


def grounded(text: str, passages: Sequence[ScoredPassage], names: NameIndex) -> bool:
    """Every page the answer names is in its passages (an answer that names none is grounded)."""
    return not ungrounded(text, passages, names)


def named_passages(text: str, passages: Sequence[ScoredPassage]) -> list[str]:
    """The citations (``source#ordinal``) of the given passages whose page ``text`` names, in the order given:
    the sources an answer points to by name when it writes no ``[n]`` (the ``ask`` command marks them)."""
    named = set(NameIndex.of(sp.passage.doc_id for sp in passages).mentioned(text))
    return [sp.passage.citation for sp in passages if sp.passage.doc_id in named]


def cited_right(answer: Answer, relevant: Collection[str]) -> bool:
    """The answer cites a passage, and a cited passage is a judged page's."""
    return any(c.split("#", 1)[0].rsplit(".", 1)[0] in relevant for c in answer.citations)


@dataclass(frozen=True)
class AnswerMarks:
    """The four measures of one answer (``correct`` and ``cited_right`` need the judged pages)."""

    correct: bool
    grounded: bool
    abstained: bool
    cited_right: bool
    named: tuple[str, ...]
    ungrounded: tuple[str, ...]


def mark(answer: Answer, passages: Sequence[ScoredPassage], relevant: Collection[str],
         names: NameIndex) -> AnswerMarks:
    """All four measures of one answer."""
    named = tuple(names.mentioned(answer.text))
    missing = tuple(ungrounded(answer.text, passages, names))
    return AnswerMarks(any(p in relevant for p in named) and not answer.abstained, not missing, answer.abstained,
                       cited_right(answer, relevant), named, missing)
