"""Exercises of lab 03: naive RAG's failures labelled, a bake-off at a new size, fusion and headers, five self-checks.

q1 (build) labels every question the naive pipeline fails with the first of the lab's five
causes, checked against ``practice.failure_cause`` fed with the evidence the lab gathers; q2
(measure) runs the dense bake-off on recursive chunks of a size the lab did not print; q3
(build) is reciprocal rank fusion over the chunks BM25 matched and the dense ranking, checked
against ``practice.ChunkSearch``, whose pass reports Recall@5 after each step (dense, + BM25
with RRF, + contextual headers) with paired intervals (``labs.real_check.paired``); q4
(predict) is the seed's five "check yourself" questions, each answered before its measurement.

A cold run stays short because everything works on a **subset** (``lab03_subset``): the pages the judged and the
real ``dev`` questions need, plus ``numpy.linalg`` and ``numpy.fft`` as neighbours; its whole
pages and its recursive chunks of 800 characters (what the notebook's setup embeds) are under a
thousand texts; the checks add the headed chunks and q2's chunks of 400 characters. Lexical and BM25 results are compared exactly; dense ones within
``DENSE_TOLERANCE`` (the check and the student read the same cached vectors). The real ``test``
split is never read here.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ...corpus.queries import Question, judgements
from ...engines.dense import dense_ranking
from ...engines.filters import late_filter, user_named
from ...engines.retrievers import Bm25Retriever, DenseRetriever, collapse, measure
from ...engines.chunking.splitters import sentence_units, section_chunks
from ...labs.failures import stemmed_tokens
from ...labs.practice import CAUSES, Evidence, failure_cause, first_rank, rrf, word_share
from ...labs.real_check import paired
from ...retrieval.significance import signed, p_text
from .lab03_subset import LAB_CHARS, bm25, dense, dev, encoder, recursive, search, subset_documents, subset_ids
from .shared import expect_report, judged
from ..framework import (Exercise, ExerciseSet, Failed, Mismatch, NotDone, call,
                         first_hint, is_placeholder, require_function, shown)

ASKED_CHARS = 400         # q2's size, which the lab suggests but never printed
LAB_K = 5
NEAR = 20                 # "ranked below k" means a first relevant chunk at k + 1 .. NEAR
RRF_K = 60
DENSE_TOLERANCE = 1e-6    # both sides read the same cached vectors: only an order of additions could move a digit


def check_own_questions(name: str, value: Any) -> list[Question]:
    """A notebook's list of ``(question, [relevant page ids])`` as Questions ``my1``, ``my2``...; ValueError naming ``name``."""
    rule = (f"{name} must be a list of 1 to 30 pairs (question text, list of relevant page ids), the ids"
            " pages of the subset (exercises.subset_ids() lists them)")
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= 30:
        raise ValueError(f"{rule}; got {value!r:.80}")
    known = subset_ids()
    questions = []
    for number, pair in enumerate(value, start=1):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str) \
                or not pair[0].strip() or isinstance(pair[1], str) or not isinstance(pair[1], (list, tuple)) \
                or not pair[1]:
            raise ValueError(f"{rule}; item {number} is {pair!r:.80}")
        unknown = [r for r in pair[1] if r not in known]
        if unknown:
            raise ValueError(f"{rule}; item {number} names {unknown!r}, which the subset does not hold")
        questions.append(Question(f"my{number}", pair[0].strip(), tuple(pair[1]), "own"))
    return questions


def print_log(chunks: DenseRetriever, questions: Sequence[Question], k: int = LAB_K) -> None:
    """The naive pipeline's log: each question's ``k`` best chunks (not pages), a mark on the relevant ones."""
    vectors = chunks.encoder.encode([q.text for q in questions])
    for question, vector in zip(questions, vectors):
        order, scores = dense_ranking(chunks.vectors, vector)
        top = [(chunks.chunks[n], s) for n, s in zip(order[:k].tolist(), scores[:k].tolist())]
        held = any(c.doc_id in question.relevant for c, _ in top)
        print(f"{question.qid} {question.text!r} -> {', '.join(question.relevant)}: "
              + ("a relevant page reached the prompt" if held else "FAILED"))
        for rank, (chunk, score) in enumerate(top, start=1):
            mark = "*" if chunk.doc_id in question.relevant else " "
            print(f"  {mark}{rank}. {score:.2f} {chunk.chunk_id:<36} {chunk.text[:48]!r}")


# ---------------------------------------------------------------- q1: build the failure labels

@lru_cache(maxsize=1)
def page_words() -> dict[str, frozenset[str]]:
    """Each subset page's stemmed words, its summary line included (lab 01's tokens, Snowball stems)."""
    return {d.doc_id: frozenset(stemmed_tokens(d.searched_text())) for d in subset_documents()}


_BM25: dict[int, Bm25Retriever] = {}


def _bm25_for(chunks: DenseRetriever) -> Bm25Retriever:
    key = id(chunks)
    if key not in _BM25 or _BM25[key].chunks != chunks.chunks:
        _BM25[key] = Bm25Retriever(chunks.chunks)
    return _BM25[key]


def reference_labels(questions: Sequence[Question], chunks: DenseRetriever, pages: DenseRetriever, k: int, *,
                     page_depth: bool = False, split_first: bool = False, zero_based: bool = False,
                     every_question: bool = False, bm25_pages: bool = False) -> dict[str, str]:
    """qid -> cause of every question whose ``k`` best chunks hold no relevant page (the lab's rules).

    The keyword flags each change one rule (what a likely mistake returns, for hints and tests).
    """
    lexical = _bm25_for(chunks)
    words_of = page_words()
    labels = {}
    for question, vector in zip(questions, chunks.encoder.encode([q.text for q in questions])):
        relevant = set(question.relevant)
        order, scores = dense_ranking(chunks.vectors, vector)
        ids = [chunks.chunks[n].doc_id for n in order.tolist()]
        top = ([h.doc_id for h in collapse((chunks.chunks[n], s) for n, s in zip(order.tolist(), scores.tolist()))]
               if page_depth else ids)[:k]
        if relevant & set(top) and not every_question:
            continue
        rank = first_rank(ids, relevant)
        matched = lexical.matched_ranking(question.text)
        bm25_top = ([h.doc_id for h in collapse((chunks.chunks[n], -p) for p, n in enumerate(matched))]
                    if bm25_pages else [chunks.chunks[n].doc_id for n in matched])[:k]
        evidence = Evidence(dense_rank=None if rank is None else rank - zero_based,
                            bm25_hit=bool(relevant & set(bm25_top)),
                            page_hit=bool(relevant & {h.doc_id for h in pages.search_vector(vector)[:k]}),
                            word_share=max(word_share(stemmed_tokens(question.text), words_of[r]) for r in relevant),
                            style=question.style)
        if split_first and evidence.page_hit:
            labels[question.qid] = CAUSES[1]
        else:
            labels[question.qid] = failure_cause(evidence, k, NEAR)
    return labels


LABEL_HINTS = (
    ({"page_depth": True}, "the naive pipeline hands the model k chunks, not k pages: two chunks of one page take"
                           " two of the k places, so decide a failure on the k best chunks as they come"),
    ({"every_question": True}, "label only the failures: a question with a relevant page among its k chunks"
                               " is left out of the dict"),
    ({"split_first": True}, "try the rules in the table's order: an exact-name question that BM25 finds is an"
                            " exact term missed even when the whole page matches too"),
    ({"zero_based": True}, "a chunk's rank counts from 1: the first chunk is rank 1, so ranks 6 to 20 are"
                           " below k = 5"),
    ({"bm25_pages": True}, "BM25's evidence is its k best chunks (matched_ranking), the same unit the dense"
                           " model is judged on, not its k best pages"),
)


def _probe_sets():
    return (("the judged questions", judged, "recursive", LAB_K, True),
            ("the judged questions", judged, "recursive", 3, True),
            ("the real dev questions", dev, "headed", LAB_K, True),
            ("the judged questions", judged, "headed", 10, True),
            ("the real dev questions", dev, "recursive", 1, True))


def check_labels(answer: Any) -> list[str]:
    """label_failures(questions, chunks, pages, k) equals the reference labels on four settings."""
    label = require_function(answer, "label_failures")
    checked = 0
    for where, questions, unit, k, _ in _probe_sets():
        chunk_retriever, page_retriever = dense(unit), dense("pages")
        tried = (f"label_failures({where} ({len(questions())}), the subset's {unit} chunks,"
                 f" its whole pages, k={k})")
        got = call(label, "label_failures", (list(questions()), chunk_retriever, page_retriever, k), tried)
        if not isinstance(got, Mapping):
            raise Mismatch(tried, "a dict: qid -> cause, one entry per failed question", shown(got),
                           "return a dict such as {'j07': 'only the whole page matches', ...}")
        got = dict(got)
        expected = reference_labels(list(questions()), chunk_retriever, page_retriever, k)
        if got != expected:
            variants = [(lambda flags=flags: reference_labels(list(questions()), chunk_retriever, page_retriever, k,
                                                              **flags), text) for flags, text in LABEL_HINTS]
            hint = first_hint(got, variants, "a failure is a question none of whose k best chunks is from a"
                              " relevant page; its cause is the first rule of the table that holds (see"
                              " failure_cause and Evidence)")
            wrong = [q.qid for q in questions() if got.get(q.qid) != expected.get(q.qid)]
            qid = wrong[0]
            raise Mismatch(f"{tried}: question {qid}", shown(expected.get(qid, "(no entry: not a failure)")),
                           shown(got.get(qid, "(no entry)")) + f" ({len(wrong)} question(s) differ)", hint)
        checked += len(questions())
    labels = reference_labels(list(judged()), dense("recursive"), dense("pages"), LAB_K)
    lines = [f"label_failures agrees with the lab's rules on {checked} question labellings (judged and real dev"
             " questions; plain and headed chunks; k = 1, 3, 5, 10).",
             f"On the subset ({len(subset_documents())} pages, recursive chunks of {LAB_CHARS} characters, top"
             f" {LAB_K} chunks), {len(labels)} of {len(judged())} judged questions fail:"]
    for cause in CAUSES:
        qids = [qid for qid, c in labels.items() if c == cause]
        lines.append(f"  {cause:<27} {len(qids):>2}  {' '.join(qids)}")
    lines += ["Each cause points at a different repair: keyword search for names, bigger units when only the",
              "whole page matches, a deeper k or a reranker for near misses, and the question's own words",
              "(or a rewrite of them) for a phrasing mismatch. Now label your own questions below."]
    return lines


def label_own(label_failures: Any, questions: Sequence[Question], chunks: DenseRetriever,
              pages: DenseRetriever) -> None:
    """Print the labels ``label_failures`` gives the notebook's own questions (or what to do first)."""
    if is_placeholder(label_failures) or not callable(label_failures):
        print("label_failures is not written yet: finish q1, then run this cell again.")
        return
    try:
        labels = label_failures(list(questions), chunks, pages, LAB_K)
    except NotImplementedError:
        labels = None
    if is_placeholder(labels) or not isinstance(labels, Mapping):
        print("label_failures does not return a dict yet: finish q1, then run this cell again.")
        return
    print(f"{len(labels)} of {len(questions)} of your questions fail at k = {LAB_K}:")
    for question in questions:
        print(f"  {question.qid} {question.text[:56]!r:<60} {labels.get(question.qid, 'a relevant page reached the prompt')}")


# ---------------------------------------------------------------- q2: measure the bake-off at another size

@lru_cache(maxsize=4)
def bakeoff_row(chars: int, which: str = "judged") -> tuple[int, float, float, float]:
    """(chunks, share past the model's window, Recall@5, MRR) of dense search over recursive chunks of ``chars``."""
    chunks = list(recursive(chars))
    counts = encoder().token_counts([c.text for c in chunks])
    past = sum(n > encoder().max_tokens for n in counts) / len(chunks)
    retriever = DenseRetriever(chunks, encoder())
    questions = list(judged()) if which != "dev" else list(dev())
    scores = measure({q.qid: [h.doc_id for h in hits] for q, hits in
                      zip(questions, retriever.search_many([q.text for q in questions]))},
                     judgements(questions), ks=(1, LAB_K, 10))
    recall = scores["recall@10"] if which == "recall@10" else scores[f"recall@{LAB_K}"]
    return len(chunks), past, recall, scores["mrr"]


BAKEOFF_PROBES = ((LAB_CHARS, True), (ASKED_CHARS, False))
BAKEOFF_FIELDS = ("chunks", "past the window", f"recall@{LAB_K}", "mrr")


def check_bakeoff(answer: Any) -> list[str]:
    """recursive_report(chunk_chars) equals the reference at the lab's size, then at the asked one."""
    report = require_function(answer, "recursive_report")
    for chars, reveal in BAKEOFF_PROBES:
        tried = f"recursive_report({chars})"
        got = call(report, "recursive_report", (chars,), tried)
        if not isinstance(got, (tuple, list)) or len(got) != 4:
            raise Mismatch(tried, "four values (chunks, past_window, recall_at_5, mrr)", shown(got),
                           "return a tuple: `return len(chunks), past_window, recall_at_5, mrr`")
        expected = bakeoff_row(chars)
        hints = [(lambda: bakeoff_row(chars, "recall@10"), f"that is Recall@10: the bake-off reads Recall@{LAB_K}"),
                 (lambda: bakeoff_row(chars, "dev"), "those are the real dev questions: this table reads the"
                                                     " judged ones"),
                 (lambda: bakeoff_row(LAB_CHARS), f"your function measures {LAB_CHARS} characters whatever it is"
                                                  " given: split at chunk_chars")]
        hint = first_hint(tuple(got), hints, "split every subset page with recursive_chunks(page, chunk_chars),"
                          " count the chunks with more tokens than encoder.max_tokens, and measure the dense"
                          " model's page ranking (DenseRetriever) on the judged questions with measure(...)")
        tolerance = {field: 1e-12 if field == "past the window" else DENSE_TOLERANCE for field in BAKEOFF_FIELDS}
        expect_report(tried, got, expected, BAKEOFF_FIELDS, hint, reveal, tolerance)
    lines = [f"recursive_report matches the reference at {LAB_CHARS} and {ASKED_CHARS} characters"
             f" (dense within {DENSE_TOLERANCE:g}). On the subset, judged questions:",
             f"  {'chars':>5} {'chunks':>6} {'>256':>6} {'R@5':>6} {'MRR':>6}"]
    for chars in (ASKED_CHARS, LAB_CHARS):
        n, past, recall, mrr = bakeoff_row(chars)
        lines.append(f"  {chars:>5} {n:>6} {past:>6.1%} {recall:>6.3f} {mrr:>6.3f}")
    small, large = bakeoff_row(ASKED_CHARS), bakeoff_row(LAB_CHARS)
    worth = abs(small[2] - large[2]) * len(judged())
    lines += [f"At {ASKED_CHARS} characters there are {small[0] / large[0]:.1f} times as many chunks, and"
              f" {'fewer' if small[1] < large[1] else 'no fewer'} of them run past the model's window; the"
              f" Recall@5 gap is worth {worth:.1f} of {len(judged())} questions.",
              "With fifty questions a gap of one or two is noise: a bake-off ranks settings only when a paired",
              "test over the same questions says the gap is real (q3 shows one)."]
    return lines


# ---------------------------------------------------------------- q3: build RRF over matched chunks, then the steps

def variant_pages(bm25_path: Bm25Retriever, dense_path: DenseRetriever, text: str, constant: float, *,
                  every_chunk: bool = False, from_zero: bool = False, pages_first: bool = False) -> list[str]:
    """The fusion with one rule changed: what a likely mistake returns (for hints and tests)."""
    chunks = dense_path.chunks
    if every_chunk:
        scores = np.asarray(bm25_path.index.scores(text))
        lexical = np.argsort(-scores, kind="stable").tolist()
    else:
        lexical = bm25_path.matched_ranking(text)
    semantic = dense_path.full_ranking(text)
    if pages_first:
        lists = [[h.doc_id for h in collapse((chunks[n], -p) for p, n in enumerate(r))] for r in (lexical, semantic)]
        return [page for page, _ in rrf(lists, constant)]
    fused = rrf([lexical, semantic], constant - 1 if from_zero else constant)
    return [h.doc_id for h in collapse((chunks[n], s) for n, s in fused)]


FUSION_HINTS = (
    ({"every_chunk": True}, "a chunk BM25 did not match has no BM25 rank: fuse only the chunks it matched"
                            " (score above zero), so an unmatched chunk gets its dense term alone"),
    ({"from_zero": True}, "ranks count from 1: the first chunk of a list adds 1 / (constant + 1)"),
    ({"pages_first": True}, "fuse the two chunk rankings first, then collapse the fused ranking to pages"
                            " (each page at its best chunk)"),
)


def _fusion_probes():
    return (("recursive", judged()[::4], RRF_K), ("headed", dev()[::4], RRF_K), ("recursive", dev()[1::6], 10),
            ("headed", judged()[2::5], 100))


def check_fusion(answer: Any) -> list[str]:
    """hybrid_pages(bm25, dense, text, constant) equals ChunkSearch's fused pages; then the steps, paired."""
    fuse = require_function(answer, "hybrid_pages")
    compared = 0
    for unit, questions, constant in _fusion_probes():
        for question in questions:
            tried = f"hybrid_pages(BM25 and dense over the subset's {unit} chunks, {question.text[:40]!r}, {constant})"
            got = call(fuse, "hybrid_pages", (bm25(unit), dense(unit), question.text, constant), tried)
            if not isinstance(got, (list, tuple)) or not all(isinstance(p, str) for p in got):
                raise Mismatch(tried, "a list of page ids, best first", shown(got),
                               "collapse the fused chunk ranking to pages and return their doc_ids")
            expected = [h.doc_id for h in search(unit).pages(question.text, "hybrid", constant=constant)]
            if list(got) != expected:
                at = next((n for n, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
                variants = [(lambda flags=flags: variant_pages(bm25(unit), dense(unit), question.text, constant,
                                                               **flags), text) for flags, text in FUSION_HINTS]
                hint = first_hint(list(got), variants, "fused score = 1 / (constant + rank) from each list the"
                                  " chunk is in, ranks from 1, ties by chunk number; then collapse to pages")
                raise Mismatch(f"{tried}, pages {at + 1} to {at + 3}", shown(expected[at:at + 3]),
                               shown(list(got[at:at + 3])) + f" ({len(got)} pages in all, {len(expected)} expected)",
                               hint)
            compared += 1
    return [f"hybrid_pages agrees with practice.ChunkSearch on {compared} questions (every page, in order; plain"
            " and headed chunks; constants 10, 60 and 100).", *step_lines(fuse)]


def step_runs(fuse: Callable, questions: Sequence[Question]) -> dict[str, dict[str, list[str]]]:
    """qid -> pages of each step, the two fused steps through ``fuse``."""
    return {"dense": {q.qid: [h.doc_id for h in search("recursive").pages(q.text, "dense")] for q in questions},
            "+ BM25, RRF": {q.qid: list(fuse(bm25("recursive"), dense("recursive"), q.text, RRF_K)) for q in questions},
            "+ headers": {q.qid: list(fuse(bm25("headed"), dense("headed"), q.text, RRF_K)) for q in questions}}


def step_lines(fuse: Callable) -> list[str]:
    """Recall@5 after each step on the judged and dev questions, each step paired with the one before it."""
    lines = [f"The steps on the subset (recursive chunks of {LAB_CHARS} characters), Recall@{LAB_K}, each step"
             " paired with the one before it (a 95% interval and p from one sign-flip randomisation test):"]
    for set_name, questions in (("judged", list(judged())), ("real dev", list(dev()))):
        runs = step_runs(fuse, questions)
        names = list(runs)
        means = {n: measure(runs[n], judgements(questions), ks=(LAB_K,))[f"recall@{LAB_K}"] for n in names}
        lines.append(f"  {set_name} ({len(questions)}): " + ", ".join(f"{n} {means[n]:.3f}" for n in names))
        for before, after in zip(names, names[1:]):
            result = paired(runs[after], runs[before], questions, "recall@5", (after, before))
            lines.append(f"    {after} against {before}: {signed(result.difference)}"
                         f" [{signed(result.low)}, {signed(result.high)}], {p_text(result.p_value)}:"
                         f" {result.verdict()}")
    lines += ["An interval that straddles zero is a finding too: this many questions cannot tell the two apart.",
              "Only a step whose interval stays on one side earns a place in the pipeline."]
    return lines


# ---------------------------------------------------------------- q4: five predictions, each then measured

SELF_CHECK = {
    "CHECK_1": ("A code such as 'E-4021' is searched for and never found. The best repair?",
                {"a": "a bigger embedding model", "b": "keyword search (BM25) beside the dense one, fused",
                 "c": "longer chunks", "d": "a lower temperature for the language model"}, "b"),
    "CHECK_2": ("Reciprocal rank fusion merges ranked lists by...",
                {"a": "averaging the raw scores of the lists", "b": "the positions alone: 1 / (k + rank) summed",
                 "c": "keeping the list with the higher top score", "d": "a weight learned from judged questions"},
                "b"),
    "CHECK_3": ("Parent-document retrieval runs its search over...",
                {"a": "the large parent sections", "b": "small child units, returning their parent",
                 "c": "summaries written by a model", "d": "the question's keywords only"}, "b"),
    "CHECK_4": ("When a RAG system answers wrongly, the cause is most often...",
                {"a": "retrieval: the right passage never reached the prompt",
                 "b": "generation: the model misread a good passage",
                 "c": "the prompt's wording", "d": "the embedding cache"}, "a"),
    "CHECK_5": ("Why must permission filters run inside retrieval?",
                {"a": "they make search faster",
                 "b": "otherwise pages a user may not see reach the prompt, and the answer",
                 "c": "the embedding model needs them", "d": "they raise Recall@5"}, "b"),
}


def _letters(value: Any) -> str | None:
    """The letters of a CHECK_YOURSELF string (spaces and commas ignored), or None when it is not one."""
    if not isinstance(value, str):
        return None
    letters = "".join(ch for ch in value.lower() if ch not in " ,;()")
    return letters if 1 <= len(letters) <= len(SELF_CHECK) else None


@lru_cache(maxsize=1)
def self_check_measurements() -> dict[str, tuple[str, list[str]]]:
    """name -> (what was measured, the explanation), each computed on the subset now."""
    names = [q for q in judged() if q.style == "exact-name"]
    def found(method: str, questions) -> int:
        return sum(bool(set(q.relevant) & {h.doc_id for h in search("recursive").pages(q.text, method)[:LAB_K]})
                   for q in questions)
    rare = [(d.doc_id.rsplit(".", 1)[-1], d.doc_id) for d in subset_documents()
            if "_" in d.doc_id.rsplit(".", 1)[-1]]
    rare_questions = [Question(f"name:{doc}", f"{name}", (doc,)) for name, doc in rare]
    fused = rrf([[3, 1, 2], [1, 2, 3]], RRF_K)
    sentences = sum(len(sentence_units(d, _segment(), summary=True)) for d in subset_documents())
    sections = sum(len(section_chunks(d, summary=True)) for d in subset_documents())
    labels = reference_labels(list(judged()), dense("recursive"), dense("pages"), LAB_K)
    near = sum(c in (CAUSES[0], CAUSES[1], CAUSES[2]) for c in labels.values())
    user = user_named("linalg + fft")
    seen = user.visible(subset_documents())
    leaks = sum(any(p not in seen for p in [h.doc_id for h in search("recursive").pages(q.text, "hybrid")][:LAB_K])
                for q in judged())
    emptied = sum(not late_filter([h.doc_id for h in search("recursive").pages(q.text, "hybrid")], seen, LAB_K)
                  for q in judged())
    return {
        "CHECK_1": (f"a bare function name with an underscore as the query ({len(rare_questions)} subset pages):"
                    f" BM25 puts the page in its top {LAB_K} for {found('bm25', rare_questions)}, the dense model"
                    f" for {found('dense', rare_questions)}; the judged exact-name questions ({len(names)}): BM25"
                    f" {found('bm25', names)}, dense {found('dense', names)}",
                    ["A code such as E-4021 is a string the embedding model has rarely or never seen, so its",
                     "vector carries little meaning; BM25 matches the string itself. numpy's names are mostly",
                     "English words the model knows (norm, shift, solve), which is why the dense path finds many",
                     "of them too. Fusing both paths keeps the paraphrases and adds the exact matches; whether",
                     "the fusion pays on your own questions is a measurement (q3's paired steps)."]),
        "CHECK_2": (f"practice.rrf([[3, 1, 2], [1, 2, 3]], {RRF_K}) gives "
                    + ", ".join(f"item {item}: {score:.5f}" for item, score in fused),
                    ["Only positions enter: item 1, second in one list and first in the other, wins with",
                     f"1/{RRF_K + 2} + 1/{RRF_K + 1}. Raw scores (BM25 points, cosines) are on different scales, and",
                     "RRF never reads them, so it needs no normalising and no tuned weights."]),
        "CHECK_3": (f"the subset holds {sentences} pysbd sentences and {sections} sections: the search runs over"
                    f" the {sentences}, the model reads some of the {sections}",
                    ["Small units give precise matches; their parents give the model enough context to answer.",
                     "The lab's version searches sentences and returns the whole section each one sits in,",
                     "once per section, within a token budget."]),
        "CHECK_4": (f"in q1's labels, {len(labels)} of {len(judged())} judged questions never get a relevant page"
                    f" into the prompt; {near} of them are near misses (a name, a split page or a rank just"
                    " below k)",
                    ["A model cannot answer from a page it was never shown, and a failure of retrieval looks",
                     "like a failure of the model unless the retrieved chunks are logged. So the first thing to",
                     "read when an answer is wrong is the log of what was retrieved."]),
        "CHECK_5": (f"for the '{user.name}' user ({len(seen)} visible subset pages), the unfiltered hybrid top"
                    f" {LAB_K} holds a page they may not see for {leaks} of {len(judged())} judged questions, and"
                    f" a filter applied after the top {LAB_K} leaves {emptied} of them with no page at all",
                    ["Whatever is retrieved is pasted into the prompt, and the model may quote it: a page the",
                     "user may not read leaks through the answer. Filtering after the top k is no repair either:",
                     "it empties the results. The filter belongs inside the search (or in the database's",
                     "row-level security, as in lab 04), where the hidden pages never enter the ranking."]),
    }


@lru_cache(maxsize=1)
def _segment():
    from ...engines.chunking.splitters import pysbd_segmenter

    return pysbd_segmenter()


def check_self(answer: Any) -> list[str]:
    """CHECK_YOURSELF, five letters in order; each answered item shown with its measurement and explanation."""
    if is_placeholder(answer):
        raise NotDone("CHECK_YOURSELF is still ...: write your five predictions (one letter each, in order) before"
                      " you run anything below it.")
    letters = _letters(answer)
    if letters is None or any(ch not in options for ch, (_, options, _) in zip(letters, SELF_CHECK.values())):
        raise Failed([f"CHECK_YOURSELF = {shown(answer)} is not a string of up to {len(SELF_CHECK)} letters,"
                      " each one of a, b, c, d.",
                      'hint:     write one letter per question, in order, for example CHECK_YOURSELF = "abcda"'])
    measured = self_check_measurements()
    lines, wrong = [], []
    for number, (choice, (name, (question, options, truth))) in enumerate(zip(letters, SELF_CHECK.items()), start=1):
        if choice != truth:
            wrong.append(str(number))
        lines.append(f"{number}. {'right' if choice == truth else f'you chose ({choice}) {options[choice]}'};"
                     f" the answer is ({truth}) {options[truth]}.")
        lines.append(f"  measured: {measured[name][0]}.")
        lines += [f"  {line}" for line in measured[name][1]]
    missing = len(SELF_CHECK) - len(letters)
    if wrong or missing:
        head = []
        if wrong:
            head.append(f"{len(wrong)} of your {len(letters)} predictions missed (question {', '.join(wrong)}).")
        if missing:
            head.append(f"{missing} question(s) not answered yet: the points need all {len(SELF_CHECK)} letters,"
                        " and only the answered ones are explained below.")
        raise Failed([" ".join(head), *lines])
    return [f"All {len(SELF_CHECK)} predictions were right.", *lines]


EXERCISES = ExerciseSet("lab03-rag-practice", "A week of RAG practice", [
    Exercise("q1", "build", "label every failure of naive RAG", ("label_failures",), check_labels),
    Exercise("q2", "measure", f"the bake-off at {ASKED_CHARS} characters", ("recursive_report",), check_bakeoff),
    Exercise("q3", "build", "fusion over the chunks BM25 matched", ("hybrid_pages",), check_fusion),
    Exercise("q4", "predict", "the five self-checks", ("CHECK_YOURSELF",), check_self, points=2),
], seconds=300.0)   # a cold grading took 187 s beside the labs' cold generation in a fresh clone's make test (2026-12-05)
check = EXERCISES.check
