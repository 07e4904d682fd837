"""prepare's plan and schedule: what is cached is not planned again, a text is counted once, the sample comes first,
and the time left is the tokens left at the rate measured so far (synthetic timings: no test here times anything)."""
from __future__ import annotations

import numpy as np
import pytest

from ragcourse.engines.dense import EmbeddingCache, text_key
from ragcourse.labs.embedding_plan import plan_from_groups
from ragcourse.labs.embedding_schedule import (BLOCK, GROUP_ORDER, SAMPLE, Block, Schedule, Stage, TimeLeft,
                                               length_mix_sample, padded_cost, run_schedule, schedule)

MODEL, REVISION = "model", "rev;batch=2"


def tiny_plan(tmp_path, groups, cached=(), elsewhere=()):
    """A plan over ``groups`` against a cache holding ``cached`` under the plan's revision, ``elsewhere`` under
    another revision (a vector of another batch size or route, which does not count)."""
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    vector = np.ones(3, dtype=np.float32)
    cache.put(MODEL, REVISION, {text_key(t): vector for t in cached})
    cache.put(MODEL, "other;batch=8", {text_key(t): vector for t in elsewhere})
    return plan_from_groups(groups, cache, REVISION, model=MODEL)


def test_the_plan_counts_a_text_once_and_does_not_plan_what_is_cached(tmp_path):
    groups = {"questions": ["a", "b", "a"], "lab 02": ["b", "c", "d", "e"], "lab 03": ["c"]}
    plan = tiny_plan(tmp_path, groups, cached=["c"], elsewhere=["d"])
    assert plan.texts == ["a", "b", "c", "d", "e"]                       # first-seen order, each once
    assert plan.group_sizes == {"questions": 2, "lab 02": 4, "lab 03": 1}
    assert plan.missing == ["a", "b", "d", "e"] and plan.cached == 1     # d's vector is another revision's
    assert plan.keys == {t: text_key(t) for t in plan.texts}
    assert plan.cache_path == tmp_path / "embeddings.sqlite"
    assert plan.groups == groups                                         # as planned, repeats kept
    everything = tiny_plan(tmp_path / "warm", groups, cached="abcde")
    assert everything.missing == [] and everything.cached == 5 and schedule(everything, {}, 2) == Schedule(())


def test_padded_cost_counts_every_pass_at_its_fixed_shape():
    """The estimate scales the sample's time by this cost: texts of one exact length share a pass, and every
    pass holds ``batch`` rows (a short one is filled), so a pass costs ``batch`` times its length."""
    tokens = {"a": 10, "b": 3, "c": 5, "d": 10, "e": 10}
    assert padded_cost(["b", "a", "c"], tokens, batch=2) == 2 * 3 + 2 * 10 + 2 * 5   # one pass per length
    assert padded_cost(["a", "d", "e"], tokens, batch=2) == 2 * 10 + 2 * 10         # (a, d) then (e + filler)
    assert padded_cost(["a", "d", "e"], tokens, batch=3) == 3 * 10
    assert padded_cost([], tokens, batch=32) == 0


def test_the_first_sample_is_full_passes_in_the_plan_s_length_mix():
    """The sample that times the encoder holds full passes (``batch`` texts of one length), its lengths taken
    at even steps through the plan, so it costs per text what the plan does: no filler rows at all here."""
    texts = [f"t{i}" for i in range(4000)]
    tokens = {t: 5 + (i % 50) * 4 if i % 4 else 200 for i, t in enumerate(texts)}   # a quarter of long texts
    keys = {t: t for t in texts}
    sample = length_mix_sample(texts, tokens, keys, batch=8)
    assert len(sample) == BLOCK and len(set(sample)) == BLOCK
    assert padded_cost(sample, tokens, batch=8) == sum(tokens[t] for t in sample)   # every pass full
    long_share = sum(tokens[t] == 200 for t in sample) / len(sample)
    assert 0.2 <= long_share <= 0.3   # the plan's quarter of long texts, near enough


def test_the_schedule_runs_the_sample_then_each_group_longest_first_every_missing_text_once(tmp_path):
    texts = [f"x{i:04d}" for i in range(1200)]
    groups = {"lab 03": texts[300:], "extra": texts[1100:] + ["late"], "questions": texts[:400], "lab 04": texts[:50],
              "lab 02": texts[:10]}
    plan = tiny_plan(tmp_path, groups, cached=texts[:10])
    tokens = {t: 1 + i % 37 for i, t in enumerate(plan.texts)}
    run = schedule(plan, tokens, batch=4)
    names = [stage.group for stage in run.stages]
    assert names == [SAMPLE, *GROUP_ORDER, "extra"]                      # the course's order, then the others
    embedded = [t for stage in run.stages for block in stage.blocks for t in block.texts]
    assert sorted(embedded) == sorted(plan.missing) and run.texts == len(plan.missing) == 1191
    assert run.sample == length_mix_sample(plan.missing, tokens, plan.keys, 4)
    by_name = {stage.group: stage for stage in run.stages}
    assert by_name["lab 02"].blocks == () and by_name["lab 04"].blocks == ()   # cached, or embedded with questions
    lab03 = [t for block in by_name["lab 03"].blocks for t in block.texts]
    assert lab03 == sorted(lab03, key=lambda t: (-tokens[t], plan.keys[t]))  # longest first, ties by key
    assert all(0 < len(b.texts) <= BLOCK and b.cost == padded_cost(b.texts, tokens, 4)
               for stage in run.stages for b in stage.blocks)
    assert run.cost == sum(b.cost for stage in run.stages for b in stage.blocks)


def test_time_left_is_the_tokens_left_at_the_rate_so_far_and_follows_a_rate_that_changes():
    left = TimeLeft(1000)
    assert left.seconds_left is None                  # nothing measured yet
    left.record(100, 10.0)                            # 0.1 s a token
    assert left.left == 900 and left.seconds_left == pytest.approx(90.0)
    left.record(400, 90.0)                            # this block at 0.2 s a token: 500 done in 90 s
    assert left.seconds_left == pytest.approx(90.0 / 500 * 500)
    left.record(0, 95.0)                              # a block that cost nothing still moves the clock
    assert left.seconds_left == pytest.approx(95.0)
    left.record(500, 120.0)
    assert left.left == 0 and left.seconds_left == 0.0
    with pytest.raises(ValueError, match="cost"):
        left.record(1, 121.0)                         # more than was planned
    with pytest.raises(ValueError, match="total_cost"):
        TimeLeft(-1)


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_after_every_block_the_figure_comes_from_the_measured_rate():
    """Blocks of different costs, the rate changing from group to group: after each block the time left is the
    seconds so far over the tokens done, times the tokens left; a group with nothing to embed is announced."""
    stages = (Stage(SAMPLE, (Block(("s1", "s2"), 40),)),
              Stage("questions", (Block(("q1",), 10), Block(("q2", "q3", "q4"), 90))),
              Stage("lab 02", ()),
              Stage("lab 03", (Block(("l1",), 260),)))
    seconds_per_token = {"s1": 0.5, "q1": 0.5, "q2": 1.0, "l1": 2.0}   # the machine gets busier
    clock = FakeClock()
    costs = {block.texts[0]: block.cost for stage in stages for block in stage.blocks}

    def encode(texts):
        clock.now += costs[texts[0]] * seconds_per_token[texts[0]]

    steps = list(run_schedule(Schedule(stages), encode, clock))
    assert [(s.group, s.texts, s.group_done) for s in steps] == [
        (SAMPLE, 2, True), ("questions", 1, False), ("questions", 3, True), ("lab 02", 0, True), ("lab 03", 1, True)]
    elapsed = [20.0, 25.0, 115.0, 115.0, 635.0]
    done = [40, 50, 140, 140, 400]
    assert [s.seconds for s in steps] == elapsed
    assert [s.cost_left for s in steps] == [400 - d for d in done]
    for step, seconds, tokens in zip(steps, elapsed, done):
        assert step.seconds_left == pytest.approx(seconds / tokens * (400 - tokens))
    assert steps[0].estimate == pytest.approx(20.0 / 40 * 400)        # the sample's rate over the whole plan
    assert steps[-1].seconds_left == 0.0 and steps[-1].estimate == 635.0
