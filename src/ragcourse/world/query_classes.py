"""Lesson 06's three query classes and the searchable text that carries a document's code.

The same forty draws (a source document and a filler word per query, from SEED with the
course's query stride: ``ragcourse.corpus.draw_query_sources``) are phrased three ways:

* ``subscriber``: the main concept's query-side form and the filler (the usual query set);
* ``document``: the main concept's document-side form and the filler;
* ``code``: the source document's code followed by ``numbered document``.

A query's relevant documents are those whose main concept is the query's concept; its
target document is the one it was drawn from.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .concepts import Edition
from .corpus import N_QUERIES, Document, draw_query_sources

QUERY_CLASS_NAMES: tuple[str, ...] = ("subscriber", "document", "code")
CODE_QUERY_SUFFIX = "numbered document"


@dataclass(frozen=True)
class ClassQuery:
    """A query of one class: its text, the target concept and the code of its source document."""

    text: str
    query_class: str
    concept: str
    code: str


def searchable_text(document: Document) -> str:
    """The text lesson 06 indexes: the document's code, a space, then its title and paragraphs."""
    return document.code + " " + document.text


def class_query_text(query_class: str, document: Document, filler: str, edition: Edition) -> str:
    """How a query of ``query_class`` drawn from ``document`` with ``filler`` is worded."""
    concept = edition.concept(document.main)
    if query_class == "subscriber":
        return f"{concept.query_form} {filler}"
    if query_class == "document":
        return f"{concept.document_form} {filler}"
    if query_class == "code":
        return f"{document.code} {CODE_QUERY_SUFFIX}"
    raise ValueError(f"query_class must be one of {', '.join(QUERY_CLASS_NAMES)}; got {query_class!r}")


def draw_query_classes(seed: int, edition: Edition, documents: Sequence[Document],
                       n: int = N_QUERIES) -> dict[str, list[ClassQuery]]:
    """The three classes of ``n`` queries each, keyed by class name in course order."""
    if not documents:
        raise ValueError("documents must not be empty")
    draws = draw_query_sources(seed, edition, documents, n)
    return {name: [ClassQuery(text=class_query_text(name, document, filler, edition), query_class=name,
                              concept=document.main, code=document.code)
                   for document, filler in draws]
            for name in QUERY_CLASS_NAMES}
