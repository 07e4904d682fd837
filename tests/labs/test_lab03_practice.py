"""Lab 03's naive RAG prompt, failure rules and small-to-big contexts."""
from __future__ import annotations

from ragcourse.engines.chunking.text_chunks import TextChunk
from ragcourse.labs.practice import (CAUSES, Context, Evidence, answer_prompt, failure_cause, first_rank,
                                     parent_contexts, sentence_windows, word_share)
from ragcourse.engines.chunking.splitters import HeadedChunk


def test_prompt_wraps_every_chunk_in_doc_tags_and_ends_with_the_question():
    prompt = answer_prompt("why?", [TextChunk("a", 0, "one"), TextChunk("b", 3, "two")])
    assert "<doc id='a#0'>one</doc>\n\n<doc id='b#3'>two</doc>" in prompt
    assert prompt.endswith("\n\nQuestion: why?")


def evidence(**changes):
    values = dict(dense_rank=50, bm25_hit=False, page_hit=False, word_share=0.8, style="plain")
    values.update(changes)
    return Evidence(**values)


def test_each_rule_and_their_order():
    assert failure_cause(evidence(style="exact-name", bm25_hit=True, page_hit=True)) == CAUSES[0]
    assert failure_cause(evidence(bm25_hit=True, page_hit=True)) == CAUSES[1]
    assert failure_cause(evidence(dense_rank=6)) == CAUSES[2]
    assert failure_cause(evidence(dense_rank=20)) == CAUSES[2]
    assert failure_cause(evidence(dense_rank=21, word_share=0.4)) == CAUSES[3]
    assert failure_cause(evidence(dense_rank=None)) == CAUSES[4]
    assert first_rank(["x", "y", "y"], {"y"}) == 2 and first_rank(["x"], {"y"}) is None
    assert word_share(["a", "b", "a"], {"a"}) == 0.5 and word_share([], {"a"}) == 0.0


def test_parents_are_deduplicated_and_kept_within_the_budget():
    children = [HeadedChunk("p", 0, "c", section=1), HeadedChunk("p", 1, "c", section=1),
                HeadedChunk("q", 0, "c", section=2), HeadedChunk("r", 0, "c", section=1),
                HeadedChunk("s", 0, "c", section=1)]
    parents = {("p", 1): Context("p", "P", 40), ("q", 2): Context("q", "Q", 100), ("r", 1): Context("r", "R", 50),
               ("s", 1): Context("s", "S", 5)}
    chosen = parent_contexts(children, lambda c: (c.doc_id, c.section), parents, pages=3, budget=95)
    assert [c.doc_id for c in chosen] == ["p", "r", "s"]
    assert sum(c.tokens for c in chosen) <= 95


def test_sentence_windows_stay_in_their_section():
    units = [HeadedChunk("p", n, f"s{n}", section=n // 3) for n in range(6)] + [HeadedChunk("q", 6, "t", section=0)]

    def same(a, b):
        return units[a].doc_id == units[b].doc_id and units[a].section == units[b].section

    assert sentence_windows([1, 4, 0, 6], units, same, 1, pages=2) == [("p", [0, 1, 2]), ("q", [6])]
    assert sentence_windows([3], units, same, 2, pages=5) == [("p", [3, 4, 5])]


def test_no_cause_claims_what_page_judgements_cannot_show():
    """Judgements name pages, not answer sentences: no cause may claim an answer split across chunks."""
    assert CAUSES[1] == "only the whole page matches"
    assert not any("split" in cause for cause in CAUSES)
