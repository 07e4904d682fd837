"""python -m ragcourse prepare --check: the plan, what the cache holds, and the status when something is missing."""
from __future__ import annotations

import re

from ragcourse.cli.main import main
from ragcourse.corpus.queries import real_questions


def test_check_on_an_empty_cache_plans_everything_embeds_nothing_and_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGCOURSE_CACHE_DIR", str(tmp_path))
    assert main(["prepare", "--check"]) == 1
    printed = capsys.readouterr().out
    found = re.search(r"prepare: (\d+) distinct texts planned \(questions (\d+), lab 02 (\d+), lab 03 (\d+), "
                      r"lab 04 (\d+)\); 0 already in the cache .*; (\d+) to embed", printed)
    assert found, printed
    total, questions, lab02, lab03, lab04, missing = map(int, found.groups())
    assert total == missing > 20_000                      # nothing was embedded by --check
    assert questions >= len(real_questions("all"))        # the real questions are planned too
    assert min(lab02, lab03, lab04) > 3000
    assert not list(tmp_path.glob("*.sqlite")) or (tmp_path / "embeddings.sqlite").stat().st_size < 100_000


def test_padded_cost_counts_every_pass_at_its_fixed_shape():
    """The estimate scales the sample's time by this cost: texts of one exact length share a pass, and every
    pass holds ``batch`` rows (a short one is filled), so a pass costs ``batch`` times its length."""
    from ragcourse.cli.prepare import padded_cost

    tokens = {"a": 10, "b": 3, "c": 5, "d": 10, "e": 10}
    assert padded_cost(["b", "a", "c"], tokens, batch=2) == 2 * 3 + 2 * 10 + 2 * 5   # one pass per length
    assert padded_cost(["a", "d", "e"], tokens, batch=2) == 2 * 10 + 2 * 10         # (a, d) then (e + filler)
    assert padded_cost(["a", "d", "e"], tokens, batch=3) == 3 * 10
    assert padded_cost([], tokens, batch=32) == 0


def test_the_first_sample_is_full_passes_in_the_plan_s_length_mix():
    """The sample that times the encoder holds full passes (``batch`` texts of one length), its lengths taken
    at even steps through the plan, so it costs per text what the plan does: no filler rows at all here."""
    from ragcourse.cli.prepare import BLOCK, length_mix_sample, padded_cost

    texts = [f"t{i}" for i in range(4000)]
    tokens = {t: 5 + (i % 50) * 4 if i % 4 else 200 for i, t in enumerate(texts)}   # a quarter of long texts
    keys = {t: t for t in texts}
    sample = length_mix_sample(texts, tokens, keys, batch=8)
    assert len(sample) == BLOCK and len(set(sample)) == BLOCK
    assert padded_cost(sample, tokens, batch=8) == sum(tokens[t] for t in sample)   # every pass full
    long_share = sum(tokens[t] == 200 for t in sample) / len(sample)
    assert 0.2 <= long_share <= 0.3   # the plan's quarter of long texts, near enough
