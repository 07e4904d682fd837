"""Lab 04's two retrieval paths inside PostgreSQL, and their fusion.

- Full text, three ways (``LEXICAL``), each an OR (``|``) of the question's alphanumeric
  terms, so that a chunk can match with only some of the words:
  - ``english`` (seed 003's): ``to_tsquery('english', ...)`` against ``search_text``, ordered
    by ``ts_rank_cd``. PostgreSQL's English stop list drops ``where``, ``all`` and ``any``,
    and its parser keeps ``numpy.linalg.solve`` as one token that no question term equals.
    With an OR, ``ts_rank_cd`` is close to a count of matching words (0.1 an occurrence).
  - ``names``: the schema's ``names`` configuration against ``code_text``, where dotted
    names are split at their dots and no word is a stop word; the question loses only
    Lucene's 33 function words (none of them names a numpy object). Still ``ts_rank_cd``.
  - ``bm25``: the same match, scored by BM25 (Lucene's variant, ``k1`` 1.2, ``b`` 0.75)
    computed in the database from the index's term statistics (``lexemes``, ``collection``)
    and each matching chunk's term frequencies. ``tests/rag`` checks it equals ``bm25s``.
- Dense: pgvector's cosine distance ``<=>`` between the question's MiniLM vector and each
  chunk's, exhaustive (index scans off) or through the HNSW index when one exists.
- Fusion: reciprocal rank fusion (k = 60, ranks from 1) over up to 30 candidates per path.
  The union of the two lists can hold up to 60 chunks: a fixed budget per path is not a
  fixed total budget, so the union's size is reported with every result.

The question reaches SQL only as a parameter, and only its letters and digits reach the
text-search parser, so no character of it can change the statement or the query syntax.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import numpy as np

from ..engines.lexical import SHORT_STOPWORDS
from ..retrieval.fusion import fuse_partial
from .passages import Passage, ScoredPassage
from .store import DEFAULT_TENANT, PgIndex

TERM = re.compile(r"[a-z0-9]+")
MAX_TERMS = 256
PER_PATH = 30
RRF_CONSTANT = 60
MAX_QUESTION_CHARS = 20_000
LEXICAL = ("english", "names", "bm25")
DEFAULT_LEXICAL = "english"
BM25_K1 = 1.2
BM25_B = 0.75
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
    """A full-text scoring name (one of ``LEXICAL``)."""
    if lexical not in LEXICAL:
        raise ValueError(f"lexical must be one of {', '.join(LEXICAL)}; got {lexical!r}")
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
# tenant, so N, the mean length and each lexeme's document frequency are the tenant's own.
BM25_SQL = (
    "WITH terms AS (SELECT DISTINCT u.lexeme FROM unnest(to_tsvector(%(config)s::regconfig, %(words)s)) u), "
    "coll AS (SELECT chunks AS n, total_length::float8 / chunks AS mean_length FROM {s}.collection), "
    "idf AS (SELECT l.lexeme, ln(1 + (coll.n - l.chunks + 0.5) / (l.chunks + 0.5)) AS idf "
    "FROM {s}.lexemes l JOIN terms USING (lexeme) CROSS JOIN coll), "
    "ranked AS (SELECT c.chunk_id, sum(idf.idf * t.tf / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * c.code_length "
    "/ coll.mean_length))) AS score "
    "FROM {s}.chunks c CROSS JOIN coll CROSS JOIN LATERAL (SELECT u.lexeme, "
    "coalesce(array_length(u.positions, 1), 1) AS tf FROM unnest(c.code_text) u) t JOIN idf USING (lexeme) "
    "WHERE c.code_text @@ to_tsquery(%(config)s::regconfig, %(query)s) GROUP BY c.chunk_id "
    "ORDER BY score DESC, c.chunk_id LIMIT %(limit)s) "
    f"SELECT {COLUMNS}, r.score FROM ranked r JOIN {{s}}.chunks c USING (chunk_id) "
    "JOIN {s}.sources s USING (source_id) ORDER BY r.score DESC, c.chunk_id")
DENSE_SQL = (
    "WITH ranked AS (SELECT c.chunk_id, c.embedding <=> %s AS distance FROM {s}.chunks c "
    "WHERE c.embedding IS NOT NULL ORDER BY {order} LIMIT %s) "
    f"SELECT {COLUMNS}, 1 - r.distance FROM ranked r JOIN {{s}}.chunks c USING (chunk_id) "
    "JOIN {s}.sources s USING (source_id) ORDER BY r.distance, c.chunk_id")


def _full_text_rows(connection, index: PgIndex, question: str, limit: int,
                    lexical: str = DEFAULT_LEXICAL) -> list[ScoredPassage]:
    if check_lexical(lexical) == "english":
        terms = or_query(question)
        if not terms:
            return []
        return _passages(connection.execute(index.sql(FULL_TEXT_SQL), [terms, limit]).fetchall())
    terms = name_terms(question)
    if not terms:
        return []
    config, query = index.names_configuration, " | ".join(terms)
    if lexical == "names":
        return _passages(connection.execute(index.sql(NAMES_SQL), [config, query, limit]).fetchall())
    parameters = {"config": config, "query": query, "words": " ".join(terms), "k1": BM25_K1, "b": BM25_B,
                  "limit": limit}
    return _passages(connection.execute(index.sql(BM25_SQL), parameters).fetchall())


def _dense_rows(connection, index: PgIndex, vector: np.ndarray, limit: int, exact: bool) -> list[ScoredPassage]:
    vector = np.asarray(vector, dtype=np.float32)
    # Ties by chunk id make the exhaustive order total; HNSW can only serve ORDER BY the distance alone.
    order = "c.embedding <=> %s, c.chunk_id" if exact else "c.embedding <=> %s"
    statement = index.sql(DENSE_SQL.replace("{order}", order))
    return _passages(connection.execute(statement, [vector, vector, limit]).fetchall())


def full_text(index: PgIndex, question: str, limit: int = PER_PATH, tenant: str = DEFAULT_TENANT,
              lexical: str = DEFAULT_LEXICAL) -> list[ScoredPassage]:
    """Chunks matching any term of the question, best score first (``lexical``), ties by chunk id."""
    # The GIN index stays available (bitmap scans), but an OR of a question's words matches most
    # chunks, so the planner reads the table instead; benchmarks/lab04_scale.py reports the plan.
    with index.reader(tenant) as connection:
        return _full_text_rows(connection, index, question, limit, lexical)


def dense(index: PgIndex, vector: np.ndarray, limit: int = PER_PATH, tenant: str = DEFAULT_TENANT,
          exact: bool = True, ef_search: int | None = None) -> list[ScoredPassage]:
    """Chunks by cosine similarity (1 - pgvector's ``<=>``), exhaustive or through HNSW (``exact=False``)."""
    with index.reader(tenant, exact=exact) as connection:
        if ef_search is not None:
            connection.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
        return _dense_rows(connection, index, vector, limit, exact)


@dataclass(frozen=True)
class Candidates:
    """Both paths' candidates for one question, their fusion, the union's size and the stage timings."""

    question: str
    full_text: tuple[ScoredPassage, ...]
    dense: tuple[ScoredPassage, ...]
    fused: tuple[ScoredPassage, ...]
    seconds: dict = field(default_factory=dict)

    @property
    def union_size(self) -> int:
        """Distinct chunks the two paths proposed (up to twice the per-path budget)."""
        return len(self.fused)


def fuse(lists: list[list[ScoredPassage]], constant: float = RRF_CONSTANT) -> list[ScoredPassage]:
    """RRF over the lists (ranks from 1), best first, ties by chunk id."""
    by_id = {sp.passage.chunk_id: sp.passage for ranked in lists for sp in ranked}
    fused = fuse_partial([[sp.passage.chunk_id for sp in ranked] for ranked in lists], constant, first_position=1)
    return [ScoredPassage(by_id[cid], score, rank) for rank, (cid, score) in enumerate(fused, start=1)]


def candidates(index: PgIndex, question: str, vector: np.ndarray, per_path: int = PER_PATH,
               tenant: str = DEFAULT_TENANT, exact: bool = True, constant: float = RRF_CONSTANT,
               session=None, lexical: str = DEFAULT_LEXICAL) -> Candidates:
    """Run both paths for one question and fuse them.

    Both queries run in one read-only session for ``tenant``: a new one, or ``session``
    (an open ``index.reader(tenant, exact)``, shared by a batch of questions).
    """
    if session is None:
        with index.reader(tenant, exact=exact) as connection:
            return candidates(index, question, vector, per_path, tenant, exact, constant, connection, lexical)
    started = time.perf_counter()
    words = _full_text_rows(session, index, question, per_path, lexical)
    middle = time.perf_counter()
    semantic = _dense_rows(session, index, vector, per_path, exact)
    ended = time.perf_counter()
    fused = fuse([words, semantic], constant)
    return Candidates(question, tuple(words), tuple(semantic), tuple(fused),
                      {"full text": middle - started, "dense": ended - middle, "fusion": time.perf_counter() - ended})
