"""The fictional concept axis, in the course's two editions.

Each concept belongs to one class and has two surface forms that share no token:
the form the field crew writes in documents and the form a subscriber types in a
query. Lessons 1-6 use ``FIRST_EDITION``; lessons 7-16 use ``SECOND_EDITION``,
which renames some concepts, rewords some forms and changes the filler words.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

CLASSES: tuple[str, ...] = ("tariff", "fault", "meter", "outage", "maintenance")
CLASS_CODES: dict[str, str] = {"tariff": "TR", "fault": "AR", "meter": "SY", "outage": "KS",
                               "maintenance": "BK"}
CLASS_WEIGHTS: tuple[float, ...] = (0.22, 0.24, 0.20, 0.18, 0.16)


@dataclass(frozen=True)
class Concept:
    """One concept: its key, its class, and its document-side and query-side surface forms."""

    key: str
    label: str
    document_form: str
    query_form: str


@dataclass(frozen=True)
class Edition:
    """A complete concept axis: concepts in course order, filler words, paragraph wording."""

    name: str
    concepts: tuple[Concept, ...]
    filler_words: tuple[str, ...]
    paragraph_template: str  # formatted with concept=, filler=, main=

    @property
    def keys(self) -> list[str]:
        """Concept keys in axis order."""
        return [c.key for c in self.concepts]

    def concept(self, key: str) -> Concept:
        """The concept with this key."""
        return self.by_key[key]

    @cached_property
    def by_key(self) -> dict[str, Concept]:
        """Concepts indexed by key."""
        return {c.key: c for c in self.concepts}

    def in_class(self, label: str) -> list[str]:
        """Keys of the concepts of one class, in axis order."""
        return [c.key for c in self.concepts if c.label == label]


def _axis(rows: list[tuple[str, str, str, str]]) -> tuple[Concept, ...]:
    return tuple(Concept(*row) for row in rows)


FIRST_EDITION = Edition(
    name="lessons 1-6",
    concepts=_axis([
        ("tier", "tariff", "tier threshold", "which band am i in"),
        ("unit_rate", "tariff", "unit price", "fee per cubic metre"),
        ("subscriber_type", "tariff", "subscriber type", "home or shop"),
        ("switch", "tariff", "tariff switch", "changing plan"),
        ("fault_code", "fault", "fault code", "error id"),
        ("leak", "fault", "line leakage", "water escaping"),
        ("pressure", "fault", "pressure drop", "weak flow"),
        ("crew", "fault", "field crew", "who will be sent"),
        ("index_value", "meter", "index value", "what the dial shows"),
        ("reading", "meter", "reading procedure", "how it gets saved"),
        ("replacement", "meter", "meter replacement", "new hardware"),
        ("verify", "meter", "reading verification", "typed in wrong"),
        ("planned", "outage", "planned outage", "announced stoppage"),
        ("notice", "outage", "notice channel", "where i hear about it"),
        ("duration", "outage", "outage duration", "how long it lasts"),
        ("restoration", "outage", "service restoration", "when it comes back"),
        ("periodic", "maintenance", "periodic maintenance", "regular checkup"),
        ("valve", "maintenance", "valve inspection", "tap shutoff routine"),
        ("filter_swap", "maintenance", "filter swap", "cleaning part"),
        ("calibration", "maintenance", "calibration record", "gauge accuracy"),
    ]),
    filler_words=("entry", "region", "term", "step", "form", "approval", "note"),
    paragraph_template="{concept} for {filler} is kept and written together with {main}",
)

SECOND_EDITION = Edition(
    name="lessons 7-16",
    concepts=_axis([
        ("tier", "tariff", "tier limit", "which band am i in"),
        ("unit", "tariff", "unit price", "what a ton of water costs"),
        ("account", "tariff", "account type", "home or business"),
        ("switch", "tariff", "plan switch", "moving to another package"),
        ("faultcode", "fault", "fault code", "error id"),
        ("leak", "fault", "line leak", "water escaping"),
        ("pressure", "fault", "pressure drop", "weak flow"),
        ("crew", "fault", "field crew", "technician when does it show up"),
        ("index", "meter", "index value", "digits on the dial"),
        ("read", "meter", "reading routine", "how it gets written down"),
        ("swap", "meter", "meter swap", "changing the hardware"),
        ("verify", "meter", "reading check", "typed in by mistake"),
        ("planned", "outage", "planned outage", "stoppage announced ahead"),
        ("notice", "outage", "notice channel", "where do i find out"),
        ("duration", "outage", "outage duration", "how long does it last"),
        ("restore", "outage", "service restoration", "when does it show up"),
        ("periodic", "maintenance", "periodic maintenance", "regular inspection"),
        ("valve", "maintenance", "valve check", "tap shutoff order"),
        ("filter", "maintenance", "filter replacement", "cleaning part"),
        ("calib", "maintenance", "calibration record", "accuracy tweak"),
    ]),
    filler_words=("entry", "area", "term", "task", "form", "okay", "note"),
    paragraph_template="{concept} for {filler} goes with {main} and is filed",
)
