"""Lab 04's two retrieval paths inside PostgreSQL, and their fusion.

- Full text, three ways (``LEXICAL``), each an OR (``|``) of the question's alphanumeric
  terms, so that a chunk can match with only some of the words:
  - ``english`` (the RAG baseline design's): ``to_tsquery('english', ...)`` against ``search_text``, ordered
    by ``ts_rank_cd``. PostgreSQL's English stop list drops ``where``, ``all`` and ``any``,
    and its parser keeps ``numpy.linalg.solve`` as one token that no question term equals.
    With an OR, ``ts_rank_cd`` is close to a count of matching words (0.1 an occurrence).
  - ``names``: the schema's ``names`` configuration against ``code_text`` (dotted names split at their
    dots, no stop words; the question loses Lucene's 33 function words). Still ``ts_rank_cd``.
  - ``bm25``: the same match, scored by BM25 (Lucene's variant, ``k1`` 1.2, ``b`` 0.75)
    computed in the database from the index's term statistics (``lexemes``, ``collection``)
    and each matching chunk's term frequencies. ``tests/rag`` checks it equals ``bm25s``.
- Dense: pgvector's cosine distance ``<=>`` between the question's MiniLM vector and each
  chunk's, exhaustive (index scans off) or through the HNSW index when one exists.
  pgvector 0.6 applies row-level security *after* the index: HNSW hands over its ``hnsw.ef_search``
  nearest rows of the whole table, of which a small tenant may own few or none, so an approximate
  search that comes back short is repaired (``exact=False``, ``guaranteed=True``, the default:
  ``_guarded_dense_rows``). Every dense result says what it took (``DenseSearch``).
- Fusion: reciprocal rank fusion (k = 60, ranks from 1) over up to 30 candidates per path (the union,
  up to 60 chunks, is reported with every result). ``dense_weight`` weighs the dense path's terms (1: plain
  RRF); ``lexical="none"`` runs no full text; ``names=True`` fuses the name channel (``rag.schema``) third.

The question reaches SQL only as a parameter, and only its letters and digits reach the
text-search parser, so no character of it can change the statement or the query syntax.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

import numpy as np

from ..engines.lexical import SHORT_STOPWORDS
from ..retrieval.fusion import check_weight, fuse_partial
from .schema import check_names, name_rows
from .passages import Passage, ScoredPassage
from .store import DEFAULT_TENANT, PgIndex

TERM = re.compile(r"[a-z0-9]+")
MAX_TERMS = 256
PER_PATH = 30
RRF_CONSTANT = 60
MAX_QUESTION_CHARS = 20_000
LEXICAL = ("english", "names", "bm25")   # the full-text scorings
NO_FULL_TEXT = "none"                    # no full-text path: dense alone (with the name channel, if asked)
DEFAULT_LEXICAL = "english"
BM25_K1 = 1.2
BM25_B = 0.75
MAX_EF_SEARCH = 1000        # pgvector 0.6's upper bound for hnsw.ef_search
COLUMNS = ("c.chunk_id, s.path, c.ordinal, c.start_char, c.end_char, c.text, c.tenant")


def check_question(question: object) -> str:
    """The question, stripped; ValueError when it is not text, empty, holds a NUL byte or is too long."""
    if not isinstance(question, str):
        raise ValueError(f"question must be text; got {type(question).__name__}")
    if "\x00" in question:
        raise ValueError("question holds a NUL byte, which PostgreSQL text cannot store: remove it")
    question = question.strip()
    if not question:
        raise ValueError("question is empty: type a question")
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"question is {len(question):,} characters long; at most {MAX_QUESTION_CHARS:,} are accepted")
    return question


def query_terms(question: str) -> list[str]:
    """The question's distinct lower-case alphanumeric terms in order of appearance (at most 256)."""
    return list(dict.fromkeys(TERM.findall(question.lower())))[:MAX_TERMS]


def or_query(question: str) -> str:
    """The ``to_tsquery`` text: the terms joined by `` | `` (empty when the question has none)."""
    return " | ".join(query_terms(question))


def name_terms(question: str) -> list[str]:
    """The ``names`` and ``bm25`` query terms: ``query_terms`` less Lucene's 33 function words."""
    return [t for t in query_terms(question) if t not in SHORT_STOPWORDS]


def check_lexical(lexical: object) -> str:
    """A full-text scoring name (one of ``LEXICAL``), or ``NO_FULL_TEXT`` ("none": no full-text path)."""
    if lexical not in (*LEXICAL, NO_FULL_TEXT):
        raise ValueError(f"lexical must be one of {', '.join((*LEXICAL, NO_FULL_TEXT))}; got {lexical!r}")
    return lexical


def _passages(rows) -> list[ScoredPassage]:
    return [ScoredPassage(Passage(int(cid), path, int(ordinal), int(a), int(b), text, tenant), float(score), rank)
            for rank, (cid, path, ordinal, a, b, text, tenant, score) in enumerate(rows, start=1)]


FULL_TEXT_SQL = (
    "WITH ranked AS (SELECT c.chunk_id, ts_rank_cd(c.search_text, q) AS score "
    "FROM {s}.chunks c, to_tsquery('english', %s) AS q WHERE c.search_text @@ q "
    "ORDER BY score DESC, c.chunk_id LIMIT %s) "
    f"SELECT {COLUMNS}, r.score FROM ranked r JOIN {{s}}.chunks c USING (chunk_id) "
    "JOIN {s}.sources s USING (source_id) ORDER BY r.score DESC, c.chunk_id")
NAMES_SQL = (
    "WITH ranked AS (SELECT c.chunk_id, ts_rank_cd(c.code_text, q) AS score "
    "FROM {s}.chunks c, to_tsquery(%s::regconfig, %s) AS q WHERE c.code_text @@ q "
    "ORDER BY score DESC, c.chunk_id LIMIT %s) "
    f"SELECT {COLUMNS}, r.score FROM ranked r JOIN {{s}}.chunks c USING (chunk_id) "
    "JOIN {s}.sources s USING (source_id) ORDER BY r.score DESC, c.chunk_id")
# BM25 from the index's own statistics. Row-level security keeps every table to the reader's
# tenant, so N, the mean length and each lexeme's document frequency are the tenant's own. Each
# matching chunk's vector is cut down to the question's lexemes before it is unnested (weight A
# on those, D on the rest, keep A: the positions, so the term frequencies, are unchanged); this
# halves the query's time (measured: 102-115 to 51-62 ms a question over 1,411 chunks, the same
# rows and scores for all 205 judged and real questions). The sum runs in lexeme order, so a score's
# last digit does not depend on the plan (which a LIMIT can change): a deeper search's first rows are
# a shallower one's, to the bit (``PathMemo`` relies on it).
BM25_SQL = (
    "WITH terms AS (SELECT DISTINCT u.lexeme FROM unnest(to_tsvector(%(config)s::regconfig, %(words)s)) u), "
    "coll AS (SELECT chunks AS n, total_length::float8 / chunks AS mean_length FROM {s}.collection), "
    "idf AS (SELECT l.lexeme, ln(1 + (coll.n - l.chunks + 0.5) / (l.chunks + 0.5)) AS idf "
    "FROM {s}.lexemes l JOIN terms USING (lexeme) CROSS JOIN coll), "
    "ranked AS (SELECT c.chunk_id, sum(idf.idf * t.tf / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * c.code_length "
    "/ coll.mean_length)) ORDER BY t.lexeme) AS score "
    "FROM {s}.chunks c CROSS JOIN coll CROSS JOIN LATERAL (SELECT u.lexeme, "
    "coalesce(array_length(u.positions, 1), 1) AS tf FROM unnest(ts_filter(setweight(setweight(c.code_text, 'D'), "
    "'A', (SELECT array_agg(lexeme) FROM terms)), '{{a}}')) u) t JOIN idf USING (lexeme) "
    "WHERE c.code_text @@ to_tsquery(%(config)s::regconfig, %(query)s) GROUP BY c.chunk_id "
    "ORDER BY score DESC, c.chunk_id LIMIT %(limit)s) "
    f"SELECT {COLUMNS}, r.score FROM ranked r JOIN {{s}}.chunks c USING (chunk_id) "
    "JOIN {s}.sources s USING (source_id) ORDER BY r.score DESC, c.chunk_id")
DENSE_SQL = (
    "WITH ranked AS (SELECT c.chunk_id, c.embedding <=> %s AS distance FROM {s}.chunks c "
    "WHERE c.embedding IS NOT NULL ORDER BY {order} LIMIT %s) "
    f"SELECT {COLUMNS}, 1 - r.distance FROM ranked r JOIN {{s}}.chunks c USING (chunk_id) "
    "JOIN {s}.sources s USING (source_id) ORDER BY r.distance, c.chunk_id")


def full_text_statement(index: PgIndex, question: str, limit: int = PER_PATH,
                        lexical: str = DEFAULT_LEXICAL) -> tuple[object, list | dict] | None:
    """The statement ``full_text`` runs for ``lexical`` and its parameters; None when the question has no term.

    Exposed so that a plan can be read for exactly what ``full_text`` sends
    (``benchmarks/lab04_scale.py``, ``tests/rag/test_full_text_plans.py``). ``lexical="none"``: None.
    """
    if check_lexical(lexical) == NO_FULL_TEXT:
        return None
    if lexical == "english":
        terms = or_query(question)
        return (index.sql(FULL_TEXT_SQL), [terms, limit]) if terms else None
    terms = name_terms(question)
    if not terms:
        return None
    config, query = index.names_configuration, " | ".join(terms)
    if lexical == "names":
        return index.sql(NAMES_SQL), [config, query, limit]
    return index.sql(BM25_SQL), {"config": config, "query": query, "words": " ".join(terms), "k1": BM25_K1,
                                 "b": BM25_B, "limit": limit}


def _full_text_rows(connection, index: PgIndex, question: str, limit: int,
                    lexical: str = DEFAULT_LEXICAL) -> list[ScoredPassage]:
    statement = full_text_statement(index, question, limit, lexical)
    if statement is None:
        return []
    # Never a prepared statement: psycopg prepares one that runs five times, and PostgreSQL's generic plan for
    # it evaluates to_tsquery of the parameters on every row instead of once (measured on lab 04's 109 dev
    # questions over 1,966 chunks, BM25: 123 ms a question prepared, 22 ms planned for its own terms).
    return _passages(connection.execute(*statement, prepare=False).fetchall())


def _dense_rows(connection, index: PgIndex, vector: np.ndarray, limit: int, exact: bool) -> list[ScoredPassage]:
    vector = np.asarray(vector, dtype=np.float32)
    # Ties by chunk id make the exhaustive order total; HNSW can only serve ORDER BY the distance alone.
    order = "c.embedding <=> %s, c.chunk_id" if exact else "c.embedding <=> %s"
    statement = index.sql(DENSE_SQL.replace("{order}", order))
    return _passages(connection.execute(statement, [vector, vector, limit]).fetchall())


@dataclass(frozen=True)
class DenseSearch:
    """What one dense search did to return its rows.

    ``index_rows`` is what the first search returned: for ``exact=False``, HNSW's
    ``ef_search`` nearest rows of the whole table after row-level security removed the other
    tenants' (the unguarded result; unless the planner, estimating the tenant small, read
    the table instead of the index). When that fell short of ``limit``, the tenant's rows with
    an embedding were counted in the same session (``visible``; the count stops at
    ``count_bound(limit)``, past anything the repair needs to know), and while fewer
    than ``needed`` had come back the search was repeated with a larger ``ef_search``
    (``retries``), then run exhaustively (``fell_back``). ``ef_search`` is the value of the
    last HNSW search when it was known (passed in, or read at a shortfall), else None.
    """

    limit: int
    exact: bool
    index_rows: int
    rows: int
    guaranteed: bool = True
    visible: int | None = None
    retries: int = 0
    ef_search: int | None = None
    fell_back: bool = False

    @property
    def needed(self) -> int | None:
        """min(limit, the tenant's rows with an embedding), when they were counted; else None."""
        return None if self.visible is None else min(self.limit, self.visible)

    @property
    def repaired(self) -> bool:
        """Whether the rows returned are not the first search's (a retry or the exact fallback)."""
        return self.retries > 0 or self.fell_back

    def line(self) -> str:
        """One line: how the rows were found."""
        if self.exact:
            return f"exact search: {self.rows} of {self.limit} rows"
        head = f"HNSW returned {self.index_rows} of {self.limit} rows"
        if self.visible is None:
            setting = "" if self.ef_search is None else f" (ef_search {self.ef_search})"
            unguarded = "" if self.guaranteed or self.index_rows >= self.limit else "; not repaired (guaranteed=False)"
            return head + setting + unguarded
        bound = count_bound(self.limit)
        visible = f"{self.visible:,}" if self.visible < bound else f"{bound - 1:,}+"
        steps = []
        if self.retries:
            retries = f"{self.retries} {'retry' if self.retries == 1 else 'retries'}"
            steps.append(f"{retries} up to ef_search {self.ef_search}")
        if self.fell_back:
            steps.append("exact search")
        done = ", then ".join(steps) or "nothing more to find"
        return f"{head}; the tenant holds {visible}; {done}: {self.rows} rows"


class DenseRows(list):
    """The passages of one dense search, best first (a plain list otherwise), and ``search``: how they were found."""

    def __init__(self, passages, search: DenseSearch):
        super().__init__(passages)
        self.search = search


def next_ef_search(ef_search: int, found: int, needed: int) -> int:
    """The next ``hnsw.ef_search`` after a search at ``ef_search`` found ``found`` of ``needed`` rows.

    The last search's yield (found / ef_search) is the tenant's share near this question;
    the next search asks for twice what that share predicts, at least twice the last
    ``ef_search``, and at most pgvector's 1,000.
    """
    projected = math.ceil(2 * ef_search * needed / max(found, 1))
    return min(MAX_EF_SEARCH, max(2 * ef_search, projected))


def count_bound(limit: int) -> int:
    """Where a shortfall's count of the tenant's rows stops: max(limit, 1,000) + 1.

    The repair needs min(limit, rows) and whether the rows outnumber any ``ef_search`` it
    could try (at most 1,000), nothing more; so a large tenant's count ends early.
    """
    return max(limit, MAX_EF_SEARCH) + 1


def _shortfall_state(connection, index: PgIndex, limit: int) -> tuple[int, str, str, str]:
    """(the tenant's rows with an embedding, up to ``count_bound(limit)``; ef_search; enable_indexscan; enable_seqscan).

    One round trip, in the reader's session, so row-level security applies to the count.
    """
    return connection.execute(index.sql(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM {s}.chunks WHERE embedding IS NOT NULL LIMIT %s) AS v), "
        "current_setting('hnsw.ef_search'), current_setting('enable_indexscan'), current_setting('enable_seqscan')"),
        [count_bound(limit)]).fetchone()


def _guarded_dense_rows(connection, index: PgIndex, vector: np.ndarray, limit: int,
                        ef_search: int | None = None, restore: bool = True) -> DenseRows:
    """An HNSW search that returns min(limit, the tenant's rows) rows, however few of them the index's candidates hold.

    1. The HNSW search as it stands (the unguarded result). ``limit`` rows: done, at no
       extra cost.
    2. Short: count the tenant's rows (same session, row-level security applies; the count
       stops at ``count_bound(limit)``). When the search already holds min(limit, that
       count), the tenant has no more.
    3. Otherwise raise ``hnsw.ef_search`` to ``next_ef_search`` and search again, for as
       long as that is cheaper than the exact search: an HNSW search over ef_search
       candidates costs about as much as scoring ef_search rows exactly, so once the next
       ef_search reaches the tenant's row count, or the last search ran at pgvector's cap of
       1,000, the search runs exhaustively instead (index scans off, sequential scans on),
       which cannot fall short: row-level security then filters before the ranking. (Each
       statement reads a fresh snapshot: rows deleted between the count and the search
       would show in the report as ``rows`` below ``needed``, not be hidden.)

    A tenant with a small share of the table goes exact after one HNSW search; a large
    tenant whose rows happen to be sparse near the question gets a retry. With ``restore``
    the settings are put back before returning, so a session shared by a batch of
    questions starts every question the same way (``dense`` skips it: its transaction ends).
    """
    limit = _check_limit(limit)
    rows = _dense_rows(connection, index, vector, limit, exact=False)
    first = len(rows)
    if first >= limit:
        return DenseRows(rows, DenseSearch(limit, False, first, first, ef_search=ef_search))
    visible, ef_before, index_scans, seq_scans = _shortfall_state(connection, index, limit)
    needed = min(limit, int(visible))
    ef, retries, fell_back = int(ef_before), 0, False
    while len(rows) < needed:
        proposed = next_ef_search(ef, len(rows), needed)
        if ef >= MAX_EF_SEARCH or proposed >= visible:
            connection.execute("SELECT set_config('enable_indexscan', 'off', true), "
                               "set_config('enable_seqscan', 'on', true)")
            rows = _dense_rows(connection, index, vector, limit, exact=True)
            fell_back = True
            break
        ef, retries = proposed, retries + 1
        connection.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
        rows = _dense_rows(connection, index, vector, limit, exact=False)
    if restore and (retries or fell_back):
        connection.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('enable_indexscan', %s, true), "
                           "set_config('enable_seqscan', %s, true)", [ef_before, index_scans, seq_scans])
    return DenseRows(rows, DenseSearch(limit, False, first, len(rows), True, int(visible), retries, ef, fell_back))


def _check_limit(limit: object) -> int:
    from ..toolkit.params import check_positive_int

    return check_positive_int("limit", limit)


def _check_guaranteed(guaranteed: object) -> bool:
    if not isinstance(guaranteed, bool):
        raise ValueError(f"guaranteed must be True or False; got {guaranteed!r}")
    return guaranteed


def _search_dense(connection, index: PgIndex, vector: np.ndarray, limit: int, exact: bool, guaranteed: bool,
                  ef_search: int | None = None, restore: bool = True) -> DenseRows:
    """The dense rows in an open reader session, with their ``DenseSearch``."""
    if exact or not guaranteed:
        rows = _dense_rows(connection, index, vector, limit, exact)
        return DenseRows(rows, DenseSearch(limit, exact, len(rows), len(rows), guaranteed,
                                           ef_search=None if exact else ef_search))
    return _guarded_dense_rows(connection, index, vector, limit, ef_search, restore)


def full_text(index: PgIndex, question: str, limit: int = PER_PATH, tenant: str = DEFAULT_TENANT,
              lexical: str = DEFAULT_LEXICAL) -> list[ScoredPassage]:
    """Chunks matching any term of the question, best score first (``lexical``), ties by chunk id."""
    # The reader session leaves bitmap scans on, but row-level security puts the tenant policy ahead of
    # @@ (ts_match_vq, not LEAKPROOF), so the GIN index cannot serve the match here and every row is read;
    # benchmarks/lab04_scale.py reports the plans, tests/rag/test_full_text_plans.py pins the limitation.
    with index.reader(tenant) as connection:
        return _full_text_rows(connection, index, question, limit, lexical)


def dense(index: PgIndex, vector: np.ndarray, limit: int = PER_PATH, tenant: str = DEFAULT_TENANT,
          exact: bool = True, ef_search: int | None = None, guaranteed: bool = True) -> DenseRows:
    """Chunks by cosine similarity (1 - pgvector's ``<=>``), exhaustive or through HNSW (``exact=False``).

    ``ef_search`` (1 to 1,000) sets ``hnsw.ef_search`` for the transaction. With
    ``exact=False`` and ``guaranteed=True`` a search that row-level security left short is
    repaired (``_guarded_dense_rows``), so a tenant with at least ``limit`` rows gets
    ``limit``; ``guaranteed=False`` returns what the index's candidates held, as pgvector
    does. The result is a list with a ``search`` attribute (``DenseSearch``) saying which.
    """
    guaranteed = _check_guaranteed(guaranteed)
    if ef_search is not None:
        from ..toolkit.params import check_int

        ef_search = check_int("ef_search", ef_search, 1, MAX_EF_SEARCH)
    with index.reader(tenant, exact=exact) as connection:
        if ef_search is not None:
            connection.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef_search)])
        return _search_dense(connection, index, vector, limit, exact, guaranteed, ef_search, restore=False)


class PathMemo:
    """Each path's rows for a question, fetched once for every run that asks the same index again.

    Lab 04 runs one question set through many settings, most of which change only what follows the
    first stage, so the same full-text and exhaustive dense statements would run again with the same
    answer. A memo keeps the rows of each (schema, tenant, scoring, question) at a depth of at least
    ``floor`` and hands out a prefix: both statements order by score, then chunk id, a total order, so
    the first ``limit`` rows of a deeper search are the rows a search at ``limit`` returns (``tests/rag``
    checks this). HNSW rows are never kept (they depend on its settings). Valid only while the indexes
    do not change. ``fetched`` and ``served`` count statements run and answers given from memory;
    ``fork`` and ``join`` let another thread's session fill a copy (``labs.systems.SettingRuns.prefetch``).
    """

    def __init__(self, floor: int = 60):
        self.floor = _check_limit(floor)
        self._rows: dict[tuple, tuple[int, list]] = {}
        self.fetched = self.served = 0

    def fork(self) -> "PathMemo":
        """A new memo holding what this one holds (its counts at zero), for another session to fill."""
        other = PathMemo(self.floor)
        other._rows = dict(self._rows)
        return other

    def join(self, other: "PathMemo") -> None:
        """Keep the rows ``other`` holds too, and count the statements it ran."""
        self._rows.update(other._rows)
        self.fetched += other.fetched

    def rows(self, key: tuple, limit: int, fetch) -> list:
        """The first ``limit`` rows under ``key``; ``fetch(depth)`` runs the statement when they are not kept."""
        kept = self._rows.get(key)
        if kept is not None and (kept[0] >= limit or len(kept[1]) < kept[0]):   # deep enough, or every row
            self.served += 1
            return kept[1][:limit]
        depth = max(limit, self.floor)
        rows = list(fetch(depth))
        self._rows[key] = (depth, rows)
        self.fetched += 1
        return rows[:limit]


def _memo_full_text(session, index: PgIndex, question: str, limit: int, lexical: str, tenant: str,
                    memo: PathMemo | None) -> list[ScoredPassage]:
    if memo is None:
        return _full_text_rows(session, index, question, limit, lexical)
    return memo.rows(("full text", index.schema, tenant, lexical, question), limit,
                     lambda depth: _full_text_rows(session, index, question, depth, lexical))


def _memo_dense(session, index: PgIndex, vector: np.ndarray, limit: int, exact: bool, guaranteed: bool, tenant: str,
                memo: PathMemo | None) -> DenseRows:
    if memo is None or not exact:
        return _search_dense(session, index, vector, limit, exact, guaranteed)
    vector = np.asarray(vector, dtype=np.float32)
    rows = memo.rows(("dense", index.schema, tenant, vector.tobytes()), limit,
                     lambda depth: _dense_rows(session, index, vector, depth, exact=True))
    return DenseRows(rows, DenseSearch(limit, True, len(rows), len(rows), guaranteed))


@dataclass(frozen=True)
class Candidates:
    """The paths' candidates for one question, their fusion, the union's size, the stage timings,
    how the dense rows were found (``dense_search``: an HNSW shortfall repaired, or not), and the name
    channel's rows (``names``; empty unless it ran: ``name_channel``)."""

    question: str
    full_text: tuple[ScoredPassage, ...]
    dense: tuple[ScoredPassage, ...]
    fused: tuple[ScoredPassage, ...]
    seconds: dict = field(default_factory=dict)
    dense_search: DenseSearch | None = None
    names: tuple[ScoredPassage, ...] = ()
    name_channel: bool = False

    @property
    def union_size(self) -> int:
        """Distinct chunks the paths proposed (up to the per-path budget times the paths)."""
        return len(self.fused)


def fuse(lists: list[list[ScoredPassage]], constant: float = RRF_CONSTANT,
         weights: list[float] | None = None) -> list[ScoredPassage]:
    """RRF over the lists (ranks from 1), each list's terms times its weight (None: all 1), best first, ties by
    chunk id."""
    by_id = {sp.passage.chunk_id: sp.passage for ranked in lists for sp in ranked}
    fused = fuse_partial([[sp.passage.chunk_id for sp in ranked] for ranked in lists], constant, first_position=1,
                         weights=weights)
    return [ScoredPassage(by_id[cid], score, rank) for rank, (cid, score) in enumerate(fused, start=1)]


def candidates(index: PgIndex, question: str, vector: np.ndarray, per_path: int = PER_PATH,
               tenant: str = DEFAULT_TENANT, exact: bool = True, constant: float = RRF_CONSTANT,
               session=None, guaranteed: bool = True, lexical: str = DEFAULT_LEXICAL,
               memo: PathMemo | None = None, dense_weight: float = 1.0, names: bool = False) -> Candidates:
    """Run the paths for one question and fuse them.

    The queries run in one read-only session for ``tenant``: a new one, or ``session`` (an open
    ``index.reader(tenant, exact)``, shared by a batch of questions). With ``exact=False`` the dense
    path is repaired as in ``dense`` (``guaranteed``) inside that session, its time including the
    repair. With a ``memo`` (``PathMemo``) a path asked before is answered from memory (its time is
    then that of memory). ``lexical``, ``dense_weight``, ``names``: as in the module's description.
    """
    guaranteed, lexical, names = _check_guaranteed(guaranteed), check_lexical(lexical), check_names(names)
    dense_weight = check_weight("dense_weight", dense_weight)
    if session is None:
        with index.reader(tenant, exact=exact) as connection:
            return candidates(index, question, vector, per_path, tenant, exact, constant, connection, guaranteed,
                              lexical, memo, dense_weight, names)
    started = time.perf_counter()
    words = _memo_full_text(session, index, question, per_path, lexical, tenant, memo)
    middle = time.perf_counter()
    semantic = _memo_dense(session, index, vector, per_path, exact, guaranteed, tenant, memo)
    ended = time.perf_counter()
    lists, weights = [words, semantic], (None if dense_weight == 1.0 else [1.0, dense_weight])
    seconds = {"full text": middle - started, "dense": ended - middle}
    named = []
    if names:
        named = name_rows(session, index, question, per_path, tenant, memo)
        lists, weights = [*lists, named], [1.0, dense_weight, 1.0]
        seconds["names"] = time.perf_counter() - ended
        ended = time.perf_counter()
    fused = fuse(lists, constant, weights)
    seconds["fusion"] = time.perf_counter() - ended
    return Candidates(question, tuple(words), tuple(semantic), tuple(fused), seconds, semantic.search,
                      tuple(named), names)
