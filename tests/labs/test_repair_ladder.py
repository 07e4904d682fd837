"""Lab 04's ladder: a step is kept when its point estimate on the questions is not below the best so far.

The runs are made up so that the answer is known: a setting's ``lexical`` decides at which
rank each question's relevant page appears.
"""
from __future__ import annotations

import pytest

from ragcourse.corpus.queries import Question
from ragcourse.labs.ladder import LADDER_INDEXES, Step, climb, final_setting
from ragcourse.rag.pipeline import DEFAULT_SETTING as KEPT, UNTUNED_SETTING as START, Setting

QUESTIONS = [Question(f"q{n}", f"question {n}", (f"page{n}",)) for n in range(40)]


def ranked(first: int, questions=QUESTIONS) -> dict:
    """Each question's relevant page at rank ``first`` (1 = top), among fillers."""
    runs = {}
    for q in questions:
        pages = [f"other{k}" for k in range(10)]
        pages.insert(first - 1, q.relevant[0])
        runs[q.qid] = pages
    return runs


RANK_OF = {"english": 3, "names": 3, "bm25": 2, "worse": 8}


def run(setting: Setting) -> dict:
    runs = ranked(RANK_OF[setting.lexical])
    if setting.second_stage == "re-scorer":   # helps one question only: no test could call that a finding
        runs["q0"] = ranked(1, QUESTIONS[:1])["q0"]
    if setting.constant == 10 and RANK_OF[setting.lexical] == 3:
        # the same MRR (1/6 + 1/2 = 1/3 + 1/3), but q1's page falls out of the top 5
        runs["q1"] = ranked(6, QUESTIONS[1:2])["q1"]
        runs["q2"] = ranked(2, QUESTIONS[2:3])["q2"]
    return runs


def test_a_step_that_helps_one_question_is_kept_though_no_test_could_prove_it():
    """The point estimate decides, not the p-value: the old significance gate would have thrown this away."""
    rungs = climb(Setting(lexical="bm25"), [Step("re-scorer", {"second_stage": "re-scorer"})], run, QUESTIONS)
    assert rungs[1].kept and rungs[1].comparison.difference > 0 and rungs[1].comparison.p_value > 0.05
    assert final_setting(rungs).second_stage == "re-scorer"


def test_later_steps_are_compared_with_the_best_so_far_and_a_worse_step_is_not_kept():
    steps = [Step("worse", {"lexical": "worse"}),        # not kept: what follows must not be compared with it
             Step("english", {"lexical": "english"}),    # below bm25: not kept
             Step("re-scorer", {"second_stage": "re-scorer"})]
    rungs = climb(Setting(lexical="bm25"), steps, run, QUESTIONS)
    assert [r.kept for r in rungs] == [True, False, False, True]
    assert rungs[2].comparison.difference == pytest.approx(1 / 3 - 1 / 2)     # against bm25, not against worse
    assert rungs[3].setting.lexical == "bm25"
    assert rungs[3].means["mrr"] == pytest.approx((1 + 39 / 2) / 40)


def test_an_equal_mrr_is_kept_unless_hit_at_5_is_lower():
    tie = climb(Setting(lexical="names"), [Step("english", {"lexical": "english"})], run, QUESTIONS)
    assert tie[1].kept and tie[1].comparison.difference == 0          # same MRR, same hit@5: not worse, kept
    lower = climb(Setting(lexical="names"), [Step("constant 10", {"constant": 10})], run, QUESTIONS)
    assert lower[1].means["mrr"] == pytest.approx(lower[0].means["mrr"])
    assert lower[1].means["hit@5"] == lower[0].means["hit@5"] - 1 / 40
    assert not lower[1].kept


def test_a_setting_names_what_may_change_and_what_it_allows():
    with pytest.raises(ValueError, match="unknown setting.*rrf_k.*allowed: policy, summaries, headers, lexical"):
        Setting().changed(rrf_k=10)
    with pytest.raises(ValueError, match="policy must be one of seed, window, recursive; got 'pages'"):
        Setting(policy="pages")
    with pytest.raises(ValueError, match="second_stage must be one of none, re-scorer, learned; got 'cross'"):
        Setting(second_stage="cross")
    assert Setting(policy="seed", headers=False).chunk_policy().version == "sentences-v1(size=2000,overlap=300)"
    assert Setting(policy="window", headers=True).chunk_policy().headers


def test_the_start_is_the_best_known_design_and_every_reachable_index_is_planned():
    """Lab 03's units with headers and summary lines, BM25 in the database, no second stage; each index a
    one-field step can reach is in prepare's plan (``LADDER_INDEXES``)."""
    assert (START.policy, START.summaries, START.headers, START.lexical, START.second_stage) == (
        "recursive", True, True, "bm25", "none")
    assert START.chunk_policy().version == "recursive-v1(size=800,overlap=0,headers)"
    reachable = {START.changed(headers=False).index_key, START.changed(policy="seed").index_key, START.index_key,
                 KEPT.index_key}
    assert reachable <= {s.index_key for s in LADDER_INDEXES}
