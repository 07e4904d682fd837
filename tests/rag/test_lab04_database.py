"""Lab 04 against a real PostgreSQL: row-level security, hostile input, ingest, refresh, faults, health.

One temporary embedded server (pgserver) serves the whole file (or the server named by
``$RAGCOURSE_DATABASE_URL``); every test gets a schema of its own. A fake encoder (each
word a fixed random direction, a text the normalised sum of its words) stands in for
MiniLM, so most tests take milliseconds; one test at the end runs the real model.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcourse.rag import ingest as ingest_module
from ragcourse.rag.pipeline import STAGES, Pipeline as Baseline
from ragcourse.rag.database import URL_VARIABLE, DatabaseUnavailable, open_database
from ragcourse.rag.health import CHECKS, WINDOW
from ragcourse.engines.chunking.policy import ChunkPolicy
from ragcourse.rag.store import PgIndex, counts_by_tenant
from ragcourse.rag.search import (MAX_QUESTION_CHARS, candidates, check_question, dense, full_text, or_query,
                                     query_terms)
from support.database import (CORPUS, HEALTH_FAULTS, SMALL, TENANT_A_FILES, TENANT_B_FILES, FakeEncoder,
                              break_into_directory, file_deleted, file_edited, file_replaced_by_directory, owner_rows,
                              schema_name, two_tenants, write_corpus)


def chunk_rows(index: PgIndex, path: str) -> list[tuple]:
    """(chunk_id, ordinal, start, end, text, content_hash, chunker, tenant) of one source, by ordinal."""
    return owner_rows(index, "SELECT c.chunk_id, c.ordinal, c.start_char, c.end_char, c.text, c.content_hash, "
                             "c.chunker, c.tenant FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
                             "WHERE s.path = %s ORDER BY c.ordinal", [path])


def source_row(index: PgIndex, path: str) -> tuple | None:
    """(content_hash, tenant, indexed_at) of one source, None if it is not stored."""
    found = owner_rows(index, "SELECT content_hash, tenant, indexed_at FROM {s}.sources WHERE path = %s", [path])
    return found[0] if found else None


def stored_paths(index: PgIndex) -> set[str]:
    return {path for (path,) in owner_rows(index, "SELECT path FROM {s}.sources")}


def fingerprint(index: PgIndex) -> tuple:
    """Row counts and checksums of every source and chunk row: equal exactly when nothing changed."""
    return owner_rows(index, """
        SELECT (SELECT count(*) FROM {s}.sources),
               (SELECT md5(string_agg(concat_ws('|', source_id, path, content_hash, tenant, indexed_at), '\n'
                                      ORDER BY source_id)) FROM {s}.sources),
               (SELECT count(*) FROM {s}.chunks),
               (SELECT md5(string_agg(concat_ws('|', chunk_id, source_id, ordinal, start_char, end_char, text,
                                                content_hash, chunker, embedding_version, tenant, embedding::text),
                                      '\n' ORDER BY chunk_id)) FROM {s}.chunks)""")[0]


def sources_of(passages) -> set[str]:
    return {sp.passage.source for sp in passages}


def tenants_of(passages) -> set[str]:
    return {sp.passage.tenant for sp in passages}


# ---------------------------------------------------------------- fixtures

@pytest.fixture
def make_index(database, request):
    """A factory of PgIndex objects on this test's own schema (dropped at the end)."""
    made: list[PgIndex] = []
    schema = schema_name(request.node.name)

    def make(policy: ChunkPolicy = SMALL, encoder=None, tenant_of=None) -> PgIndex:
        index = PgIndex(database, schema=schema, policy=policy, encoder=encoder or FakeEncoder(),
                        tenant_of=tenant_of)
        made.append(index)
        return index

    yield make
    for index in made:
        index.close()
    cleaner = PgIndex(database, schema=schema)
    cleaner.drop()
    cleaner.close()


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_corpus(tmp_path / "corpus", CORPUS)


@pytest.fixture(scope="module")
def tenants(database, tmp_path_factory):
    """A read-only index of CORPUS with files under private/ in tenant b and the rest in tenant a."""
    root = write_corpus(tmp_path_factory.mktemp("tenants"), CORPUS)
    index = PgIndex(database, schema="t_tenants", policy=SMALL, encoder=FakeEncoder(), tenant_of=two_tenants)
    index.refresh(root)
    yield index
    index.drop()
    index.close()


@pytest.fixture(scope="module")
def baseline(tenants):
    return Baseline(tenants, FakeEncoder())


# ---------------------------------------------------------------- 1. row-level security

QUESTIONS = ["walrus", "Where is the zebra codebook kept?", "volcano lava vault", "walrus vault door",
             "oyster reef", "the", "'", "x' OR tenant = 'b", "'); SET ROLE postgres; --", "zebra | vault & !a",
             "Ｗａｌｒｕｓ 🦭", "private/vault.md", "b"]


def test_the_two_tenants_fixture_is_not_vacuous(tenants):
    """Both tenants hold rows, and the words asked about occur in both (so a leak would show)."""
    counts = counts_by_tenant(tenants)
    assert set(counts) == {"a", "b"} and min(counts.values()) > 0
    walrus = owner_rows(tenants, "SELECT DISTINCT tenant FROM {s}.chunks WHERE text ILIKE '%%walrus%%' ORDER BY 1")
    assert walrus == [("a",), ("b",)]


@pytest.mark.parametrize("tenant", ["a", "b", "nobody"])
def test_reader_counts_only_its_own_rows(tenants, tenant):
    """A raw count inside reader(tenant) sees exactly that tenant's rows; an unknown tenant sees none."""
    expected = counts_by_tenant(tenants).get(tenant, 0)
    expected_sources = {"a": len(TENANT_A_FILES), "b": len(TENANT_B_FILES)}.get(tenant, 0)
    with tenants.reader(tenant) as connection:
        chunks = connection.execute(tenants.sql("SELECT count(*) FROM {s}.chunks")).fetchone()[0]
        sources = connection.execute(tenants.sql("SELECT count(*) FROM {s}.sources")).fetchone()[0]
        seen = {t for (t,) in connection.execute(tenants.sql("SELECT DISTINCT tenant FROM {s}.chunks"))}
        user = connection.execute("SELECT current_user").fetchone()[0]
    role = "ragcourse_reader" if tenant == "nobody" else f"ragcourse_reader_{tenant}"   # each tenant its own role
    assert (chunks, sources, user) == (expected, expected_sources, role)
    assert seen <= {tenant}


@pytest.mark.parametrize("statement", [
    "INSERT INTO {s}.chunks (source_id, ordinal, start_char, end_char, text, content_hash, chunker, tenant) "
    "SELECT source_id, 99, 0, 1, 'x', 'x', 'x', tenant FROM {s}.chunks LIMIT 1",
    "INSERT INTO {s}.sources (path, content_hash, file_type, tenant) VALUES ('evil.md', 'x', 'text', 'a')",
    "UPDATE {s}.chunks SET text = 'overwritten'",
    "DELETE FROM {s}.sources",
    "DROP TABLE {s}.chunks",
    "CREATE TABLE {s}.evil (x int)",
], ids=["insert chunk", "insert source", "update", "delete", "drop table", "create table"])
def test_reader_session_cannot_write(tenants, statement):
    """Any write inside reader() fails in the database, changes nothing, and the connection stays usable."""
    before = fingerprint(tenants)
    with pytest.raises(psycopg.Error):
        with tenants.reader("a") as connection:
            connection.execute(tenants.sql(statement))
    assert fingerprint(tenants) == before
    assert full_text(tenants, "walrus", tenant="a")


@pytest.mark.parametrize("question", QUESTIONS)
def test_every_search_path_returns_only_the_tenants_rows(tenants, question):
    """full_text, dense and candidates for tenant a return a's rows only, and b's only for b."""
    vector = FakeEncoder().encode([question])[0]
    for tenant, files in (("a", TENANT_A_FILES), ("b", TENANT_B_FILES)):
        found = candidates(tenants, question, vector, tenant=tenant)
        for passages in (full_text(tenants, question, tenant=tenant), dense(tenants, vector, tenant=tenant),
                         found.full_text, found.dense, found.fused):
            assert tenants_of(passages) <= {tenant}
            assert sources_of(passages) <= files


def test_exhaustive_dense_search_returns_every_row_of_the_tenant_and_no_other(tenants):
    """With a limit above the table size, dense() returns exactly the tenant's chunk ids."""
    vector = FakeEncoder().encode(["walrus vault"])[0]
    for tenant in ("a", "b"):
        rows = owner_rows(tenants, "SELECT chunk_id FROM {s}.chunks WHERE tenant = %s", [tenant])
        expected = {cid for (cid,) in rows}
        assert {sp.passage.chunk_id for sp in dense(tenants, vector, limit=1000, tenant=tenant)} == expected


def test_words_of_the_other_tenant_find_nothing(tenants):
    """'zebra codebook' occurs only in b's files: b finds it, a gets an empty list, not b's rows."""
    assert full_text(tenants, "zebra codebook", tenant="a") == []
    assert sources_of(full_text(tenants, "zebra codebook", tenant="b")) == TENANT_B_FILES


def test_an_unknown_tenant_sees_no_rows(tenants):
    vector = FakeEncoder().encode(["walrus"])[0]
    assert full_text(tenants, "walrus", tenant="nobody") == []
    assert dense(tenants, vector, tenant="nobody") == []
    assert candidates(tenants, "walrus", vector, tenant="nobody").fused == ()


def test_baseline_trace_holds_only_the_tenants_rows(baseline):
    """Every stage of Baseline.ask for tenant a, and the answer's citations, come from a's files."""
    trace = baseline.ask("Does a walrus guard the vault?", tenant="a")
    for stage in STAGES:
        assert sources_of(trace.stage(stage)) <= TENANT_A_FILES
    assert trace.stage("fused")
    assert {c.split("#")[0] for c in trace.answer.citations} <= TENANT_A_FILES


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(question=st.text(max_size=300))
def test_property_any_question_text_never_leaks_or_crashes(tenants, question):
    """Arbitrary text: either check_question's ValueError, or results of tenant a only."""
    try:
        checked = check_question(question)
    except ValueError:
        assert "\x00" in question or not question.strip()
        return
    vector = FakeEncoder().encode([checked])[0]
    found = candidates(tenants, checked, vector, tenant="a")
    for passages in (found.full_text, found.dense, found.fused):
        assert sources_of(passages) <= TENANT_A_FILES


# ---------------------------------------------------------------- 2. hostile questions

LONG = ("walrus " * 1500)[:10_000]
HOSTILE = {            # id: (question, ValueError match or None, a file full_text must find or None)
    "quote": ("'", None, None),
    "semicolon": (";", None, None),
    "ampersand": ("&", None, None),
    "pipe": ("|", None, None),
    "bang": ("!", None, None),
    "prefix operator": (":*", None, None),
    "backslash": ("\\", None, None),
    "sql injection": ("'); DROP TABLE {schema}.chunks; --", None, None),
    "injection around a word": ("walrus'); DELETE FROM {schema}.sources; --", None, "alpha.md"),
    "tsquery syntax": ("walrus & !(clams | ) <-> :* 'x'", None, "alpha.md"),
    "psycopg placeholders": ("%s %(x)s {s} {} walrus", None, "alpha.md"),
    "nul byte": ("walrus\x00clams", "NUL", None),
    "empty": ("", "empty", None),
    "whitespace": (" \t\n ", "empty", None),
    "10,000 characters": (LONG, None, "alpha.md"),
    "one 10,000-character word": ("w" * 10_000, None, None),
    "too long": ("walrus " * 3000, "at most 20,000", None),
    "stopwords only": ("the and of a to is it was", None, None),
    "punctuation only": ("?!.,;:()[]{}<>\"'`~@#$%^&*-_=+/\\|", None, None),
    "unicode": ("Wálrus 🦭 ﷽ Ｗａｌｒｕｓ \u202e\u200b", None, None),
}


@pytest.mark.parametrize("key", list(HOSTILE))
def test_hostile_question(tenants, baseline, key):
    """A list (tenant a's rows only) or a ValueError with a clear message; the database is unchanged."""
    template, error, must_find = HOSTILE[key]
    question = template.replace("{schema}", tenants.schema)
    before = fingerprint(tenants)
    vector = FakeEncoder().encode([question])[0]
    lexical = full_text(tenants, question, tenant="a", limit=1000)   # the search paths never raise ...
    semantic = dense(tenants, vector, tenant="a")
    found = candidates(tenants, question, vector, tenant="a")
    assert isinstance(lexical, list) and isinstance(semantic, list) and semantic
    for passages in (lexical, semantic, found.fused):
        assert sources_of(passages) <= TENANT_A_FILES
    if must_find:
        assert must_find in sources_of(lexical)
    if error:                                                        # ... the pipeline refuses with a reason
        with pytest.raises(ValueError, match=error):
            check_question(question)
        with pytest.raises(ValueError, match=error):
            baseline.ask(question, tenant="a")
    else:
        trace = baseline.ask(question, tenant="a")
        assert sources_of(trace.stage("fused")) <= TENANT_A_FILES
    assert fingerprint(tenants) == before


def test_question_limit_is_twenty_thousand_characters():
    assert MAX_QUESTION_CHARS == 20_000
    assert check_question("x" * 20_000) == "x" * 20_000
    with pytest.raises(ValueError, match="20,001 characters"):
        check_question("x" * 20_001)


# ---------------------------------------------------------------- 3. malformed corpus files

MALFORMED = {
    "latin1.md": b"caf\xe9 au lait",
    "nul.txt": b"text with a \x00 NUL byte",
    "empty.md": b"",
    "blank.txt": b"  \n\t\n   ",
    "image.png": b"\x89PNG\r\n\x1a\n",
    "README": "no suffix at all",
    ".hidden.md": "a hidden file",
    ".git/config.md": "a file in a hidden folder",
    "notes/.draft.md": "a hidden file in a folder",
}
REASONS = {"latin1.md": "not UTF-8 (byte 3)", "nul.txt": "holds a NUL byte (binary, not text)",
           "empty.md": "empty", "blank.txt": "empty", "image.png": "unsupported file type '.png'",
           "README": "unsupported file type '(no suffix)'"}


def test_malformed_files_are_skipped_with_reasons_and_the_rest_indexed(make_index, tmp_path):
    """Each bad file is skipped with its reason, hidden ones are ignored, the good ones are indexed."""
    root = write_corpus(tmp_path / "corpus", {**CORPUS, **MALFORMED})
    index = make_index()
    report = index.refresh(root)
    assert {s.path: s.reason for s in report.skipped} == REASONS
    assert set(report.added) == set(CORPUS) == stored_paths(index)
    assert report.kept == () and report.removed == ()
    assert index.health(root).passed


def test_a_file_name_that_is_not_utf8_is_skipped(make_index, corpus):
    """A name with a non-UTF-8 byte cannot be stored as PostgreSQL text: skipped, not a crash."""
    bad = os.fsdecode(b"bad-\xff-name.md")
    (corpus / bad).write_text("walrus")
    report = make_index().refresh(corpus)
    assert [(s.path, s.reason) for s in report.skipped] == [(bad, "file name is not UTF-8")]
    assert set(report.added) == set(CORPUS)


def test_a_file_listed_but_gone_when_read_is_absent(make_index, corpus, monkeypatch):
    """discover() lists a file that is gone by the time it is read: it is neither added nor skipped."""
    real = ingest_module.discover
    monkeypatch.setattr(ingest_module, "discover", lambda root: sorted(real(root) + ["ghost.md"]))
    report = make_index().refresh(corpus)
    assert set(report.added) == set(CORPUS)
    assert "ghost.md" not in {s.path for s in report.skipped} | set(report.removed)


def test_a_stored_file_that_vanishes_while_reading_is_removed(make_index, corpus, monkeypatch):
    """FileNotFoundError at read time means absent: the source's rows go, the refresh completes."""
    index = make_index()
    index.refresh(corpus)
    real = Path.read_bytes

    def read_bytes(path):
        if path.name == "beta.txt":
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real(path)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "read_bytes", read_bytes)
        report = index.refresh(corpus)
    assert report.removed == ("beta.txt",) and report.kept == ()
    assert stored_paths(index) == set(CORPUS) - {"beta.txt"}
    assert chunk_rows(index, "beta.txt") == []


# ---------------------------------------------------------------- 4. refresh

def test_unchanged_files_are_not_rewritten(make_index, corpus):
    """A second refresh of the same files writes and embeds nothing; chunk ids and timestamps stay."""
    encoder = FakeEncoder()
    index = make_index(encoder=encoder)
    first = index.refresh(corpus)
    assert set(first.added) == set(CORPUS) and first.chunks_written > len(CORPUS)
    before = {path: (chunk_rows(index, path), source_row(index, path)) for path in CORPUS}
    calls = encoder.calls
    second = index.refresh(corpus)
    assert set(second.unchanged) == set(CORPUS)
    assert (second.added, second.updated, second.removed, second.chunks_written, second.embedded) == ((), (), (), 0, 0)
    assert encoder.calls == calls
    assert {path: (chunk_rows(index, path), source_row(index, path)) for path in CORPUS} == before


def test_a_changed_file_is_rechunked_and_only_it(make_index, corpus):
    index = make_index()
    index.refresh(corpus)
    others = {path: chunk_rows(index, path) for path in CORPUS if path != "alpha.md"}
    text = "The narwhal has one long tusk. It lives in Arctic water. Narwhals dive deep."
    (corpus / "alpha.md").write_text(text)
    report = index.refresh(corpus)
    assert report.updated == ("alpha.md",) and report.added == ()
    stored = chunk_rows(index, "alpha.md")
    assert [(r[1], r[2], r[3], r[4]) for r in stored] == [(c.ordinal, c.start, c.end, c.text)
                                                          for c in SMALL.chunks(text)]
    assert source_row(index, "alpha.md")[0] == hashlib.sha256(text.encode()).hexdigest()
    assert {path: chunk_rows(index, path) for path in others} == others
    assert sources_of(full_text(index, "narwhal")) == {"alpha.md"} and full_text(index, "clams") == []


def test_a_deleted_file_loses_its_rows(make_index, corpus):
    index = make_index()
    index.refresh(corpus)
    (corpus / "beta.txt").unlink()
    report = index.refresh(corpus)
    assert report.removed == ("beta.txt",)
    assert stored_paths(index) == set(CORPUS) - {"beta.txt"}
    assert owner_rows(index, "SELECT count(*) FROM {s}.chunks c WHERE c.text ILIKE '%%magma%%'") == [(0,)]
    assert index.health(corpus).passed


def break_encoding(path: Path) -> None:
    path.write_bytes(b"\xff\xfe broken " + path.read_bytes())


def break_with_nul(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"\x00")


@pytest.mark.parametrize("damage, reason", [
    (break_into_directory, "unreadable (not a regular file)"),
    (break_encoding, "not UTF-8 (byte 0)"),
    (break_with_nul, "holds a NUL byte (binary, not text)"),
], ids=["replaced by a directory", "not UTF-8", "NUL byte"])
def test_a_file_that_cannot_be_read_keeps_its_rows(make_index, corpus, damage, reason):
    """A failed observation is not absence: the rows stay (report.kept) until the file reads again."""
    index = make_index()
    index.refresh(corpus)
    before = fingerprint(index)
    original = (corpus / "beta.txt").read_bytes()
    damage(corpus / "beta.txt")
    report = index.refresh(corpus)
    assert report.kept == ("beta.txt",) and report.removed == ()
    assert [(s.path, s.reason) for s in report.skipped] == [("beta.txt", reason)]
    assert fingerprint(index) == before
    shutil.rmtree(corpus / "beta.txt") if (corpus / "beta.txt").is_dir() else None
    (corpus / "beta.txt").write_bytes(original)
    again = index.refresh(corpus)
    assert "beta.txt" in again.unchanged and fingerprint(index) == before


def test_a_new_chunk_policy_reindexes_every_source(make_index, corpus):
    """Same files, same hashes, ChunkPolicy('fixed', 500): every source is re-chunked."""
    make_index().refresh(corpus)
    fixed = ChunkPolicy("fixed", size=500, overlap=100, unit="characters")
    index = make_index(policy=fixed)
    report = index.refresh(corpus)
    assert set(report.updated) == set(CORPUS) and report.unchanged == ()
    assert owner_rows(index, "SELECT DISTINCT chunker FROM {s}.chunks") == [(fixed.version,)]
    assert owner_rows(index, "SELECT count(*) FROM {s}.chunks") == [(len(CORPUS),)]   # every file < 500 chars
    assert index.health(corpus).passed
    assert set(make_index(policy=fixed).refresh(corpus).unchanged) == set(CORPUS)


def test_a_new_embedding_version_reindexes_every_source(make_index, corpus):
    make_index().refresh(corpus)
    index = make_index(encoder=FakeEncoder(revision="fake-2"))
    report = index.refresh(corpus)
    assert set(report.updated) == set(CORPUS)
    assert owner_rows(index, "SELECT DISTINCT embedding_version FROM {s}.chunks") == [(index.embedding_version,)]


def test_a_tenant_change_reindexes_the_source(make_index, corpus):
    """Moving beta.txt to tenant b rewrites its source and chunk rows with the new tenant, and only those."""
    make_index(tenant_of=lambda path: "a").refresh(corpus)
    index = make_index(tenant_of=lambda path: "b" if path == "beta.txt" else "a")
    report = index.refresh(corpus)
    assert report.updated == ("beta.txt",)
    assert source_row(index, "beta.txt")[1] == "b"
    assert {row[7] for row in chunk_rows(index, "beta.txt")} == {"b"}
    assert "beta.txt" not in sources_of(full_text(index, "volcano lava", tenant="a"))
    assert sources_of(full_text(index, "volcano lava", tenant="b")) == {"beta.txt"}


# ---------------------------------------------------------------- 5. fault injection

ALPHA_NEW = "Narwhals have one tusk. The tusk is a tooth. It can be three metres long. Pods swim together.\n"
BETA_NEW = ("Geysers spout hot water into the cold air. Steam rises from the vents all day. "
            "The ground hisses under the boots. Sulphur smells strong near the pools.\n")


def change_two_sources(corpus: Path) -> int:
    """Rewrite alpha.md and beta.txt; the insert_chunk call that falls half-way through beta.txt."""
    (corpus / "alpha.md").write_text(ALPHA_NEW)
    (corpus / "beta.txt").write_text(BETA_NEW)
    assert len(SMALL.chunks(BETA_NEW)) >= 3
    return len(SMALL.chunks(ALPHA_NEW)) + 2


def assert_half_refreshed(index: PgIndex, corpus: Path, old_corpus: Path, beta_before) -> None:
    """alpha.md holds its new rows (committed), beta.txt its old ones (rolled back); the index is sound."""
    assert [r[4] for r in chunk_rows(index, "alpha.md")] == [c.text for c in SMALL.chunks(ALPHA_NEW)]
    assert (chunk_rows(index, "beta.txt"), source_row(index, "beta.txt")) == beta_before
    (old_corpus / "alpha.md").write_text(ALPHA_NEW)
    assert index.health(old_corpus).passed, index.health(old_corpus).lines()
    health = index.health(corpus)
    assert health.failed == ["sources whose file changed since indexing"]
    assert [c.examples for c in health.checks if not c.passed] == [("beta.txt",)]


def test_an_exception_half_way_through_a_source_leaves_its_old_rows(make_index, corpus, tmp_path, monkeypatch):
    index = make_index()
    index.refresh(corpus)
    old_corpus = shutil.copytree(corpus, tmp_path / "old")
    beta_before = (chunk_rows(index, "beta.txt"), source_row(index, "beta.txt"))
    fail_at = change_two_sources(corpus)
    calls = []
    real = PgIndex.insert_chunk

    def failing(self, *args):
        calls.append(1)
        if len(calls) == fail_at:
            raise RuntimeError("injected failure")
        real(self, *args)

    with monkeypatch.context() as patch:
        patch.setattr(PgIndex, "insert_chunk", failing)
        with pytest.raises(RuntimeError, match="injected failure"):
            index.refresh(corpus)
    assert_half_refreshed(index, corpus, old_corpus, beta_before)
    report = index.refresh(corpus)
    assert report.updated == ("beta.txt",) and index.health(corpus).passed


def gin_indexes(index: PgIndex) -> list[str]:
    with index.connection.transaction():
        rows = index.connection.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexdef LIKE '%%USING gin%%' ORDER BY 1",
            [index.schema]).fetchall()
    return [name for (name,) in rows]


def test_a_new_index_is_loaded_in_one_transaction_rows_before_its_full_text_indexes(make_index, corpus, monkeypatch):
    """Into an empty index the rows go in first, then the term statistics and the GIN indexes, once, all in one
    transaction: a failure half-way leaves the index empty with both GIN indexes, and the next refresh loads it
    whole, with the same statistics as a recount from the rows."""
    index = make_index()
    built: list[str] = []
    real_create = PgIndex._create_text_indexes

    def watched(self):
        built.append(gin_indexes(self) == [] and "rows first")   # no GIN index while the rows went in
        real_create(self)

    monkeypatch.setattr(PgIndex, "_create_text_indexes", watched)
    calls = []
    real_insert = PgIndex.insert_chunk
    fail_at = []

    def counting(self, *args):
        calls.append(1)
        if len(calls) == (fail_at or [0])[0]:
            raise RuntimeError("injected failure")
        real_insert(self, *args)

    monkeypatch.setattr(PgIndex, "insert_chunk", counting)
    index.refresh(corpus)                    # a clean load, to count the chunks
    assert built == ["rows first"]
    statistics = term_statistics(index)
    index.drop()
    fail_at.append(2 * len(calls))           # the last chunk of the second load
    with pytest.raises(RuntimeError, match="injected failure"):
        index.refresh(corpus)
    assert built == ["rows first"] and gin_indexes(index) == ["chunks_code_text", "chunks_search_text"]
    assert index.stored_sources() == {} and term_statistics(index) == ([], [])   # nothing written half-way
    report = index.refresh(corpus)           # empty again: loaded whole, in one transaction
    assert built == ["rows first"] * 2 and report.added and index.health(corpus).passed
    assert gin_indexes(index) == ["chunks_code_text", "chunks_search_text"]
    assert term_statistics(index) == statistics
    index.update_statistics()                # a recount from the rows changes nothing
    assert term_statistics(index) == statistics


def term_statistics(index: PgIndex) -> tuple[list, list]:
    """The index's BM25 statistics, read as the owner: (lexemes rows, collection rows)."""
    return (owner_rows(index, "SELECT tenant, lexeme, chunks FROM {s}.lexemes ORDER BY 1, 2"),
            owner_rows(index, "SELECT tenant, chunks, total_length FROM {s}.collection ORDER BY 1"))


CHILD = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from support.database import SMALL, FakeEncoder
from ragcourse.rag.database import open_database
from ragcourse.rag.store import PgIndex

schema, root, die_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
calls = 0
insert = PgIndex.insert_chunk

def insert_or_die(self, *args):
    global calls
    calls += 1
    if calls == die_at:
        os.kill(os.getpid(), signal.SIGKILL)
    insert(self, *args)

PgIndex.insert_chunk = insert_or_die
PgIndex(open_database(), schema=schema, policy=SMALL, encoder=FakeEncoder()).refresh(root)
print("refresh finished: the kill did not happen")
"""


def test_a_process_killed_half_way_through_a_source_leaves_its_old_rows(database, make_index, corpus, tmp_path):
    """Another process refreshing the same database dies by SIGKILL inside beta.txt's transaction."""
    index = make_index()
    index.refresh(corpus)
    old_corpus = shutil.copytree(corpus, tmp_path / "old")
    beta_before = (chunk_rows(index, "beta.txt"), source_row(index, "beta.txt"))
    die_at = change_two_sources(corpus)
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(tests=str(Path(__file__).parents[1])))
    child = subprocess.run([sys.executable, str(script), index.schema, str(corpus), str(die_at)],
                           env={**os.environ, URL_VARIABLE: database.uri}, capture_output=True, text=True,
                           timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    assert_half_refreshed(index, corpus, old_corpus, beta_before)
    report = index.refresh(corpus)
    assert report.updated == ("beta.txt",) and index.health(corpus).passed


# ---------------------------------------------------------------- 6. health checks, each tripped by one fault
# (the faults: ``support.database.HEALTH_FAULTS``, which the server's tests repair too)

@pytest.mark.parametrize("fault, expected", HEALTH_FAULTS)
def test_health_fails_exactly_the_check_for_the_fault(make_index, corpus, fault, expected):
    """A clean index passes every check; one injected fault fails exactly the checks it should, each found once."""
    index = make_index()
    index.refresh(corpus)
    clean = index.health(corpus)
    assert clean.passed and clean.failed == [] and clean.sources == len(CORPUS)
    fault(index, corpus)
    report = index.health(corpus)
    expected = (expected,) if isinstance(expected, str) else expected
    assert report.failed == [e.format(chunker=SMALL.version, embedding=index.embedding_version) for e in expected]
    assert [c.found for c in report.checks if not c.passed] == [1] * len(expected)
    assert "FAILED: " + report.failed[0] in report.lines()[-1]


SQL_CHECKS = [pytest.param(check, id=check.label.split(" (")[0]) for check in CHECKS if check.sql is not None]


def run_check(index: PgIndex, query: str, scope: dict) -> list[tuple]:
    with index.connection.transaction():
        return index.connection.execute(index.sql(query), scope).fetchall()


def test_every_row_of_the_health_table_is_tripped_by_a_fault_of_its_own():
    """A check added to ``health.CHECKS`` without a fault that fails it (here or, for the encoder's window, in
    ``test_full_text_names.py``) fails this test."""
    expected = [p.values[1] for p in HEALTH_FAULTS]
    faulted = {label for e in expected for label in ((e,) if isinstance(e, str) else e)}
    assert {check.label for check in CHECKS} == faulted | {WINDOW}
    assert [check.label for check in CHECKS if check.note] == [WINDOW]


@pytest.mark.parametrize("check", SQL_CHECKS)
def test_each_health_query_runs_on_a_real_index(make_index, corpus, check):
    """On a clean index each row's count is 0 and its sample empty, for every tenant and for each one."""
    index = make_index(tenant_of=two_tenants)
    index.refresh(corpus)
    for tenant in (None, "a", "b"):
        scope = dict(index.scope, tenant=tenant)
        assert run_check(index, check.sql, scope) == [(0,)]
        assert check.sample is None or run_check(index, check.sample, scope) == []


@pytest.mark.parametrize("fault, expected", [p for p in HEALTH_FAULTS if p.values[0] not in (
    file_edited, file_deleted, file_replaced_by_directory)])
def test_a_fault_in_one_tenant_fails_its_check_there_and_nowhere_else(make_index, database, corpus, fault, expected):
    """Each query's count agrees with its sample, and finds the fault (every one is in tenant a's rows) for every
    tenant of the index but not for tenant b; b's own health passes."""
    index = make_index(tenant_of=two_tenants)
    index.refresh(corpus)
    fault(index, corpus)
    expected = (expected,) if isinstance(expected, str) else expected
    labels = {"chunker": SMALL.version, "embedding": index.embedding_version}
    for check in CHECKS:
        if check.sql is None:
            continue
        tripped = check.label.format(**labels, window=None) in [e.format(**labels) for e in expected]
        for tenant, found in ((None, tripped), ("b", False)):
            count, = run_check(index, check.sql, dict(index.scope, tenant=tenant))[0]
            assert (count > 0) == found, (check.label, tenant, count)
            if check.sample is not None:
                assert len(run_check(index, check.sample, dict(index.scope, tenant=tenant))) == count
    only_b = PgIndex(database, schema=index.schema, policy=SMALL, encoder=FakeEncoder(), tenant="b")
    try:
        assert only_b.health(corpus).passed, only_b.health(corpus).lines()
    finally:
        only_b.close()


def test_health_defaults_to_the_corpus_root_of_the_last_refresh(make_index, corpus):
    index = make_index()
    index.refresh(corpus)
    (corpus / "beta.txt").unlink()
    assert index.health().failed == ["sources whose file is missing"]


# ---------------------------------------------------------------- 7. search correctness

def test_query_terms_keep_only_lowercase_ascii_letters_and_digits():
    assert query_terms("Hello, WORLD! hello x_y; café 3.14 naïve Ｗａｌｒｕｓ 'a':*") == [
        "hello", "world", "x", "y", "caf", "3", "14", "na", "ve", "a"]
    assert or_query("walrus & !clams | (ice)") == "walrus | clams | ice"
    assert or_query("?!;'") == ""


@given(st.text())
def test_property_query_terms_and_or_query_hold_no_operator(question):
    terms = query_terms(question)
    assert all(re.fullmatch(r"[a-z0-9]+", t) for t in terms)
    assert len(terms) == len(set(terms)) <= 256
    assert re.fullmatch(r"([a-z0-9]+( \| [a-z0-9]+)*)?", or_query(question))


def test_full_text_uses_or_so_one_word_is_enough(tenants):
    """'walrus volcano': chunks holding only one of the two words are found, from both files."""
    found = full_text(tenants, "walrus volcano", tenant="a", limit=1000)
    assert {"alpha.md", "beta.txt"} <= sources_of(found)
    texts = [sp.passage.text.lower() for sp in found]
    assert any("walrus" in t and "volcano" not in t for t in texts)
    assert any("volcano" in t and "walrus" not in t for t in texts)


@pytest.mark.parametrize("question, tsquery", [
    ("walrus volcano", "walrus | volcano"),
    ("The walrus, the ice and the water!", "the | walrus | ice | and | water"),
    ("oyster reef protects coast", "oyster | reef | protects | coast"),
    ("lens beam ships sea", "lens | beam | ships | sea"),
])
def test_full_text_ranking_equals_a_direct_ts_rank_cd_query(tenants, question, tsquery):
    """Ids, scores and order (score desc, chunk id) equal a hand-written query over tenant a's rows."""
    expected = owner_rows(tenants, "SELECT chunk_id, ts_rank_cd(search_text, to_tsquery('english', %s)) AS r "
                                   "FROM {s}.chunks WHERE tenant = 'a' AND search_text @@ to_tsquery('english', %s) "
                                   "ORDER BY r DESC, chunk_id", [tsquery, tsquery])
    found = full_text(tenants, question, tenant="a", limit=1000)
    assert len(expected) >= 2
    assert [sp.passage.chunk_id for sp in found] == [cid for cid, _ in expected]
    assert [sp.score for sp in found] == pytest.approx([score for _, score in expected])
    assert [sp.rank for sp in found] == list(range(1, len(found) + 1))


def stored_vectors(index: PgIndex, tenant: str) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids, embeddings) of a tenant's rows, read as the owner."""
    rows = owner_rows(index, "SELECT chunk_id, embedding FROM {s}.chunks WHERE tenant = %s ORDER BY chunk_id",
                      [tenant])
    return np.array([cid for cid, _ in rows]), np.vstack([v.to_numpy() for _, v in rows])


def assert_is_the_exhaustive_ranking(found, ids, matrix, query, limit):
    """``found`` has numpy's top-``limit`` cosines in order (ties within float32 may swap ids)."""
    cosines = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    by_id = dict(zip(ids.tolist(), cosines.tolist()))
    assert len(found) == min(limit, len(ids))
    assert [sp.score for sp in found] == pytest.approx([by_id[sp.passage.chunk_id] for sp in found], abs=1e-5)
    assert [by_id[sp.passage.chunk_id] for sp in found] == pytest.approx(sorted(cosines, reverse=True)[:limit],
                                                                         abs=1e-5)


@pytest.mark.parametrize("question", ["walrus", "oyster reef coast", "lighthouse keeper", "zebra"])
def test_dense_exact_ranking_equals_numpy_cosine(tenants, question):
    ids, matrix = stored_vectors(tenants, "a")
    query = FakeEncoder().encode([question])[0]
    assert_is_the_exhaustive_ranking(dense(tenants, query, limit=1000, tenant="a"), ids, matrix, query, 1000)
    assert_is_the_exhaustive_ranking(dense(tenants, query, limit=5, tenant="a"), ids, matrix, query, 5)


def test_hnsw_recall_and_exact_search_with_the_index_present(make_index, tmp_path):
    """~1,200 chunks: HNSW answers (recall@10 >= 0.9 against exact); exact=True stays exhaustive."""
    rng = np.random.default_rng(4)
    vocabulary = [f"w{n}" for n in range(500)]
    files = {f"doc{n:03d}.md": ". ".join(" ".join(rng.choice(vocabulary, 8)) for _ in range(6)) + "."
             for n in range(200)}
    root = write_corpus(tmp_path / "big", files)
    index = make_index()
    index.refresh(root)
    index.create_hnsw()
    assert index.has_hnsw()
    ids, matrix = stored_vectors(index, "public")
    assert len(ids) >= 1000
    encoder, recalls = FakeEncoder(), []
    for _ in range(30):
        query = encoder.encode([" ".join(rng.choice(vocabulary, 3))])[0]
        exact = dense(index, query, limit=10, exact=True)
        assert_is_the_exhaustive_ranking(exact, ids, matrix, query, 10)
        approximate = dense(index, query, limit=10, exact=False)
        assert len(approximate) == 10
        tenth = exact[-1].score - 1e-6       # a result tied with the 10th exact one counts as a hit
        recalls.append(sum(sp.score >= tenth for sp in approximate) / 10)
    assert np.mean(recalls) >= 0.9, recalls
    # The index is really used with exact=False: HNSW returns at most ef_search rows (unless the shortfall
    # is repaired, as it is by default); exact=True ignores it.
    query = encoder.encode(["w1 w2 w3"])[0]
    assert len(dense(index, query, limit=10, exact=False, ef_search=1, guaranteed=False)) < 10
    assert len(dense(index, query, limit=10, exact=False, ef_search=1)) == 10
    assert_is_the_exhaustive_ranking(dense(index, query, limit=10, exact=True, ef_search=1), ids, matrix, query, 10)


# ---------------------------------------------------------------- 8. database errors

def test_an_unreachable_server_names_the_variable_and_the_way_back(monkeypatch):
    url = "postgresql://nobody@127.0.0.1:1/none"
    with pytest.raises(DatabaseUnavailable) as direct:
        open_database(url=url)
    monkeypatch.setenv(URL_VARIABLE, url)
    with pytest.raises(DatabaseUnavailable) as from_variable:
        open_database(temporary=True)
    for error in (direct.value, from_variable.value):
        message = str(error)
        assert "127.0.0.1:1" in message and URL_VARIABLE in message
        assert f"unset {URL_VARIABLE} to use the embedded PostgreSQL" in message


def test_the_password_is_not_printed():
    with pytest.raises(DatabaseUnavailable) as error:
        open_database(url="postgresql://nobody:s3cret@127.0.0.1:1/none")
    assert "s3cret" not in str(error.value) and "***" in str(error.value)


@pytest.mark.parametrize("schema", ["Robert'); drop", "1abc", "", "Upper", "a-b", "a" * 64, None])
def test_a_bad_schema_name_is_refused_before_any_sql(database, schema):
    with pytest.raises(ValueError, match="schema"):
        PgIndex(database, schema=schema)


@pytest.mark.parametrize("tenant", ["", "a b", "x'; --", "a" * 65, "ä", None])
def test_a_bad_tenant_name_is_refused(tenants, baseline, tenant):
    vector = FakeEncoder().encode(["walrus"])[0]
    for call in (lambda: tenants.reader(tenant).__enter__(), lambda: full_text(tenants, "walrus", tenant=tenant),
                 lambda: dense(tenants, vector, tenant=tenant), lambda: baseline.ask("walrus", tenant=tenant)):
        with pytest.raises(ValueError, match="tenant"):
            call()
    assert full_text(tenants, "walrus", tenant="a")     # the connection is still usable


# ---------------------------------------------------------------- the real model, once

@pytest.mark.embeddings
def test_real_model_baseline_answers_tenant_a_from_tenant_a(make_index, corpus, tmp_path, monkeypatch):
    """MiniLM end to end: the walrus question is answered from alpha.md, never from b's vault."""
    monkeypatch.setenv("RAGCOURSE_CACHE_DIR", str(tmp_path / "cache"))
    from ragcourse.engines.dense import DenseEncoder

    encoder = DenseEncoder()
    index = make_index(encoder=encoder, tenant_of=two_tenants)
    report = index.refresh(corpus)
    assert report.embedded == report.chunks_written > 0
    assert index.health(corpus).passed
    trace = Baseline(index, encoder).ask("What does the walrus eat?", tenant="a")
    for stage in STAGES:
        assert sources_of(trace.stage(stage)) <= TENANT_A_FILES
    assert trace.stage("dense")[0].passage.source == "alpha.md"
    assert not trace.answer.abstained and trace.answer.citations[0].startswith("alpha.md#")
