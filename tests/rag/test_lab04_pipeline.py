"""Lab 04 beyond the database: chunking policies, exact token counts, traces, the ladder's
arithmetic, and the ``index``, ``ask`` and ``search --retriever postgres`` commands."""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse.cli.main import main
from ragcourse.rag.context import SEPARATOR, ContextBudget, assemble, render, token_counter
from ragcourse.engines.chunking.policy import ChunkPolicy
from ragcourse.engines.chunking.spans import fixed_spans, heading_spans, sentence_bounds, sentence_spans
from ragcourse.labs.ladder import spread, tenant_leaks, threshold_sweep
from ragcourse.rag.passages import Passage, ScoredPassage
from ragcourse.rag.reader import Answer

# -- chunking policies --------------------------------------------------------------------------

texts = st.text(alphabet=st.sampled_from(list("abc .!?\n#`")), min_size=0, max_size=3000)


@settings(max_examples=150, deadline=None)
@given(text=texts, size=st.integers(20, 400), overlap_share=st.floats(0, 0.9))
def test_every_policy_cuts_exact_slices_that_cover_the_text(text, size, overlap_share):
    """Each chunk is text[start:end]; nothing but whitespace falls between chunks; spans move forward."""
    overlap = int(size * overlap_share)
    for spans in (fixed_spans(text, size, overlap), sentence_spans(text, size, overlap), heading_spans(text)):
        covered = set()
        for a, b in spans:
            assert 0 <= a < b <= len(text) or (a == b == 0 == len(text))
            covered.update(range(a, b))
        assert all(text[i].isspace() for i in range(len(text)) if i not in covered)
        starts = [a for a, _ in spans]
        assert starts == sorted(starts) and len(set(starts)) == len(starts)


@settings(max_examples=150, deadline=None)
@given(text=texts, size=st.integers(20, 400), overlap_share=st.floats(0, 0.9))
def test_size_bounded_policies_respect_size_and_overlap(text, size, overlap_share):
    overlap = int(size * overlap_share)
    for spans in (fixed_spans(text, size, overlap), sentence_spans(text, size, overlap)):
        assert all(b - a <= size for a, b in spans)
        for (a1, b1), (a2, b2) in zip(spans, spans[1:]):
            assert max(0, b1 - a2) <= overlap     # what a chunk repeats of the one before
    fixed = fixed_spans(text, size, overlap)
    assert all(b1 - a2 == overlap for (a1, b1), (a2, b2) in zip(fixed, fixed[1:]))


def test_sentence_packing_keeps_sentences_whole():
    text = " ".join(f"Sentence {n} says something about arrays." for n in range(40))
    sentences = sentence_bounds(text)
    ends = {b for _, b in sentences}
    starts = {a for a, _ in sentences}
    for a, b in sentence_spans(text, size=200, overlap=60):
        assert a in starts and b in ends


def test_headings_inside_a_code_fence_do_not_cut():
    text = "# Title\n\nintro\n\n```\n# not a heading\n```\n\n## Section\n\nbody\n"
    assert [text[a:b].split("\n")[0] for a, b in heading_spans(text)] == ["# Title", "## Section"]


def test_policy_versions_differ_by_name_and_size_and_bad_policies_name_themselves():
    versions = {ChunkPolicy(n).version for n in ("fixed", "sentences", "headings")} | {ChunkPolicy("fixed", 500).version}
    assert len(versions) == 4
    with pytest.raises(ValueError, match="chunking policy must be one of fixed, sentences, headings, recursive"):
        ChunkPolicy("paragraphs")
    with pytest.raises(ValueError, match="overlap"):
        ChunkPolicy("fixed", 100, 100)


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab .\n#")), min_size=1, max_size=3000), size=st.integers(20, 400))
def test_recursive_policy_cuts_lab03s_pieces_as_exact_slices(text, size):
    """The recursive policy's chunks are lab 03's ``recursive_split`` pieces, each found where it sits in the text."""
    from ragcourse.engines.chunking.splitters import recursive_split

    chunks = ChunkPolicy("recursive", size, 0).chunks(text)
    pieces = recursive_split(text, size)
    assert [c.text for c in chunks] == (pieces or [text])
    assert all(text[c.start:c.end] == c.text for c in chunks)
    assert all(b.start >= a.end for a, b in zip(chunks, chunks[1:]))
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert all(text[i].isspace() for i in range(len(text)) if i not in covered)   # only white space is left out


def test_recursive_policy_counts_characters_and_carries_headers():
    policy = ChunkPolicy.recursive()
    assert (policy.name, policy.size, policy.overlap, policy.unit, policy.headers) == ("recursive", 800, 0,
                                                                                      "characters", True)
    assert policy.version == "recursive-v1(size=800,overlap=0,headers)"
    assert ChunkPolicy("recursive").unit == "characters" and ChunkPolicy().unit == "tokens"
    with pytest.raises(ValueError, match="recursive policy counts characters"):
        ChunkPolicy("recursive", unit="tokens")
    page = "# numpy.where\n\nReturn elements.\n\n## Parameters\n\n" + "condition : array_like. " * 60
    chunks = policy.chunks(page)
    assert chunks[0].header == "numpy.where" and chunks[-1].header == "numpy.where > Parameters"
    assert all(len(c.text) <= 800 for c in chunks)


# -- exact token counts ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tokenizer_encoder():
    from ragcourse.engines.dense import DenseEncoder, ModelUnavailable

    try:
        encoder = DenseEncoder()
        encoder.token_counts(["probe"])
    except ModelUnavailable as missing:
        pytest.skip(str(missing))
    return encoder


def test_piecewise_token_count_equals_counting_the_whole_rendered_context(tokenizer_encoder):
    """The memoised count (pieces between blank lines) is exactly the tokenizer's count of the text."""
    from ragcourse.corpus.apidocs import load_corpus

    documents = load_corpus().documents
    count = token_counter(tokenizer_encoder)
    for first in range(0, 60, 6):
        passages = [Passage(n, f"{d.doc_id}.md", 0, 0, len(d.text), d.text[:2000])
                    for n, d in enumerate(documents[first:first + 6])]
        text = render(passages)
        assert SEPARATOR in text
        assert count(text) == tokenizer_encoder.token_counts([text])[0]


def test_assembled_context_never_passes_the_token_budget(tokenizer_encoder):
    from ragcourse.corpus.apidocs import load_corpus

    documents = load_corpus().documents[:40]
    ranked = [ScoredPassage(Passage(n, f"{d.doc_id}.md", 0, 0, len(d.text), d.text[:1800]), 1.0 - n / 100, n + 1)
              for n, d in enumerate(documents)]
    for budget in (50, 400, 1500, 4000):
        context = assemble(ranked, ContextBudget(max_passages=10, max_tokens=budget), token_counter(tokenizer_encoder))
        assert context.tokens <= budget
        if context.admitted:
            assert context.tokens == tokenizer_encoder.token_counts([context.text])[0]


# -- traces and the ladder ------------------------------------------------------------------------

def _answer(best: float, citations: tuple[str, ...]) -> Answer:
    evidence = tuple((f"sentence {c}", c, best) for c in citations)
    return Answer("q", "text", citations if best >= 0.45 else (), best < 0.45, evidence, best)


def test_threshold_sweep_counts_from_best_scores():
    judged = [(_answer(0.8, ("a.md#0",)), ("a",)), (_answer(0.5, ("b.md#1",)), ("c",)), (_answer(0.3, ("c.md#0",)), ("c",))]
    unanswerable = [_answer(0.2, ("x.md#0",)), _answer(0.6, ("y.md#0",))]
    rows = threshold_sweep(judged, unanswerable, [0.25, 0.55, 0.9])
    assert [(r.unanswerable_abstained, r.judged_answered, r.judged_correct) for r in rows] == [
        (0.5, 1.0, 2 / 3), (0.5, 1 / 3, 1 / 3), (1.0, 0.0, 0.0)]


def test_spread_is_numpys_median_and_95th_percentile():
    values = list(range(1, 101))
    s = spread(values)
    assert s.median == 50.5 and math.isclose(s.p95, float(np.percentile(values, 95)))
    with pytest.raises(ValueError, match="at least one"):
        spread([])


class _Trace:
    def __init__(self, tenant, passages):
        self.tenant, self._passages = tenant, passages

    def stage(self, name):
        return self._passages


def test_tenant_leaks_counts_foreign_passages_in_every_stage():
    own = ScoredPassage(Passage(1, "a.md", 0, 0, 1, "x", "a"), 1.0, 1)
    foreign = ScoredPassage(Passage(2, "b.md", 0, 0, 1, "y", "b"), 1.0, 2)
    assert tenant_leaks([_Trace("a", (own,))]) == 0
    assert tenant_leaks([_Trace("a", (own, foreign))]) == 5     # once per stage


# -- the commands ----------------------------------------------------------------------------------

NOTES = {
    "adr-007.md": "# Decision 7\n\nWe store the event log in PostgreSQL. SQLite could not take the write contention.\n",
    "session-2026-03-02.md": "# Session\n\nThe benchmark showed lock waits on SQLite under four writers.\n",
    "plans.txt": "Next: a second service with its own event log, on the same PostgreSQL server.\n",
}


@pytest.fixture(scope="module")
def command_env(tmp_path_factory):
    """A cache folder of its own (embedded database, vectors, answers) and a small folder of notes."""
    from ragcourse.engines.dense import ModelUnavailable, cache_dir, load_model

    try:
        load_model()
    except ModelUnavailable as missing:
        pytest.skip(str(missing))
    root = tmp_path_factory.mktemp("commands")
    notes = root / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    previous = {k: os.environ.get(k) for k in ("RAGCOURSE_CACHE_DIR", "RAGCOURSE_DATABASE_URL")}
    # The language model converted from its GGUF file is shared (its folder is named for the file's hash; the
    # conversion has a test of its own in test_generator.py): answers, vectors and the database stay here.
    shared = cache_dir() / "generator"
    shared.mkdir(parents=True, exist_ok=True)
    (root / "cache").mkdir()
    (root / "cache" / "generator").symlink_to(shared, target_is_directory=True)
    os.environ["RAGCOURSE_CACHE_DIR"] = str(root / "cache")
    os.environ.pop("RAGCOURSE_DATABASE_URL", None)
    yield notes
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def run_command(argv, capsys) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.database
@pytest.mark.embeddings
def test_index_builds_reports_and_checks_a_folder_of_notes(command_env, capsys):
    status, out, err = run_command(["index", "--corpus", str(command_env)], capsys)
    assert status == 0, err
    assert "database: PostgreSQL 16" in err and "embedded (pgserver)" in err
    assert "3 added" in out and "health: every check passed" in out
    status, out, _ = run_command(["index", "--corpus", str(command_env)], capsys)
    assert status == 0 and "exists" in out and "--refresh" in out
    status, out, _ = run_command(["index", "--corpus", str(command_env), "--check"], capsys)
    assert status == 0 and "every check passed" in out


@pytest.mark.database
@pytest.mark.embeddings
def test_ask_answers_with_citations_of_the_notes_and_a_trace(command_env, capsys):
    assert run_command(["index", "--corpus", str(command_env)], capsys)[0] == 0
    status, out, err = run_command(["ask", "why did we choose PostgreSQL over SQLite", "--corpus",
                                    str(command_env), "--json", "--reader", "extractive"], capsys)
    assert status == 0, err
    result = json.loads(out)
    assert result["answer"]["citations"] and not result["answer"]["abstained"]
    admitted = {row["citation"] for row in result["context"]["admitted"]}
    assert set(result["answer"]["citations"]) <= admitted
    assert {c.split("#")[0] for c in result["answer"]["citations"]} <= set(NOTES)
    assert result["union_size"] == len(result["fused"]) <= 2 * 60   # the kept system asks 60 a path
    status, out, _ = run_command(["ask", "why did we choose PostgreSQL", "--corpus", str(command_env), "--trace",
                                  "--reader", "extractive"], capsys)
    assert status == 0 and "reranker: learned combination" in out and "context:" in out


@pytest.mark.slow
@pytest.mark.generator
@pytest.mark.database
@pytest.mark.embeddings
def test_ask_writes_an_answer_with_the_model_and_times_each_stage(command_env, capsys):
    """The default reader is the local model: words, the passages it was given, and each stage's time."""
    assert run_command(["index", "--corpus", str(command_env)], capsys)[0] == 0
    status, out, err = run_command(["ask", "why did we choose PostgreSQL over SQLite", "--corpus",
                                    str(command_env)], capsys)
    assert status == 0, err
    answer, given, times = out.rstrip("\n").split("\n")[-3:]
    assert len(answer.split()) >= 3   # words, not copied sentences with citations
    assert given.startswith("passages given") and any(f"[{name}#" in given for name in NOTES)
    assert all(f"{stage} " in times for stage in ("retrieve", "rerank", "first token", "whole answer"))
    status, out, err = run_command(["ask", "why did we choose PostgreSQL over SQLite", "--corpus",
                                    str(command_env), "--json"], capsys)
    result = json.loads(out)
    assert status == 0 and result["generation"]["model"].startswith("SmolLM2-135M-Instruct@")
    assert result["generation"]["cached"] and result["generation"]["tokens_out"] > 0   # asked before: from the cache
    assert result["answer"]["best_score"] is None and result["answer"]["text"]


@pytest.mark.database
@pytest.mark.embeddings
def test_refresh_and_check_see_an_edited_and_a_deleted_note(command_env, tmp_path, capsys):
    import shutil

    notes = tmp_path / "copy"
    shutil.copytree(command_env, notes)
    assert run_command(["index", "--corpus", str(notes)], capsys)[0] == 0
    (notes / "plans.txt").write_text("Next: nothing.\n", encoding="utf-8")
    (notes / "adr-007.md").unlink()
    status, out, _ = run_command(["index", "--corpus", str(notes), "--check"], capsys)
    assert status == 1
    assert "FAIL  sources whose file is missing: 1" in out and "FAIL  sources whose file changed" in out
    status, out, _ = run_command(["index", "--corpus", str(notes), "--refresh"], capsys)
    assert status == 0 and "1 updated" in out and "1 removed" in out and "every check passed" in out


@pytest.mark.embeddings
@pytest.mark.parametrize("argv, message", [
    (["ask", ""], "question is empty"),
    (["ask", "a\x00b"], "NUL byte"),
    (["ask", "x", "--tenant", "a b"], "argument --tenant"),
    (["ask", "x", "--reranker-model", "/no/such/model"], "argument --reranker-model"),
    (["index", "--corpus", "/no/such/folder"], "argument --corpus"),
    (["index", "--check", "--refresh", "--corpus", "."], "--check or --refresh"),
    (["index", "--schema", "Robert'); DROP", "--corpus", "."], "argument --schema"),
    (["index", "--policy", "paragraphs"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_one_line_naming_the_argument(command_env, capsys, argv, message):
    status, out, err = run_command(argv, capsys)
    assert status == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2   # usage line + error line


@pytest.mark.database
@pytest.mark.embeddings
def test_ask_without_an_index_says_how_to_build_it(command_env, tmp_path, capsys):
    status, _, err = run_command(["ask", "anything", "--corpus", str(tmp_path)], capsys)
    assert status == 1
    assert f"run `python -m ragcourse index --corpus {tmp_path}` first" in err


@pytest.mark.database
@pytest.mark.embeddings
def test_an_index_is_never_refreshed_from_another_folder(command_env, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("another corpus\n", encoding="utf-8")
    assert run_command(["index", "--corpus", str(command_env), "--schema", "shared_name"], capsys)[0] == 0
    status, _, err = run_command(["index", "--corpus", str(other), "--schema", "shared_name", "--refresh"], capsys)
    assert status == 1 and "was built from" in err and "--schema" in err


@pytest.mark.embeddings
def test_an_unreachable_database_url_is_one_line_and_status_1(command_env, capsys, monkeypatch):
    monkeypatch.setenv("RAGCOURSE_DATABASE_URL", "postgresql://nobody:secret@127.0.0.1:1/none")
    status, _, err = run_command(["ask", "anything", "--corpus", str(command_env)], capsys)
    assert status == 1
    assert "RAGCOURSE_DATABASE_URL" in err and "secret" not in err and "Traceback" not in err


@pytest.mark.database
@pytest.mark.embeddings
def test_search_postgres_without_the_default_index_names_the_command(command_env, capsys):
    status, _, err = run_command(["search", "join arrays", "--retriever", "postgres"], capsys)
    assert status == 1 and "python -m ragcourse index" in err


def test_a_server_without_pgvector_names_the_extension_and_the_way_back(monkeypatch):
    """CREATE EXTENSION failing (no pgvector on that server) ends in DatabaseUnavailable naming the fix."""
    import psycopg

    from ragcourse.rag.database import Database, DatabaseUnavailable

    class NoVector:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def execute(self, statement, *args):
            raise psycopg.errors.UndefinedFile('could not open extension control file "vector.control"')

    database = Database("postgresql://me:secret@db.example/prod", embedded=False)
    monkeypatch.setattr(Database, "connect", lambda self, autocommit=True, vector=True: NoVector())
    with pytest.raises(DatabaseUnavailable) as raised:
        database.ensure_vector()
    message = str(raised.value)
    assert "no pgvector extension" in message and "RAGCOURSE_DATABASE_URL" in message
    assert "secret" not in message and "me:***@db.example" in message
