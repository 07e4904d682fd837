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


def test_padded_cost_counts_each_batch_at_its_longest_text():
    """The estimate scales the sample's time by this cost: a batch of texts is padded to its longest."""
    from ragcourse.cli.prepare import padded_cost

    tokens = {"a": 10, "b": 3, "c": 5}
    assert padded_cost(["b", "a", "c"], tokens, batch=2) == 2 * 12 + 1 * 5      # (12, 7) then (5); 2 markers each
    assert padded_cost(["a", "b", "c"], tokens, batch=3) == 3 * 12
    assert padded_cost([], tokens, batch=32) == 0
