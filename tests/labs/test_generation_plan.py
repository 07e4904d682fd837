"""``labs.generation_plan`` and ``prepare``'s generation step: the labs' prompts recorded from a log, kept whole,
tokenised to the cache keys the labs use, answered when missing, and checked for coverage."""
from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from ragcourse.labs import generation_plan as plan
from ragcourse.rag.generator import Generation, Prompt

LAB = "/somewhere/ragcourse/notebooks/labs"
EXERCISE = "/somewhere/ragcourse/notebooks/exercises/labs"


def write_log(path: Path, lines: list[tuple[str, int, str]]) -> Path:
    path.write_text("".join(json.dumps({"dir": d, "max_new_tokens": n, "text": t}) + "\n" for d, n, t in lines)
                    + "\n", encoding="utf-8")
    return path


def test_a_plan_keeps_each_lab_prompt_once_in_order_and_nothing_else(tmp_path):
    log = write_log(tmp_path / "log", [(LAB, 48, "b"), (EXERCISE, 48, "x"), (LAB, 48, "a"), (LAB, 48, "b"),
                                       (LAB, 64, "b"), ("/tmp", 48, "y")])
    assert plan.lab_prompts(log) == [plan.PlannedPrompt(48, "b"), plan.PlannedPrompt(48, "a"),
                                     plan.PlannedPrompt(64, "b")]
    target = tmp_path / "plan.json.gz"
    assert plan.record(log, target) == 3
    assert plan.load(target) == plan.lab_prompts(log)
    first = target.read_bytes()
    plan.record(log, target)
    assert target.read_bytes() == first                         # the same prompts make the same bytes
    assert json.loads(gzip.decompress(first))["prompts"][1] == {"max_new_tokens": 48, "text": "a"}
    assert plan.load(tmp_path / "none.json.gz") == []


def test_coverage_counts_the_labs_prompts_the_plan_holds(tmp_path):
    target = tmp_path / "plan.json.gz"
    plan.record(write_log(tmp_path / "old", [(LAB, 48, "a"), (LAB, 48, "b")]), target)
    asked = write_log(tmp_path / "new", [(LAB, 48, "a"), (LAB, 48, "c"), (LAB, 64, "b"), (EXERCISE, 48, "z")])
    assert plan.coverage(asked, target) == (1, 3)


def test_a_log_without_a_lab_prompt_writes_nothing(tmp_path):
    target = tmp_path / "plan.json.gz"
    target.write_bytes(b"kept")
    with pytest.raises(ValueError, match="no prompt a lab asked for"):
        plan.record(write_log(tmp_path / "log", [(EXERCISE, 48, "x")]), target)
    assert target.read_bytes() == b"kept" and sorted(p.name for p in tmp_path.iterdir()) == ["log", "plan.json.gz"]


def test_the_committed_plan_holds_both_labs_prompts_for_the_labs_decoding_limit():
    prompts = plan.load()
    assert len(prompts) >= 200 and {p.max_new_tokens for p in prompts} == {48}
    assert len({p.text for p in prompts}) == len(prompts)
    assert all(p.text.startswith("<|im_start|>system") for p in prompts)


class FakeTokenizer:
    def __call__(self, text, add_special_tokens=True):
        assert add_special_tokens is False   # as Generator.prompt tokenises
        return {"input_ids": [len(word) for word in text.split()]}


class FakeGenerator:
    """What prepare's generation step asks of a ``Generator``: a tokenizer, keys, a cache and ``generate_many``."""

    fingerprint = "fake@0"

    def __init__(self, max_new_tokens: int, cached: set[str]):
        self.max_new_tokens, self.tokenizer, self.asked = max_new_tokens, FakeTokenizer(), []
        self.cache = self
        self.stored = set(cached)

    def key(self, prompt: Prompt) -> str:
        return f"{self.max_new_tokens}:{prompt.text}"

    def get(self, fingerprint: str, key: str):
        return Generation("x", 1, 1, cached=True) if key in self.stored else None

    def generate_many(self, prompts, desc: str = ""):
        self.asked.append([p.text for p in prompts])
        self.stored |= {self.key(p) for p in prompts}


def test_prepare_answers_the_planned_prompts_the_cache_lacks_once(tmp_path, monkeypatch):
    from ragcourse.cli import prepare

    target = tmp_path / "plan.json.gz"
    plan.record(write_log(tmp_path / "log", [(LAB, 48, "one two"), (LAB, 48, "three"), (LAB, 48, "four five")]),
                target)
    monkeypatch.setattr(plan, "PLAN", target)
    made: list[FakeGenerator] = []

    def make(limit):
        made.append(FakeGenerator(limit, {"48:three"}))
        return made[-1]

    times = iter([10.0, 14.0])
    out = io.StringIO()
    assert prepare._generate(out, clock=lambda: next(times), make_generator=make) == 0
    assert made[0].asked == [["one two", "four five"]]
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("prepare: generation plan: 3 prompts of the labs (at most 48 new tokens), 1 in the "
                               "cache; answering 2, expect about ")
    assert lines[1].startswith("prepare: 2 answers written in 4 s; the estimate was ")
    out = io.StringIO()
    again = FakeGenerator(48, made[0].stored)   # a second run: everything is in the cache now
    assert prepare._generate(out, make_generator=lambda limit: again) == 0
    assert again.asked == [] and out.getvalue().endswith("3 prompts of the labs (at most 48 new tokens), 3 in the cache\n")


def test_prepare_says_so_when_there_is_no_plan(tmp_path, monkeypatch):
    from ragcourse.cli import prepare

    monkeypatch.setattr(plan, "PLAN", tmp_path / "missing.json.gz")
    out = io.StringIO()
    assert prepare._generate(out, make_generator=lambda limit: pytest.fail("no model is loaded")) == 0
    assert "no generation plan" in out.getvalue()


def test_the_estimate_counts_every_pass_of_the_fixed_shape():
    short = Prompt("", (), "s", tuple(range(10)))
    long = Prompt("", (), "l", tuple(range(100)))
    one = plan.estimated_seconds([short], 48)
    assert one == pytest.approx(8 * 64 / plan.PREFILL_TOKENS_PER_SECOND + 48 * plan.DECODE_STEP_SECONDS)
    assert plan.estimated_seconds([short] * 8, 48) == pytest.approx(one)   # one pass
    assert plan.estimated_seconds([short] * 9 + [long], 48) > 2 * one      # three passes, one of them longer
