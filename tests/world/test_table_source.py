"""Lesson 16's table source: a head naming the procedure, rows that do not."""
import pytest

from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.rng import make_rng
from ragcourse.world.table_source import CELL_SEPARATOR, Table, build_tables, table_row
from ragcourse.world.text import tokenize

COURSE_SEED = 20260218


@pytest.fixture(scope="module")
def world():
    return build_world(COURSE_SEED, SECOND_EDITION)


def test_course_seed_tables(world):
    tables = build_tables(COURSE_SEED, world.documents, SECOND_EDITION)
    assert len(tables) == 200
    assert tables[0] == Table(code="BK001", main="filter", head="filter replacement procedure table",
                              rows=("term | no | central", "entry | yes | central", "term | no | field",
                                    "area | no | central", "form | yes | central"))
    assert sum(len(t.rows) for t in tables) == 693
    # the course's stored-token counts of row-level and block-level chunking
    assert sum(len(tokenize(row)) for t in tables for row in t.rows) == 3815
    assert sum(len(tokenize(t.head + " ; " + " ; ".join(t.rows))) for t in tables) == 5702


@pytest.mark.parametrize("seed", [1, 4242, 3000000000])
def test_rows_follow_the_course_formula(world, seed):
    documents = build_world(seed, SECOND_EDITION).documents
    tables = build_tables(seed, documents, SECOND_EDITION)
    for i, (document, table) in enumerate(zip(documents, tables)):
        draw = make_rng(seed + 4093 * (i + 1))
        expected = [f"{p.split()[3]} | {'yes' if draw() < 0.5 else 'no'} | {'field' if draw() < 0.5 else 'central'}"
                    for p in document.paragraphs]
        assert list(table.rows) == expected
        assert table.code == document.code and table.main == document.main


def test_procedure_name_only_in_the_head(world):
    for table in build_tables(COURSE_SEED, world.documents, SECOND_EDITION):
        name = SECOND_EDITION.concept(table.main).document_form
        assert table.head == name + " procedure table"
        assert not any(c.document_form in row for row in table.rows for c in SECOND_EDITION.concepts)
        assert all(row.count(CELL_SEPARATOR) == 2 for row in table.rows)


def test_table_row_reads_the_field_name_and_draws_twice():
    draws = iter([0.2, 0.7])
    assert table_row("tier limit for okay goes with tier limit and is filed", lambda: next(draws)) \
        == "okay | yes | central"
