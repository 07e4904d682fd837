"""The fixture every file of lab 04's database tests shares: one embedded PostgreSQL per test file."""
from __future__ import annotations

import pytest

from ragcourse.rag.database import open_database


@pytest.fixture(scope="module")
def database():
    """One temporary embedded PostgreSQL for the whole file (or $RAGCOURSE_DATABASE_URL's server)."""
    db = open_database(temporary=True)
    yield db
    db.close()
