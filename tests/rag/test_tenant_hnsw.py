"""Tenants under pgvector's HNSW index: a top-k search returns min(k, the tenant's rows) rows.

pgvector 0.6 applies row-level security after the index: HNSW proposes its
``hnsw.ef_search`` (40) nearest rows of the whole table and the policy then drops other
tenants' rows, so a tenant that owns 2% of the table gets about one row of a top 30. The
fixture below is built to show exactly that (each test first checks that the unguarded
search really falls short), and the tests check the repair of ``rag.search``: retries with a
larger ``ef_search`` for a large tenant, the exact fallback for a small one, the counters
that say so, the settings of a shared session put back, and lab 04's measurement.

The embedded PostgreSQL is conftest's ``database``; the fake encoder is ``support.database``'s.
"""
from __future__ import annotations

import statistics

import numpy as np
import pytest

from ragcourse.rag import search as search_module
from ragcourse.rag.pipeline import Pipeline as Baseline
from ragcourse.rag.search import candidates, dense
from ragcourse.rag.store import PgIndex, counts_by_tenant
from support.database import SMALL, FakeEncoder, owner_rows, schema_name, write_corpus

K = 30
FILES = 300
QUESTIONS = 20
VOCABULARY = [f"w{n}" for n in range(500)]


def three_tenants(path: str) -> str:
    """Files 0-209 belong to ``large`` (70%), 210-293 to ``other``, 294-299 to ``small`` (2%)."""
    number = int(path[3:6])
    return "large" if number < 210 else ("other" if number < 294 else "small")


@pytest.fixture(scope="module")
def shared(database, tmp_path_factory):
    """About 2,400 chunks of random words in three tenants, with the HNSW index (m=16, ef_construction=64).

    Its connection plans every statement as a long-lived application connection does after
    a few queries: psycopg prepares a statement it has run 5 times, and after 5 more
    PostgreSQL plans it once for any parameters (a generic plan, ``LIMIT`` unknown). Here
    that is forced from the first query, so every test sees the same plan: through the HNSW
    index. (A custom plan knows the small tenant's row estimate and the limit, and on this
    table it reads the table instead of the index; without the forcing, the shortfall would
    show only from a connection's eleventh search on.)
    """
    rng = np.random.default_rng(7)
    files = {f"doc{n:03d}.md": ". ".join(" ".join(rng.choice(VOCABULARY, 8)) for _ in range(8)) + "."
             for n in range(FILES)}
    root = write_corpus(tmp_path_factory.mktemp("tenant_hnsw"), files)
    index = PgIndex(database, schema=schema_name("tenant_hnsw_shared"), policy=SMALL, encoder=FakeEncoder(),
                    tenant_of=three_tenants)
    index.drop()
    index.refresh(root)
    index.create_hnsw(m=16, ef_construction=64)
    index.connection.prepare_threshold = 0
    index.connection.execute("SET plan_cache_mode = force_generic_plan")
    yield index
    index.drop()
    index.close()


@pytest.fixture(scope="module")
def questions() -> np.ndarray:
    """Twenty questions of three random words each, as fake-encoder vectors."""
    rng = np.random.default_rng(11)
    return FakeEncoder().encode([" ".join(rng.choice(VOCABULARY, 3)) for _ in range(QUESTIONS)])


def tenant_ids(index: PgIndex, tenant: str) -> set[int]:
    """The chunk ids of a tenant's rows, read as the table owner."""
    return {cid for (cid,) in owner_rows(index, "SELECT chunk_id FROM {s}.chunks WHERE tenant = %s", [tenant])}


def unguarded(index: PgIndex, vector: np.ndarray, tenant: str, limit: int = K) -> list:
    """The HNSW search as pgvector runs it (the statement of the code before the repair), in a reader session."""
    with index.reader(tenant, exact=False) as connection:
        return search_module._dense_rows(connection, index, vector, limit, exact=False)


def ids(passages) -> list[int]:
    return [sp.passage.chunk_id for sp in passages]


def settings(connection) -> tuple[str, str, str]:
    """The settings a repair changes: hnsw.ef_search, enable_indexscan, enable_seqscan."""
    return connection.execute("SELECT current_setting('hnsw.ef_search'), current_setting('enable_indexscan'), "
                              "current_setting('enable_seqscan')").fetchone()


def settings_of(connection, name: str) -> str:
    return connection.execute("SELECT current_setting(%s)", [name]).fetchone()[0]


def test_small_tenant_gets_k_rows_where_the_unguarded_index_search_falls_short(shared, questions):
    """2% of the table: HNSW's 40 candidates hold about one of its rows; the repair returns k, all its own."""
    counts = counts_by_tenant(shared)
    assert sum(counts.values()) >= 2000 and counts["large"] >= 0.6 * sum(counts.values())
    assert K < counts["small"] <= 0.03 * sum(counts.values())
    mine = tenant_ids(shared, "small")
    before = [len(unguarded(shared, v, "small")) for v in questions]
    assert max(before) < K and statistics.fmean(before) < K / 4, before      # the fixture reproduces the bug
    for vector, first in zip(questions, before):
        found = dense(shared, vector, K, "small", exact=False)
        assert len(found) == K
        assert set(ids(found)) <= mine
        assert ids(found) == ids(dense(shared, vector, K, "small", exact=True))   # the fallback is the exact search
        search = found.search
        assert (search.index_rows, search.rows, search.needed, search.visible) == (first, K, K, len(mine))
        assert search.fell_back and search.repaired and not search.exact


def test_large_tenant_gets_k_rows_by_raising_ef_search(shared, questions):
    """70% of the table: some searches come back a few rows short; a larger ef_search repairs them, no exact scan."""
    mine = tenant_ids(shared, "large")
    before = [len(unguarded(shared, v, "large")) for v in questions]
    short = [n for n in before if n < K]
    assert len(short) >= 3, before                                            # the fixture reproduces the bug
    for vector, first in zip(questions, before):
        found = dense(shared, vector, K, "large", exact=False)
        assert len(found) == K and set(ids(found)) <= mine
        search = found.search
        assert search.index_rows == first and not search.fell_back
        if first < K:
            assert search.retries >= 1 and search.ef_search > 40 and search.needed == K
            assert search.visible == search_module.count_bound(K)             # the count stopped early
            assert f"{search.retries} retr" in search.line() and "exact" not in search.line()
        else:
            assert (search.retries, search.visible, search.ef_search) == (0, None, None)


def test_candidates_repair_the_dense_path_in_a_shared_session_and_put_the_settings_back(shared, questions):
    """One reader session for a batch, as ``Baseline.ask_many`` opens it: every question's dense path gets k rows,
    ``Candidates.dense_search`` says how, and the next question starts from the session's own settings."""
    for tenant, mine in (("small", tenant_ids(shared, "small")), ("large", tenant_ids(shared, "large"))):
        with shared.reader(tenant, exact=False) as session:
            assert settings(session) == ("40", "on", "on")
            repaired = 0
            for vector in questions:
                raw = search_module._dense_rows(session, shared, vector, K, exact=False)
                found = candidates(shared, "w1 w2 w3", vector, K, tenant, exact=False, session=session)
                assert len(found.dense) == K and {sp.passage.chunk_id for sp in found.fused} <= mine
                assert found.dense_search.index_rows == len(raw)
                repaired += found.dense_search.repaired
                assert settings(session) == ("40", "on", "on")
                assert ids(search_module._dense_rows(session, shared, vector, K, exact=False)) == ids(raw)
            assert repaired >= 3
    traces = Baseline(shared, FakeEncoder(), exact=False).ask_many(["w1 w2 w3", "w4 w5", "w6"], tenant="small")
    for trace in traces:
        assert len(trace.stage("dense")) == K and trace.candidates.dense_search.fell_back
        assert any(line.startswith("dense search: HNSW returned") for line in trace.lines())
        assert trace.to_dict()["dense_search"]["fell_back"] is True


def test_a_tenant_with_fewer_rows_than_k_gets_every_one_of_them(shared, questions):
    mine = tenant_ids(shared, "small")
    limit = len(mine) + 25
    for vector in questions[:5]:
        assert len(unguarded(shared, vector, "small", limit)) < len(mine)
        found = dense(shared, vector, limit, "small", exact=False)
        assert set(ids(found)) == mine and found.search.needed == len(mine)
    nobody = dense(shared, questions[0], K, "nobody", exact=False)
    assert nobody == [] and nobody.search.visible == 0 and not nobody.search.repaired


def test_the_search_says_what_it_did_when_nothing_was_repaired(shared, questions):
    """Exact search, an approximate search the index satisfied, and an unguarded short one: each reported as such."""
    exact = dense(shared, questions[0], K, "small", exact=True)
    assert exact.search.exact and (exact.search.index_rows, exact.search.rows) == (K, K)
    assert exact.search.visible is None and not exact.search.repaired
    satisfied = next(v for v in questions if len(unguarded(shared, v, "large")) == K)
    found = dense(shared, satisfied, K, "large", exact=False, ef_search=40)
    assert (found.search.index_rows, found.search.retries, found.search.visible) == (K, 0, None)
    assert found.search.ef_search == 40 and not found.search.repaired
    short = dense(shared, questions[0], K, "small", exact=False, guaranteed=False)
    assert len(short) == short.search.index_rows == short.search.rows < K
    assert not short.search.guaranteed and "not repaired" in short.search.line()
    found = candidates(shared, "w1", questions[0], K, "small", exact=True)
    assert found.dense_search.exact and len(found.dense) == K


def test_next_ef_search_follows_the_yield_and_stays_within_pgvectors_cap():
    step = search_module.next_ef_search
    assert step(40, 10, 30) == 240          # a quarter of what was needed: twice the projected 120
    assert step(40, 27, 30) == 89           # nearly there: ceil(2 * 40 * 30 / 27)
    assert step(40, 39, 40) == 83
    assert step(40, 30, 30) == 80           # at least twice the last
    assert step(40, 0, 30) == 1000          # nothing found: straight to the cap
    assert step(600, 500, 600) == 1000
    assert search_module.count_bound(30) == 1001 and search_module.count_bound(5000) == 5001


@pytest.mark.parametrize("value", [0, 1001, -5, 2.5, True, "40; SET ROLE postgres"])
def test_a_bad_ef_search_is_refused_before_any_sql(shared, questions, value):
    with pytest.raises(ValueError, match="ef_search must be an integer from 1 to 1000"):
        dense(shared, questions[0], K, "small", exact=False, ef_search=value)
    assert len(dense(shared, questions[0], K, "small", exact=False)) == K      # the connection is still usable


def test_bad_guaranteed_and_limit_values_are_refused(shared, questions):
    for call in (lambda: dense(shared, questions[0], K, "small", exact=False, guaranteed="yes"),
                 lambda: candidates(shared, "w1", questions[0], K, "small", exact=False, guaranteed=1)):
        with pytest.raises(ValueError, match="guaranteed must be True or False"):
            call()
    with pytest.raises(ValueError, match="limit must be a positive integer"):
        dense(shared, questions[0], 0, "small", exact=False)


def test_tenant_shortfall_measures_the_shortfall_and_its_repair(shared, questions):
    """Lab 04's measurement: unguarded, the small tenant's searches fall short; repaired, none does."""
    from ragcourse.labs.tenancy import tenant_rows, tenant_shortfall

    visible = len(tenant_ids(shared, "small"))
    assert tenant_rows(shared, "small") == visible and tenant_rows(shared, "nobody") == 0
    before = tenant_shortfall(shared, questions, "small", K, guaranteed=False)
    after = tenant_shortfall(shared, questions, "small", K, guaranteed=True)
    assert (before.visible, before.needed, before.questions) == (visible, K, QUESTIONS)
    assert before.min_rows <= before.mean_rows < K and before.short == QUESTIONS
    assert (before.retried, before.fell_back) == (0, 0)
    assert (after.mean_rows, after.min_rows, after.short, after.fell_back) == (K, K, 0, QUESTIONS)
    assert 0 < after.latency.median <= after.latency.p95
    assert "HNSW, unguarded" in before.line() and "HNSW, repaired" in after.line()
    exact = tenant_shortfall(shared, questions, "small", K, exact=True)
    assert (exact.min_rows, exact.short) == (K, 0)
    shared.connection.execute("SET plan_cache_mode = auto")
    try:
        for mode in ("force_custom_plan", "auto"):     # whatever the plan, the repaired search is never short
            repaired = tenant_shortfall(shared, questions[:5], "small", K, plan_cache_mode=mode, repeats=2)
            assert (repaired.min_rows, repaired.short, repaired.questions) == (K, 0, 5)
            assert settings_of(shared.connection, "plan_cache_mode") == "auto"     # put back
    finally:
        shared.connection.execute("SET plan_cache_mode = force_generic_plan")
    for bad, message in (({"k": 0}, "k must be"), ({"guaranteed": None}, "guaranteed must"),
                         ({"tenant": "a b"}, "tenant must"), ({"vectors": np.zeros(384)}, "vectors must"),
                         ({"plan_cache_mode": "generic"}, "plan_cache_mode must be one of"),
                         ({"repeats": 0}, "repeats must")):
        arguments = {"index": shared, "vectors": questions, "tenant": "small", **bad}
        with pytest.raises(ValueError, match=message):
            tenant_shortfall(**arguments)
