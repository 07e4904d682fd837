"""The checks of exercises 12-16: realistic mistakes fail (blank and solution of every set: test_exercise_checks).

Lessons 12-16 keep retrieval, generation and cost apart, and so do their exercises: the second
stage is checked with the reranker's call counter, the four boxes judge the chunk before the
answer, the three tasks of lesson 15 come from one reply per question (counted), and the table
measure keeps recall, answerability and the two token bills in separate numbers. Solutions and
blanks come from the notebooks themselves (master and committed student version, check cells
left out). Every "build it" check must reject at least two realistic wrong answers (MUTATIONS),
each with what it tried, what it expected, what came back and a hint naming the mistake, and
never with the master's solution lines.
"""
from __future__ import annotations


import pytest

from ragcourse.exercises.framework import EXERCISE_SETS, FAILED, is_lab_set, load_set
from ragcourse.world.prompts import ANSWER_INSTRUCTION, answer_prompt
from ragcourse.world.table_source import CELL_SEPARATOR
from ragcourse.world.text import tokenize
from support.exercises import answers, assert_every_build_rejects_two, assert_mistake_rejected

SETS = [name for name in EXERCISE_SETS if not is_lab_set(name) and 12 <= int(name[:2]) <= 16]


def test_the_five_sets_are_registered():
    assert [name[:2] for name in SETS] == ["12", "13", "14", "15", "16"]
    for name in SETS:
        kinds = [q.kind for q in load_set(name).questions]
        assert 2 <= len(kinds) <= 4 and ("build" in kinds or "measure" in kinds), (name, kinds)


# ---------------------------------------------------------------- wrong answers a student might write

def _rerank(query, candidates, scorer, *, ascending=False, twice=False, ties_late=False, inputs_only=False,
            unscored=False):
    if unscored:
        return list(candidates), 0
    responses = [scorer.score(query.text, chunk) for chunk in candidates]
    if twice:   # a second pass over the judge to add up the tokens
        tokens = sum(scorer.score(query.text, chunk).tokens for chunk in candidates)
    else:
        tokens = sum(r.input_tokens if inputs_only else r.tokens for r in responses)
    if ties_late:
        order = sorted(range(len(candidates)), key=lambda i: (responses[i].score, i), reverse=True)
    else:
        order = sorted(range(len(candidates)), key=lambda i: responses[i].score if ascending else -responses[i].score)
    return [candidates[i] for i in order], tokens


def _pack(query_text, ranked, window, *, strict=False, chunks_only=False, skip=False, average=False, words=False):
    def size(kept):
        if chunks_only:
            return sum(len(tokenize(f"[{c.code}] {c.text} .")) for c in kept)
        prompt = answer_prompt(query_text, kept)
        return len(prompt.split()) if words else len(tokenize(prompt))

    if average:
        fixed = len(tokenize(ANSWER_INSTRUCTION)) + 2 + len(tokenize(query_text))
        return list(ranked[:max(0, int((window - fixed) / 16.0))])
    kept = []
    for chunk in ranked:
        fits = size(kept + [chunk]) < window if strict else size(kept + [chunk]) <= window
        if fits:
            kept.append(chunk)
        elif not skip:
            break
    return kept


def _boxes(queries, contexts, answers, edition, *, answer_first=False, first_only=False, by_main=False,
           shares=False):
    boxes = dict.fromkeys(("right+right", "right+wrong", "wrong+right", "wrong+wrong"), 0)
    for query, context, answer in zip(queries, contexts, answers):
        looked_at = context[:1] if first_only else context
        phrase = edition.concept(query.concept).document_form
        chunk_ok = any(c.main == query.concept if by_main else phrase in c.text for c in looked_at)
        answer_ok = answer == query.concept
        if answer_first:
            chunk_ok, answer_ok = answer_ok, chunk_ok
        boxes[("right" if chunk_ok else "wrong") + "+" + ("right" if answer_ok else "wrong")] += 1
    return {box: count / len(queries) for box, count in boxes.items()} if shares else boxes


def _scores(model, queries, contexts, current_stamps, *, snapshot=False, per_task=False, counts=False,
            mean_tokens=False):
    fresh = formatted = understood = tokens = 0
    for query, context in zip(queries, contexts):
        if per_task:   # one call for each task
            fresh += model.solve(query.text, context).stamp == current_stamps[query.concept]
            formatted += model.solve(query.text, context).format_ok
            reply = model.solve(query.text, context)
        else:
            reply = model.solve(query.text, context)
            stamps = model.trained_stamps if snapshot else current_stamps
            fresh += reply.stamp == stamps.get(query.concept)
            formatted += reply.format_ok
        understood += reply.concept == query.concept
        tokens += reply.input_tokens
    n = 1 if counts else len(queries)
    return fresh / n, formatted / n, understood / n, tokens / (len(queries) if mean_tokens else 1)


def _table_measure(texts, index, queries, edition, k, *, apart=False, per_chunk=False, words=False, by_key=False):
    count = (lambda text: len(text.split())) if words else (lambda text: len(tokenize(text)))
    recall = answerable = request_tokens = 0
    for query in queries:
        top = [texts[i] for i in index.rank(query.text)[:k]]
        name = query.concept if by_key else edition.concept(query.concept).document_form
        recall += any(name in t for t in top)
        if apart:
            answerable += any(name in t for t in top) and any(CELL_SEPARATOR in t for t in top)
        else:
            answerable += any(name in t and CELL_SEPARATOR in t for t in top)
        request_tokens += sum(count(t) for t in top) / (k if per_chunk else 1)
    return recall / len(queries), answerable / len(queries), sum(count(t) for t in texts), request_tokens / len(queries)


MUTATIONS = [  # (exercise set, question, the mistake, a wrong answer that makes it, what its hint must say)
    ("12-reranking", "q2", "lowest score first", lambda *a: _rerank(*a, ascending=True), "highest score comes first"),
    ("12-reranking", "q2", "the judge asked twice per candidate", lambda *a: _rerank(*a, twice=True),
     "exactly once"),
    ("12-reranking", "q2", "ties toward the later candidate", lambda *a: _rerank(*a, ties_late=True),
     "retriever's order"),
    ("12-reranking", "q2", "prompt tokens only", lambda *a: _rerank(*a, inputs_only=True), "output token"),
    ("12-reranking", "q2", "no second stage at all", lambda *a: _rerank(*a, unscored=True), "its own score"),
    ("13-context-construction", "q2", "a prompt of exactly the window refused", lambda *a: _pack(*a, strict=True),
     "exactly `window` tokens fits"),
    ("13-context-construction", "q2", "chunks counted, instruction and question not",
     lambda *a: _pack(*a, chunks_only=True), "the instruction and the question"),
    ("13-context-construction", "q2", "a chunk skipped, a shorter one taken", lambda *a: _pack(*a, skip=True),
     "stop at the first chunk"),
    ("13-context-construction", "q2", "the average chunk as the budget", lambda *a: _pack(*a, average=True),
     "average chunk"),
    ("13-context-construction", "q2", "words counted instead of tokens", lambda *a: _pack(*a, words=True),
     "tokenize"),
    ("14-retrieval-and-generation-quality", "q2", "answer first in the box names",
     lambda *a: _boxes(*a, answer_first=True), "the first half of a box name is the chunk"),
    ("14-retrieval-and-generation-quality", "q2", "only the first chunk looked at",
     lambda *a: _boxes(*a, first_only=True), "not only first"),
    ("14-retrieval-and-generation-quality", "q2", "chunk judged by its document", lambda *a: _boxes(*a, by_main=True),
     "judge the chunk by its text"),
    ("14-retrieval-and-generation-quality", "q2", "shares instead of counts", lambda *a: _boxes(*a, shares=True),
     "counts of questions"),
    ("15-retrieval-and-fine-tuning", "q2", "freshness against the snapshot", lambda *a: _scores(*a, snapshot=True),
     "in force now"),
    ("15-retrieval-and-fine-tuning", "q2", "the model asked once per task", lambda *a: _scores(*a, per_task=True),
     "once per question"),
    ("15-retrieval-and-fine-tuning", "q2", "counts instead of shares", lambda *a: _scores(*a, counts=True),
     "return shares"),
    ("15-retrieval-and-fine-tuning", "q2", "mean tokens instead of the total", lambda *a: _scores(*a, mean_tokens=True),
     "added up"),
    ("16-tables-and-images", "q2", "header dropped", lambda table: list(table.rows), "header goes in front"),
    ("16-tables-and-images", "q2", "header only on the first row",
     lambda table: [table.head + " ; " + row if i == 0 else row for i, row in enumerate(table.rows)],
     "not only the first"),
    ("16-tables-and-images", "q2", "header after the row",
     lambda table: [row + " ; " + table.head for row in table.rows],
     "header comes first"),
    ("16-tables-and-images", "q2", "the whole table in one chunk",
     lambda table: [table.head + " ; " + " ; ".join(table.rows)], "one chunk per row"),
    ("16-tables-and-images", "q3", "name and row in different chunks", lambda *a: _table_measure(*a, apart=True),
     "one chunk that holds both"),
    ("16-tables-and-images", "q3", "tokens per chunk, not per request", lambda *a: _table_measure(*a, per_chunk=True),
     "add up all k chunks"),
    ("16-tables-and-images", "q3", "words counted instead of tokens", lambda *a: _table_measure(*a, words=True),
     "tokenize"),
    ("16-tables-and-images", "q3", "the concept key looked for", lambda *a: _table_measure(*a, by_key=True),
     "crew phrase"),
]


@pytest.mark.parametrize("name, key, mistake, wrong, hint", MUTATIONS,
                         ids=[f"{n[:2]}-{k}-{m.replace(' ', '_')}" for n, k, m, _, _ in MUTATIONS])
def test_a_realistic_mistake_is_rejected_with_a_useful_message(name, key, mistake, wrong, hint):
    assert_mistake_rejected(name, key, mistake, wrong, hint)


def test_every_build_question_rejects_at_least_two_mistakes():
    assert_every_build_rejects_two(SETS, MUTATIONS)


# ---------------------------------------------------------------- other correct ways pass too

def rerank_with_stable_reverse(query, candidates, scorer):
    responses = [scorer.score(query.text, chunk) for chunk in candidates]
    order = sorted(range(len(candidates)), key=lambda i: responses[i].score, reverse=True)
    return [candidates[i] for i in order], sum(r.input_tokens + r.output_tokens for r in responses)


def pack_by_the_sum_of_parts(query_text, ranked, window):
    used = len(tokenize(ANSWER_INSTRUCTION)) + len(tokenize("Question:")) + len(tokenize(query_text))
    kept = []
    for chunk in ranked:
        used += len(tokenize(f"[{chunk.code}] {chunk.text} ."))
        if used > window:
            return kept
        kept.append(chunk)
    return kept


def boxes_from_chunk_tags(queries, contexts, answers, edition):
    names = ("right+right", "right+wrong", "wrong+right", "wrong+wrong")
    found = [any(q.concept in c.concepts for c in context) for q, context in zip(queries, contexts)]
    right = [a == q.concept for q, a in zip(queries, answers)]
    return {name: sum((f if name[0] == "r" else not f) and (r if name.endswith("+right") else not r)
                      for f, r in zip(found, right)) for name in names}


def scores_from_a_reply_list(model, queries, contexts, current_stamps):
    replies = [model.solve(q.text, c) for q, c in zip(queries, contexts)]
    n = len(replies)
    return (sum(r.stamp == current_stamps[q.concept] for r, q in zip(replies, queries)) / n,
            sum(r.format_ok for r in replies) / n, sum(r.concept == q.concept for r, q in zip(replies, queries)) / n,
            sum(r.input_tokens for r in replies))


@pytest.mark.parametrize("name, key, answer", [
    ("12-reranking", "q2", rerank_with_stable_reverse),
    ("13-context-construction", "q2", pack_by_the_sum_of_parts),
    ("14-retrieval-and-generation-quality", "q2", boxes_from_chunk_tags),
    ("15-retrieval-and-fine-tuning", "q2", scores_from_a_reply_list),
    ("16-tables-and-images", "q2", lambda table: [f"{table.head} ; {row}" for row in table.rows]),
], ids=["stable-reverse", "sum-of-parts", "chunk-tags", "reply-list", "f-string"])
def test_other_correct_answers_pass(name, key, answer):
    verdict = load_set(name).verdict(key, answer)
    assert verdict.passed, verdict.text()


# ---------------------------------------------------------------- measure it: typed-in numbers fail, asked ones hidden

ASKED = {"12-reranking": (20260218, 16), "13-context-construction": (20260218, 6),
         "14-retrieval-and-generation-quality": (20260218, 2), "15-retrieval-and-fine-tuning": (20260218,),
         "16-tables-and-images": (20260218, 5)}
MEASURES = [(n, q.key) for n in SETS for q in load_set(n).questions if q.kind == "measure"]


@pytest.mark.parametrize("name, key", MEASURES, ids=[n[:2] for n, _ in MEASURES])
def test_a_number_typed_in_fails(name, key):
    """A function returning the course seed's answer whatever it is asked fails at the other seeds."""
    answer = answers("masters", name, key)[0](*ASKED[name])
    verdict = load_set(name).verdict(key, lambda *args: answer)
    assert verdict.status == FAILED, verdict.text()
    assert "expected:" in verdict.text() and "20260218" not in verdict.text().split("tried:")[1].split("\n")[0]


@pytest.mark.parametrize("name, key", MEASURES, ids=[n[:2] for n, _ in MEASURES])
def test_the_asked_numbers_are_never_revealed(name, key):
    """Right everywhere but at the asked setting: the message hides the reference value."""
    solution = answers("masters", name, key)[0]
    right = solution(*ASKED[name])

    def off(value):
        return value + 1 if isinstance(value, int) else value + 0.01

    def wrong_only_when_asked(*args):
        if args != ASKED[name]:
            return solution(*args)
        return tuple(off(v) for v in right) if isinstance(right, tuple) else off(right)

    text = load_set(name).verdict(key, wrong_only_when_asked).text()
    assert "not shown here" in text, text
    shown_values = right if isinstance(right, tuple) else (right,)
    assert not any(f"{v:.6f}" in text for v in shown_values if isinstance(v, float)), text


# ---------------------------------------------------------------- predictions

def test_the_second_stage_check_reads_the_call_counter():
    """An order and tokens that are right do not pass when the judge was asked twice per candidate."""
    text = load_set("12-reranking").verdict("q2", lambda *a: _rerank(*a, twice=True)).text()
    assert "call counter" in text and "calls, one per candidate" in text
