"""Lesson 16's table source: every procedure document turned into a small table.

A table has a **head** that names the procedure (``tier limit procedure table``) and one
**row** per paragraph of the document, with three columns separated by a vertical bar with a
space on each side:

* the field name, the fourth word of the paragraph (the paragraph's filler word, since every
  document-side form has two words: ``tier limit for entry goes ...`` gives ``entry``);
* whether the field is required, ``yes`` or ``no``;
* where it comes from, ``field`` or ``central``.

The procedure name is written only in the head; no row says what table it belongs to. The
two coin flips of each row come from one generator per table, seeded from ``seed`` and the
table's position. (Not to be confused with ``ragcourse.tables``, which prints text tables.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .concepts import Edition
from .corpus import Document
from .rng import Draw, make_rng

TABLE_STRIDE = 4093
CELL_SEPARATOR = " | "
COLUMNS = ("field", "required", "source")


@dataclass(frozen=True)
class Table:
    """One procedure table: document code and main concept, the head line and the rows."""

    code: str
    main: str
    head: str
    rows: tuple[str, ...]


def table_row(paragraph: str, draw: Draw) -> str:
    """One row: the paragraph's field name, then two draws for ``required`` and ``source``."""
    field_name = paragraph.split()[3]
    required = "yes" if draw() < 0.5 else "no"
    source = "field" if draw() < 0.5 else "central"
    return CELL_SEPARATOR.join((field_name, required, source))


def build_tables(seed: int, documents: Sequence[Document], edition: Edition) -> list[Table]:
    """One table per document, in corpus order."""
    tables = []
    for i, document in enumerate(documents):
        draw = make_rng(seed + TABLE_STRIDE * (i + 1))
        head = f"{edition.concept(document.main).document_form} procedure table"
        tables.append(Table(code=document.code, main=document.main, head=head,
                            rows=tuple(table_row(p, draw) for p in document.paragraphs)))
    return tables
