"""Fixed-width text tables, printed the way the course prints them.

A table is a list of columns; each has a title, a width, a format and an alignment.
Cells are joined by a separator (one space unless said otherwise). Titles align like
their values, so a header and its rows line up.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class Column:
    """One column: ``title``, ``width``, ``fmt`` (a format spec such as ``.4f``) and ``align``."""

    title: str
    width: int
    fmt: str = ""
    align: str = ">"

    def cell(self, value: object) -> str:
        """The value formatted to this column's width."""
        return f"{format(value, self.fmt):{self.align}{self.width}}"

    def heading(self) -> str:
        """The title padded to this column's width."""
        return f"{self.title:{self.align}{self.width}}"


def format_header(columns: Sequence[Column], sep: str = " ") -> str:
    """The header line of a table."""
    return sep.join(c.heading() for c in columns)


def format_row(values: Sequence[object], columns: Sequence[Column], sep: str = " ") -> str:
    """One row of a table; ``values`` align with ``columns``."""
    if len(values) != len(columns):
        raise ValueError(f"a row needs {len(columns)} values, got {len(values)}")
    return sep.join(c.cell(v) for c, v in zip(columns, values))


def print_table(rows: Iterable[Sequence[object]], columns: Sequence[Column], sep: str = " ",
                header: str | None = None) -> None:
    """Print a header (``header`` overrides the generated one) and one line per row."""
    print(format_header(columns, sep) if header is None else header)
    for row in rows:
        print(format_row(row, columns, sep))


LIBRARY_CHECK_COLUMNS = (Column("what is checked", 52, "", "<"), Column("against", 34, "", "<"),
                         Column("result", 22, "", ">"))


def print_library_checks(rows: Iterable[Sequence[object]]) -> None:
    """The appendix table of a lesson: one row per check, ``(what is checked, against, agrees)``."""
    print_table(rows, LIBRARY_CHECK_COLUMNS)
