"""Exercises of lab 01: the chunk size moved both ways, the IDF-weighted overlap score, and a miss by its cause.

q1 (predict) asks how the number of paragraphs cut short moves when ``MAX_CHARS`` drops from 800
to 200; q2 (measure) reports both sides of 800 (chunks, cuts, judged Recall@5 and MRR) at sizes the
lab did not print; q3 (build) is the scorer itself, with its tie-break, checked on made-up chunk
lists and on the lab's own chunks; q4 (build) gives a missed question its cause, as lab 01's
failure table does. Every reference is computed from the corpus when the check runs.
"""
from __future__ import annotations

import math
import numbers
from functools import lru_cache
from typing import Any, Callable, Sequence

from ...corpus.queries import Question, judgements, self_retrieval
from ...engines.chunking.text_chunks import PARAGRAPH_BREAK, TextChunk, chunk_corpus, pack_paragraphs
from ...engines.lexical import LexicalIndex, lexical_tokens
from ...engines.retrievers import LexicalRetriever, collapse, measure, run_questions
from ...labs.failures import CAUSES, count_by_cause, misses, stemmed_index
from .shared import corpus, expect_report, judged
from ..framework import (Exercise, ExerciseSet, Mismatch, call, check_choice, expect_number, first_hint,
                         likely_hint, require_function, shown)

LAB_MAX_CHARS = 800
LAB_K = 5
SMALLER, LARGER = 600, 1200           # q2's two sides of 800 (the lab printed 200, 400, 800, 1600, 3200)
EXACT = 1e-12


# ---------------------------------------------------------------- the lab's pieces, built once per process

@lru_cache(maxsize=8)
def chunks(max_chars: int) -> tuple[TextChunk, ...]:
    """The lab's paragraph chunks at ``max_chars``."""
    return tuple(chunk_corpus(corpus().documents, pack_paragraphs, max_chars=max_chars))


@lru_cache(maxsize=4)
def index(max_chars: int) -> LexicalIndex:
    """The IDF-overlap index over the chunks at ``max_chars``."""
    return LexicalIndex(chunks(max_chars))


@lru_cache(maxsize=4)
def stemmed(max_chars: int) -> LexicalIndex:
    """The same scorer over stems (what "word form" asks of a miss)."""
    return stemmed_index(chunks(max_chars))


# ---------------------------------------------------------------- q1: predict the cuts at 200 characters

CUT_OPTIONS = {"a": "fewer paragraphs are cut",
               "b": "about as many (at most twice as many)",
               "c": "between two and ten times as many",
               "d": "more than ten times as many"}


def lost_characters(max_chars: int) -> int:
    """Characters past the cut of every paragraph longer than ``max_chars``: text no chunk holds."""
    return sum(max(0, len(p) - max_chars) for d in corpus().documents
               for p in d.text.split(PARAGRAPH_BREAK) if p.strip())


def cut_option(before: int, after: int) -> str:
    """The option that describes going from ``before`` cut paragraphs to ``after``."""
    if after < before:
        return "a"
    if after <= 2 * before:
        return "b"
    return "c" if after <= 10 * before else "d"


def check_cuts(prediction: Any) -> list[str]:
    """PREDICTED_CUTS against the cut paragraphs measured at 800 and 200 characters."""
    small = 200
    before = sum(c.truncated for c in chunks(LAB_MAX_CHARS))
    after = sum(c.truncated for c in chunks(small))
    return check_choice(
        prediction, "PREDICTED_CUTS", CUT_OPTIONS, cut_option(before, after),
        f"{before} chunks cut mid-paragraph at {LAB_MAX_CHARS} characters, {after} at {small}"
        f" ({lost_characters(LAB_MAX_CHARS):,} and {lost_characters(small):,} characters never indexed)",
        ["A paragraph is cut only when it is longer than MAX_CHARS on its own, and paragraph lengths are",
         "spread widely: few exceed 800 characters, but a great many exceed 200. So the count does not",
         "scale with the size; it follows how many paragraphs sit between the two limits.",
         "And a cut is a loss, not a split: everything past the limit is dropped, so those words can",
         "never match. That is the price on the small side of the trade; q2 measures both sides."])


# ---------------------------------------------------------------- q2: measure both sides of 800

@lru_cache(maxsize=16)
def side_report(max_chars: int) -> tuple[int, int, float, float]:
    """(chunks, chunks cut mid-paragraph, judged Recall@5, judged MRR) of IDF overlap at ``max_chars``."""
    sized = chunks(max_chars)
    scores = measure(run_questions(LexicalRetriever(sized), list(judged())), judgements(list(judged())),
                     ks=(LAB_K,))
    return len(sized), sum(c.truncated for c in sized), scores[f"recall@{LAB_K}"], scores["mrr"]


@lru_cache(maxsize=8)
def other_report(max_chars: int, which: str) -> tuple[int, int, float, float]:
    """Known wrong versions of the report, for hints: self-retrieval questions, or Recall@10."""
    sized = chunks(max_chars)
    questions = self_retrieval(corpus()) if which == "self" else list(judged())
    scores = measure(run_questions(LexicalRetriever(sized), questions), judgements(questions), ks=(LAB_K, 10))
    recall = scores["recall@10"] if which == "recall@10" else scores[f"recall@{LAB_K}"]
    return len(sized), sum(c.truncated for c in sized), recall, scores["mrr"]


SIDE_PROBES = ((300, True), (2400, True), (SMALLER, False), (LARGER, False))
REPORT_FIELDS = ("chunks", "cut", f"recall@{LAB_K}", "mrr")


def check_sides(answer: Any) -> list[str]:
    """max_chars_report(max_chars) equals the reference at two other sizes, then at 600 and 1200."""
    report = require_function(answer, "max_chars_report")
    for max_chars, reveal in SIDE_PROBES:
        tried = f"max_chars_report({max_chars})"
        got = call(report, "max_chars_report", (max_chars,), tried)
        expected = side_report(max_chars)
        if not isinstance(got, (tuple, list)) or len(got) != 4:
            raise Mismatch(tried, "four values (chunks, cut, recall_at_5, mrr)", shown(got),
                           "return a tuple: `return len(sized), cut, recall_at_5, mrr`")
        hints = [(lambda: other_report(max_chars, "recall@10"),
                  f"that is Recall@10: the lab's homework table reads Recall@{LAB_K}"),
                 (lambda: other_report(max_chars, "self"),
                  "those are the self-retrieval questions; the homework asks about the judged ones"),
                 (lambda: side_report(LAB_MAX_CHARS),
                  f"your function measures {LAB_MAX_CHARS} characters whatever it is given: chunk at max_chars")]
        hint = first_hint(tuple(got), hints, "chunk the corpus with pack_paragraphs at max_chars, count the chunks"
                          " and those cut (truncated), and measure IDF overlap (LexicalRetriever) on the judged"
                          f" questions with measure(..., ks=({LAB_K},))")
        expect_report(tried, got, expected, REPORT_FIELDS, hint, reveal, dict.fromkeys(REPORT_FIELDS, EXACT))
    lines = [f"max_chars_report matches the reference at {len(SIDE_PROBES)} sizes. Both sides of {LAB_MAX_CHARS}:",
             f"  {'max_chars':>9} {'chunks':>7} {'cut':>5} {'lost chars':>11} {'R@5':>6} {'MRR':>6}"]
    for size in (SMALLER, LAB_MAX_CHARS, LARGER):
        n, cut, recall, mrr = side_report(size)
        lines.append(f"  {size:>9} {n:>7} {cut:>5} {lost_characters(size):>11,} {recall:>6.3f} {mrr:>6.3f}")
    lines += ["Smaller chunks cut more paragraphs and drop the text past each cut; larger ones hold fewer,",
              "longer chunks in which every shared word competes with more unrelated words. Read which way",
              "each column moves on each side: that is the report the homework asks for."]
    return lines


# ---------------------------------------------------------------- q3: build the IDF-weighted overlap search

def _c(doc_id: str, position: int, text: str) -> TextChunk:
    return TextChunk(doc_id, position, text)


MADE_UP = (  # (query, chunks, top_k): ties, repeats, stopwords, several chunks of one page, nothing shared
    ("how do I sort an array along an axis",
     (_c("numpy.zeta", 0, "Sort the array along an axis."), _c("numpy.alpha", 1, "sort the ARRAY along an axis"),
      _c("numpy.alpha", 0, "Sorting an array, quickly."), _c("numpy.beta", 0, "nothing in common here"),
      _c("numpy.alpha", 2, "axis, axis and axis")), 4),
    ("axis axis values",
     (_c("numpy.b", 0, "axis axis axis values"), _c("numpy.a", 3, "values only"), _c("numpy.a", 1, "axis values"),
      _c("numpy.c", 0, "values values values values"), _c("numpy.a", 2, "unrelated words")), 5),
    ("stack arrays vertically",
     (_c("numpy.vstack", 2, "stack"), _c("numpy.vstack", 1, "stack arrays"), _c("numpy.hstack", 0, "arrays"),
      _c("numpy.hstack", 1, "arrays"), _c("numpy.vstack", 0, "vertically stack arrays arrays")), 2),
    ("what is it and how is it done", (_c("numpy.a", 0, "it is done"), _c("numpy.b", 0, "what is this")), 3),
    ("matrix inverse", (_c("numpy.linalg.inv", 0, "Compute the (multiplicative) inverse of a matrix."),
                        _c("numpy.linalg.pinv", 0, "pseudo-inverse of a matrix"),
                        _c("numpy.linalg.det", 0, "determinant of an array")), 10),
)
DEMO_QUERY = "how do I sort an array along an axis"
REAL_DEPTH = 10


def reference_search(query: str, chunk_list: Sequence[TextChunk], top_k: int) -> list[tuple[str, float]]:
    """The package's answer: (chunk id, score) of the ``top_k`` best chunks."""
    lab = index(LAB_MAX_CHARS)
    searched = lab if list(chunk_list) == lab.chunks else LexicalIndex(chunk_list)
    return [(hit.chunk.chunk_id, hit.score) for hit in searched.search(query, top_k)]


def variant_search(query: str, chunk_list: Sequence[TextChunk], top_k: int, *, repeats: bool = False,
                   counts: bool = False, plain_idf: bool = False, page_df: bool = False, unweighted: bool = False,
                   order: str = "address") -> list[tuple[str, float]]:
    """The scorer with one rule changed: what a likely mistake returns (for hints and tests)."""
    token_lists = [lexical_tokens(c.text) for c in chunk_list]
    token_sets = [set(t) for t in token_lists]
    if page_df:
        pages: dict[str, set[str]] = {}
        for chunk, tokens in zip(chunk_list, token_sets):
            pages.setdefault(chunk.doc_id, set()).update(tokens)
        n = len(pages)
        df = lambda t: sum(t in tokens for tokens in pages.values())  # noqa: E731
    else:
        n = len(chunk_list)
        df = lambda t: sum(t in tokens for tokens in token_sets)  # noqa: E731
    asked = lexical_tokens(query)
    asked = asked if repeats else sorted(set(asked))
    scored = []
    for number, (chunk, tokens) in enumerate(zip(chunk_list, token_sets)):
        shared = [t for t in asked if t in tokens]
        if not shared:
            continue
        score = 0.0
        for token in shared:
            weight = 1.0 if unweighted else (math.log(n / df(token)) if plain_idf else math.log(1 + n / df(token)))
            score += weight * (token_lists[number].count(token) if counts else 1)
        scored.append((number, chunk, score))
    keys = {"address": lambda item: (-item[2], item[1].doc_id, item[1].position),
            "list": lambda item: (-item[2], item[0]),
            "reversed": lambda item: (-item[2], [-ord(ch) for ch in item[1].doc_id], -item[1].position),
            "position": lambda item: (-item[2], item[1].position, item[1].doc_id)}
    ranked = sorted(scored, key=keys[order])
    return [(chunk.chunk_id, score) for _, chunk, score in ranked[:top_k]]


SEARCH_HINTS = (
    ({"order": "list"}, "on equal scores the order is by doc_id, then by position: never by where a chunk sits in"
                        " the list"),
    ({"order": "reversed"}, "on equal scores the smaller doc_id comes first, then the smaller position"),
    ({"order": "position"}, "on equal scores compare doc_id first and position second"),
    ({"repeats": True}, "a token repeated in the query was counted twice: each distinct query token adds its"
                        " weight once"),
    ({"counts": True}, "a shared token adds its weight once, however often the chunk repeats it"),
    ({"plain_idf": True}, "the weight is log(1 + N / df), not log(N / df): a token in every chunk still adds a"
                          " little"),
    ({"page_df": True}, "N and df count chunks, not pages: the chunks are the units the index holds"),
    ({"unweighted": True}, "each shared token adds its rarity weight log(1 + N / df), not 1"),
)


def _pairs(got: Any, tried: str) -> list[tuple[str, float]]:
    if not isinstance(got, (list, tuple)) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in got):
        raise Mismatch(tried, "a list of (chunk_id, score) pairs, best first", shown(got),
                       "return a list like [('numpy.sort#0', 6.2), ...]; chunk_id is the chunk's `chunk_id`")
    return [(p[0], p[1]) for p in got]


def _compare_search(got: list, expected: list, tried: str, hint: Callable[[], str]) -> None:
    ids = [cid for cid, _ in got]
    expected_ids = [cid for cid, _ in expected]
    if ids != expected_ids:
        raise Mismatch(tried, shown(expected_ids, 160), shown(ids, 160), hint())
    for (cid, score), (_, reference) in zip(got, expected):
        # the hint (eight variant searches) only for a score that is off: a passing answer pays nothing for it
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score) \
                or abs(score - reference) > 1e-9:
            expect_number(score, reference, f"{tried}, the score of {cid}", hint(), tolerance=1e-9)


def check_search(answer: Any) -> list[str]:
    """idf_overlap_search equals the package's LexicalIndex on made-up chunk lists and on the lab's chunks."""
    search = require_function(answer, "idf_overlap_search")
    cases = [(query, list(chunk_list), top_k, f"made-up chunks {number}") for number, (query, chunk_list, top_k)
             in enumerate(MADE_UP, start=1)]
    lab_chunks = list(chunks(LAB_MAX_CHARS))
    questions = [DEMO_QUERY] + [q.text for q in judged()[::8]]
    cases += [(text, lab_chunks, REAL_DEPTH, f"the lab's {len(lab_chunks)} chunks") for text in questions]
    for query, chunk_list, top_k, where in cases:
        tried = f"idf_overlap_search({query!r}, {where}, {top_k})"
        got = _pairs(call(search, "idf_overlap_search", (query, chunk_list, top_k), tried), tried)
        expected = reference_search(query, chunk_list, top_k)

        def hint(query=query, chunk_list=chunk_list, top_k=top_k, got=got):
            variants = [(lambda flags=flags: variant_search(query, chunk_list, top_k, **flags), text)
                        for flags, text in SEARCH_HINTS]
            return first_hint(got, variants, "score each chunk that shares a token by the sum of log(1 + N / df)"
                              " over the distinct shared tokens, N chunks and df the chunks holding the token;"
                              " sort by (-score, doc_id, position) and keep top_k")

        _compare_search(got, expected, tried, hint)
    demo = reference_search(DEMO_QUERY, lab_chunks, LAB_K)
    tied = sum(score == demo[0][1] for _, score in demo)
    return [f"idf_overlap_search agrees with the package on {len(MADE_UP)} made-up chunk lists and on"
            f" {len(questions)} questions over the lab's chunks (top {REAL_DEPTH}, scores and order).",
            f"It reproduces the lab's demo ranking: {', '.join(cid for cid, _ in demo)};",
            f"{tied} of these {len(demo)} share the top score, and only the tie-break puts them in this order."]


# ---------------------------------------------------------------- q4: build the cause of a miss

@lru_cache(maxsize=8)
def reference_causes(max_chars: int, k: int) -> dict[str, str]:
    """qid -> cause of every judged question missed at ``k`` (the lab's failure table)."""
    return {m.question.qid: m.cause for m in misses(list(judged()), index(max_chars), stemmed(max_chars), k)}


def variant_cause(question: Question, lexical: LexicalIndex, stems: LexicalIndex, k: int, *,
                  shared_first: bool = False, chunk_depth: bool = False) -> str:
    """The cause with one rule changed: "common words win" before "word form", or chunks counted to k, not pages."""
    def pages(searched: LexicalIndex) -> list[str]:
        ranked = searched.ranked(question.text)
        if chunk_depth:
            return [searched.chunks[n].doc_id for n, _ in ranked]
        return [hit.doc_id for hit in collapse((searched.chunks[n], score) for n, score in ranked)]

    relevant = set(question.relevant)
    ranked_pages = pages(lexical)
    if relevant & set(ranked_pages[:k]):
        return FOUND
    if not ranked_pages:
        return "no answer at all"
    asked = set(lexical_tokens(question.text))
    shared = any(asked & lexical.token_sets[n] for n, chunk in enumerate(lexical.chunks) if chunk.doc_id in relevant)
    if shared_first and shared:
        return "common words win"
    if relevant & set(pages(stems)[:k]):
        return "word form"
    return "common words win" if shared else "no shared word"


def cause_hints(question: Question, lexical: LexicalIndex, stems: LexicalIndex, k: int):
    """Known wrong versions of the cause and what to say about each."""
    return [(lambda: variant_cause(question, lexical, stems, k, shared_first=True),
             "a page that stemming rescues is a word-form miss even though it shares some words:"
             " check the causes in the table's order"),
            (lambda: variant_cause(question, lexical, stems, k, chunk_depth=True),
             f"count pages, not chunks: collapse the ranking to pages (each page once) before you take the first"
             f" {k}; a miss is a question with no relevant page there")]


CAUSE_PROBES = ((LAB_MAX_CHARS, LAB_K), (LAB_MAX_CHARS, 1), (LAB_MAX_CHARS, 10), (400, LAB_K))
FOUND = "found"   # what miss_cause returns for a question that is not a miss


def check_cause(answer: Any) -> list[str]:
    """miss_cause(question, index, stemmed, k) equals the failure table's cause (or "found" for a hit) everywhere."""
    classify = require_function(answer, "miss_cause")
    checked = 0
    for max_chars, k in CAUSE_PROBES:
        causes = reference_causes(max_chars, k)
        for question in judged():
            tried = f"miss_cause(judged {question.qid} {question.text[:40]!r}, index at {max_chars} characters, k={k})"
            got = call(classify, "miss_cause", (question, index(max_chars), stemmed(max_chars), k), tried)
            expected = causes.get(question.qid, FOUND)
            if got != expected:
                arguments = (question, index(max_chars), stemmed(max_chars), k)
                others = [(other, *arguments[1:]) for other in judged()[:20] if other != question]
                default = ("a miss has no relevant page among the first k pages (chunks collapsed to pages);"
                           " its cause is the first of " + ", ".join(CAUSES) + " that applies")
                hint = likely_hint(classify, got, arguments, others, cause_hints, default)
                if hint == default and expected == FOUND:
                    hint = (f"{question.qid} has a relevant page in the top {k} pages, so it is not a miss:"
                            f" return {FOUND!r} (collapse chunks to pages, each page once, before you count to k)")
                elif hint == default and got == FOUND:
                    hint = (f"none of {question.qid}'s relevant pages is in the top {k} pages, so it is a miss"
                            " and needs a cause (count pages, not chunks: collapse the ranking first)")
                raise Mismatch(tried, shown(expected), shown(got), hint)
            checked += 1
    table = count_by_cause(misses(list(judged()), index(LAB_MAX_CHARS), stemmed(LAB_MAX_CHARS), LAB_K))
    missed = sum(table.values())
    return [f"miss_cause agrees with the lab's failure table on {checked} classifications"
            f" ({len(CAUSE_PROBES)} settings of chunk size and k).",
            f"At the lab's setting {missed} of {len(judged())} judged questions miss: "
            + ", ".join(f"{n} {cause}" for cause, n in table.items()) + ".",
            "Each cause names a different repair: stemming for word forms, better weighting or more",
            "context for common words, a model of meaning where no word is shared."]


EXERCISES = ExerciseSet("lab01-lexical-baseline", "A lexical baseline", [
    Exercise("q1", "predict", "cut paragraphs at 200 characters", ("PREDICTED_CUTS",), check_cuts),
    Exercise("q2", "measure", "both sides of MAX_CHARS = 800", ("max_chars_report",), check_sides),
    Exercise("q3", "build", "IDF-weighted overlap with its tie-break", ("idf_overlap_search",), check_search),
    Exercise("q4", "build", "a miss and its cause", ("miss_cause",), check_cause),
], seconds=60.0)
check = EXERCISES.check
