"""Benchmark (not a test): how lab 04's PostgreSQL baseline costs grow with the rows.

1x is the real index: the numpy reference exported without summary lines, chunked and
embedded by ``PgIndex.refresh`` with the DenseEncoder (about 1,400 chunks with ``ChunkPolicy()``). The refresh is
timed twice: once as it comes (the embeddings may already be in the cache; the script
says how many texts were really embedded) and once more into a fresh schema with a warm
cache, with the time spent inside ``encode`` reported apart from the rest (chunking and
the row-by-row database writes).

10x, 100x, ... are the 1x rows copied into a schema of their own: copy 0 is the real rows,
every other copy repeats the real texts (so full text sees realistic postings) with a
synthetic vector, the original plus Gaussian noise (``--noise`` per dimension, fixed
numpy seed), renormalised. Each copy gets its own source rows (``copy007/numpy.sum.md``),
tenant ``public`` so the reader session sees them. The rows go in with binary
``COPY ... FROM STDIN`` (timed: rows/s; every column a refresh writes, the contextual
``header`` included, so the generated ``tsvector`` columns are the real ones). COPY bypasses
``write_source``, which keeps BM25's term statistics (``lexemes``, ``collection``), so they
are recounted with ``PgIndex.update_statistics()`` (timed) and checked before and after:
the health check on them (``PgIndex.health``, "term statistics"; it fails before the
recount, as the copies have none) and a recount of every lexeme's document frequency; the
script stops if they still differ. At 1x the same check confirms what the refresh kept.
Then ``VACUUM ANALYZE`` of the four tables.

At every scale the 50 judged questions (vectors from the DenseEncoder, cached) are timed
in three passes, each as whole calls of ``ragcourse.rag.search`` (every call opens its own
reader session, as a caller pays it):

- without a vector index: full text (``full_text`` with the default ``english`` scoring,
  seed 003's query; its reader session allows bitmap scans, so the planner may use the GIN
  index), dense exact (``dense(exact=True)``) and the RRF step (``fuse`` over the
  full-text and exact lists);
- without a vector index, in a pass of its own: full text in each of the three scorings,
  ``full_text(..., lexical=...)`` for ``english`` (``to_tsquery('english')`` on
  ``search_text``, ``ts_rank_cd``), ``names`` (the schema's ``names`` configuration on
  ``code_text``, ``ts_rank_cd``) and ``bm25`` (the same match, BM25 from the term
  statistics), interleaved question by question;
- with an HNSW index (m 16, ef_construction 64, build timed): the dense paths only (full
  text does not change when a vector index exists): exact, HNSW at the server's
  ``hnsw.ef_search`` (40 unless configured otherwise), and HNSW at each ``--ef-search``
  value (``dense(exact=False, ef_search=N, guaranteed=False)``: the index's own result, no
  repair of a short list), each with recall@30 against exact.

In each, one warm-up pass is discarded, then ``--repeats`` passes are timed (2 by
default, so every p50/p95 is over 100 calls at every scale, 100x included, each scoring
too). The main table gives p50/p95 in ms per stage; a second table gives HNSW p50/p95
and recall@30 per ef_search value. The growth line compares the largest scale with the
smallest. One line per scale says which plan ``full_text``'s own (english) statement gets
for each question's values.

The full-text table gives, per scale and scoring, the p50/p95 of the whole calls and how
the statement finds its matches, counted over the questions: a GIN bitmap scan
(``chunks_search_text`` for english, ``chunks_code_text`` for names and bm25) or a
(parallel) sequential scan of chunks, read with EXPLAIN in a reader session like the one
``full_text`` opens (the exact statement and values: ``search.full_text_statement``), twice:

- "with the values": EXPLAIN of the statement with the question's values, a custom plan
  made for those terms (what the first calls on a connection get);
- "as prepared": psycopg prepares a statement on the server at its 6th execution on a
  connection (``prepare_threshold`` 5), and from then on PostgreSQL's plan cache, after 5
  custom plans, runs one generic plan (made without the values, so blind to how common
  the terms are) whenever its estimated cost is no higher than the custom plans' average.
  EXPLAIN EXECUTE of that prepared statement shows the plan the timed calls got, and
  ``pg_prepared_statements`` how many generic and custom plans it ran while timed.

Row-level security keeps the GIN indexes out of the reader's plans altogether: the tenant
policy must be applied before any qual that is not LEAKPROOF, and ``@@`` (``ts_match_vq``)
is not, so the match cannot become an index condition (``tests/rag/test_full_text_plans.py``).
Two more readings show what that costs: "without RLS", the plan for the values as the table
owner (no policy applies; the session otherwise like the reader's), counted like the
others; and, per scale, EXPLAIN with sequential scans off for ``SHORT_QUESTION`` as the
reader and as the owner (whether the index *can* be used at all).

At the smallest and the largest scale, EXPLAIN (ANALYZE, BUFFERS) is printed in full for
each scoring, for a short question with a name in it (``SHORT_QUESTION``), a short
question of rare words (``RARE_QUESTION``, judged j37) and a long how-to question
(``LONG_QUESTION``, judged j46): with the values in a reader session, as prepared, and as
the owner without row-level security (the last two only when their nodes differ from the
first; otherwise one line with the execution time).

The HNSW build session sets ``maintenance_work_mem = '512MB'`` (pgvector keeps the graph
in memory while it fits, which keeps the 100x build from crawling);
``max_parallel_maintenance_workers`` is left at the server's value and printed.

Everything happens in a temporary embedded PostgreSQL that is deleted at the end, also on
Ctrl-C (or in ``$RAGCOURSE_DATABASE_URL``'s server, where the benchmark's schemas are
dropped at the end).

    .venv/bin/python benchmarks/lab04_scale.py [--scales 1,10,100] [--ef-search 40,100,200]
        [--repeats 2] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np
from psycopg import sql as psql

from ragcourse.corpus.apidocs import export_markdown, load_corpus
from ragcourse.rag.database import open_database
from ragcourse.engines.dense import DenseEncoder, EmbeddingCache
from ragcourse.rag.store import DEFAULT_TENANT, PgIndex
from ragcourse.rag.search import LEXICAL, PER_PATH, dense, full_text, full_text_statement, fuse
from ragcourse.corpus.queries import judged_questions

SCHEMA_PREFIX = "lab04_scale_"
MAINTENANCE_WORK_MEM = "512MB"
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64
SEED = 20240404
MAX_SCALE = 1000
MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search
# The representative plans: a short question with a name in it, a short one of rare words (judged j37)
# and a long how-to question (judged j46).
SHORT_QUESTION = "np.where with a mask"
RARE_QUESTION = "argsort descending"
LONG_QUESTION = "work with a huge array stored on disk without loading it all into RAM"
REPRESENTATIVE = (("short", SHORT_QUESTION), ("rare", RARE_QUESTION), ("long", LONG_QUESTION))
GIN_INDEX = {"english": "chunks_search_text", "names": "chunks_code_text", "bm25": "chunks_code_text"}
STATISTICS_CHECK = "term statistics"   # part of the name of the health check on BM25's statistics


# -- options ------------------------------------------------------------------------------
def parse_numbers(option: str, text: str, highest: int, example: str) -> list[int]:
    """``"1,10,100"`` -> [1, 10, 100]; ValueError naming ``option`` unless distinct whole numbers from 1 to ``highest``."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError(f"{option} must be comma-separated whole numbers such as {example}; got {text!r}")
    values = [int(p) for p in parts]
    if not all(1 <= v <= highest for v in values) or len(set(values)) != len(values):
        raise ValueError(f"{option} must be distinct whole numbers from 1 to {highest}; got {text!r}")
    return sorted(values)


def parse_scales(text: str) -> list[int]:
    """``--scales``: distinct multiples of the corpus, 1 to 1000."""
    return parse_numbers("--scales", text, MAX_SCALE, "1,10,100")


def parse_ef_search(text: str) -> list[int]:
    """``--ef-search``: distinct ``hnsw.ef_search`` values, 1 to 1000."""
    return parse_numbers("--ef-search", text, MAX_EF_SEARCH, "40,100,200")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="1,10,100", help="multiples of the real index (default 1,10,100)")
    parser.add_argument("--ef-search", default="40,100,200",
                        help="hnsw.ef_search values timed at every scale, with recall@30 (default 40,100,200)")
    parser.add_argument("--repeats", type=int, default=2, help="timed passes per question after one warm-up (default 2)")
    parser.add_argument("--noise", type=float, default=0.015,
                        help="std of the Gaussian noise per dimension for synthetic vectors (default 0.015)")
    parser.add_argument("--cold-encode", action="store_true",
                        help="embed the 1x chunks with an empty, throwaway cache (slow; measures the model)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args()
    try:
        args.scales = parse_scales(args.scales)
        args.ef_search = parse_ef_search(args.ef_search)
    except ValueError as error:
        parser.error(str(error))
    if not 1 <= args.repeats <= 100:
        parser.error(f"--repeats must be from 1 to 100; got {args.repeats}")
    if not 0 <= args.noise <= 1:
        parser.error(f"--noise must be from 0 to 1; got {args.noise}")
    return args


# -- measuring helpers --------------------------------------------------------------------
class TimedEncoder:
    """The DenseEncoder with the seconds spent in ``encode`` added up (everything else passes through)."""

    def __init__(self, encoder: DenseEncoder):
        self._encoder = encoder
        self.seconds = 0.0

    def encode(self, texts, progress=None):
        started = time.perf_counter()
        try:
            return self._encoder.encode(texts, progress=progress)
        finally:
            self.seconds += time.perf_counter() - started

    def __getattr__(self, name):
        return getattr(self._encoder, name)


def ms_summary(seconds: list[float]) -> dict:
    """Median and 95th percentile in milliseconds."""
    values = np.asarray(seconds) * 1000
    return {"p50": float(np.median(values)), "p95": float(np.percentile(values, 95)), "n": len(values)}


@dataclass
class ScaleResult:
    scale: int
    rows: int
    sources: int
    insert_rows_per_s: float
    insert_note: str
    hnsw_build_s: float | None = None
    stages: dict = field(default_factory=dict)      # "no index" / "hnsw" -> stage -> ms summary
    recall_at_30: float | None = None               # HNSW at the server's ef_search
    ef_search: list = field(default_factory=list)   # one row per --ef-search value
    plans: dict = field(default_factory=dict)       # "full text" -> scan kind -> questions
    statistics: dict = field(default_factory=dict)  # BM25 term statistics: how they were made, checked
    lexical: dict = field(default_factory=dict)     # scoring -> latency, plan counts, prepared statement
    representative_plans: dict = field(default_factory=dict)  # scoring -> [short, rare, long] plan texts


# -- building -----------------------------------------------------------------------------
def new_index(db, name: str, encoder, created: list[PgIndex]) -> PgIndex:
    """A PgIndex on a schema that must not exist yet; remembered in ``created`` for the clean-up."""
    index = PgIndex(db, SCHEMA_PREFIX + name, encoder=encoder)
    if index.exists():
        raise SystemExit(f"schema {index.schema} already exists in this database; drop it or use another database")
    created.append(index)
    return index


def vacuum_analyze(db, index: PgIndex) -> float:
    started = time.perf_counter()
    with db.connect(autocommit=True) as connection:
        for table in ("sources", "chunks", "lexemes", "collection"):
            connection.execute(index.sql("VACUUM ANALYZE {s}." + table))
    return time.perf_counter() - started


def timed_refresh(index: PgIndex, root: Path) -> dict:
    """Refresh ``index`` from ``root``; seconds in total, in ``encode``, and the rest, and the rates."""
    before = index.encoder.seconds
    report = index.refresh(root)
    encode_s = index.encoder.seconds - before
    write_s = report.seconds - encode_s
    sources = len(report.added) + len(report.updated)
    return {"chunks": report.chunks_written, "sources": sources, "embedded": report.embedded,
            "seconds": report.seconds, "encode_s": encode_s, "write_s": write_s,
            "chunks_per_s": report.chunks_written / report.seconds, "sources_per_s": sources / report.seconds,
            "write_chunks_per_s": report.chunks_written / write_s}


def base_rows(index: PgIndex) -> tuple[list[tuple], list[tuple], np.ndarray]:
    """The real index's sources, chunks (without vector) and vectors, in (path, ordinal) order."""
    with index.connection.transaction():
        sources = index.connection.execute(index.sql(
            "SELECT path, content_hash, file_type, file_time, tenant FROM {s}.sources ORDER BY path")).fetchall()
        chunks = index.connection.execute(index.sql(
            "SELECT s.path, c.ordinal, c.start_char, c.end_char, c.text, c.content_hash, c.chunker, "
            "c.embedding_version, c.tenant, c.header, c.embedding "
            "FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
            "ORDER BY s.path, c.ordinal")).fetchall()
    vectors = np.vstack([np.asarray(row[-1].to_numpy(), dtype=np.float32) for row in chunks])
    return sources, [row[:-1] for row in chunks], vectors


def synthetic_vectors(vectors: np.ndarray, copies: int, noise: float) -> np.ndarray:
    """Copy 0 is ``vectors``; each other copy adds Gaussian noise and renormalises (fixed seed)."""
    rng = np.random.default_rng(SEED)
    out = np.empty((copies * len(vectors), vectors.shape[1]), dtype=np.float32)
    out[:len(vectors)] = vectors
    for copy in range(1, copies):
        noisy = vectors + rng.normal(0.0, noise, vectors.shape).astype(np.float32)
        out[copy * len(vectors):(copy + 1) * len(vectors)] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return out


def copy_path(copy: int, path: str) -> str:
    return path if copy == 0 else f"copy{copy:03d}/{path}"


def bulk_insert(index: PgIndex, copies: int, sources, chunks, vectors: np.ndarray) -> float:
    """Insert ``copies`` copies of the rows with binary COPY in one transaction; the seconds it took.

    COPY bypasses ``write_source``, so BM25's term statistics (``lexemes``, ``collection``)
    stay empty until ``PgIndex.update_statistics`` recounts them (``repair_statistics``)."""
    index.create()
    connection = index.connection
    started = time.perf_counter()
    with connection.transaction():
        with connection.cursor() as cursor:
            with cursor.copy(index.sql("COPY {s}.sources (path, content_hash, file_type, file_time, tenant) "
                                       "FROM STDIN WITH (FORMAT BINARY)")) as copy:
                copy.set_types(["text", "text", "text", "date", "text"])
                for number in range(copies):
                    for path, *rest in sources:
                        copy.write_row([copy_path(number, path), *rest])
            ids = dict(cursor.execute(index.sql("SELECT path, source_id FROM {s}.sources")).fetchall())
            with cursor.copy(index.sql(
                    "COPY {s}.chunks (source_id, ordinal, start_char, end_char, text, content_hash, chunker, "
                    "embedding_version, tenant, header, embedding) FROM STDIN WITH (FORMAT BINARY)")) as copy:
                copy.set_types(["int8", "int4", "int4", "int4", "text", "text", "text", "text", "text", "text",
                                "vector"])
                row = 0
                for number in range(copies):
                    for path, *rest in chunks:
                        copy.write_row([ids[copy_path(number, path)], *rest, vectors[row]])
                        row += 1
    return time.perf_counter() - started


def build_hnsw(index: PgIndex) -> float:
    with index.connection.transaction():
        index.connection.execute(f"SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
    return index.create_hnsw(HNSW_M, HNSW_EF_CONSTRUCTION)


def count_rows(index: PgIndex) -> tuple[int, int]:
    with index.connection.transaction():
        chunks = index.connection.execute(index.sql("SELECT count(*) FROM {s}.chunks")).fetchone()[0]
        sources = index.connection.execute(index.sql("SELECT count(*) FROM {s}.sources")).fetchone()[0]
    return chunks, sources


def statistics_check(db, index: PgIndex, recount: bool = True) -> dict:
    """BM25's term statistics against the chunks.

    The health check on them (``PgIndex.health``, run on an encoder-less view of the
    schema so that no chunk is tokenised: only that one check is read) compares each
    tenant's ``collection`` row with its chunks; with ``recount`` every lexeme's document
    frequency in ``lexemes`` is also compared with a recount from ``code_text``.
    """
    view = PgIndex(db, index.schema)
    try:
        check = next(c for c in view.health().checks if STATISTICS_CHECK in c.name)
    finally:
        view.close()
    out = {"check": check.name, "passed": check.passed, "tenants_failing": check.found,
           "examples": list(check.examples)}
    if recount:
        with index.connection.transaction():
            lexemes, differing = index.connection.execute(index.sql(
                "SELECT (SELECT count(*) FROM {s}.lexemes), count(*) FROM "
                "(SELECT c.tenant, u.lexeme, count(*) AS n FROM {s}.chunks c, unnest(c.code_text) u "
                "GROUP BY c.tenant, u.lexeme) r "
                "FULL JOIN {s}.lexemes l USING (tenant, lexeme) WHERE r.n IS DISTINCT FROM l.chunks")).fetchone()
        out.update(lexemes=lexemes, lexemes_differing=differing)
    return out


def check_line(check: dict) -> str:
    if check["passed"]:
        status = "health check ok"
    else:
        status = f"health check FAILS ({check['tenants_failing']} tenant(s): {', '.join(check['examples'])})"
    if "lexemes" in check:
        status += (f", {check['lexemes_differing']} of {check['lexemes']:,} lexeme document frequencies "
                   f"differ from a recount")
    return status


def repair_statistics(db, index: PgIndex) -> dict:
    """Recount BM25's term statistics after COPY (``update_statistics``, timed) and check them before and after."""
    before = statistics_check(db, index, recount=False)
    started = time.perf_counter()
    index.update_statistics()
    seconds = time.perf_counter() - started
    after = statistics_check(db, index)
    if not after["passed"] or after["lexemes_differing"]:
        raise SystemExit(f"{index.schema}: BM25 term statistics still wrong after update_statistics: "
                         f"{check_line(after)}")
    return {"made_by": "update_statistics after COPY", "before": before, "update_s": seconds, **after}


# -- querying -----------------------------------------------------------------------------
def server_ef_search(index: PgIndex) -> str:
    """The ``hnsw.ef_search`` a reader session gets when ``dense`` does not set one."""
    with index.reader(DEFAULT_TENANT, exact=False) as connection:
        return connection.execute("SHOW hnsw.ef_search").fetchone()[0]


def measure_without_index(index: PgIndex, questions: list[str], vectors: np.ndarray, repeats: int) -> dict:
    """Full text, exact dense and fusion (whole calls, each path in its own reader session)."""
    timings: dict[str, list[float]] = {"full text": [], "exact": [], "fusion": []}
    for number in range(1 + repeats):
        for question, vector in zip(questions, vectors):
            t0 = time.perf_counter()
            lexical = full_text(index, question, PER_PATH)
            t1 = time.perf_counter()
            exact = dense(index, vector, PER_PATH, exact=True)
            t2 = time.perf_counter()
            fuse([lexical, exact])
            t3 = time.perf_counter()
            if number > 0:  # pass 0 is the warm-up
                timings["full text"].append(t1 - t0)
                timings["exact"].append(t2 - t1)
                timings["fusion"].append(t3 - t2)
    return {stage: ms_summary(values) for stage, values in timings.items()}


def measure_with_hnsw(index: PgIndex, questions: list[str], vectors: np.ndarray, repeats: int,
                      ef_values: list[int]) -> tuple[dict, float, list[dict]]:
    """Exact and HNSW dense with the index built: stage summaries, recall@30 at the default ef_search,
    and one row (latency, recall@30) per ``ef_values`` entry. Full text is not re-timed."""
    settings = [None, *ef_values]            # None: the server's hnsw.ef_search
    seconds = {ef: [] for ef in settings}
    exact_s: list[float] = []
    truth: list[set[int]] = []
    recall = {ef: [] for ef in settings}
    for number in range(1 + repeats):
        for position, vector in enumerate(vectors):
            t0 = time.perf_counter()
            exact = dense(index, vector, PER_PATH, exact=True)
            exact_s.append(time.perf_counter() - t0)
            if number == 0:
                truth.append({sp.passage.chunk_id for sp in exact})
            for ef in settings:
                t0 = time.perf_counter()
                approximate = dense(index, vector, PER_PATH, exact=False, ef_search=ef, guaranteed=False)
                seconds[ef].append(time.perf_counter() - t0)
                if number == 0:
                    found = {sp.passage.chunk_id for sp in approximate}
                    recall[ef].append(len(truth[position] & found) / len(truth[position]))
    warm = len(vectors)  # drop the warm-up pass
    stages = {"exact": ms_summary(exact_s[warm:]), "hnsw": ms_summary(seconds[None][warm:])}
    sweep = [{"ef_search": ef, **ms_summary(seconds[ef][warm:]), "recall_at_30": float(np.mean(recall[ef]))}
             for ef in ef_values]
    return stages, float(np.mean(recall[None])), sweep


def _plan_nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")


def server_text(connection, statement, params) -> tuple[str, list]:
    """The statement as psycopg sends it (``%s`` -> ``$1``, ``$2``, ...; a repeated named placeholder keeps its
    number) and the values in ``$n`` order: what ``pg_prepared_statements`` shows and ``EXECUTE`` takes."""
    names: dict[str, int] = {}
    values: list = []

    def number(match: re.Match) -> str:
        if match.group(0) == "%%":
            return "%"
        if match.group(1) is None:
            values.append(params[len(values)])
            return f"${len(values)}"
        if match.group(1) not in names:
            values.append(params[match.group(1)])
            names[match.group(1)] = len(values)
        return f"${names[match.group(1)]}"

    return PLACEHOLDER.sub(number, statement.as_string(connection)), values


def prepared_statement(index: PgIndex, lexical: str) -> dict | None:
    """psycopg's server-side prepared statement for ``lexical``'s full-text query on the index's connection
    (psycopg prepares a statement at its 6th execution): name and how many generic and custom plans it ran."""
    statement, params = full_text_statement(index, SHORT_QUESTION, PER_PATH, lexical)
    connection = index.connection
    text, _ = server_text(connection, statement, params)
    with connection.transaction():
        row = connection.execute("SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
                                 "WHERE statement = %s", [text]).fetchone()
    return None if row is None else {"name": row[0], "generic": int(row[1]), "custom": int(row[2])}


def explain(connection, statement, params, options: str, prepared: str | None = None) -> list:
    """``EXPLAIN (options)`` of ``statement`` with its values (planned for them: a custom plan), or, with
    ``prepared``, ``EXPLAIN (options) EXECUTE prepared(values)``: the plan the prepared statement's plan
    cache picks, generic or custom, as a call of ``full_text`` on this connection would get it."""
    head = psql.SQL("EXPLAIN ({}) ").format(psql.SQL(options))
    if prepared is None:
        return connection.execute(head + statement, params).fetchall()
    _, values = server_text(connection, statement, params)
    # The values as literals: a parameter of EXECUTE's own would have no type to be inferred from.
    execute = psql.SQL("EXECUTE {}({})").format(psql.Identifier(prepared),
                                                psql.SQL(", ").join(psql.Literal(v) for v in values))
    return connection.execute(head + execute).fetchall()


def _plan_nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


def match_scan(plan: dict, gin_index: str) -> str:
    """How a plan finds the chunks matching ``@@``: ``GIN bitmap`` (a Bitmap Index Scan on ``gin_index``), or
    the node type of the scan on chunks that filters on ``@@`` (directly, or below the join whose filter it is:
    ``Seq Scan`` or ``Parallel Seq Scan``)."""
    def kind(node: dict) -> str:  # EXPLAIN's JSON says "Seq Scan" with "Parallel Aware" for a Parallel Seq Scan
        return ("Parallel " if node.get("Parallel Aware") else "") + node["Node Type"]

    nodes = list(_plan_nodes(plan))
    if any(n.get("Index Name") == gin_index for n in nodes):
        return "GIN bitmap"
    for node in nodes:
        if any("@@" in node.get(key, "") for key in ("Filter", "Join Filter")):
            if "Relation Name" in node:
                return kind(node)
            scans = [n for n in _plan_nodes(node) if n.get("Relation Name") == "chunks"]
            return kind(scans[0] if scans else node)
    return "other"


@contextmanager
def owner_session(index: PgIndex) -> Iterator:
    """A reader session's settings (read-only, index scans off, the tenant set) as the table owner, to whom
    row-level security does not apply: what the planner does when the policy does not stand in front of
    ``@@``. (The owner sees every tenant's rows; the benchmark's are all the default tenant's.)"""
    connection = index.connection
    with connection.transaction():
        connection.execute("SELECT set_config('transaction_read_only', 'on', true), "
                           "set_config('ragcourse.tenant', %s, true), set_config('enable_indexscan', 'off', true)",
                           [DEFAULT_TENANT])
        yield connection


SESSIONS = {"values": "reader", "prepared": "reader", "owner": "owner"}


def session(index: PgIndex, kind: str):
    return index.reader(DEFAULT_TENANT) if SESSIONS[kind] == "reader" else owner_session(index)


def lexical_plans(index: PgIndex, questions: list[str], lexical: str, prepared: str | None) -> dict:
    """Per question, how ``lexical``'s statement finds its matches (``match_scan``), counted: ``values``, the
    plan for the question's own values (EXPLAIN in the reader session ``full_text`` opens: what the first
    calls on a connection get); ``prepared``, the plan of the prepared statement (EXPLAIN EXECUTE, same
    session: what the timed calls got), None when psycopg had not prepared it; ``owner``, the plan for the
    values without row-level security (``owner_session``)."""
    counts: dict[str, dict[str, int]] = {"values": {}, "prepared": {}, "owner": {}}
    for question in questions:
        found = full_text_statement(index, question, PER_PATH, lexical)
        if found is None:
            continue  # full_text returns [] without a query
        kinds = {}
        with index.reader(DEFAULT_TENANT) as connection:
            kinds["values"] = explain(connection, *found, "FORMAT JSON")
            if prepared is not None:
                kinds["prepared"] = explain(connection, *found, "FORMAT JSON", prepared)
        with owner_session(index) as connection:
            kinds["owner"] = explain(connection, *found, "FORMAT JSON")
        for kind, rows in kinds.items():
            scan = match_scan(rows[0][0][0]["Plan"], GIN_INDEX[lexical])
            counts[kind][scan] = counts[kind].get(scan, 0) + 1
    if prepared is None:
        counts["prepared"] = None
    return counts


def gin_usable(index: PgIndex, lexical: str) -> dict:
    """Whether the GIN index can serve ``lexical``'s statement at all: EXPLAIN for ``SHORT_QUESTION`` with
    sequential scans off, in a reader session and as the owner (``match_scan`` of each)."""
    found = full_text_statement(index, SHORT_QUESTION, PER_PATH, lexical)
    out = {}
    for kind in ("values", "owner"):
        with session(index, kind) as connection:
            connection.execute("SELECT set_config('enable_seqscan', 'off', true)")
            plan = explain(connection, *found, "FORMAT JSON")[0][0][0]["Plan"]
        out["reader" if kind == "values" else "owner"] = match_scan(plan, GIN_INDEX[lexical])
    return out


def measure_lexical(index: PgIndex, questions: list[str], repeats: int) -> dict:
    """The three full-text scorings as whole ``full_text(..., lexical=...)`` calls (each in its own reader
    session), interleaved question by question; one warm-up pass, then ``repeats`` timed passes. Then, per
    scoring, the plan counts (``lexical_plans``) and how many generic and custom plans the prepared statement
    ran during the timed passes (from ``pg_prepared_statements``)."""
    seconds: dict[str, list[float]] = {lexical: [] for lexical in LEXICAL}
    before: dict[str, dict | None] = {}
    for number in range(1 + repeats):
        if number == 1:  # after the warm-up
            before = {lexical: prepared_statement(index, lexical) for lexical in LEXICAL}
        for question in questions:
            for lexical in LEXICAL:
                started = time.perf_counter()
                full_text(index, question, PER_PATH, lexical=lexical)
                if number > 0:
                    seconds[lexical].append(time.perf_counter() - started)
    out = {}
    for lexical in LEXICAL:
        after = prepared_statement(index, lexical)
        timed = None
        if after is not None:
            start = before.get(lexical) or {"generic": 0, "custom": 0}
            timed = {"generic": after["generic"] - start["generic"], "custom": after["custom"] - start["custom"]}
        name = None if after is None else after["name"]
        out[lexical] = {"ms": ms_summary(seconds[lexical]), "prepared_statement": name, "timed_plans": timed,
                        "plans": lexical_plans(index, questions, lexical, name),
                        "seqscan_off": gin_usable(index, lexical)}
    return out


def plan_shape(text: str) -> list[str]:
    """A text plan's nodes without their numbers (to compare two plans' shapes)."""
    return [re.sub(r"\s*\(cost=.*", "", line).replace("->", "").strip() for line in text.splitlines()
            if "(cost=" in line]


def execution_ms(text: str) -> float | None:
    found = re.search(r"Execution Time: ([0-9.]+) ms", text)
    return float(found.group(1)) if found else None


def representative_plans(index: PgIndex) -> dict:
    """Per scoring, EXPLAIN (ANALYZE, BUFFERS) for each ``REPRESENTATIVE`` question: with the values in a
    reader session, through the prepared statement (the plan the timed calls ran) when psycopg prepared one,
    and with the values as the owner (no row-level security)."""
    out = {}
    for lexical in LEXICAL:
        prepared = prepared_statement(index, lexical)
        name = None if prepared is None else prepared["name"]
        out[lexical] = []
        for label, question in REPRESENTATIVE:
            found = full_text_statement(index, question, PER_PATH, lexical)
            entry = {"label": label, "question": question, "prepared_statement": name}
            for kind in ("values", "prepared", "owner"):
                prepared_name = name if kind == "prepared" else None
                if kind == "prepared" and name is None:
                    entry[kind] = None
                    continue
                with session(index, kind) as connection:
                    rows = explain(connection, *found, "ANALYZE, BUFFERS", prepared_name)
                    plan = explain(connection, *found, "FORMAT JSON", prepared_name)[0][0][0]["Plan"]
                entry[kind] = "\n".join(row[0] for row in rows)
                entry[kind + "_scan"] = match_scan(plan, GIN_INDEX[lexical])
                entry[kind + "_ms"] = execution_ms(entry[kind])
            out[lexical].append(entry)
    return out


KIND_TITLES = {
    "prepared": "as prepared (EXPLAIN (ANALYZE, BUFFERS) EXECUTE {name}, the plan the timed calls ran)",
    "owner": "as the table owner, without row-level security (same settings otherwise)",
}


def print_representative(scale: int, plans: dict) -> None:
    for lexical, entries in plans.items():
        for e in entries:
            head = f"--- {scale}x {lexical}, {e['label']} question {e['question']!r}"
            print(f"{head}: EXPLAIN (ANALYZE, BUFFERS) with the values in a reader session "
                  f"({e['values_scan']}, {e['values_ms']:.1f} ms)")
            print(e["values"])
            for kind, title in KIND_TITLES.items():
                title = title.format(name=e["prepared_statement"])
                if e[kind] is None:
                    print(f"--- {scale}x {lexical}, {e['label']}: no prepared statement (psycopg had not prepared it)")
                elif plan_shape(e[kind]) == plan_shape(e["values"]):
                    print(f"--- {scale}x {lexical}, {e['label']}: {title}: the same nodes as the first "
                          f"({e[kind + '_ms']:.1f} ms)")
                else:
                    print(f"--- {scale}x {lexical}, {e['label']}: {title} ({e[kind + '_scan']}, "
                          f"{e[kind + '_ms']:.1f} ms)")
                    print(e[kind])
        print(flush=True)


def measure_scale(index: PgIndex, result: ScaleResult, questions, vectors, repeats: int,
                  ef_values: list[int], representative: bool = False) -> ScaleResult:
    print(f"  {result.scale}x: {result.rows:,} rows; queries without an index ...", flush=True)
    result.stages["no index"] = measure_without_index(index, questions, vectors, repeats)
    print(f"  {result.scale}x: full text, three scorings ({', '.join(LEXICAL)}) ...", flush=True)
    started = time.perf_counter()
    result.lexical = measure_lexical(index, questions, repeats)
    result.plans = {"full text": result.lexical["english"]["plans"]["values"]}
    print(f"  {result.scale}x: full text timed and explained in {time.perf_counter() - started:.0f} s", flush=True)
    if representative:
        result.representative_plans = representative_plans(index)
        print_representative(result.scale, result.representative_plans)
    result.hnsw_build_s = build_hnsw(index)
    print(f"  {result.scale}x: HNSW built in {result.hnsw_build_s:.1f} s; dense queries with it ...", flush=True)
    result.stages["hnsw"], result.recall_at_30, result.ef_search = measure_with_hnsw(
        index, questions, vectors, repeats, ef_values)
    return result


# -- report -------------------------------------------------------------------------------
def pair(summary: dict | None) -> str:
    return "-" if summary is None else f"{summary['p50']:.2f}/{summary['p95']:.2f}"


def table(results: list[ScaleResult], default_ef: str) -> list[str]:
    header = (f"{'scale':>5} {'index':<8} {'rows':>7} {'insert rows/s':>13} {'HNSW build s':>12} "
              f"{'full text ms':>15} {'exact ms':>15} {'HNSW ms':>11} {'fusion ms':>10} {'recall@30':>9}")
    out = [header, "-" * len(header)]
    for r in results:
        plain, hnsw = r.stages["no index"], r.stages["hnsw"]
        out.append(f"{str(r.scale) + 'x':>5} {'no index':<8} {r.rows:>7} "
                   f"{f'{r.insert_rows_per_s:,.0f}' + r.insert_note:>13} {'':>12} {pair(plain['full text']):>15} "
                   f"{pair(plain['exact']):>15} {'-':>11} {pair(plain['fusion']):>10} {'':>9}")
        out.append(f"{'':>5} {'hnsw':<8} {'':>7} {'':>13} {r.hnsw_build_s:>12.2f} {'-':>15} "
                   f"{pair(hnsw['exact']):>15} {pair(hnsw['hnsw']):>11} {'-':>10} {r.recall_at_30:>9.3f}")
    out.append(f"times are p50/p95 ms of whole calls over the judged questions; fusion is the RRF step alone "
               f"(full text + exact lists); HNSW at the server's ef_search ({default_ef}); full text is the "
               f"english scoring (seed 003's query), timed without the vector index only (it does not use it)")
    return out


def ef_table(results: list[ScaleResult]) -> list[str]:
    header = f"{'scale':>5} {'ef_search':>9} {'HNSW p50 ms':>11} {'HNSW p95 ms':>11} {'recall@30':>9}"
    out = [header, "-" * len(header)]
    for r in results:
        for number, row in enumerate(r.ef_search):
            out.append(f"{(str(r.scale) + 'x') if number == 0 else '':>5} {row['ef_search']:>9} "
                       f"{row['p50']:>11.2f} {row['p95']:>11.2f} {row['recall_at_30']:>9.3f}")
    return out


def plan_counts(counts: dict | None) -> str:
    """``GIN 12/50, seq 38/50`` (parallel sequential scans counted with the sequential ones and named)."""
    if counts is None:
        return "not prepared"
    total = sum(counts.values())
    gin = counts.get("GIN bitmap", 0)
    seq = sum(n for kind, n in counts.items() if "Seq Scan" in kind)
    parallel = counts.get("Parallel Seq Scan", 0)
    text = f"GIN {gin}/{total}, seq {seq}/{total}" + (f" ({parallel} parallel)" if parallel else "")
    other = total - gin - seq
    return text + (f", other {other}/{total}" if other else "")


def lexical_table(results: list[ScaleResult]) -> list[str]:
    header = (f"{'scale':>5} {'scoring':<8} {'rows':>7} {'full_text ms':>15} {'timed calls':>17}  "
              f"{'plan with the values':<34} {'plan as prepared':<34} {'plan without RLS'}")
    out = [header, "-" * len(header)]
    for r in results:
        for number, lexical in enumerate(LEXICAL):
            m = r.lexical[lexical]
            timed = m["timed_plans"]
            calls = "-" if timed is None else f"{timed['generic']} gen/{timed['custom']} cust"
            out.append(f"{(str(r.scale) + 'x') if number == 0 else '':>5} {lexical:<8} "
                       f"{r.rows if number == 0 else '':>7} {pair(m['ms']):>15} {calls:>17}  "
                       f"{plan_counts(m['plans']['values']):<34} {plan_counts(m['plans']['prepared']):<34} "
                       f"{plan_counts(m['plans']['owner'])}".rstrip())
    return out


def lexical_growth(results: list[ScaleResult]) -> str:
    low, high = results[0], results[-1]
    if low is high:
        return "full text growth: only one scale measured"
    ratios = ", ".join(f"{lexical} x{high.lexical[lexical]['ms']['p50'] / low.lexical[lexical]['ms']['p50']:.1f}"
                       for lexical in LEXICAL)
    return f"full text growth {high.scale}x/{low.scale}x (rows x{high.rows / low.rows:.1f}), p50: {ratios}"


def statistics_lines(results: list[ScaleResult]) -> list[str]:
    out = []
    for r in results:
        st = r.statistics
        if "before" in st:
            out.append(f"BM25 statistics at {r.scale}x: {st['made_by']} ({st['update_s']:.1f} s); before it: "
                       f"{check_line(st['before'])}; after it: {check_line(st)}")
        else:
            out.append(f"BM25 statistics at {r.scale}x: {st['made_by']}: {check_line(st)}")
    return out


def plan_line(r: ScaleResult) -> str:
    counts = r.plans["full text"]
    total = sum(counts.values())
    return (f"full_text plan at {r.scale}x (english, EXPLAIN with the values): "
            + ", ".join(f"{kind} {n}/{total}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1])))


def growth(results: list[ScaleResult]) -> str:
    low, high = results[0], results[-1]
    if low is high:
        return "growth: only one scale measured"

    def ratio(a, b):
        return f"x{b / a:.1f}" if a else "n/a"

    n_l, n_h = low.stages["no index"], high.stages["no index"]
    h_l, h_h = low.stages["hnsw"], high.stages["hnsw"]
    return (f"growth {high.scale}x/{low.scale}x: rows {ratio(low.rows, high.rows)}, "
            f"full text p50 {ratio(n_l['full text']['p50'], n_h['full text']['p50'])}, "
            f"exact p50 {ratio(n_l['exact']['p50'], n_h['exact']['p50'])}, "
            f"HNSW p50 {ratio(h_l['hnsw']['p50'], h_h['hnsw']['p50'])}, "
            f"HNSW build {ratio(low.hnsw_build_s, high.hnsw_build_s)}, "
            f"recall@30 {low.recall_at_30:.3f} -> {high.recall_at_30:.3f}")


# -- main ---------------------------------------------------------------------------------
def build_base(db, scratch: Path, encoder: TimedEncoder, created: list[PgIndex]) -> tuple[PgIndex, dict]:
    """The real 1x index, refreshed once as it comes and once more into a fresh schema with a warm cache."""
    root = scratch / "numpy"
    export_markdown(load_corpus(), root, summaries=False)
    base = new_index(db, "1x", encoder, created)
    first = timed_refresh(base, root)
    warm_index = new_index(db, "warm", encoder, created)
    warm = timed_refresh(warm_index, root)
    warm_index.drop()
    warm_index.close()
    created.remove(warm_index)
    return base, {"first": first, "warm": warm}


def ingest_lines(ingest: dict) -> list[str]:
    out = []
    for name, r in (("first refresh", ingest["first"]), ("warm refresh ", ingest["warm"])):
        cache = "cache warm" if r["embedded"] == 0 else f"{r['embedded']} texts embedded"
        out.append(f"{name}: {r['chunks']} chunks from {r['sources']} sources in {r['seconds']:.2f} s "
                   f"({r['chunks_per_s']:.0f} chunks/s, {r['sources_per_s']:.0f} sources/s; {cache}); "
                   f"encode {r['encode_s']:.2f} s, chunking + row-by-row writes {r['write_s']:.2f} s "
                   f"({r['write_chunks_per_s']:.0f} chunks/s)")
    return out


def run(args, db, scratch: Path, created: list[PgIndex]) -> dict:
    cache = EmbeddingCache(scratch / "cold.sqlite") if args.cold_encode else None
    encoder = TimedEncoder(DenseEncoder(cache))
    base, ingest = build_base(db, scratch, encoder, created)
    for line in ingest_lines(ingest):
        print(line)
    vacuum_analyze(db, base)
    questions = [q.text for q in judged_questions()]
    query_vectors = encoder.encode(questions)
    sources, chunks, vectors = base_rows(base)
    results = []
    for scale in args.scales:
        if scale == 1:
            index, note = base, " r"
            rate = ingest["warm"]["chunks_per_s"]
            statistics = {"made_by": "refresh (write_source, per source)", **statistics_check(db, base)}
            print(f"  1x: BM25 statistics kept by refresh: {check_line(statistics)}", flush=True)
        else:
            index, note = new_index(db, f"{scale}x", encoder, created), " c"
            synthetic = synthetic_vectors(vectors, scale, args.noise)
            seconds = bulk_insert(index, scale, sources, chunks, synthetic)
            del synthetic
            rate = scale * len(chunks) / seconds
            print(f"  {scale}x: COPY of {scale * len(chunks):,} rows in {seconds:.1f} s ({rate:,.0f} rows/s)",
                  flush=True)
            statistics = repair_statistics(db, index)
            print(f"  {scale}x: BM25 statistics after COPY: {check_line(statistics['before'])}; "
                  f"update_statistics {statistics['update_s']:.1f} s; then {check_line(statistics)}; "
                  f"VACUUM ANALYZE {vacuum_analyze(db, index):.1f} s", flush=True)
        rows, n_sources = count_rows(index)
        result = measure_scale(index, ScaleResult(scale, rows, n_sources, rate, note, statistics=statistics),
                               questions, query_vectors, args.repeats, args.ef_search,
                               representative=scale in (args.scales[0], args.scales[-1]))
        results.append(result)
        default_ef = server_ef_search(index)
        if index is not base:
            index.drop()
    lines = table(results, default_ef)
    print()
    print("\n".join(lines[:-1]))
    print("insert rows/s: r = warm-cache refresh (chunk, cache look-up, row-by-row INSERT), c = binary COPY")
    print(lines[-1])
    print()
    print("\n".join(ef_table(results)))
    print("HNSW with dense(exact=False, ef_search=N); recall@30 against dense(exact=True) on the same rows")
    print()
    print(growth(results))
    for r in results:
        print(plan_line(r))
    print()
    print("\n".join(lexical_table(results)))
    print("full_text ms: p50/p95 of whole full_text(..., lexical=...) calls over the judged questions (no vector "
          "index); timed calls: generic/custom plans psycopg's prepared statement ran while timed; plans: how the "
          "statement finds its matches, per question (GIN = bitmap scan on "
          + " / ".join(sorted(set(GIN_INDEX.values()))) + ", seq = (parallel) sequential scan of chunks, other = "
          "another scan of chunks filtering on @@): 'with the values' = EXPLAIN in a reader session with the "
          "question's values (a custom plan: what a fresh connection's first calls get), 'as prepared' = EXPLAIN "
          "EXECUTE of the prepared statement in a reader session (what the timed calls got), 'without RLS' = "
          "EXPLAIN with the values as the table owner, whom row-level security does not apply to (what the "
          "planner would choose were the tenant policy not in front of @@)")
    print(lexical_growth(results))
    for r in results:
        print(f"enable_seqscan off, {SHORT_QUESTION!r} at {r.scale}x: "
              + "; ".join(f"{lexical} reader {r.lexical[lexical]['seqscan_off']['reader']}, "
                          f"owner {r.lexical[lexical]['seqscan_off']['owner']}" for lexical in LEXICAL))
    for line in statistics_lines(results):
        print(line)
    return {"database": db.describe(), "repeats": args.repeats, "noise": args.noise, "seed": SEED,
            "server_ef_search": default_ef, "ef_search": args.ef_search,
            "maintenance_work_mem": MAINTENANCE_WORK_MEM, "hnsw": {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
            "ingest": ingest, "scales": [r.__dict__ for r in results]}


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    db = open_database(temporary=True)
    created: list[PgIndex] = []
    try:
        print(db.describe())
        with db.connect(autocommit=True) as connection:
            workers = connection.execute("SHOW max_parallel_maintenance_workers").fetchone()[0]
        print(f"HNSW build: maintenance_work_mem {MAINTENANCE_WORK_MEM}, max_parallel_maintenance_workers {workers}; "
              f"scales {', '.join(f'{s}x' for s in args.scales)}, {args.repeats} timed passes, "
              f"ef_search {', '.join(map(str, args.ef_search))}", flush=True)
        with tempfile.TemporaryDirectory(prefix="lab04-scale-") as scratch:
            numbers = run(args, db, Path(scratch), created)
        numbers["total_s"] = time.perf_counter() - started
        print(f"total {numbers['total_s']:.0f} s")
        if args.json is not None:
            args.json.write_text(json.dumps(numbers, indent=1), encoding="utf-8")
            print(f"numbers written to {args.json}")
    finally:
        for index in created:
            if not db.embedded:
                try:
                    index.drop()
                except Exception:
                    pass
            index.close()
        db.close()


if __name__ == "__main__":
    main()
