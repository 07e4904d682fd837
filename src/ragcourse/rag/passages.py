"""Lab 04's unit of evidence: a stored chunk as it comes back from PostgreSQL.

A ``Passage`` carries its provenance (the source file, its ordinal in that file, the
character span it covers) so that every later stage (fusion, reranking, admission, the
reader's citations) can point back to the row and the file it came from.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """One chunk row: id, source path (relative to the corpus root), ordinal, span, text, tenant."""

    chunk_id: int
    source: str
    ordinal: int
    start: int
    end: int
    text: str
    tenant: str = "public"

    @property
    def citation(self) -> str:
        """How the reader cites it: ``source#ordinal``."""
        return f"{self.source}#{self.ordinal}"

    @property
    def doc_id(self) -> str:
        """The source path without its suffix (for the numpy export, the page's id)."""
        name = self.source.rsplit("/", 1)[-1]
        return name.rsplit(".", 1)[0] if "." in name else name


@dataclass(frozen=True)
class ScoredPassage:
    """A passage with the score and 1-based rank a stage gave it."""

    passage: Passage
    score: float
    rank: int
