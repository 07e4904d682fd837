"""Exercises of lesson 16: a description listing the fields, row-with-header chunks, the table measures, K = 5.

q1 (predict) asks whether a description that lists a table's field names becomes answerable;
q2 (build) has the student chunk a table row by row with its header and reproduce the lesson's
row + header line (recall and answerability 0.9500, 8634 stored tokens, 38.5 per request);
q3 (build) has the student write the measure itself, recall and answerability apart from the
two token bills, and reproduce the lesson's five lines; q4 (measure) reads recall and tokens
per request of row + header at a K the lesson did not print.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...retrieval.search import EmbeddingIndex
from ...world.concepts import Edition
from ...world.corpus import World
from ...world.embedding import EmbeddingModel
from ...world.table_source import CELL_SEPARATOR, Table, build_tables
from ...world.text import tokenize
from ..framework import (COURSE_SEED, Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                         expect_pair, first_hint, require_function, shown)
from ..reference import OTHER_SEEDS, rag_model, rag_world

K = 3
ASKED_K = 5
SEEDS = (COURSE_SEED, *OTHER_SEEDS)
MEASURES = ("recall", "answerable", "stored tokens", "tokens per request")

CHUNKING: dict[str, Callable[[Table], list[str]]] = {
    "row": lambda table: list(table.rows),
    "block": lambda table: [table.head + " ; " + " ; ".join(table.rows)],
    "row + header": lambda table: [table.head + " ; " + row for row in table.rows],
    "visual": lambda table: [""],
    "visual + description": lambda table: [table.head],
    "description with fields": lambda table: [table.head + " : " + ", ".join(row.split(" | ")[0]
                                                                            for row in table.rows)],
}


@lru_cache(maxsize=8)
def table_world(seed: int) -> tuple[World, tuple[Table, ...], EmbeddingModel]:
    """The world of lesson 16 at ``seed``: world, its 200 tables, the embedding (projection seed ``seed``)."""
    current = rag_world(seed)
    return current, tuple(build_tables(seed, current.documents, current.edition)), rag_model(seed)


def reference_measure(texts: Sequence[str], index: EmbeddingIndex, queries, edition: Edition, k: int, *,
                      apart: bool = False, per_chunk: bool = False, words: bool = False,
                      by_key: bool = False) -> tuple[float, float, int, float]:
    """(recall, answerable, stored tokens, tokens per request); the keywords switch on deliberate mistakes."""
    count = (lambda text: len(text.split())) if words else (lambda text: len(tokenize(text)))
    recall = answerable = request_tokens = 0
    for query in queries:
        top = [texts[i] for i in index.rank(query.text)[:k]]
        name = query.concept if by_key else edition.concept(query.concept).document_form
        recall += any(name in text for text in top)
        answerable += (any(name in text for text in top) and any(CELL_SEPARATOR in text for text in top) if apart
                       else any(name in text and CELL_SEPARATOR in text for text in top))
        request_tokens += sum(count(text) for text in top) / (k if per_chunk else 1)
    n = len(queries)
    return recall / n, answerable / n, sum(count(text) for text in texts), request_tokens / n


@lru_cache(maxsize=64)
def mode_texts(seed: int, mode: str) -> tuple[str, ...]:
    """The chunk texts of one chunking mode over the seed's tables."""
    return tuple(text for table in table_world(seed)[1] for text in CHUNKING[mode](table))


@lru_cache(maxsize=64)
def mode_index(seed: int, mode: str) -> EmbeddingIndex:
    """The embedding index over one mode's texts."""
    return EmbeddingIndex(table_world(seed)[2], list(mode_texts(seed, mode)))


@lru_cache(maxsize=128)
def mode_measure(seed: int, mode: str, k: int = K) -> tuple[float, float, int, float]:
    """The reference measures of one chunking mode."""
    current = table_world(seed)[0]
    return reference_measure(mode_texts(seed, mode), mode_index(seed, mode), current.queries, current.edition, k)


def measures_text(values: Sequence[float]) -> str:
    """Recall / answerable / stored / per request, as the lesson prints them."""
    return f"{values[0]:.4f} / {values[1]:.4f} / {values[2]:g} / {values[3]:.4f}"


# ---------------------------------------------------------------- q1: predict a description that lists the fields

FIELDS_OPTIONS = {"a": "it rises to its recall: the field names are in the chunk now",
                  "b": "it stays at 0.0000",
                  "c": "somewhere between 0.0000 and its recall"}


def check_fields_description(prediction: Any) -> list[str]:
    """PREDICTED_ANSWERABLE: answerability of the description with field names (course seed)."""
    recall, answerable, stored, per_request = mode_measure(COURSE_SEED, "description with fields")
    described = mode_measure(COURSE_SEED, "visual + description")
    truth = "b" if answerable == 0 else "a" if answerable == recall else "c"
    return check_choice(
        prediction, "PREDICTED_ANSWERABLE", FIELDS_OPTIONS, truth,
        f"recall {recall:.4f}, answerable {answerable:.4f}, {stored} stored tokens, {per_request:.1f} tokens per"
        f" request (the bare description: {described[0]:.4f}, {described[1]:.4f}, {described[2]}, {described[3]:.1f})",
        ["Answerable, as the lesson defines it, asks for one chunk that names the procedure and holds a row,",
         "recognised by the cell separator ` | `. A list of field names has no row: it says which fields",
         "exist, not whether they are required or where they come from, so none of the values a question",
         "needs is in it. The chunk grew to about twice the tokens of the bare description and is exactly as",
         "unusable. Recall found the table either way; only the rows make it readable."])


# ---------------------------------------------------------------- q2: build row-with-header chunking

def made_up_tables() -> list[Table]:
    """A table of one row, one of no rows, and one whose rows repeat."""
    return [Table("XX001", "filter", "filter replacement procedure table", ("entry | yes | field",)),
            Table("XX002", "filter", "filter replacement procedure table", ()),
            Table("XX003", "tier", "tier limit procedure table", ("note | no | central", "note | no | central",
                                                                  "form | yes | field"))]


def header_hints(table: Table) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong row chunkings and what to say about each."""
    rows = list(table.rows)
    return [
        (lambda: rows, "that is the row mode: the header goes in front of every row"),
        (lambda: [table.head + " ; " + rows[0]] + rows[1:] if rows else [],
         "repeat the header in front of every row, not only the first"),
        (lambda: [row + " ; " + table.head for row in rows], "the header comes first, then the row"),
        (lambda: CHUNKING["block"](table), "one chunk per row, not the whole table in one chunk"),
        (lambda: [table.head + " " + row for row in rows],
         "join the header and the row with ' ; ', as the lesson's block does"),
        (lambda: [table.head + " | " + row for row in rows], "join the header and the row with ' ; ', not ' | '"),
    ]


def check_row_with_header(answer: Any) -> list[str]:
    """row_with_header equals the lesson's chunker on every table of three seeds; reproduces its line."""
    chunker = require_function(answer, "row_with_header")
    cases = [("made-up", table) for table in made_up_tables()]
    cases += [(f"seed {seed}", table) for seed in SEEDS for table in table_world(seed)[1]]
    for label, table in cases:
        tried = f"row_with_header(<table {table.code} ({label}): head {table.head!r}, {len(table.rows)} rows>)"
        got = call(chunker, "row_with_header", (table,), tried)
        expected = CHUNKING["row + header"](table)
        if not isinstance(got, (list, tuple)) or list(got) != expected:
            shown_got = list(got) if isinstance(got, (list, tuple)) else got
            raise Mismatch(tried, shown(expected, 150), shown(shown_got, 150),
                           first_hint(shown_got, header_hints(table),
                                      "one chunk per row: the header, ' ; ', then the row, in the table's order"))
    current, tables, embedding = table_world(COURSE_SEED)
    texts = [text for table in tables for text in chunker(table)]
    got = reference_measure(texts, EmbeddingIndex(embedding, texts), current.queries, current.edition, K)
    expected = mode_measure(COURSE_SEED, "row + header")
    if any(abs(a - b) > 1e-9 for a, b in zip(got, expected)):
        raise Mismatch("the lesson's measure over your chunks at the course seed", measures_text(expected),
                       measures_text(got), "see the per-table check above")
    return [f"row_with_header agrees with the lesson's chunker on {len(cases)} tables (three seeds and made-up ones),",
            f"and reproduces lesson 16's row + header line at the course seed: recall {got[0]:.4f}, answerable"
            f" {got[1]:.4f}, {got[2]} stored tokens, {got[3]:.1f} tokens per request."]


# ---------------------------------------------------------------- q3: build the table measures

def measure_cases() -> list[tuple[str, int, tuple[str, ...], EmbeddingIndex, int]]:
    """(label, seed, texts, index, k): descriptions mixed with bare rows (a deep k) first, then the lesson's modes."""
    cases = []
    for seed in SEEDS:
        tables = table_world(seed)[1]
        texts = tuple(text for table in tables for text in (table.head, *table.rows))
        cases.append((f"descriptions and bare rows in one index, seed {seed}", seed, texts,
                      EmbeddingIndex(table_world(seed)[2], list(texts)), 240))
    for seed in SEEDS:
        for mode in ("row + header", "block", "visual + description", "row", "visual"):
            for k in ((K, 1) if seed == COURSE_SEED else (K,)):
                cases.append((f"the {mode} chunks of seed {seed}", seed, mode_texts(seed, mode),
                              mode_index(seed, mode), k))
    return cases


def measure_hints(texts, index, queries, edition, k) -> list[tuple[Callable[[], Any], str]]:
    """Known wrong measures and what to say about each."""
    def wrong(**mistake):
        return lambda: reference_measure(texts, index, queries, edition, k, **mistake)

    return [
        (wrong(apart=True), "answerable needs one chunk that holds both the procedure's name and a row, not a name in"
                            " one chunk and a row in another"),
        (wrong(per_chunk=True), "tokens per request add up all k chunks of a request, averaged over the questions"),
        (wrong(words=True), "count tokens with tokenize, not words"),
        (wrong(by_key=True), "look for the procedure's crew phrase (document_form), not its key"),
    ]


def check_table_measure(answer: Any) -> list[str]:
    """table_measure equals the reference on mixed and lesson indexes; reproduces the lesson's five lines."""
    measure = require_function(answer, "table_measure")
    cases = measure_cases()
    for label, seed, texts, index, k in cases:
        current = table_world(seed)[0]
        tried = f"table_measure(<{label}: {len(texts)} texts>, <their index>, <40 questions>, <edition>, {k})"
        got = call(measure, "table_measure", (list(texts), index, list(current.queries), current.edition, k), tried)
        if not isinstance(got, (tuple, list)) or len(got) != 4:
            raise Mismatch(tried, "four numbers (" + ", ".join(MEASURES) + ")", shown(got),
                           "return `recall, answerable, stored_tokens, tokens_per_request`")
        values = tuple(as_number(value, tried, "a number") for value in got)
        expected = reference_measure(texts, index, current.queries, current.edition, k)
        if any(abs(a - b) > 1e-9 for a, b in zip(values, expected)):
            raise Mismatch(tried + " (" + " / ".join(MEASURES) + ")", measures_text(expected), measures_text(values),
                           first_hint(values, measure_hints(texts, index, current.queries, current.edition, k),
                                      "per question rank the texts with the index, keep the first k, and count: a"
                                      " text names the procedure (recall), one text names it and holds a row"
                                      " (answerable), the tokens of the k texts (per request); stored tokens are"
                                      " those of every text"))
    lines = []
    current = table_world(COURSE_SEED)[0]
    for mode in ("row", "block", "row + header", "visual", "visual + description"):
        got = tuple(measure(list(mode_texts(COURSE_SEED, mode)), mode_index(COURSE_SEED, mode), list(current.queries),
                            current.edition, K))
        lines.append(f"  {mode:<21} {got[0]:.4f} {got[1]:.4f} {got[2]:>5g} {got[3]:>6.1f}")
    return [f"table_measure agrees with the reference on {len(cases)} indexes (three seeds, every mode of the lesson,"
            " and descriptions beside bare rows),",
            "and reproduces lesson 16's table at the course seed (recall, answerable, stored, per request):",
            *lines]


# ---------------------------------------------------------------- q4: measure row + header at K = 5

HEADER_PROBES = ((COURSE_SEED + 1, 3, True), (7, 10, True), (COURSE_SEED, 1, True), (COURSE_SEED, ASKED_K, False))


def check_row_header_at(answer: Any) -> list[str]:
    """row_header_at(seed, k) equals the reference (recall, tokens per request) at other settings, then at K = 5."""
    measure = require_function(answer, "row_header_at")
    for seed, k, reveal in HEADER_PROBES:
        tried = f"row_header_at({seed}, {k})"
        got = call(measure, "row_header_at", (seed, k), tried)
        expect_pair(got, tried, "recall, tokens per request", "return two numbers: `return recall, tokens_per_request`")
        values = (as_number(got[0], tried, "a recall"), as_number(got[1], tried, "a number of tokens"))
        expected = mode_measure(seed, "row + header", k)
        hints = [(lambda: (mode_measure(seed, "block", k)[0], mode_measure(seed, "block", k)[3]),
                  "that is the block mode: one chunk per row, with the header in front"),
                 (lambda: (expected[0], expected[3] / k), "tokens per request add up all k chunks of a request"),
                 (lambda: (mode_measure(seed, "row + header", K)[0], mode_measure(seed, "row + header", K)[3]),
                  f"retrieve the k chunks you are asked for, not {K}"),
                 (lambda: (mode_measure(COURSE_SEED, "row + header", k)[0], mode_measure(COURSE_SEED, "row + header",
                                                                                         k)[3]),
                  "your function measures the course seed's world: build everything from the seed it is given")]
        hint = first_hint(values, hints,
                          "build the seed's tables and embedding (projection seed = seed, 32 numbers), chunk them with"
                          " row_with_header, index the chunks, and measure with table_measure at k")
        expect_number(values[0], expected[0], tried + " (recall, first number)", hint, reveal=reveal)
        expect_number(values[1], expected[3], tried + " (tokens per request, second number)", hint, reveal=reveal)
    five, block = mode_measure(COURSE_SEED, "row + header", ASKED_K), mode_measure(COURSE_SEED, "block", ASKED_K)
    return [f"row_header_at matches the reference at {len(HEADER_PROBES)} settings, three seeds among them.",
            f"K = {ASKED_K} at the course seed: recall {five[0]:.4f} for {five[3]:.1f} tokens per request (the block"
            f" mode: {block[0]:.4f} for {block[3]:.1f}); at K = 3 it was 0.9500 for 38.5."]


EXERCISES = ExerciseSet("16-tables-and-images", "Chunking sources that contain tables and images", [
    Exercise("q1", "predict", "a description that lists the fields", ("PREDICTED_ANSWERABLE",),
             check_fields_description),
    Exercise("q2", "build", "row-with-header chunks", ("row_with_header",), check_row_with_header),
    Exercise("q3", "build", "recall, answerability and tokens", ("table_measure",), check_table_measure),
    Exercise("q4", "measure", "row + header at K = 5", ("row_header_at",), check_row_header_at),
])
check = EXERCISES.check
