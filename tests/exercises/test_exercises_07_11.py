"""The checks of exercises 07-11: realistic mistakes fail (blank and solution of every set: test_exercise_checks).

Part 2 of the course scores retrieval and generation apart, and so do these exercises; some of
their checks also read the simulated model's call counter (a solution that calls the model more
often than the lesson's method is not the lesson's method). As in ``test_exercise_checks``, the
solutions and blanks come from the notebooks themselves (master and committed student version,
check cells left out), and every "build it" check must reject at least two realistic wrong
answers (the MUTATIONS table below), each with what it tried, what it expected, what came back
and a hint naming the mistake, and never with the master's solution lines.
"""
from __future__ import annotations

from collections import Counter

import pytest

from ragcourse.exercises.framework import EXERCISE_SETS, FAILED, is_lab_set, load_set
from ragcourse.retrieval.chunking import token_windows
from ragcourse.retrieval.pipeline import is_relevant, link_instruction, link_prompt
from ragcourse.world.llm import ConceptLinker
from ragcourse.world.sources import is_continuation
from ragcourse.world.text import tokenize
from support.exercises import answers, assert_every_build_rejects_two, assert_mistake_rejected

SETS = [name for name in EXERCISE_SETS if not is_lab_set(name) and 7 <= int(name[:2]) <= 11]


def test_the_five_sets_are_registered():
    assert [name[:2] for name in SETS] == ["07", "08", "09", "10", "11"]
    assert all(2 <= len(load_set(name).questions) <= 4 for name in SETS)


# ---------------------------------------------------------------- 07: the two columns, one call per request

def _columns(queries, chunks, retrieved, linker, *, precision=False, crossed=False, empty_list=False, twice=False,
             own_model=False):
    instruction = link_instruction(linker.edition)
    model = ConceptLinker(linker.edition, linker.seed, temperature=linker.temperature) if own_model else linker
    found = right = 0
    for query, top in zip(queries, retrieved):
        sources = [chunks[i].text for i in top]
        if twice:
            model.call(link_prompt(instruction, query.text))       # "what does it say without sources?"
        reply = model.call(link_prompt(instruction, query.text, sources if sources or empty_list else None))
        carrying = [query.concept in chunks[i].concepts for i in top]
        found += (sum(carrying) / len(top) if top else 0) if precision else any(carrying)
        right += reply.concept == query.concept and (any(carrying) or not crossed)
    return found / len(queries), right / len(queries)


# ---------------------------------------------------------------- 08: the repeat filter

def _joined(lines, strip=True):
    merged = []
    for line in lines:
        if is_continuation(line) and merged:
            merged[-1] += " " + (line.strip() if strip else line)
        else:
            merged.append(line)
    return merged


def filter_counts_every_line(sheets, threshold):
    joined = [_joined(lines) for lines in sheets]
    counts = Counter(line for lines in joined for line in lines)
    return ([[line for line in lines if counts[line] < threshold] for lines in joined],
            [line for lines in joined for line in lines if counts[line] >= threshold])


def filter_strictly_more(sheets, threshold):
    joined = [_joined(lines) for lines in sheets]
    counts = Counter(line for lines in joined for line in set(lines))
    return ([[line for line in lines if counts[line] <= threshold] for lines in joined],
            [line for lines in joined for line in lines if counts[line] > threshold])


def filter_without_joining(sheets, threshold):
    counts = Counter(line for lines in sheets for line in set(lines))
    return ([[line for line in lines if counts[line] < threshold] for lines in sheets],
            [line for lines in sheets for line in lines if counts[line] >= threshold])


def filter_keeps_the_indent(sheets, threshold):
    joined = [_joined(lines, strip=False) for lines in sheets]
    counts = Counter(line for lines in joined for line in set(lines))
    return ([[line for line in lines if counts[line] < threshold] for lines in joined],
            [line for lines in joined for line in lines if counts[line] >= threshold])


def filter_lists_each_drop_once(sheets, threshold):
    joined = [_joined(lines) for lines in sheets]
    counts = Counter(line for lines in joined for line in set(lines))
    return ([[line for line in lines if counts[line] < threshold] for lines in joined],
            sorted({line for lines in joined for line in lines if counts[line] >= threshold}))


# ---------------------------------------------------------------- 09: the chunker

def _windows(words, size, overlap, *, size_in_words=False, overlap_in_words=False, short=False, drop_last=False):
    cost = [len(tokenize(word)) for word in words]
    spans, start = [], 0
    while start < len(words):
        end, used = start, 0
        while end < len(words):
            step = 1 if size_in_words else cost[end]
            if used + step > size or (short and used + step == size):
                break
            used += step
            end += 1
        end = max(end, start + 1)
        if end == len(words):
            if not (drop_last and spans):
                spans.append((start, end))
            break
        spans.append((start, end))
        back, shared = end, 0
        while back - 1 > start:
            step = 1 if overlap_in_words else cost[back - 1]
            if shared + step > overlap:
                break
            back -= 1
            shared += step
        start = back
    return spans


# ---------------------------------------------------------------- 10: the refresh year

def _year(stream, chunk_document, retrieved, interval, *, late=False, per_republication=False, last_period=False,
          per_request=False, full_always=False):
    stale = served = incremental = full = 0
    for period in range(1, stream.periods + 1):
        held = ((period - 1) // interval) * interval if late else period - period % interval
        if full_always or period % interval == 0:
            full += len(chunk_document)
        if period % interval == 0:
            if per_republication:
                for p in range(period - interval + 1, period + 1):
                    incremental += sum(d in stream.republished_in(p) for d in chunk_document)
            else:
                changed = stream.changed_between(period - 1 if last_period else period - interval, period)
                incremental += sum(d in changed for d in chunk_document)
        for top in retrieved:
            old = [stream.record(chunk_document[i], held) != stream.record(chunk_document[i], period) for i in top]
            stale, served = (stale + any(old), served + 1) if per_request else (stale + sum(old), served + len(old))
    return stale / served, incremental, full


# ---------------------------------------------------------------- 11: transform, then retrieve

def _setup(phrasings, form, mode, transformer, answerer, retrieve, *, search_typed=False, answer_search=False,
           precision=False, transform_always=False, transform_twice=False, transforms_first=False):
    edition = transformer.edition
    found = answered = 0
    ahead = [transformer.transform(p.text(form), mode if mode != "baseline" else "expansion").text
             for p in phrasings] if transforms_first and mode != "baseline" else None
    for number, phrasing in enumerate(phrasings):
        typed = search = phrasing.text(form)
        if ahead:
            search = ahead[number]
        elif mode != "baseline" or transform_always:
            result = transformer.transform(typed, mode if mode != "baseline" else "expansion")
            if transform_twice and result.ok:
                result = transformer.transform(typed, mode)
            if not search_typed and mode != "baseline":
                search = result.text
        context = retrieve(search)
        hits = [is_relevant(chunk, phrasing.query, edition) for chunk in context]
        found += sum(hits) / len(hits) if precision else any(hits)
        answered += is_relevant(answerer.answer(search if answer_search else typed, context).chunk,
                                phrasing.query, edition)
    return found / len(phrasings), answered / len(phrasings)


MUTATIONS = [  # (exercise set, question, the mistake, a wrong answer that makes it, what its hint must say)
    ("07-retrieval-augmented-generation", "q2", "recall as the share of carrying chunks (precision)",
     lambda *a: _columns(*a, precision=True), "is precision"),
    ("07-retrieval-augmented-generation", "q2", "generation counted only where retrieval found the concept",
     lambda *a: _columns(*a, crossed=True), "the columns are separate"),
    ("07-retrieval-augmented-generation", "q2", "an empty source list instead of no sources",
     lambda *a: _columns(*a, empty_list=True), "no Source part"),
    ("07-retrieval-augmented-generation", "q2", "the model called twice per request",
     lambda *a: _columns(*a, twice=True), "exactly once per request"),
    ("07-retrieval-augmented-generation", "q2", "a model of one's own instead of the one handed over",
     lambda *a: _columns(*a, own_model=True), "not one of your own"),
    ("08-document-preparation", "q2", "lines counted, not sheets", filter_counts_every_line, "counts once"),
    ("08-document-preparation", "q2", "off by one: more than threshold sheets", filter_strictly_more,
     "not only on more"),
    ("08-document-preparation", "q2", "wrapped lines not joined", filter_without_joining, "join every indented"),
    ("08-document-preparation", "q2", "the indent kept when joining", filter_keeps_the_indent, "strip the indent"),
    ("08-document-preparation", "q2", "each dropped line listed once", filter_lists_each_drop_once,
     "repeats on other sheets included"),
    ("09-chunking-strategies", "q2", "size counted in words", lambda *a: _windows(*a, size_in_words=True),
     "budget of tokens"),
    ("09-chunking-strategies", "q2", "overlap counted in words", lambda *a: _windows(*a, overlap_in_words=True),
     "counted in tokens too"),
    ("09-chunking-strategies", "q2", "off by one: the budget never filled", lambda *a: _windows(*a, short=True),
     "at or below the size"),
    ("09-chunking-strategies", "q2", "the last short window dropped", lambda *a: _windows(*a, drop_last=True),
     "keep it"),
    ("10-indexing-and-updating", "q2", "off by one: the rebuild period served from the old index",
     lambda *a: _year(*a, late=True), "answered from the rebuilt index"),
    ("10-indexing-and-updating", "q2", "one re-embedding per republication",
     lambda *a: _year(*a, per_republication=True), "re-embedded once"),
    ("10-indexing-and-updating", "q2", "only the rebuild period's changes re-embedded",
     lambda *a: _year(*a, last_period=True), "since the previous rebuild"),
    ("10-indexing-and-updating", "q2", "stale share over requests, not chunks",
     lambda *a: _year(*a, per_request=True), "each chunk counted"),
    ("10-indexing-and-updating", "q2", "full rebuild counted every period", lambda *a: _year(*a, full_always=True),
     "and only then"),
    ("11-query-transformation", "q2", "the typed request searched after transforming",
     lambda *a: _setup(*a, search_typed=True), "the text the transformer returned"),
    ("11-query-transformation", "q2", "the transformed text answered", lambda *a: _setup(*a, answer_search=True),
     "as the user typed it"),
    ("11-query-transformation", "q2", "recall as the share of relevant chunks", lambda *a: _setup(*a, precision=True),
     "at least one of the chunks"),
    ("11-query-transformation", "q2", "a transform call in the baseline too",
     lambda *a: _setup(*a, transform_always=True), "at most once per request"),
    ("11-query-transformation", "q2", "the transformer called twice per request",
     lambda *a: _setup(*a, transform_twice=True), "at most once per request"),
    ("11-query-transformation", "q2", "all transforms before any answer", lambda *a: _setup(*a, transforms_first=True),
     "share one endpoint"),
]


@pytest.mark.parametrize("name, key, mistake, wrong, hint", MUTATIONS,
                         ids=[f"{n[:2]}-{k}-{m.replace(' ', '_')}" for n, k, m, _, _ in MUTATIONS])
def test_a_realistic_mistake_is_rejected_with_a_useful_message(name, key, mistake, wrong, hint):
    assert_mistake_rejected(name, key, mistake, wrong, hint)


def test_every_build_question_rejects_at_least_two_mistakes():
    assert_every_build_rejects_two(SETS, MUTATIONS)


# ---------------------------------------------------------------- other correct ways pass too

def columns_through_call(queries, chunks, retrieved, linker):
    """The model called through ``__call__``, the reply read as text."""
    instruction = link_instruction(linker.edition)
    replies = [linker(link_prompt(instruction, q.text, [chunks[i].text for i in top] if top else None))
               for q, top in zip(queries, retrieved)]
    recall = sum(bool({q.concept} & {c for i in top for c in chunks[i].concepts}) for q, top in zip(queries, retrieved))
    return recall / len(queries), sum(r.text == q.concept for r, q in zip(replies, queries)) / len(queries)


def filter_with_counter(sheets, threshold):
    joined = []
    for lines in sheets:
        merged = []
        for line in lines:
            if line.startswith("  ") and merged:
                merged[-1] = f"{merged[-1]} {line.lstrip()}"
            else:
                merged.append(line)
        joined.append(merged)
    sheets_of = Counter(line for lines in joined for line in dict.fromkeys(lines))
    drop = {line for line, count in sheets_of.items() if count >= threshold}
    return ([[line for line in lines if line not in drop] for lines in joined],
            [line for lines in joined for line in lines if line in drop])


def year_by_record_counts(stream, chunk_document, retrieved, interval):
    rebuilds = [p for p in range(1, stream.periods + 1) if p % interval == 0]
    full = len(rebuilds) * len(chunk_document)
    incremental = sum(stream.changes_of(d, p) > stream.changes_of(d, p - interval) for p in rebuilds
                      for d in chunk_document)
    served = [(chunk_document[i], p) for p in range(1, stream.periods + 1) for top in retrieved for i in top]
    stale = sum(stream.changes_of(d, p) != stream.changes_of(d, p - p % interval) for d, p in served)
    return stale / len(served), incremental, full


def setup_with_lists(phrasings, form, mode, transformer, answerer, retrieve):
    found = answered = 0.0
    for phrasing in phrasings:
        typed = phrasing.text(form)
        response = None if mode == "baseline" else transformer(typed, mode)
        context = retrieve(typed if response is None else response.text)
        found += any(is_relevant(c, phrasing.query, transformer.edition) for c in context)
        answered += is_relevant(answerer(typed, context).chunk, phrasing.query, answerer.edition)
    return found / len(phrasings), answered / len(phrasings)


@pytest.mark.parametrize("name, key, answer", [
    ("07-retrieval-augmented-generation", "q2", columns_through_call),
    ("08-document-preparation", "q2", filter_with_counter),
    ("09-chunking-strategies", "q2", token_windows),
    ("10-indexing-and-updating", "q2", year_by_record_counts),
    ("11-query-transformation", "q2", setup_with_lists),
], ids=["call-and-text", "counter-filter", "package-windows", "record-counts", "call-operators"])
def test_other_correct_answers_pass(name, key, answer):
    verdict = load_set(name).verdict(key, answer)
    assert verdict.passed, verdict.text()


# ---------------------------------------------------------------- measure it: typed-in numbers fail

TYPED_IN = {"07-retrieval-augmented-generation": (20260218, 10), "08-document-preparation": (20260218, 5),
            "09-chunking-strategies": (20260218, 24, 6), "10-indexing-and-updating": (20260218, 5),
            "11-query-transformation": (20260218, 10)}


@pytest.mark.parametrize("name, key", [(n, q.key) for n in SETS for q in load_set(n).questions if q.kind == "measure"])
def test_a_number_typed_in_fails_and_is_not_revealed(name, key):
    """The course seed's answer returned whatever is asked fails at another seed; the asked number is never shown."""
    answer = answers("masters", name, key)[0](*TYPED_IN[name])
    verdict = load_set(name).verdict(key, lambda *args: answer)
    text = verdict.text()
    assert verdict.status == FAILED and "expected:" in text, text
    assert "20260218" not in text.split("tried:")[1].split("\n")[0], "an other seed is tried first"


@pytest.mark.parametrize("name, key", [(n, q.key) for n in SETS for q in load_set(n).questions if q.kind == "measure"])
def test_the_asked_numbers_are_never_revealed(name, key):
    """A function right everywhere but at the asked setting fails without printing the reference value."""
    solution = answers("masters", name, key)[0]

    def wrong_only_when_asked(*args):
        got = solution(*args)
        return tuple(value + 1 for value in got) if args == TYPED_IN[name] else got

    verdict = load_set(name).verdict(key, wrong_only_when_asked)
    assert verdict.status == FAILED and "not shown here" in verdict.text(), verdict.text()
    assert f"{float(solution(*TYPED_IN[name])[0]):.6f}" not in verdict.text()


# ---------------------------------------------------------------- predictions

# ---------------------------------------------------------------- the references are the package's

@pytest.mark.parametrize("seed", [20260218, 20260219, 7])
def test_lesson_07_reference_is_the_packaged_pipeline(seed):
    """The two columns the checks compare with are those of ``run_linking``, the package's pipeline."""
    from ragcourse.exercises import reference
    from ragcourse.exercises.part2 import lesson07
    from ragcourse.retrieval.linking import run_linking

    for setup in ("retrieval", "wrong chunks"):
        model = reference.rag_model(seed) if setup == "retrieval" else reference.rag_model(seed).with_settings(
            in_domain=False)
        for k in (1, 3):
            run = run_linking(reference.rag_chunks(seed), reference.rag_world(seed).queries, model, seed, k=k)
            assert lesson07.setup_columns(seed, setup, k) == (run.recall, run.generation)
