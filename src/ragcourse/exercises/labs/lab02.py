"""Exercises of lab 02: TF-IDF written out, the dense model swapped in, and a smoke test that catches a fault.

q1 (build) fits the TF-IDF weighting of the minimal pipeline lab 02 follows and is compared with the package's ``TfidfIndex``
(which equals scikit-learn's ``TfidfVectorizer``), then reproduces the lab's whole-page
self-retrieval with it; q2 (measure) runs one measurement function over TF-IDF and dense
retrievers on a subset of pages the lab did not print; q3 (predict) and q4 (build) are the
self-retrieval smoke test run on misconfigured encoders.

The subset (``SUBSET_MODULES``: numpy.linalg and numpy.fft) keeps a cold run short: its windows
and pages are a few hundred texts to embed, not thousands. Dense numbers are compared within
``DENSE_TOLERANCE`` (both sides read the same cached vectors); everything else to 1e-12.
"""
from __future__ import annotations

import math
import numbers
from collections import Counter
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from ...corpus.queries import Question, judgements, self_retrieval
from ...engines.chunking.text_chunks import TextChunk, chunk_corpus, word_windows
from ...engines.dense import DenseEncoder, dense_ranking
from ...engines.lexical import lexical_tokens
from ...engines.retrievers import DenseRetriever, TfidfRetriever, collapse, measure, run_questions
from ...engines.tfidf import TfidfIndex, tfidf_tokens
from ...labs.embedding_plan import LAB02_EXERCISE_MODULES, LAB02_EXERCISE_WINDOW
from .shared import corpus
from ..framework import (Exercise, ExerciseSet, Mismatch, as_number, call, check_choice, expect_number,
                         expect_pair, first_hint, require_function, shown)

SUBSET_MODULES = LAB02_EXERCISE_MODULES        # planned for embedding by ``labs.embedding_plan``
WINDOW, OVERLAP = LAB02_EXERCISE_WINDOW
EXACT = 1e-12
# Dense numbers: the check and the student read the same cached vectors in the same process, so only a
# different order of additions can move a digit; a real difference (one question one place lower) is far larger.
DENSE_TOLERANCE = 1e-6
SMOKE_MARGIN = 0.05       # the smoke test flags an encoder whose MRR is more than this below TF-IDF's
TRUNCATED_WORDS = 8


# ---------------------------------------------------------------- the pieces, built once per process

@lru_cache(maxsize=1)
def subset_documents() -> tuple:
    """The pages of ``SUBSET_MODULES``."""
    return tuple(d for d in corpus().documents if d.module in SUBSET_MODULES)


@lru_cache(maxsize=1)
def subset_pages() -> tuple[TextChunk, ...]:
    """Each subset page as one unit."""
    return tuple(TextChunk(d.doc_id, 0, d.text) for d in subset_documents())


@lru_cache(maxsize=1)
def subset_windows() -> tuple[TextChunk, ...]:
    """The subset's windows of 60 words, overlapping by 20 (the lab's chunks)."""
    return tuple(chunk_corpus(subset_documents(), word_windows, size=WINDOW, overlap=OVERLAP))


@lru_cache(maxsize=1)
def subset_questions() -> tuple[Question, ...]:
    """The self-retrieval questions of the subset's pages."""
    ids = {d.doc_id for d in subset_documents()}
    return tuple(q for q in self_retrieval(corpus()) if q.relevant[0] in ids)


@lru_cache(maxsize=1)
def encoder() -> DenseEncoder:
    """The lab's encoder behind the shared embedding cache."""
    return DenseEncoder()


# ---------------------------------------------------------------- q1: build TF-IDF

MADE_UP_TEXTS = (
    ("sort sort sort an array", "array axis", "a b c sort", "the and of"),
    ("fft fft inverse transform", "inverse matrix", "matrix matrix matrix matrix", "transform x y z"),
    ("Eigenvalues of a MATRIX.", "eigenvalues, eigenvectors", "eigenvalues eigenvalues"),
)


def tfidf_variant(texts: Sequence[str], *, raw_tf: bool = False, unsmoothed: bool = False, no_one: bool = False,
                  no_norm: bool = False, tokens: Callable[[str], list[str]] = tfidf_tokens):
    """TF-IDF with one rule changed: what a likely mistake returns (for hints and tests)."""
    counts = [Counter(tokens(t)) for t in texts]
    df: Counter = Counter()
    for c in counts:
        df.update(c.keys())
    n = len(texts)
    if unsmoothed:
        idf = {t: math.log(n / d) + 1.0 for t, d in df.items()}
    else:
        idf = {t: math.log((1 + n) / (1 + d)) + (0.0 if no_one else 1.0) for t, d in df.items()}
    vectors = []
    for c in counts:
        weights = {t: (k if raw_tf else 1 + math.log(k)) * idf[t] for t, k in c.items()}
        norm = 1.0 if no_norm else (math.sqrt(sum(w * w for w in weights.values())) or 1.0)
        vectors.append({t: w / norm for t, w in weights.items()})
    return idf, vectors


TFIDF_HINTS = (
    ({"raw_tf": True}, "a term's count enters as 1 + log(tf), not as tf itself (sublinear term frequency)"),
    ({"unsmoothed": True}, "smooth the idf: log((1 + N) / (1 + df)) + 1, as if one extra unit held every term"),
    ({"no_one": True}, "the idf ends in + 1: a term found in every unit still weighs something"),
    ({"no_norm": True}, "scale every vector to length 1, so that a dot product is a cosine"),
    ({"tokens": lexical_tokens}, "use tfidf_tokens: lab 01's tokens without the single characters"),
)


def _fitted(got: Any, tried: str) -> tuple[dict, list]:
    got = expect_pair(got, tried, "idf, vectors", "return the idf dict and the list of vectors: `return idf, vectors`")
    idf, vectors = got
    if not isinstance(idf, dict) or not isinstance(vectors, (list, tuple)) or \
            not all(isinstance(v, dict) for v in vectors):
        raise Mismatch(tried, "a dict of idf weights and a list of dicts (one per text)",
                       f"{type(idf).__name__} and {type(vectors).__name__}",
                       "idf maps each term to its weight; vectors[i] maps each term of text i to its weight")
    return idf, list(vectors)


def _compare_fit(got: tuple[dict, list], texts: Sequence[str], where: str) -> int:
    """Mismatch unless the student's (idf, vectors) equal TfidfIndex's; the number of weights compared."""
    idf, vectors = got
    reference = TfidfIndex(list(texts))
    tried = f"tfidf_fit({where})"

    def hint():
        variants = [(lambda flags=flags: tfidf_variant(texts, **flags), text) for flags, text in TFIDF_HINTS]
        return first_hint((idf, vectors), variants, "weight = (1 + log tf) * idf with idf = log((1 + N) / (1 + df))"
                          " + 1, over tfidf_tokens, each vector scaled to length 1")

    if set(idf) != set(reference.idf):
        extra, missing = sorted(set(idf) - set(reference.idf)), sorted(set(reference.idf) - set(idf))
        raise Mismatch(f"{tried}: the idf's terms", f"{len(reference.idf)} terms", f"{len(idf)} terms"
                       + (f" (extra: {shown(extra[:4])})" if extra else "")
                       + (f" (missing: {shown(missing[:4])})" if missing else ""), hint())
    def expect(value, expected, where):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
                or abs(value - expected) > EXACT:   # NaN is off too (abs(nan - x) > EXACT is False)
            expect_number(value, expected, where, hint(), tolerance=EXACT)

    for term in sorted(reference.idf):
        expect(idf[term], reference.idf[term], f"{tried}: idf[{term!r}]")
    if len(vectors) != len(reference.vectors):
        raise Mismatch(f"{tried}: the vectors", f"{len(reference.vectors)} vectors (one per text)",
                       f"{len(vectors)} vectors", "return one vector per text, in the texts' order")
    compared = 0
    for number, (vector, expected) in enumerate(zip(vectors, reference.vectors)):
        if set(vector) != set(expected):
            raise Mismatch(f"{tried}: the terms of vector {number}", shown(sorted(expected)), shown(sorted(vector)),
                           hint())
        for term in sorted(expected):
            expect(vector[term], expected[term], f"{tried}: vectors[{number}][{term!r}]")
            compared += 1
    return compared


def index_from(idf: dict, vectors: list) -> TfidfIndex:
    """A TfidfIndex that searches with given weights (the package's search over the student's vectors)."""
    built = TfidfIndex.__new__(TfidfIndex)
    built.idf, built.vectors, built.postings = dict(idf), list(vectors), {}   # tokenize: the class default
    for number, vector in enumerate(vectors):
        for term in vector:
            built.postings.setdefault(term, []).append(number)
    return built


def self_retrieval_with(searcher: TfidfIndex, units: Sequence[TextChunk], questions: Sequence[Question]) -> dict:
    """Recall@k and MRR of self-retrieval over ``units`` searched by ``searcher`` (chunks collapsed to pages)."""
    runs = {q.qid: [h.doc_id for h in collapse((units[n], s) for n, s in searcher.search(q.text))] for q in questions}
    return measure(runs, judgements(list(questions)))


def sklearn_agreement(vectors: list, texts: Sequence[str]) -> tuple[int, int]:
    """(weights within 1e-12 of scikit-learn's TfidfVectorizer, weights scikit-learn has)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    library = TfidfVectorizer(analyzer=tfidf_tokens, sublinear_tf=True, smooth_idf=True, norm="l2")
    matrix = library.fit_transform(list(texts)).tocsr()
    names = library.get_feature_names_out()
    agree = 0
    for row in range(matrix.shape[0]):
        span = slice(matrix.indptr[row], matrix.indptr[row + 1])
        for column, value in zip(matrix.indices[span], matrix.data[span]):
            agree += abs(vectors[row].get(names[column], math.inf) - value) <= EXACT
    return agree, int(matrix.nnz)


def check_tfidf(answer: Any) -> list[str]:
    """tfidf_fit equals TfidfIndex on made-up texts, the subset's windows and every page; then the lab's ranking."""
    fit = require_function(answer, "tfidf_fit")
    compared = 0
    cases = [(list(texts), f"made-up texts {number}") for number, texts in enumerate(MADE_UP_TEXTS, start=1)]
    windows = [c.text for c in subset_windows()]
    cases.append((windows, f"the {len(windows)} windows of {' and '.join(SUBSET_MODULES)}"))
    for texts, where in cases:
        got = _fitted(call(fit, "tfidf_fit", (texts,), f"tfidf_fit({where})"), f"tfidf_fit({where})")
        compared += _compare_fit(got, texts, where)
    agree, total = sklearn_agreement(got[1], windows)
    pages = [TextChunk(d.doc_id, 0, d.text) for d in corpus().documents]
    questions = self_retrieval(corpus())
    where = f"all {len(pages)} whole pages"
    idf, vectors = _fitted(call(fit, "tfidf_fit", ([p.text for p in pages],), f"tfidf_fit({where})"),
                           f"tfidf_fit({where})")
    yours = self_retrieval_with(index_from(idf, vectors), pages, questions)
    lab = self_retrieval_with(TfidfRetriever(pages).index, pages, questions)
    for key in ("recall@1", "mrr"):
        expect_number(yours[key], lab[key], f"self-retrieval {key} over {where}, searched with your weights",
                      "your weights agree on the smaller inputs; check terms that occur in many pages", tolerance=EXACT)
    return [f"tfidf_fit agrees with the package's TfidfIndex on {compared:,} weights (made-up texts and the"
            " subset's windows) and on every idf;",
            f"{agree:,} of scikit-learn's {total:,} weights on those windows are within 1e-12 of yours.",
            f"Searched with your weights, whole-page self-retrieval over {len(pages)} pages gives the lab's"
            f" Recall@1 {yours['recall@1']:.3f} and MRR {yours['mrr']:.3f}."]


# ---------------------------------------------------------------- q2: measure, with the embedding swapped

@lru_cache(maxsize=4)
def retriever(embedding: str, unit: str):
    """One of the four setups over the subset (``tfidf``/``dense``, ``whole``/``chunked``)."""
    units = list(subset_pages() if unit == "whole" else subset_windows())
    return TfidfRetriever(units) if embedding == "tfidf" else DenseRetriever(units, encoder())


@lru_cache(maxsize=4)
def setup_scores(embedding: str, unit: str) -> dict:
    """The reference measurement of one setup: Recall@1/5/10, MRR, nDCG@10."""
    questions = list(subset_questions())
    return measure(run_questions(retriever(embedding, unit), questions), judgements(questions))


SETUP_PROBES = (("tfidf", "whole", True), ("tfidf", "chunked", True), ("dense", "whole", True),
                ("dense", "chunked", False))


def check_evaluate(answer: Any) -> list[str]:
    """evaluate(retriever, questions) gives (Recall@5, MRR) of the reference for four setups, dense chunked last."""
    evaluate = require_function(answer, "evaluate")
    questions = list(subset_questions())
    for embedding, unit, reveal in SETUP_PROBES:
        tried = f"evaluate({embedding} retriever over the subset's {'pages' if unit == 'whole' else 'windows'}," \
                f" {len(questions)} questions)"
        got = expect_pair(call(evaluate, "evaluate", (retriever(embedding, unit), questions), tried), tried,
                          "recall_at_5, mrr", "return two numbers: `return recall_at_5, mrr`")
        expected = setup_scores(embedding, unit)
        tolerance = EXACT if embedding == "tfidf" else DENSE_TOLERANCE
        hints = [(lambda: (expected["recall@1"], expected["mrr"]), "that is Recall@1: return Recall@5"),
                 (lambda: (expected["recall@10"], expected["mrr"]), "that is Recall@10: return Recall@5"),
                 (lambda: (expected["mrr"], expected["recall@5"]), "the pair is (recall_at_5, mrr), in that order")]
        hint = first_hint(tuple(got), hints, "run every question through retriever (run_questions) and score the"
                          " rankings against judgements(questions) with measure: Recall@5 and MRR")
        for value, key in zip(got, ("recall@5", "mrr")):
            expect_number(value, expected[key], f"{tried}, its {key}", hint, tolerance=tolerance, reveal=reveal)
    rows = [f"  {e:<6} {u:<8} R@1 {setup_scores(e, u)['recall@1']:.3f}  R@5 {setup_scores(e, u)['recall@5']:.3f}"
            f"  MRR {setup_scores(e, u)['mrr']:.3f}" for e, u, _ in SETUP_PROBES]
    return [f"evaluate matches the reference for all four setups ({len(questions)} self-retrieval questions of"
            f" {' and '.join(SUBSET_MODULES)}; dense within {DENSE_TOLERANCE:g}):", *rows,
            "One function measured all four: only the retriever you handed it changed. That is what makes the",
            "comparison fair: the embedding is the only difference between two rows of the same unit."]


# ---------------------------------------------------------------- q3 and q4: the smoke test on faulty encoders

def healthy(texts: Sequence[str]) -> np.ndarray:
    """The lab's encoder, as it should be: unit vectors, one row per text, in order."""
    return encoder().encode(list(texts))


def truncated(texts: Sequence[str]) -> np.ndarray:
    """A misconfigured encoder that reads only the first few words of every text."""
    return encoder().encode([" ".join(t.split()[:TRUNCATED_WORDS]) for t in texts])


def sorted_rows(texts: Sequence[str]) -> np.ndarray:
    """A misconfigured encoder that hands back its rows in the order of the sorted texts (a batching bug)."""
    vectors = encoder().encode(list(texts))
    return vectors[sorted(range(len(texts)), key=lambda i: texts[i])]


def unnormalised(texts: Sequence[str]) -> np.ndarray:
    """A misconfigured encoder whose vectors are not scaled to length 1 (longer texts come out longer)."""
    vectors = encoder().encode(list(texts))
    return vectors * np.array([[1.0 + len(t) / 100.0] for t in texts], dtype=np.float32)


ENCODERS = (("healthy", healthy, "the lab's encoder"),
            ("truncated", truncated, f"reads only the first {TRUNCATED_WORDS} words of each text"),
            ("sorted rows", sorted_rows, "returns its rows in sorted-text order"),
            ("unnormalised", unnormalised, "skips the scaling to length 1"))


def smoke_mrr(encode: Callable, units: Sequence[TextChunk], questions: Sequence[Question], *,
              normalise: bool = False, collapse_pages: bool = True) -> float:
    """Self-retrieval MRR with ``encode``'s vectors: units and questions encoded in one call each, dot product."""
    vectors = np.asarray(encode([u.text for u in units]))
    queries = np.asarray(encode([q.text for q in questions]))
    if normalise:
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    runs = {}
    for question, query in zip(questions, queries):
        order, scores = dense_ranking(vectors, query)
        ranked = zip(order.tolist(), scores.tolist())
        runs[question.qid] = ([h.doc_id for h in collapse((units[n], s) for n, s in ranked)] if collapse_pages
                              else [units[n].doc_id for n, _ in ranked])
    return measure(runs, judgements(list(questions)))["mrr"]


@lru_cache(maxsize=1)
def tfidf_mrr() -> float:
    """TF-IDF's self-retrieval MRR over the subset's windows: the bar a dense encoder must clear."""
    return setup_scores("tfidf", "chunked")["mrr"]


@lru_cache(maxsize=8)
def smoke_reference(name: str) -> tuple[float, bool]:
    """(MRR, healthy) of the smoke test run on one of ``ENCODERS`` over the subset's windows."""
    encode = dict((n, f) for n, f, _ in ENCODERS)[name]
    mrr = smoke_mrr(encode, subset_windows(), subset_questions())
    return mrr, mrr >= tfidf_mrr() - SMOKE_MARGIN


SORTED_OPTIONS = {"a": "about the same as the healthy encoder's (within 0.1)",
                  "b": "clearly lower, but more than half of the healthy encoder's",
                  "c": "less than half of the healthy encoder's"}


def check_sorted_prediction(prediction: Any) -> list[str]:
    """PREDICTED_SORTED_MRR against the smoke test's MRR for the sorted-rows encoder."""
    good, bad = smoke_reference("healthy")[0], smoke_reference("sorted rows")[0]
    truth = "a" if abs(bad - good) <= 0.1 else ("b" if bad > good / 2 else "c")
    return check_choice(
        prediction, "PREDICTED_SORTED_MRR", SORTED_OPTIONS, truth,
        f"MRR {good:.3f} with the healthy encoder, {bad:.3f} with rows in sorted-text order"
        f" (TF-IDF: {tfidf_mrr():.3f})",
        ["Every vector is still a good vector; it is just filed under the wrong text. A query then meets",
         "the vectors of other windows, and its own page turns up about where chance would put it.",
         "Nothing looks wrong from inside: the vectors have the right length and the scores a normal",
         "spread. Only an end-to-end test with known answers sees it, and it sees it at once."])


def check_smoke_test(answer: Any) -> list[str]:
    """smoke_test(encode, units, questions) -> (MRR, healthy) equals the reference for four encoders."""
    test = require_function(answer, "smoke_test")
    units, questions = list(subset_windows()), list(subset_questions())
    tolerance = DENSE_TOLERANCE
    for name, encode, what in ENCODERS:
        tried = f"smoke_test({name} encoder, the subset's {len(units)} windows, {len(questions)} questions)"
        got = expect_pair(call(test, "smoke_test", (encode, units, questions), tried), tried, "mrr, healthy",
                          "return the MRR and the verdict: `return mrr, healthy`")
        mrr, verdict = smoke_reference(name)
        hints = [(lambda: smoke_mrr(encode, units, questions, normalise=True),
                  "the test must rank with the vectors the encoder gives: scaling them to length 1 inside the"
                  " test hides an encoder that forgot to"),
                 (lambda: smoke_mrr(encode, units, questions, collapse_pages=False),
                  "collapse the chunk ranking to pages (collapse) before you score it: each page once"),
                 (lambda: smoke_mrr(healthy, units, questions),
                  "rank with the encoder you were given, for the windows and the questions alike")]
        value = as_number(got[0], f"{tried}, its MRR")
        if abs(value - mrr) > tolerance:
            expect_number(value, mrr, f"{tried}, its MRR", first_hint(
                value, hints, "encode the units in one call and the questions in one call, rank the units by dot"
                " product (dense_ranking), collapse to pages, and take the MRR"), tolerance=tolerance)
        if not isinstance(got[1], (bool, np.bool_)) or bool(got[1]) != verdict:
            raise Mismatch(f"{tried}, its verdict", shown(verdict), shown(got[1]),
                           f"healthy means MRR >= TF-IDF's MRR on the same windows minus {SMOKE_MARGIN}"
                           " (TfidfRetriever, run_questions and measure give TF-IDF's); return True or False")
    lines = [f"smoke_test agrees with the reference on {len(ENCODERS)} encoders. What it saw (TF-IDF's MRR on"
             f" the same windows: {tfidf_mrr():.3f}):"]
    for name, _, what in ENCODERS:
        mrr, verdict = smoke_reference(name)
        lines.append(f"  {name:<13} MRR {mrr:.3f}  {'passes' if verdict else 'FLAGGED'}  ({what})")
    missed = [name for name, _, _ in ENCODERS[1:] if smoke_reference(name)[1]]
    lines.append("Caught: " + ", ".join(n for n, _, _ in ENCODERS[1:] if not smoke_reference(n)[1]) + "."
                 + (f" Not caught: {', '.join(missed)}: a smoke test finds gross wiring faults, not every fault;"
                    " a fault it passes needs a test of its own (here, check that every vector has length 1)."
                    if missed else " Every fault tried here was caught."))
    return lines


EXERCISES = ExerciseSet("lab02-evaluation-chunks-and-dense", "Evaluation, chunks and a dense model", [
    Exercise("q1", "build", "TF-IDF, written out", ("tfidf_fit",), check_tfidf),
    Exercise("q2", "measure", "one measurement, two embeddings", ("evaluate",), check_evaluate),
    Exercise("q3", "predict", "rows returned in the wrong order", ("PREDICTED_SORTED_MRR",), check_sorted_prediction),
    Exercise("q4", "build", "the self-retrieval smoke test", ("smoke_test",), check_smoke_test),
], seconds=180.0)
check = EXERCISES.check
