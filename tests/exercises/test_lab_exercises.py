"""The exercises of labs 01 to 04: realistic mistakes fail with a useful message, the notebooks follow the rules.

The blank ("not done yet"), the solution (passes) and the prediction tests run over every set,
labs included, in ``test_exercise_checks.py``; this file adds what only the labs have: the
mutations of their build-it questions (each rejected with tried/expected/got/hint and without
the solution's lines), other correct answers, typed-in numbers for the measure-it questions,
the student versions' hygiene (a lab has no SEED), the site listing them, and a database check
that leaves nothing behind. The references are computed from the corpus when a check runs, so
nothing here depends on the corpus's size.
"""
from __future__ import annotations

import ast
import json
import math
import re
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragcourse.engines.dense import dense_ranking
from ragcourse.engines.lexical import LexicalIndex, lexical_tokens
from ragcourse.engines.retrievers import Bm25Retriever, HybridRetriever, collapse, measure
from ragcourse.engines.tfidf import tfidf_tokens
from ragcourse.corpus.queries import judgements
from ragcourse.exercises.framework import EXERCISE_SETS, FAILED, is_lab_set, load_set, set_number
from ragcourse.exercises.labs import lab01, lab02, lab03
from ragcourse.exercises.notebooks import MASTER_ONLY_TAG, describe_notebook, student_path
from ragcourse.rag.store import Check
from support.exercises import assert_every_build_rejects_two, assert_mistake_rejected
from support.marks import EXERCISE_GROUPS, by_exercise_set

LABS = [name for name in EXERCISE_SETS if is_lab_set(name)]
L1, L2, L4 = "lab01-lexical-baseline", "lab02-evaluation-chunks-and-dense", "lab04-postgres-baseline"
L3 = "lab03-rag-practice"
ROOT = Path(__file__).resolve().parents[2]
LAB_NOTEBOOKS = {1: "01-lexical-baseline", 2: "02-evaluation-chunks-and-dense", 3: "03-rag-practice",
                 4: "04-postgres-baseline"}


def test_the_lab_sets_and_their_kinds():
    assert LABS == [L1, L2, L3, L4], "one set per lab, in the labs' order"
    for name in LABS:
        exercise_set = load_set(name)
        kinds = [q.kind for q in exercise_set.questions]
        assert 2 <= len(kinds) <= 4 and "build" in kinds and "predict" in kinds, (name, kinds)
        assert exercise_set.is_lab and exercise_set.lesson == set_number(name) and exercise_set.seconds


# ---------------------------------------------------------------- lab 01: wrong answers a student might write

def _lab01_search(query, chunks, top_k, *, ties="address", repeats=False, counts=False, plain=False):
    token_lists = [lexical_tokens(c.text) for c in chunks]
    df = Counter(t for tokens in token_lists for t in set(tokens))
    asked = lexical_tokens(query) if repeats else sorted(set(lexical_tokens(query)))
    scored = []
    for number, (chunk, tokens) in enumerate(zip(chunks, token_lists)):
        shared = [t for t in asked if t in tokens]
        if shared:
            weight = (lambda t: math.log(len(chunks) / df[t])) if plain else (lambda t: math.log(1 + len(chunks) / df[t]))
            score = sum(weight(t) * (tokens.count(t) if counts else 1) for t in shared)
            key = (-score, number) if ties == "list" else (-score, chunk.doc_id, chunk.position)
            scored.append((key, chunk.chunk_id, score))
    scored.sort(key=lambda item: item[0])
    return [(cid, score) for _, cid, score in scored[:top_k]]


def _lab01_cause(question, index, stemmed, k, *, shared_first=False, chunk_depth=False, always=False):
    def pages(lexical_index):
        ranked = lexical_index.ranked(question.text)
        if chunk_depth:
            return [lexical_index.chunks[n].doc_id for n, _ in ranked]
        return [h.doc_id for h in collapse((lexical_index.chunks[n], s) for n, s in ranked)]

    relevant = set(question.relevant)
    ranked_pages = pages(index)
    if relevant & set(ranked_pages[:k]) and not always:
        return "found"
    if not ranked_pages:
        return "no answer at all"
    asked = set(lexical_tokens(question.text))
    shared = any(asked & index.token_sets[n] for n, c in enumerate(index.chunks) if c.doc_id in relevant)
    if shared_first and shared:
        return "common words win"
    if relevant & set(pages(stemmed)[:k]):
        return "word form"
    return "common words win" if shared else "no shared word"


# ---------------------------------------------------------------- lab 02

def _lab02_fit(texts, *, raw_tf=False, unsmoothed=False, no_norm=False, tokens=tfidf_tokens):
    counts = [Counter(tokens(t)) for t in texts]
    df = Counter(term for c in counts for term in c)
    n = len(texts)
    idf = {t: (math.log(n / d) if unsmoothed else math.log((1 + n) / (1 + d))) + 1 for t, d in df.items()}
    vectors = []
    for c in counts:
        weights = {t: (tf if raw_tf else 1 + math.log(tf)) * idf[t] for t, tf in c.items()}
        norm = 1.0 if no_norm else (math.sqrt(sum(w * w for w in weights.values())) or 1.0)
        vectors.append({t: w / norm for t, w in weights.items()})
    return idf, vectors


def _lab02_smoke(encode, units, questions, *, normalise=False, pages=True, one_at_a_time=False):
    vectors = np.asarray(encode([u.text for u in units]))
    queries = (np.vstack([encode([q.text]) for q in questions]) if one_at_a_time
               else np.asarray(encode([q.text for q in questions])))
    if normalise:
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    runs = {}
    for question, query in zip(questions, queries):
        order, scores = dense_ranking(vectors, query)
        ranked = list(zip(order.tolist(), scores.tolist()))
        runs[question.qid] = ([h.doc_id for h in collapse((units[n], s) for n, s in ranked)] if pages
                              else [units[n].doc_id for n, _ in ranked])
    mrr = measure(runs, judgements(questions))["mrr"]
    return mrr, mrr >= lab02.tfidf_mrr() - 0.05


# ---------------------------------------------------------------- lab 03

def _lab03_labels(questions, chunks, pages, k, *, page_depth=False, every=False, split_first=False, from_zero=False):
    from ragcourse.labs.failures import stemmed_tokens
    from ragcourse.labs.practice import CAUSES, Evidence, failure_cause, first_rank, word_share

    bm25 = Bm25Retriever(chunks.chunks)
    by_id = {d.doc_id: d for d in lab03.subset_documents()}
    labels = {}
    for question, vector in zip(questions, chunks.encoder.encode([q.text for q in questions])):
        order, scores = dense_ranking(chunks.vectors, vector)
        ids = [chunks.chunks[n].doc_id for n in order.tolist()]
        top = [h.doc_id for h in collapse(zip((chunks.chunks[n] for n in order.tolist()), scores.tolist()))] \
            if page_depth else ids
        if set(top[:k]) & set(question.relevant) and not every:
            continue
        rank = first_rank(ids, question.relevant)
        evidence = Evidence(
            dense_rank=None if rank is None else rank - from_zero,
            bm25_hit=bool({chunks.chunks[n].doc_id for n in bm25.matched_ranking(question.text)[:k]}
                          & set(question.relevant)),
            page_hit=bool({h.doc_id for h in pages.search_vector(vector)[:k]} & set(question.relevant)),
            word_share=max(word_share(stemmed_tokens(question.text), set(stemmed_tokens(by_id[r].text)))
                           for r in question.relevant),
            style=question.style)
        labels[question.qid] = CAUSES[1] if split_first and evidence.page_hit else failure_cause(evidence, k)
    return labels


def _lab03_fusion(bm25, dense, text, constant=60, *, every_chunk=False, from_zero=False, pages_first=False):
    from ragcourse.labs.practice import rrf

    if every_chunk:
        lexical = np.argsort(-np.asarray(bm25.index.scores(text)), kind="stable").tolist()
    else:
        lexical = bm25.matched_ranking(text)
    lists = [lexical, dense.full_ranking(text)]
    if pages_first:
        lists = [[h.doc_id for h in collapse((dense.chunks[n], -p) for p, n in enumerate(r))] for r in lists]
        return [page for page, _ in rrf(lists, constant)]
    scores = {}
    for ranking in lists:
        for rank, n in enumerate(ranking, start=0 if from_zero else 1):
            scores[n] = scores.get(n, 0.0) + 1 / (constant + rank)
    fused = sorted(scores, key=lambda n: (-scores[n], n))
    return [h.doc_id for h in collapse((dense.chunks[n], scores[n]) for n in fused)]


# ---------------------------------------------------------------- lab 04

POLICY = "CREATE POLICY {policy} ON {s}.%s FOR SELECT TO {role} USING (tenant = {tenant})"


def _lab04_gaps(index, *, off_by_one=False, first_only=False, missing_chunks=False):
    with index.connection.transaction():
        rows = index.connection.execute(index.sql(
            "SELECT s.path, count(*), min(c.ordinal), max(c.ordinal) FROM {s}.sources s JOIN {s}.chunks c "
            "USING (source_id) GROUP BY s.path ORDER BY s.path")).fetchall()
    if first_only:
        bad = [(p, 1) for p, n, low, high in rows if low != 0]
    elif off_by_one:
        bad = [(p, 1) for p, n, low, high in rows if n != high]
    else:
        bad = [(p, high + 1 - n) for p, n, low, high in rows if n != high + 1]
    found = sum(m for _, m in bad) if missing_chunks else len(bad)
    return Check("gaps", not bad, found, tuple(p for p, _ in bad[:3]))


def _lab04_lost(trace, relevant, *, dense_only=False, admitted_only=False, raw_citations=False):
    from ragcourse.rag.reader import citation_doc_id

    wanted = set(relevant)
    first = set(trace.documents("dense")) if dense_only else \
        set(trace.documents("full text")) | set(trace.documents("dense"))
    if admitted_only:
        first = set(trace.documents("admitted"))
    if not wanted & first:
        return "retrieval"
    if not admitted_only and not wanted & set(trace.documents("reranked")):
        return "reranking"
    if not wanted & set(trace.documents("admitted")):
        return "assembly"
    cited = set(trace.answer.citations) if raw_citations else {citation_doc_id(c) for c in trace.answer.citations}
    if not wanted & cited:
        return "reader"
    return "cited"


MUTATIONS = [  # (exercise set, question, the mistake, a wrong answer that makes it, what its hint must say)
    (L1, "q3", "ties left in list order", lambda q, c, k: _lab01_search(q, c, k, ties="list"), "never by where"),
    (L1, "q3", "repeated query tokens counted twice", lambda q, c, k: _lab01_search(q, c, k, repeats=True),
     "counted twice"),
    (L1, "q3", "a chunk's repeats counted", lambda q, c, k: _lab01_search(q, c, k, counts=True), "however often"),
    (L1, "q3", "log(N / df) without the one", lambda q, c, k: _lab01_search(q, c, k, plain=True), "not log(N / df)"),
    (L1, "q4", "common words checked before word forms",
     lambda *a: _lab01_cause(*a, shared_first=True), "table's order"),
    (L1, "q4", "the top k chunks instead of pages", lambda *a: _lab01_cause(*a, chunk_depth=True),
     "count pages, not chunks"),
    (L1, "q4", "a cause for every question, hits too", lambda *a: _lab01_cause(*a, always=True), "not a miss"),
    (L2, "q1", "raw term frequency", lambda texts: _lab02_fit(texts, raw_tf=True), "not as tf itself"),
    (L2, "q1", "idf not smoothed", lambda texts: _lab02_fit(texts, unsmoothed=True), "smooth the idf"),
    (L2, "q1", "vectors not scaled to length 1", lambda texts: _lab02_fit(texts, no_norm=True), "length 1"),
    (L2, "q1", "single characters kept", lambda texts: _lab02_fit(texts, tokens=lexical_tokens), "tfidf_tokens"),
    (L2, "q4", "vectors normalised inside the test", lambda *a: _lab02_smoke(*a, normalise=True), "hides"),
    (L2, "q4", "chunks scored without the collapse to pages", lambda *a: _lab02_smoke(*a, pages=False),
     "collapse the chunk ranking"),
    (L3, "q1", "k pages instead of k chunks", lambda *a: _lab03_labels(*a, page_depth=True), "not k pages"),
    (L3, "q1", "every question labelled, hits too", lambda *a: _lab03_labels(*a, every=True), "only the failures"),
    (L3, "q1", "the split rule tried before the exact term", lambda *a: _lab03_labels(*a, split_first=True),
     "table's order"),
    (L3, "q1", "ranks counted from 0", lambda *a: _lab03_labels(*a, from_zero=True), "counts from 1"),
    (L3, "q3", "BM25's unmatched chunks fused too", lambda *a: _lab03_fusion(*a, every_chunk=True),
     "did not match has no BM25 rank"),
    (L3, "q3", "ranks counted from 0", lambda *a: _lab03_fusion(*a, from_zero=True), "ranks count from 1"),
    (L3, "q3", "pages fused instead of chunks", lambda *a: _lab03_fusion(*a, pages_first=True),
     "then collapse the fused ranking"),
    (L4, "q2", "a policy on chunks only", lambda: [POLICY % "chunks"], "each of the two tables"),
    (L4, "q2", "keyed on the session setting the tenant can change",
     lambda: ["CREATE POLICY {policy} ON {s}.%s FOR SELECT TO {role} USING "
              "(tenant = current_setting('ragcourse.tenant', true))" % t for t in ("sources", "chunks")],
     "cannot choose"),
    (L4, "q2", "no TO clause: a policy for every role",
     lambda: ["CREATE POLICY {policy} ON {s}.%s FOR SELECT USING (tenant = {tenant})" % t
              for t in ("sources", "chunks")], "name the new tenant's role"),
    (L4, "q3", "off by one: count against max(ordinal)", lambda index: _lab04_gaps(index, off_by_one=True),
     "ordinals 0 to n - 1"),
    (L4, "q3", "only the first ordinal looked at", lambda index: _lab04_gaps(index, first_only=True),
     "highest ordinal + 1"),
    (L4, "q3", "lost chunks counted instead of sources", lambda index: _lab04_gaps(index, missing_chunks=True),
     "counts sources"),
    (L4, "q4", "the dense path only", lambda t, r: _lab04_lost(t, r, dense_only=True), "full-text list"),
    (L4, "q4", "stages skipped", lambda t, r: _lab04_lost(t, r, admitted_only=True), "stages in order"),
    (L4, "q4", "citations (source#ordinal) compared with page ids as they are",
     lambda t, r: _lab04_lost(t, r, raw_citations=True), "cites a relevant page"),
]


@pytest.mark.parametrize("name, key, mistake, wrong, hint", by_exercise_set(MUTATIONS),
                         ids=[f"{n[:5]}-{k}-{m.replace(' ', '_')}" for n, k, m, _, _ in MUTATIONS])
def test_a_realistic_mistake_is_rejected_with_a_useful_message(name, key, mistake, wrong, hint):
    assert_mistake_rejected(name, key, mistake, wrong, hint)


def test_every_lab_build_question_rejects_at_least_two_mistakes():
    assert_every_build_rejects_two(LABS, MUTATIONS)


@pytest.mark.parametrize("name, key, wrong", by_exercise_set([
    (L1, "q3", lambda q, c, k: [(cid, float("nan")) for cid, _ in lab01.reference_search(q, c, k)]),
    (L2, "q1", lambda texts: (lambda idf, vectors: ({t: float("nan") for t in idf}, vectors))(*_lab02_fit(texts))),
    (L2, "q1", lambda texts: (lambda idf, vectors: (idf, [{t: float("nan") for t in v} for v in vectors]))(
        *_lab02_fit(texts))),
]), ids=["lab01-nan-scores", "lab02-nan-idf", "lab02-nan-weights"])
def test_a_number_that_is_not_a_number_fails(name, key, wrong):
    """NaN is off by any tolerance: right ids with NaN scores, or NaN weights, fail (abs(nan - x) > t is False)."""
    verdict = load_set(name).verdict(key, wrong)
    assert verdict.status == FAILED and "nan" in verdict.text().lower(), verdict.text()


# ---------------------------------------------------------------- other correct answers pass

@pytest.mark.parametrize("name, key, answer", by_exercise_set([
    (L1, "q3", lambda q, c, k: [(h.chunk.chunk_id, h.score) for h in LexicalIndex(c).search(q, k)]),
    (L4, "q2", lambda: ["CREATE POLICY {policy} ON {s}.%s AS PERMISSIVE FOR ALL TO {role} USING (tenant = {tenant})"
                        % t for t in ("sources", "chunks")]),
    (L3, "q1", lambda questions, chunks, pages, k: lab03.reference_labels(questions, chunks, pages, k)),
    (L3, "q3", lambda bm25, dense, text, constant: [h.doc_id for h in HybridRetriever(bm25, dense, constant).search(text)]),
    (L3, "q3", lambda bm25, dense, text, constant: _lab03_fusion(bm25, dense, text, constant)),
]), ids=["package-index", "for-all-policy", "lab03-reference-labels", "lab03-hybrid-retriever", "lab03-by-hand"])
def test_other_correct_answers_pass(name, key, answer):
    verdict = load_set(name).verdict(key, answer)
    assert verdict.passed, verdict.text()


# ---------------------------------------------------------------- measure it: typed-in numbers fail

@pytest.mark.parametrize("name, key, typed", by_exercise_set([
    (L1, "q2", lambda: lab01.side_report(lab01.SMALLER)),
    (L2, "q2", lambda: (lab02.setup_scores("dense", "chunked")["recall@5"], lab02.setup_scores("dense", "chunked")["mrr"])),
    (L3, "q2", lambda: lab03.bakeoff_row(lab03.ASKED_CHARS)),
]), ids=["lab01", "lab02", "lab03"])
def test_a_number_typed_in_fails(name, key, typed):
    answer = typed()
    verdict = load_set(name).verdict(key, lambda *args: answer)
    assert verdict.status == FAILED and "expected:" in verdict.text(), verdict.text()


@pytest.mark.parametrize("bad", [[], "how do I sort", [("sort an array", "numpy.sort")], [("", ["numpy.sort"])],
                                 [("sort an array", ["numpy.nowhere"])]])
def test_lab03_own_questions_are_checked(bad):
    with pytest.raises(ValueError, match="MY_QUESTIONS must be"):
        lab03.check_own_questions("MY_QUESTIONS", bad)
    good = lab03.check_own_questions("MY_QUESTIONS", [("sort an array", ["numpy.sort"])])
    assert good[0].qid == "my1" and good[0].relevant == ("numpy.sort",)


@pytest.mark.embeddings(*EXERCISE_GROUPS[3])   # the five self-checks are measured on lab 03's subset
def test_lab03_predictions_need_all_five_and_explain_each():
    exercise_set = load_set(L3)
    assert exercise_set.verdict("q4", ...).status == "not done yet"
    verdict = exercise_set.verdict("q4", "b, b, b, b, b")
    assert verdict.status == FAILED and "question 4" in verdict.text() and verdict.text().count("measured:") == 5
    partial = exercise_set.verdict("q4", "bb")
    assert partial.status == FAILED and "not answered yet" in partial.text()
    assert partial.text().count("measured:") == 2, "only the answered questions are explained"
    for typo in ("bbbabb", "bxbab", 5):
        assert "measured:" not in exercise_set.verdict("q4", typo).text()


@pytest.mark.database
def test_a_bad_statement_fails_cleanly_and_the_database_is_gone(tmp_path, monkeypatch):
    """A statement PostgreSQL rejects is reported as such; no scratch folder or server outlives the check."""
    # A temporary folder of its own: another test's check may be running beside this one (pytest-xdist).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    verdict = load_set(L4).verdict("q2", lambda: ["CREATE POLICY {policy} ON {s}.nowhere USING (true)"])
    assert verdict.status == FAILED and "a statement PostgreSQL accepts" in verdict.text(), verdict.text()
    assert not list(tmp_path.glob("ragcourse-*"))   # neither the exercise's files nor the database's folder


# ---------------------------------------------------------------- the student versions

@pytest.mark.parametrize("name", LABS)
def test_lab_student_version_hygiene(name):
    """A lab's rules: title, one imports cell, literal parameters (no SEED), validation, a clean run, links."""
    path = student_path(name)
    assert path.parent.name == "labs" and path.parent.parent.name == "exercises"
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    cells = nb["cells"]
    number = set_number(name)
    assert "".join(cells[0]["source"]).startswith(f"# Lab exercises {number:02d} · ")
    code = [c for c in cells if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    assert all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in ast.parse("".join(code[0]["source"])).body)
    assert not any(re.search(r"^\s*(from|import) ", "".join(c["source"]), re.M) for c in code[1:])
    params = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1 and code[1] is params[0]
    source = "".join(params[0]["source"])
    assert "SEED" not in source, "real text has no world to draw"

    for node in ast.parse(source).body:
        assert isinstance(node, ast.Assign)
        ast.literal_eval(node.value)
    assert "check_" in "".join(code[2]["source"]), "validation right after the parameters"
    for cell in cells:
        assert MASTER_ONLY_TAG not in cell.get("metadata", {}).get("tags", [])
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error" and output.get("name") != "stderr", output
    text = json.dumps(nb)
    assert "SOLUTION" not in text
    assert f"../../labs/{LAB_NOTEBOOKS[number]}.ipynb" in text, "a link back to the lab"
    assert (ROOT / "notebooks" / "labs" / f"{LAB_NOTEBOOKS[number]}.ipynb").is_file()
    assert describe_notebook(nb)[0] == name


def test_the_site_lists_the_lab_exercises_after_the_lessons():
    import importlib.util

    pytest.importorskip("yaml")
    spec = importlib.util.spec_from_file_location("site_build_for_test", ROOT / "site" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    listed = [p.relative_to(ROOT / "notebooks" / "exercises").as_posix() for p in build.exercises()]
    labs = [f"labs/{name}.ipynb" for name in LABS]
    assert listed[-len(labs):] == labs and not any("master" in p for p in listed)
