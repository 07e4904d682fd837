"""Benchmark (not a test): how lab 04's PostgreSQL baseline costs grow with the rows.

1x is the real index: the numpy reference exported without summary lines, chunked and
embedded by ``PgIndex.refresh`` with the DenseEncoder (about 664 chunks). The refresh is
timed twice: once as it comes (the embeddings may already be in the cache; the script
says how many texts were really embedded) and once more into a fresh schema with a warm
cache, with the time spent inside ``encode`` reported apart from the rest (chunking and
the row-by-row database writes).

10x, 100x, ... are the 1x rows copied into a schema of their own: copy 0 is the real rows,
every other copy repeats the real texts (so full text sees realistic postings) with a
synthetic vector, the original plus Gaussian noise (``--noise`` per dimension, fixed
numpy seed), renormalised. Each copy gets its own source rows (``copy007/numpy.sum.md``),
tenant ``public`` so the reader session sees them. The rows go in with binary
``COPY ... FROM STDIN`` (timed: rows/s), followed by ``VACUUM ANALYZE``.

At every scale the 50 judged questions (vectors from the DenseEncoder, cached) are timed
in two passes, each as whole calls of ``ragcourse.rag.search`` (every call opens its own reader session,
as a caller pays it):

- without a vector index: full text (``full_text``, whose reader session allows bitmap
  scans, so the planner may use the GIN index), dense exact (``dense(exact=True)``) and the
  RRF step (``fuse`` over the full-text and exact lists);
- with an HNSW index (m 16, ef_construction 64, build timed): the dense paths only (full
  text does not change when a vector index exists): exact, HNSW at the server's
  ``hnsw.ef_search`` (40 unless configured otherwise), and HNSW at each ``--ef-search``
  value (``dense(exact=False, ef_search=N, guaranteed=False)``: the index's own result, no
  repair of a short list), each with recall@30 against exact.

One warm-up pass is discarded, then ``--repeats`` passes are timed (2 by default, so
every p50/p95 is over 100 calls at every scale, 100x included). The main table gives p50/p95
in ms per stage; a second table gives HNSW p50/p95 and recall@30 per ef_search value. The
growth line compares the largest scale with the smallest. One line per scale says which
plan ``full_text``'s own statement gets (EXPLAIN in the same reader session, for every
question): a GIN bitmap scan on ``chunks_search_text`` or a (parallel) sequential scan.

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
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragcourse.corpus.apidocs import export_markdown, load_corpus
from ragcourse.rag.database import open_database
from ragcourse.engines.dense import DenseEncoder, EmbeddingCache
from ragcourse.rag.store import DEFAULT_TENANT, PgIndex
from ragcourse.rag.search import FULL_TEXT_SQL, PER_PATH, dense, full_text, fuse, or_query
from ragcourse.corpus.queries import judged_questions

SCHEMA_PREFIX = "lab04_scale_"
MAINTENANCE_WORK_MEM = "512MB"
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64
SEED = 20240404
MAX_SCALE = 1000
MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search


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
        for table in ("sources", "chunks"):
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
            "c.embedding_version, c.tenant, c.embedding FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
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
    """Insert ``copies`` copies of the rows with binary COPY in one transaction; the seconds it took."""
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
                    "embedding_version, tenant, embedding) FROM STDIN WITH (FORMAT BINARY)")) as copy:
                copy.set_types(["int8", "int4", "int4", "int4", "text", "text", "text", "text", "text", "vector"])
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


def full_text_plan(index: PgIndex, questions: list[str]) -> dict:
    """How ``full_text``'s own statement finds its matches, per question: EXPLAIN in the same reader
    session ``full_text`` opens. ``GIN bitmap``: a Bitmap Index Scan on chunks_search_text; otherwise
    the scan node that filters on ``@@`` (a Seq Scan or Parallel Seq Scan)."""
    counts: dict[str, int] = {}
    for question in questions:
        terms = or_query(question)
        if not terms:
            continue  # full_text returns [] without a query
        with index.reader(DEFAULT_TENANT) as connection:
            plan = connection.execute(index.sql("EXPLAIN (FORMAT JSON) " + FULL_TEXT_SQL),
                                      [terms, PER_PATH]).fetchone()[0][0]["Plan"]
        nodes = list(_plan_nodes(plan))
        if any(n.get("Index Name") == "chunks_search_text" for n in nodes):
            kind = "GIN bitmap"
        else:
            kind = next((n["Node Type"] for n in nodes if "@@" in n.get("Filter", "")), "other")
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def measure_scale(index: PgIndex, result: ScaleResult, questions, vectors, repeats: int,
                  ef_values: list[int]) -> ScaleResult:
    print(f"  {result.scale}x: {result.rows:,} rows; queries without an index ...", flush=True)
    result.plans = {"full text": full_text_plan(index, questions)}
    result.stages["no index"] = measure_without_index(index, questions, vectors, repeats)
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
               f"(full text + exact lists); HNSW at the server's ef_search ({default_ef}); full text is timed "
               f"without the vector index only (it does not use it)")
    return out


def ef_table(results: list[ScaleResult]) -> list[str]:
    header = f"{'scale':>5} {'ef_search':>9} {'HNSW p50 ms':>11} {'HNSW p95 ms':>11} {'recall@30':>9}"
    out = [header, "-" * len(header)]
    for r in results:
        for number, row in enumerate(r.ef_search):
            out.append(f"{(str(r.scale) + 'x') if number == 0 else '':>5} {row['ef_search']:>9} "
                       f"{row['p50']:>11.2f} {row['p95']:>11.2f} {row['recall_at_30']:>9.3f}")
    return out


def plan_line(r: ScaleResult) -> str:
    counts = r.plans["full text"]
    total = sum(counts.values())
    return (f"full_text plan at {r.scale}x: "
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
        else:
            index, note = new_index(db, f"{scale}x", encoder, created), " c"
            synthetic = synthetic_vectors(vectors, scale, args.noise)
            seconds = bulk_insert(index, scale, sources, chunks, synthetic)
            del synthetic
            rate = scale * len(chunks) / seconds
            print(f"  {scale}x: COPY of {scale * len(chunks):,} rows in {seconds:.1f} s "
                  f"({rate:,.0f} rows/s); VACUUM ANALYZE {vacuum_analyze(db, index):.1f} s", flush=True)
        rows, n_sources = count_rows(index)
        result = measure_scale(index, ScaleResult(scale, rows, n_sources, rate, note), questions, query_vectors,
                               args.repeats, args.ef_search)
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
