"""Lab 04's repair ladder: a step is kept only when its paired test on the questions says it helps.

The runs are made up so that the answer is known: a setting's ``lexical`` decides at which
rank each question's relevant page appears.
"""
from __future__ import annotations

import pytest

from ragcourse.corpus.queries import Question
from ragcourse.labs.ladder import Setting, Step, climb, final_setting

QUESTIONS = [Question(f"q{n}", f"question {n}", (f"page{n}",)) for n in range(40)]


def ranked(first: int, questions=QUESTIONS) -> dict:
    """Each question's relevant page at rank ``first`` (1 = top), among fillers."""
    runs = {}
    for q in questions:
        pages = [f"other{k}" for k in range(10)]
        pages.insert(first - 1, q.relevant[0])
        runs[q.qid] = pages
    return runs


RANK_OF = {"english": 3, "names": 3, "bm25": 1, "worse": 8}   # bm25 helps on every question


def run(setting: Setting) -> dict:
    if setting.second_stage == "none":   # helps one question only: no test can call that a finding
        runs = ranked(RANK_OF[setting.lexical])
        runs["q0"] = ranked(1, QUESTIONS[:1])["q0"]
        return runs
    return ranked(RANK_OF[setting.lexical])


def test_a_step_that_helps_every_question_is_kept_and_later_steps_compare_with_it():
    steps = [Step("worse", {"lexical": "worse"}),          # tried, not kept: bm25 must not be compared with it
             Step("bm25", {"lexical": "bm25"}),
             Step("one question", {"second_stage": "none"})]
    rungs = climb(Setting(), steps, run, QUESTIONS)
    assert [r.kept for r in rungs] == [True, False, True, False]
    assert rungs[2].comparison.difference == pytest.approx(1 - 1 / 3)      # against english (kept), not 1 - 1/8
    assert rungs[2].comparison.p_value <= 0.05
    # the last step is measured against bm25 (kept), not against the start: on q0 it changes nothing then
    assert rungs[3].setting.lexical == "bm25" and rungs[3].comparison.difference == 0
    assert final_setting(rungs) == Setting(lexical="bm25")


def test_a_required_step_is_kept_even_when_it_hurts_and_its_test_is_still_there():
    rungs = climb(Setting(), [Step("required", {"lexical": "worse"}, required=True),
                              Step("bm25", {"lexical": "bm25"})], run, QUESTIONS)
    assert rungs[1].kept and rungs[1].required and rungs[1].comparison.difference < 0
    assert rungs[2].kept and final_setting(rungs).lexical == "bm25"


def test_a_step_that_hurts_is_not_kept():
    rungs = climb(Setting(lexical="bm25"), [Step("worse", {"lexical": "worse"})], run, QUESTIONS)
    assert not rungs[1].kept and final_setting(rungs) == Setting(lexical="bm25")


def test_a_setting_names_what_may_change():
    with pytest.raises(ValueError, match="unknown setting.*rrf_k.*allowed: policy, summaries, headers, lexical"):
        Setting().changed(rrf_k=10)
    assert Setting().chunk_policy().version == "sentences-v1(size=2000,overlap=300)"
    assert Setting(policy="window", headers=True).chunk_policy().headers
