"""Lab 04's repaired full text against a real PostgreSQL, and the chunks that fit the encoder's window.

- ``names``: dotted identifiers are found by their parts and no name is a stop word
  (seed 003's ``english`` path misses both, which the tests show first);
- ``bm25``: BM25 computed in SQL from the index's term statistics equals ``bm25s`` (Lucene's
  variant) over the very same lexemes, per tenant under row-level security;
- the hostile questions of the database tests reach the new queries only as parameters;
- ``ChunkPolicy()`` fits MiniLM's window on every page of the corpus, and the health check
  names a chunk that does not.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from ragcourse.engines.chunking.policy import WINDOW_TOKENS, ChunkPolicy
from ragcourse.rag.search import LEXICAL, check_question, full_text, name_terms
from ragcourse.rag.store import PgIndex
from support.database import PAGES, SMALL, WHOLE_PAGE, FakeEncoder, schema_name, write_corpus

def found(index: PgIndex, question: str, lexical: str, tenant: str = "public") -> list[str]:
    return [sp.passage.doc_id for sp in full_text(index, question, 10, tenant, lexical)]


# ---------------------------------------------------------------- identifiers and stop words

@pytest.mark.parametrize("question, page", [
    ("np.linalg.solve for a system of equations", "numpy.linalg.solve"),
    ("how do I use np.fft.fftshift", "numpy.fft.fftshift"),
])
def test_a_question_naming_a_dotted_identifier_finds_its_page_first(pages, question, page):
    for lexical in ("names", "bm25"):
        assert found(pages, question, lexical)[0] == page, lexical


def test_the_english_path_cannot_find_an_identifier_by_a_dotted_part(pages):
    """Seed 003's path: 'fftshift' appears only inside 'numpy.fft.fftshift', one token to PostgreSQL's parser."""
    assert found(pages, "fftshift", "english") == []
    assert found(pages, "fftshift", "names") == ["numpy.fft.fftshift"]
    assert found(pages, "fftshift", "bm25") == ["numpy.fft.fftshift"]


@pytest.mark.parametrize("word, page", [("where", "numpy.where"), ("all", "numpy.all")])
def test_a_name_that_is_an_english_stop_word_is_kept(pages, word, page):
    assert found(pages, word, "english") == []        # PostgreSQL's English stop list drops it
    assert found(pages, word, "names")[0] == page
    assert found(pages, word, "bm25")[0] == page


def test_the_question_loses_only_lucenes_function_words():
    assert name_terms("How do I use np.where in the array?") == ["how", "do", "i", "use", "np", "where", "array"]


def test_stemming_applies_to_questions_and_chunks_alike(pages):
    # "summing" and "sums" meet "sum" only when both sides are stemmed by the same configuration
    assert found(pages, "summing", "names")[0] == "numpy.sum"
    assert found(pages, "summing", "bm25")[0] == "numpy.sum"


def test_an_unknown_scoring_names_what_is_allowed(pages):
    with pytest.raises(ValueError, match="lexical must be one of english, names, bm25"):
        full_text(pages, "mean", 10, "public", "bm26")


# ---------------------------------------------------------------- BM25 in SQL equals bm25s

def lexeme_lists(index: PgIndex) -> tuple[list[str], list[list[str]]]:
    """Each chunk's lexemes from its ``code_text``, repeated as often as they occur (BM25's bag of words)."""
    with index.connection.transaction():
        rows = index.connection.execute(index.sql(
            "SELECT s.path, array_agg(u.lexeme ORDER BY u.lexeme), "
            "array_agg(coalesce(array_length(u.positions, 1), 1) ORDER BY u.lexeme) "
            "FROM {s}.chunks c JOIN {s}.sources s USING (source_id), unnest(c.code_text) u "
            "GROUP BY s.path ORDER BY s.path")).fetchall()
    return [path for path, _, _ in rows], [[w for w, n in zip(words, counts) for _ in range(n)]
                                           for _, words, counts in rows]


def query_lexemes(index: PgIndex, question: str) -> list[str]:
    with index.connection.transaction():
        rows = index.connection.execute("SELECT DISTINCT lexeme FROM unnest(to_tsvector(%s::regconfig, %s))",
                                        [index.names_configuration, " ".join(name_terms(question))]).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("question", ["sum of the array elements", "mean along an axis", "np.where mask",
                                      "solve a linear system of equations", "zero frequency spectrum center"])
def test_bm25_in_sql_equals_bm25s_over_the_same_lexemes(pages, question):
    import bm25s

    paths, documents = lexeme_lists(pages)
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    vocabulary = sorted({w for d in documents for w in d})
    ids = {w: n for n, w in enumerate(vocabulary)}
    retriever.index(bm25s.tokenization.Tokenized(ids=[[ids[w] for w in d] for d in documents], vocab=ids),
                    show_progress=False)
    terms = [w for w in query_lexemes(pages, question) if w in ids]
    expected = retriever.get_scores(terms)
    got = {sp.passage.doc_id + ".md": sp.score for sp in full_text(pages, question, 10, "public", "bm25")}
    for path, score in zip(paths, expected):
        if score > 0:
            assert math.isclose(got[path], float(score), rel_tol=1e-5), (path, got.get(path), score)
        else:
            assert path not in got
    assert got, "the question must match something, or the test proves nothing"


def test_bm25_statistics_are_each_tenants_own(database, tmp_path):
    """Under row-level security N, the mean length and document frequencies count only the tenant's chunks."""
    root = write_corpus(tmp_path / "two", PAGES)
    index = PgIndex(database, schema=schema_name("bm25_tenants"), policy=WHOLE_PAGE, encoder=FakeEncoder(),
                    tenant_of=lambda path: "linalg" if "linalg" in path or "fft" in path else "core")
    index.drop()
    try:
        index.refresh(root)
        with index.reader("linalg") as connection:
            n, = connection.execute(index.sql("SELECT chunks FROM {s}.collection")).fetchone()
            tenants = connection.execute(index.sql("SELECT DISTINCT tenant FROM {s}.lexemes")).fetchall()
        assert n == 2 and tenants == [("linalg",)]
        assert set(found(index, "sum of the array", "bm25", tenant="linalg")) <= {"numpy.linalg.solve",
                                                                                   "numpy.fft.fftshift"}
        assert found(index, "sum of the array", "bm25", tenant="core")[0] == "numpy.sum"
    finally:
        index.drop()
        index.close()


def statistics(index: PgIndex) -> tuple[list, list]:
    with index.connection.transaction():
        lexemes = index.connection.execute(index.sql("SELECT * FROM {s}.lexemes ORDER BY 1, 2")).fetchall()
        collection = index.connection.execute(index.sql("SELECT * FROM {s}.collection ORDER BY 1")).fetchall()
    return lexemes, collection


def test_term_statistics_kept_in_step_equal_a_recount_after_adds_edits_moves_and_removals(database, tmp_path):
    root = write_corpus(tmp_path / "steps", PAGES)
    owner = {"numpy.sum.md": "a"}
    index = PgIndex(database, schema=schema_name("bm25_in_step"), policy=SMALL, encoder=FakeEncoder(),
                    tenant_of=lambda path: owner.get(path, "b"))
    index.drop()
    try:
        index.refresh(root)
        (root / "numpy.mean.md").write_text("# numpy.mean\n\nA mean, rewritten. The mean again.\n", encoding="utf-8")
        (root / "numpy.where.md").unlink()
        write_corpus(root, {"numpy.extra.md": "# numpy.extra\n\nSum and mean and where.\n"})
        owner["numpy.all.md"] = "a"                       # a source that moves to another tenant
        index.refresh(root)
        kept = statistics(index)
        assert kept[0] and kept[1]
        index.update_statistics()                         # the recount from scratch
        assert statistics(index) == kept
        assert all(c.passed for c in index.health(root).checks)
    finally:
        index.drop()
        index.close()


def test_the_health_check_names_stale_term_statistics(pages):
    with pages.connection.transaction():
        pages.connection.execute(pages.sql("DELETE FROM {s}.collection"))
    try:
        check = [c for c in pages.health().checks if "term statistics" in c.name][0]
        assert not check.passed and check.found == 1
    finally:
        pages.update_statistics()
    assert all(c.passed for c in pages.health().checks if "term statistics" in c.name)


# ---------------------------------------------------------------- hostile questions

HOSTILE = ["'", '"', "''; DROP TABLE chunks; --", "x' OR '1'='1", "' OR '1'='1", "&|!:*\\", "a & b | !c:*",
           "(((", "np.where('x')", "numpy.linalg.solve", "\\x00".replace("\\x00", "zero"), "a" * 10_000,
           "the of and", "Ｗａｌｒｕｓ 🦭", "sum" + " sum" * 3000]


@pytest.mark.parametrize("lexical", LEXICAL)
@pytest.mark.parametrize("question", HOSTILE, ids=lambda q: repr(q[:20]))
def test_hostile_questions_reach_the_new_queries_only_as_parameters(pages, lexical, question):
    question = check_question(question)
    results = full_text(pages, question, 10, "public", lexical)
    assert len(results) <= 10
    assert {sp.passage.doc_id + ".md" for sp in results} <= set(PAGES)
    with pages.connection.transaction():   # the tables are all still there
        assert pages.connection.execute(pages.sql("SELECT count(*) FROM {s}.chunks")).fetchone()[0] == len(PAGES)


@pytest.mark.parametrize("question", ["", "   ", "a\x00b"])
def test_empty_and_nul_questions_are_refused_before_sql(question):
    with pytest.raises(ValueError):
        check_question(question)


# ---------------------------------------------------------------- the encoder's window

def test_the_default_policy_fits_the_window_on_every_page_of_the_corpus():
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.dense import load_tokenizer, window_tokens

    tokenizer, policy = load_tokenizer(), ChunkPolicy()
    assert policy.unit == "tokens" and policy.size == WINDOW_TOKENS == window_tokens() - 2
    longest, chunks = 0, 0
    for document in load_corpus().documents:
        text = document.markdown(summary=False)
        spans = policy.spans(text)
        assert spans[0][0] == 0 and spans[-1][1] in (len(text), len(text.rstrip())), document.doc_id
        for (a, b), (c, _) in zip(spans, spans[1:]):
            assert c <= b or not text[b:c].strip(), "consecutive chunks leave text out"   # white space at most
        ids = tokenizer([text[a:b] for a, b in spans], add_special_tokens=True, verbose=False)["input_ids"]
        longest = max(longest, max(len(x) for x in ids))
        chunks += len(spans)
    assert longest <= window_tokens()
    assert chunks > len(load_corpus().documents)   # long pages really were cut


def test_seed_003s_policy_is_kept_as_a_condition():
    seed = ChunkPolicy.seed()
    assert (seed.size, seed.overlap, seed.unit) == (2000, 300, "characters")
    assert seed.version == "sentences-v1(size=2000,overlap=300)"
    assert ChunkPolicy().version == f"sentences-v1(size={WINDOW_TOKENS},overlap=40,unit=tokens)"
    with pytest.raises(ValueError, match="unit must be one of characters, tokens"):
        ChunkPolicy(unit="words")


class WindowEncoder(FakeEncoder):
    """The fake encoder with a window of 12 'tokens' (words)."""

    max_tokens = 12


def test_the_health_check_names_a_chunk_longer_than_the_encoders_window(database, tmp_path):
    root = write_corpus(tmp_path / "window", {
        "short.md": "A short page.\n",
        "long.md": "One sentence that is much longer than twelve words, so that the encoder never reads its end "
                   "at all.\n"})
    index = PgIndex(database, schema=schema_name("window_check"), policy=WHOLE_PAGE, encoder=WindowEncoder())
    index.drop()
    try:
        index.refresh(root)
        report = index.health()
        check = [c for c in report.checks if "encoder's window" in c.name][0]
        assert not check.passed and check.found == 1 and check.examples[0].startswith("long.md#0 (")
        assert check.note and report.passed and not report.repairs()     # counted and named, not a failure
        assert any(line.startswith("  note  chunks longer than the encoder's window") for line in report.lines())
        (root / "long.md").write_text("Now it is short.\n", encoding="utf-8")
        index.refresh(root)
        assert all(c.passed for c in index.health().checks)
    finally:
        index.drop()
        index.close()


def test_token_windows_cut_a_sentence_longer_than_the_window():
    from ragcourse.engines.dense import load_tokenizer

    tokenizer = load_tokenizer()
    sentence = " ".join(f"word{n}" for n in range(400)) + "."
    policy = ChunkPolicy("sentences", size=50, overlap=10, tokenizer=tokenizer)
    chunks = policy.chunks(sentence)
    counts = [len(x) for x in tokenizer([c.text for c in chunks], add_special_tokens=False,
                                        verbose=False)["input_ids"]]
    assert len(chunks) > 1 and max(counts) <= 50
    assert all(c.text == sentence[c.start:c.end] for c in chunks)
    assert np.all(np.diff([c.start for c in chunks]) > 0)
