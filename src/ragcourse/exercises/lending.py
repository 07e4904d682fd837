"""What the grader hands a submission's kernel besides plain data (see ``judge`` and ``wire``).

Three ways, chosen by the argument's type:

* **lent** (``LENT_TYPES``): the kernel gets a handle, and every use of a public attribute or
  method runs here, in the grader (except ``WITHHELD``: a counter's ``reset`` and ``tick``).
  The simulated models and their call counters (a check reads the counts), and
  ``ReadOnlyIndex``: a view of one of the checks' scratch databases that runs only single
  read-only queries, so a submission can look at the index a check built but never change
  what the check measures next (the check's reference reads the same database).
* **rebuilt** (``rebuilt_reducers``): an object holding an open resource (the dense encoder's
  SQLite cache) travels as what it takes to open an equivalent one in the kernel.
* everything else by value (cloudpickled), each argument object once per question: the kernel
  keeps it and later calls of the same question refer to it (``wire.Link``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable

# The special methods a lent object's handle forwards (a ``with`` block, iteration, len, indexing).
FORWARDED = ("__enter__", "__exit__", "__iter__", "__len__", "__getitem__")
# The public methods of a lent object the kernel may not use: they change the count a check reads (a
# submission that asked the model too often must not be able to reset the counter and tick it back up).
WITHHELD = ("reset", "tick")
_COMMENTS = re.compile(r"^\s*(?:--[^\n]*\n|/\*.*?\*/|\s)*", re.S)
READ_STATEMENTS = ("select", "with", "values", "table")


@lru_cache(maxsize=1)
def LENT_TYPES() -> tuple[type, ...]:
    """What the kernel gets by reference: the simulated models and their counters, the read-only index view.

    Cached: the grader's pickler asks for every object it sends (millions for a large argument).
    """
    from ..world.llm import CallCounter, SimulatedModel

    return (SimulatedModel, CallCounter, ReadOnlyIndex, ReadOnlyConnection, ReadOnlyTransaction, Rows)


def _encoder(path: str, threads: int):
    from ..engines.dense import DenseEncoder, EmbeddingCache

    return DenseEncoder(EmbeddingCache(path), threads)


@lru_cache(maxsize=1)
def rebuilt_reducers() -> dict[type, Callable[[Any], tuple]]:
    """type -> reducer, for objects the kernel opens afresh rather than receives (the encoder's cache is a file)."""
    from ..engines.dense import DenseEncoder

    return {DenseEncoder: lambda encoder: (_encoder, (str(encoder.cache.path), encoder.threads))}


def readable(query: Any) -> str:
    """``query`` when it is one statement that only reads; PermissionError otherwise."""
    if not isinstance(query, str):
        raise TypeError(f"give the query as a string (index.sql(...) returns one here); got a {type(query).__name__}")
    words = _COMMENTS.sub("", query, count=1).split(None, 1)
    if not words or words[0].lower().lstrip("(") not in READ_STATEMENTS:
        raise PermissionError("the index you were handed is read-only: only a SELECT (or WITH ... SELECT) runs here")
    return query


class Rows:
    """A query's result, fetched whole: ``fetchall``, ``fetchone``, ``fetchmany``, iteration, ``rowcount``."""

    def __init__(self, rows: list[tuple]):
        self._rows, self._next = [tuple(r) for r in rows], 0
        self.rowcount = len(self._rows)

    def fetchall(self) -> list[tuple]:
        rows, self._next = self._rows[self._next:], len(self._rows)
        return rows

    def fetchone(self) -> tuple | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchmany(self, size: int = 1) -> list[tuple]:
        rows = self._rows[self._next:self._next + max(0, int(size))]
        self._next += len(rows)
        return rows

    def __iter__(self):
        return iter(self.fetchall())

    def __len__(self) -> int:
        return len(self._rows)


class ReadOnlyTransaction:
    """``with connection.transaction():`` on the view: one read-only transaction, always rolled back."""

    def __init__(self, connection: "ReadOnlyConnection"):
        self._connection = connection

    def __enter__(self) -> "ReadOnlyTransaction":
        self._connection._begin()
        return self

    def __exit__(self, *failed: Any) -> bool:
        self._connection._end()
        return False


class ReadOnlyConnection:
    """A connection's ``execute`` and ``transaction``, each statement a single read in a read-only transaction."""

    def __init__(self, connection: Any):
        self._connection, self._open, self._depth = connection, None, 0

    def transaction(self) -> ReadOnlyTransaction:
        return ReadOnlyTransaction(self)

    def execute(self, query: Any, params: Any = None) -> Rows:
        statement = readable(query)
        if params is not None and not isinstance(params, (list, tuple, dict)):
            raise TypeError("params must be a list, a tuple or a dict")
        self._begin()
        try:
            # prepare=True: the extended protocol, which runs one statement, never "SELECT 1; COMMIT; ..."
            cursor = self._connection.execute(statement, params, prepare=True)
            return Rows(cursor.fetchall() if cursor.description else [])
        finally:
            self._end()

    def _begin(self) -> None:
        if self._depth == 0:
            self._open = self._connection.transaction()
            self._open.__enter__()
            self._connection.execute("SET TRANSACTION READ ONLY")
        self._depth += 1

    def _end(self, every: bool = False) -> None:
        import psycopg

        self._depth = 0 if every else max(0, self._depth - 1)
        if self._depth == 0 and self._open is not None:
            opened, self._open = self._open, None
            opened.__exit__(psycopg.Rollback, psycopg.Rollback(), None)


class ReadOnlyIndex:
    """What a check hands ``ordinal_gaps``: a PgIndex's ``schema``, ``sql`` and ``connection``, for reading only."""

    def __init__(self, index: Any):
        self._index = index
        self.schema = index.schema
        self.connection = ReadOnlyConnection(index.connection)

    def sql(self, statement: str) -> str:
        """``statement`` with ``{s}`` replaced by the quoted schema name (as text)."""
        return self._index.sql(str(statement)).as_string(self._index.connection)

    def __repr__(self) -> str:
        return f"<a read-only view of the index in schema {self.schema}>"

    def close(self) -> None:
        """End a transaction the answer left open (the check calls this after every call)."""
        self.connection._end(every=True)
