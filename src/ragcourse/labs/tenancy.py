"""Lab 04's tenants under the HNSW index: how many rows a tenant's top-k search really returns.

pgvector 0.6 applies row-level security after the index: HNSW proposes its
``hnsw.ef_search`` nearest rows of the whole table (40 by default) and the policy then
drops the other tenants' rows, so a tenant that owns a small share of the table gets a
short list, or an empty one, without any error. ``tenant_shortfall`` measures that over a
set of questions, unguarded (``guaranteed=False``: what pgvector returns) or repaired (the
default of ``rag.search.dense``), with the search's latency and how often each repair ran.

Whether a search goes through the index at all is the planner's choice, and it depends on
the connection's plan cache: psycopg prepares a statement it has run five times, and after
five more PostgreSQL may keep one generic plan for every tenant and limit (through the
index), or go on planning each search with the tenant's row estimate (a small tenant's rows
then come from reading the table, and nothing is short). Which of the two a connection
settles on depends on the searches it ran first. So the measurement fixes the mode for its
searches (``plan_cache_mode``, PostgreSQL's own setting): by default the generic plan, the
one that shows what the index does for every tenant.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

from ..rag.search import dense
from ..rag.store import PgIndex, check_tenant
from .ladder import Spread, spread

PLAN_CACHE_MODES = ("force_generic_plan", "force_custom_plan", "auto")
PLAN_NAMES = {"force_generic_plan": "generic plans", "force_custom_plan": "custom plans", "auto": "plans as cached"}


def tenant_rows(index: PgIndex, tenant: str) -> int:
    """The chunks with an embedding that ``tenant`` sees, counted in its own reader session (row-level security)."""
    with index.reader(tenant) as connection:
        statement = index.sql("SELECT count(*) FROM {s}.chunks WHERE embedding IS NOT NULL")
        return connection.execute(statement).fetchone()[0]


@dataclass(frozen=True)
class Shortfall:
    """One tenant's top-``k`` dense searches over a set of questions: rows returned, repairs, latency.

    ``needed`` is min(k, visible): what every search should return. ``short`` counts the
    questions whose search returned fewer; ``retried`` those that raised ``ef_search`` at
    least once; ``fell_back`` those answered by the exact search. ``latency`` is in
    milliseconds per search, its reader transaction included, over every repeat.
    """

    tenant: str
    k: int
    guaranteed: bool
    exact: bool
    plan_cache_mode: str
    questions: int
    visible: int
    mean_rows: float
    min_rows: int
    short: int
    retried: int
    fell_back: int
    latency: Spread

    @property
    def needed(self) -> int:
        return min(self.k, self.visible)

    def line(self) -> str:
        """One line of the measurement."""
        how = "exact" if self.exact else ("HNSW, repaired" if self.guaranteed else "HNSW, unguarded")
        how += ", " + PLAN_NAMES[self.plan_cache_mode]
        return (f"{self.tenant} ({self.visible:,} rows), top {self.k}, {how}: mean {self.mean_rows:.1f} rows, "
                f"min {self.min_rows}; {self.short} of {self.questions} short of {self.needed}; "
                f"{self.retried} retried, {self.fell_back} fell back to exact; "
                f"median {self.latency.median:.2f} ms, p95 {self.latency.p95:.2f} ms")


def tenant_shortfall(index: PgIndex, vectors: np.ndarray, tenant: str, k: int = 30, guaranteed: bool = True,
                     exact: bool = False, ef_search: int | None = None,
                     plan_cache_mode: str = "force_generic_plan", repeats: int = 1) -> Shortfall:
    """Run ``dense`` top-``k`` for ``tenant`` on every vector (one reader transaction each) and measure it.

    ``guaranteed=False`` is the unguarded HNSW search (pgvector's own behaviour);
    ``guaranteed=True`` repairs a shortfall; ``exact=True`` is the exhaustive reference.
    ``ef_search`` (1 to 1,000) starts the HNSW search there instead of the server's setting.
    ``plan_cache_mode`` (one of ``PLAN_CACHE_MODES``) is set on the index's connection for
    the measurement and put back after it; ``auto`` leaves the plan to the connection's
    history. Every vector is searched ``repeats`` times (1 to 100) for the latency; the rows
    are counted on the first pass.
    """
    from ..toolkit.params import check_choice, check_int

    tenant = check_tenant(tenant)
    k = check_int("k", k, 1, 1000)
    repeats = check_int("repeats", repeats, 1, 100)
    plan_cache_mode = check_choice("plan_cache_mode", plan_cache_mode, PLAN_CACHE_MODES)
    for name, flag in (("guaranteed", guaranteed), ("exact", exact)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be True or False; got {flag!r}")
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or len(matrix) == 0:
        raise ValueError(f"vectors must be a non-empty 2-D array, one row a question; got shape {matrix.shape}")
    visible = tenant_rows(index, tenant)
    connection = index.connection
    before = connection.execute("SELECT current_setting('plan_cache_mode')").fetchone()[0]
    connection.execute("SELECT set_config('plan_cache_mode', %s, false)", [plan_cache_mode])
    counts, searches, times = [], [], []
    try:
        for number in range(repeats):
            for vector in matrix:
                started = time.perf_counter()
                rows = dense(index, vector, k, tenant, exact=exact, ef_search=ef_search, guaranteed=guaranteed)
                times.append(1000 * (time.perf_counter() - started))
                if any(sp.passage.tenant != tenant for sp in rows):
                    raise RuntimeError(f"a row of another tenant reached {tenant!r}: "
                                       "row-level security is not in force")
                if number == 0:
                    counts.append(len(rows))
                    searches.append(rows.search)
    finally:
        connection.execute("SELECT set_config('plan_cache_mode', %s, false)", [before])
    needed = min(k, visible)
    return Shortfall(tenant, k, guaranteed, exact, plan_cache_mode, len(counts), visible, statistics.fmean(counts),
                     min(counts), sum(n < needed for n in counts), sum(s.retries > 0 for s in searches),
                     sum(s.fell_back for s in searches), spread(times))
