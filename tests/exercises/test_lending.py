"""The read-only view of lab 04's index that a check lends an answer (``lending.ReadOnlyIndex``).

Question 3 of lab 04 hands ``ordinal_gaps`` a view of the check's scratch index, and the check
then damages that index step by step and compares the answer with its reference on each step:
an answer that could write through the view could change what the check measures next. So
here: the view reads exactly what the index holds (every way an answer may read), every way
of writing through it is refused and leaves the index as it was (and the view still reading),
a transaction an answer leaves open is closed, and a submission in a real kernel that tries
all of this through its handle writes nothing and still gets its points.

One temporary embedded PostgreSQL (pgserver, started by ``lab04.scratch_index``) serves the file.
"""
from __future__ import annotations

import psycopg
import pytest

from ragcourse.exercises.labs import lab04
from ragcourse.exercises.lending import ReadOnlyIndex, Rows
from ragcourse.engines.chunking.policy import ChunkPolicy

pytestmark = pytest.mark.database   # lab04.scratch_index starts PostgreSQL

GAPS = "SELECT s.path FROM {s}.sources s JOIN {s}.chunks c USING (source_id) GROUP BY s.path " \
       "HAVING count(*) <> max(c.ordinal) + 1 ORDER BY s.path"


@pytest.fixture(scope="module")
def index():
    with lab04.scratch_index("lending_view", lab04.small_subset()[:8], policy=ChunkPolicy("headings")) as built:
        yield built


def counts(index) -> tuple[int, int, list]:
    """What the index holds, read through its own connection (not the view)."""
    with index.connection.transaction():
        chunks = index.connection.execute(index.sql("SELECT count(*) FROM {s}.chunks")).fetchone()[0]
        sources = index.connection.execute(index.sql("SELECT count(*) FROM {s}.sources")).fetchone()[0]
        rows = index.connection.execute(index.sql(
            "SELECT source_id, ordinal, md5(text) FROM {s}.chunks ORDER BY 1, 2")).fetchall()
    return chunks, sources, rows


def test_the_view_reads_what_the_index_holds(index):
    view = ReadOnlyIndex(index)
    chunks, sources, rows = counts(index)
    assert chunks > 8 and sources == 8
    assert view.schema == index.schema and index.schema in view.sql("SELECT 1 FROM {s}.chunks")
    read = view.connection.execute(view.sql("SELECT source_id, ordinal, md5(text) FROM {s}.chunks ORDER BY 1, 2"))
    assert isinstance(read, Rows) and read.rowcount == len(read) == chunks
    assert read.fetchone() == rows[0] and read.fetchmany(2) == rows[1:3] and read.fetchall() == rows[3:]
    assert read.fetchone() is None and read.fetchall() == []
    assert list(view.connection.execute(view.sql("SELECT source_id, ordinal, md5(text) FROM {s}.chunks "
                                                 "ORDER BY 1, 2"))) == rows
    with view.connection.transaction():   # a block of reads, as the master's answer does
        first = view.connection.execute(view.sql("SELECT count(*) FROM {s}.chunks")).fetchone()[0]
        with view.connection.transaction():
            second = view.connection.execute(view.sql("SELECT count(*) FROM {s}.sources WHERE source_id = %s"),
                                             [rows[0][0]]).fetchone()[0]
    assert (first, second) == (chunks, 1)
    assert view.connection.execute(view.sql("SELECT count(*) FROM {s}.chunks WHERE ordinal >= %(low)s"),
                                   {"low": 0}).fetchone()[0] == chunks
    assert view.connection.execute(" /* a comment */ -- and another\n WITH t AS (SELECT 1 AS one) "
                                   "SELECT one FROM t").fetchall() == [(1,)]
    assert view.connection.execute("VALUES (1), (2)").fetchall() == [(1,), (2,)]
    assert view.connection.execute(view.sql("TABLE {s}.sources")).rowcount == sources
    assert view.connection.execute(view.sql(GAPS)).fetchall() == []
    assert repr(view) == f"<a read-only view of the index in schema {index.schema}>"
    view.close()


WRITES = [
    ("DELETE FROM {s}.chunks", PermissionError),
    ("update {s}.chunks SET ordinal = ordinal + 1", PermissionError),
    ("  /* a comment */ -- another\n DROP TABLE {s}.chunks CASCADE", PermissionError),
    ("(DELETE FROM {s}.chunks)", PermissionError),
    ("COMMIT", PermissionError),
    ("SET TRANSACTION READ WRITE", PermissionError),
    ("WITH gone AS (DELETE FROM {s}.chunks RETURNING 1) SELECT count(*) FROM gone", psycopg.Error),
    ("SELECT 1; DELETE FROM {s}.chunks", psycopg.Error),
    ("VALUES (1); COMMIT; DELETE FROM {s}.chunks", psycopg.Error),
    ("SELECT set_config('transaction_read_only', 'off', false)", psycopg.Error),
    ("SELECT * FROM {s}.chunks FOR UPDATE", psycopg.Error),
    ("SELECT lo_create(0)", psycopg.Error),
    ("SELECT nextval(pg_get_serial_sequence('{s}.sources', 'source_id'))", psycopg.Error),
]


@pytest.mark.parametrize("statement, refused", WRITES, ids=[f"write{n}" for n in range(len(WRITES))])
def test_the_view_refuses_every_write(index, statement, refused):
    before = counts(index)
    view = ReadOnlyIndex(index)
    with pytest.raises(refused):
        view.connection.execute(view.sql(statement))
    view.close()
    assert counts(index) == before
    assert index.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert view.connection.execute(view.sql("SELECT count(*) FROM {s}.chunks")).fetchone()[0] == before[0], \
        "the view still reads after a refused write"


def test_read_write_cannot_be_switched_on_inside_a_block(index):
    """Inside ``with view.connection.transaction():`` the transaction is read-only from its first statement."""
    before = counts(index)
    view = ReadOnlyIndex(index)
    with pytest.raises(psycopg.Error):
        with view.connection.transaction():
            view.connection.execute("SELECT set_config('transaction_read_only', 'off', true)")
            view.connection.execute(view.sql("WITH gone AS (DELETE FROM {s}.chunks RETURNING 1) SELECT 1"))
    view.close()
    assert counts(index) == before


def test_a_transaction_left_open_is_closed_by_the_check(index):
    """An answer that enters a block and never leaves it: ``close`` (the check calls it after every call) ends it."""
    view = ReadOnlyIndex(index)
    view.connection.transaction().__enter__()
    view.connection.execute("SELECT 1")
    assert index.connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
    view.close()
    assert index.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert counts(index)[0] > 0


HOSTILE = '''
from ragcourse.rag.store import Check

def ordinal_gaps(index):
    """Try every way to write through the view; report honestly only if none got through."""
    wrote = []
    for statement in {writes!r}:
        try:
            index.connection.execute(index.sql(statement))
            wrote.append(statement)
        except Exception:
            pass
    for reach in (lambda: index._index, lambda: index.connection._connection, lambda: index._index.connection):
        try:
            reach()
            wrote.append("reached the index itself")
        except AttributeError:
            pass
    try:
        index.schema = "public"
        wrote.append("set the schema")
    except AttributeError:
        pass
    if wrote:
        return Check("wrote " + "; ".join(wrote), False, 99, ())
    with index.connection.transaction():
        paths = [p for (p,) in index.connection.execute(index.sql({gaps!r})).fetchall()]
    return Check("sources whose chunk ordinals have a gap", not paths, len(paths), tuple(paths[:3]))
'''


@pytest.mark.timed
@pytest.mark.notebooks   # a kernel runs: not part of `make test-fast`
def test_a_submission_cannot_write_through_its_handle(tmp_path):
    """In a real kernel, ordinal_gaps tries each write above through the lent view: none gets through, it passes."""
    from ragcourse.exercises.framework import PASSED, load_set
    from ragcourse.exercises.judge import judge
    from ragcourse.exercises.sandbox import Kernel
    from ragcourse.exercises.wire import Link

    kernel = Kernel(tmp_path / "kernel")
    (tmp_path / "kernel").mkdir()
    try:
        kernel.start()
        source = HOSTILE.format(writes=[statement for statement, _ in WRITES], gaps=GAPS)
        assert kernel.execute(source, 60).status == "ok"
        link = Link(kernel)
        try:
            link.open()
            verdicts = {v.question: v for v in judge(load_set("lab04-postgres-baseline"), link, 120)}
        finally:
            link.close()
    finally:
        kernel.close()
    assert verdicts["q3"].status == PASSED, verdicts["q3"].text()
    assert [verdicts[key].status for key in ("q1", "q2", "q4")] == ["not done yet"] * 3
