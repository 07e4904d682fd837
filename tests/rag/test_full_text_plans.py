"""Whether a GIN index can serve each full-text scoring's statement (the scale benchmark's plan counts).

``full_text`` sends one statement per scoring (``search.full_text_statement``), whose match
(``@@``) a bitmap scan on a GIN index could answer: ``chunks_search_text`` for ``english``,
``chunks_code_text`` for ``names`` and ``bm25``. On a small corpus the planner reads the
table whatever the question, so these tests turn sequential scans off for the transaction
(``enable_seqscan``) to ask whether the index *can* serve the statement, both the plan made
for the question's values and the generic plan a server-side prepared statement switches to:

- as the table owner, to whom row-level security does not apply (the reader session's
  other settings kept), it can: the statements' form is indexable, and the rows are the
  same;
- in the reader session ``full_text`` opens, it cannot (strict xfail): row-level security
  puts the tenant policy ahead of every qual that is not LEAKPROOF, and ``@@``
  (``ts_match_vq``) is not, so the planner may not turn the match into an index condition
  and reads every row of the table, at any scale. That is why
  ``benchmarks/lab04_scale.py`` counts sequential scans for every question; the day a
  change lets the index serve the reader (the match made leakproof, or run where the
  policy does not apply), these tests report XPASS and the marker should go.
"""
from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
from psycopg import sql

from ragcourse.rag.search import LEXICAL, full_text, full_text_statement
from ragcourse.rag.store import PgIndex


GIN_INDEX = {"english": "chunks_search_text", "names": "chunks_code_text", "bm25": "chunks_code_text"}
QUESTION = "np.where with a mask over the array elements"
PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")


RLS_BLOCKS_GIN = pytest.mark.xfail(
    strict=True, raises=AssertionError,
    reason="row-level security: the tenant policy comes before @@ (ts_match_vq), which is not LEAKPROOF, "
           "so the match cannot be an index condition in a reader session")


@contextmanager
def owner_session(index: PgIndex):
    """The reader session's settings (read-only, index scans off, the tenant set) as the table owner,
    to whom row-level security does not apply."""
    connection = index.connection
    with connection.transaction():
        connection.execute("SELECT set_config('transaction_read_only', 'on', true), "
                           "set_config('ragcourse.tenant', 'public', true), "
                           "set_config('enable_indexscan', 'off', true)")
        yield connection


@contextmanager
def session(index: PgIndex, reader: bool):
    """A reader session (row-level security applies) or ``owner_session``, with sequential scans off."""
    with (index.reader() if reader else owner_session(index)) as connection:
        connection.execute("SELECT set_config('enable_seqscan', 'off', true)")
        yield connection


def plan_text(rows) -> str:
    return "\n".join(row[0] for row in rows)


def numbered(text: str) -> str:
    """``%s`` / ``%(name)s`` as ``$1``, ``$2``, ... as psycopg sends them (a repeated name keeps its number)."""
    names: dict[str, int] = {}
    count = 0

    def number(match: re.Match) -> str:
        nonlocal count
        if match.group(0) == "%%":
            return "%"
        if match.group(1) is None or match.group(1) not in names:
            count += 1
            if match.group(1) is not None:
                names[match.group(1)] = count
            return f"${count}"
        return f"${names[match.group(1)]}"

    return PLACEHOLDER.sub(number, text)


def values_plan(index: PgIndex, lexical: str, reader: bool) -> str:
    statement, params = full_text_statement(index, QUESTION, 10, lexical)
    with session(index, reader) as connection:
        return plan_text(connection.execute(sql.SQL("EXPLAIN ") + statement, params).fetchall())


def generic_plan(index: PgIndex, lexical: str, reader: bool) -> str:
    statement, _ = full_text_statement(index, QUESTION, 10, lexical)
    with session(index, reader) as connection:
        text = numbered(statement.as_string(connection))
        return plan_text(connection.execute("EXPLAIN (GENERIC_PLAN) " + text).fetchall())


@pytest.mark.parametrize("lexical", LEXICAL)
def test_the_gin_index_can_serve_the_statement_without_row_level_security(pages, lexical):
    for plan in (values_plan(pages, lexical, reader=False), generic_plan(pages, lexical, reader=False)):
        assert f"Bitmap Index Scan on {GIN_INDEX[lexical]}" in plan, plan


@pytest.mark.parametrize("lexical", LEXICAL)
def test_the_index_served_statement_returns_what_full_text_returns(pages, lexical):
    expected = [(sp.passage.chunk_id, sp.score) for sp in full_text(pages, QUESTION, 10, lexical=lexical)]
    assert expected
    statement, params = full_text_statement(pages, QUESTION, 10, lexical)
    with session(pages, reader=False) as connection:
        assert GIN_INDEX[lexical] in plan_text(connection.execute(sql.SQL("EXPLAIN ") + statement, params).fetchall())
        rows = connection.execute(statement, params).fetchall()
    assert [(row[0], pytest.approx(row[-1])) for row in rows] == expected


@RLS_BLOCKS_GIN
@pytest.mark.parametrize("lexical", LEXICAL)
def test_the_gin_index_can_serve_the_statement_in_a_reader_session(pages, lexical):
    plan = values_plan(pages, lexical, reader=True)
    assert f"Bitmap Index Scan on {GIN_INDEX[lexical]}" in plan, plan


@RLS_BLOCKS_GIN
@pytest.mark.parametrize("lexical", LEXICAL)
def test_the_gin_index_can_serve_the_generic_plan_in_a_reader_session(pages, lexical):
    plan = generic_plan(pages, lexical, reader=True)
    assert f"Bitmap Index Scan on {GIN_INDEX[lexical]}" in plan, plan


def test_in_a_reader_session_the_match_is_a_filter_on_a_scan_of_every_row(pages):
    """What the reader gets instead, even with sequential scans off: the match as a filter on a scan of chunks
    (a Seq Scan, or with bm25 a full Index Scan on the primary key, both disabled, so whichever costs less)."""
    for lexical in LEXICAL:
        plan = values_plan(pages, lexical, reader=True)
        assert GIN_INDEX[lexical] not in plan, plan
        assert re.search(r"(Seq Scan|Index Scan using chunks_pkey) on chunks c_1 .*\n\s+Filter: .*@@", plan), plan
