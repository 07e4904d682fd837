"""The index's own checks: schema versions compared as numbers, the chunking an index records read back."""
from __future__ import annotations

import pytest

from ragcourse.rag.health import IndexNotReady, check_ready
from ragcourse.engines.chunking.policy import ChunkPolicy
from ragcourse.rag.schema import SCHEMA_VERSION, is_current, schema_number


def test_schema_versions_compare_as_numbers():
    assert schema_number("10") > schema_number("9")
    assert is_current("10") and is_current(SCHEMA_VERSION)
    assert not is_current(str(int(SCHEMA_VERSION) - 1)) and not is_current(None)
    with pytest.raises(ValueError, match="schema version must be a whole number"):
        schema_number("3a")


POLICIES = [ChunkPolicy(), ChunkPolicy("fixed"), ChunkPolicy("headings"), ChunkPolicy("headings", headers=True),
            ChunkPolicy.recursive(), ChunkPolicy.recursive(headers=False), ChunkPolicy.seed(),
            ChunkPolicy("sentences", headers=True), ChunkPolicy("fixed", 100, 10, unit="characters", headers=True)]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.version)
def test_a_recorded_chunker_reads_back_as_its_policy(policy):
    assert ChunkPolicy.from_version(policy.version) == policy


def test_the_versions_an_index_records_are_unchanged():
    """Existing indexes compare these strings with the policy's: a new spelling would re-index every chunk."""
    assert [p.version for p in POLICIES] == [
        "sentences-v1(size=254,overlap=40,unit=tokens)", "fixed-v1(size=254,overlap=40,unit=tokens)", "headings-v1",
        "headings-v1(headers)", "recursive-v1(size=800,overlap=0,headers)", "recursive-v1(size=800,overlap=0)",
        "sentences-v1(size=2000,overlap=300)", "sentences-v1(size=254,overlap=40,unit=tokens,headers)",
        "fixed-v1(size=100,overlap=10,headers)"]


@pytest.mark.parametrize("version", [None, "", "pages-v1", "sentences-v2(size=10,overlap=0)", "recursive-v1(size=800)",
                                     "recursive-v1(size=800,overlap=0,colour=red)", "headings-v1(size=3,overlap=0)"])
def test_an_unknown_chunker_is_refused_not_replaced(version):
    with pytest.raises(ValueError, match="is not one this package writes"):
        ChunkPolicy.from_version(version)


class Stored:
    """An index as ``check_ready`` sees it: whether it exists, its meta table, its policy."""

    schema = "t_checks"

    def __init__(self, meta: dict | None, policy: ChunkPolicy = ChunkPolicy.recursive()):
        self._meta, self.policy = meta, policy

    def exists(self) -> bool:
        return self._meta is not None

    def meta(self) -> dict:
        return self._meta


def test_an_index_is_ready_when_built_at_this_schema_or_a_later_one():
    built = Stored({"schema_version": "10", "chunker": "sentences-v1(size=2000,overlap=300)"})
    check_ready(built)
    assert built.policy == ChunkPolicy.seed(), "queries report against the chunking the index records"


@pytest.mark.parametrize("meta, repair, says", [
    (None, "", "no index 't_checks' yet"),
    ({"schema_version": "2", "chunker": "recursive-v1(size=800,overlap=0,headers)"}, "--refresh", "older version"),
    ({"chunker": "recursive-v1(size=800,overlap=0,headers)"}, "--refresh", "older version (schema None"),
    ({"schema_version": SCHEMA_VERSION, "chunker": "pages-v1"}, "--refresh", "is not one this package writes"),
])
def test_an_index_not_ready_says_why_and_what_repairs_it(meta, repair, says):
    with pytest.raises(IndexNotReady, match=says.replace("(", r"\(")) as raised:
        check_ready(Stored(meta))
    assert raised.value.repair == repair
