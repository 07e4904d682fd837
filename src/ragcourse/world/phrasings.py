"""Lesson 11's fictional user phrasings: the same forty questions typed short and typed long.

The query set (``ragcourse.corpus.build_queries``) is written in the words the index knows
best. Real users write otherwise, and the lesson measures two ways:

* the **short** phrasing is a terse form of the concept (``SHORT``) that shares few tokens
  with its query-side form, followed by the query's own filler word (its record word);
* the **long** phrasing wraps the original query in context: a time phrase (``PREFIX``), the
  query-side form of another concept and another filler word, a connecting clause
  (``CONNECTOR``), the original query, and the query-side form of a third concept.

The extra concepts, filler and phrases are drawn per query from a generator seeded with
``seed + PHRASING_STRIDE * i``, in the course's order: first concept, filler, last concept,
prefix, connector. The target (concept and record word) never changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .concepts import Edition
from .corpus import Query
from .rng import make_rng

PHRASING_STRIDE = 31337

# The short form a user types for each concept of the second edition.
SHORT: dict[str, str] = {
    "tier": "which band", "unit": "costs per ton", "account": "home or office",
    "switch": "moving plans", "faultcode": "error code", "leak": "might be escaping",
    "pressure": "flow weak", "crew": "technician never came", "index": "dial digits",
    "read": "is it written", "swap": "hardware changed", "verify": "typed wrong",
    "planned": "announced ahead", "notice": "where to look", "duration": "hours it will last",
    "restore": "will it show up again", "periodic": "regular upkeep", "valve": "tap shutoff",
    "filter": "cleaning filter", "calib": "accuracy calibration",
}
PREFIX: tuple[str, ...] = ("previous week", "for a few days", "since this morning",
                           "yesterday evening")
CONNECTOR: tuple[str, ...] = ("one more thing i wanted to ask",
                              "also i wrote to the relevant department",
                              "by the way i was curious", "i had also called before")


@dataclass(frozen=True)
class Phrasing:
    """One query as the user types it: ``short`` and ``long`` texts beside the original ``query``.

    ``before`` and ``after`` are the other concepts the long text mentions (before and after
    the original question); ``query`` keeps the target for relevance judgements.
    """

    query: Query
    short: str
    long: str
    before: str
    after: str

    def text(self, form: str) -> str:
        """The text of one phrasing: ``"short"``, ``"long"`` or ``"original"``."""
        if form == "original":
            return self.query.text
        if form in ("short", "long"):
            return getattr(self, form)
        raise ValueError(f"form must be 'short', 'long' or 'original'; got {form!r}")


def short_text(query: Query) -> str:
    """The short phrasing: the concept's terse form and the query's record word."""
    return f"{SHORT[query.concept]} {query.filler}"


def phrase_queries(queries: Sequence[Query], seed: int, edition: Edition) -> list[Phrasing]:
    """Short and long phrasings of every query, drawn from ``seed`` in the course's order."""
    missing = set(edition.keys) - set(SHORT)
    if missing:
        raise ValueError(f"no short phrasing for the concepts {sorted(missing)} of {edition.name}")
    keys, fillers = edition.keys, edition.filler_words
    phrasings = []
    for i, query in enumerate(queries):
        draw = make_rng(seed + PHRASING_STRIDE * i)
        before = keys[int(draw() * len(keys))]
        extra_filler = fillers[int(draw() * len(fillers))]
        after = keys[int(draw() * len(keys))]
        prefix = PREFIX[int(draw() * len(PREFIX))]
        connector = CONNECTOR[int(draw() * len(CONNECTOR))]
        long_text = (f"{prefix} {edition.concept(before).query_form} {extra_filler} "
                     f"{connector} {query.text} {edition.concept(after).query_form}")
        phrasings.append(Phrasing(query=query, short=short_text(query), long=long_text,
                                  before=before, after=after))
    return phrasings
