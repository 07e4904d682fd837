"""python -m ragcourse prepare --check: the plan, what the cache holds, and the status when something is missing."""
from __future__ import annotations

import re

from ragcourse.cli.main import main
from ragcourse.corpus.queries import fresh_questions, real_questions


def test_check_on_an_empty_cache_plans_everything_embeds_nothing_and_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGCOURSE_CACHE_DIR", str(tmp_path))
    assert main(["prepare", "--check"]) == 1
    printed = capsys.readouterr().out
    found = re.search(r"prepare: (\d+) distinct texts planned \(questions (\d+), lab 02 (\d+), lab 03 (\d+), "
                      r"lab 04 (\d+)\); 0 already in the cache .*; (\d+) to embed", printed)
    assert found, printed
    total, questions, lab02, lab03, lab04, missing = map(int, found.groups())
    assert total == missing > 20_000                      # nothing was embedded by --check
    assert questions >= len(real_questions("all")) + len(fresh_questions())   # real and fresh questions are planned too
    assert min(lab02, lab03, lab04) > 3000
    assert not list(tmp_path.glob("*.sqlite")) or (tmp_path / "embeddings.sqlite").stat().st_size < 100_000


class FakeEncoder:
    """What prepare's embedding step asks of a ``DenseEncoder``: a text's length is its token count, and each
    ``encode`` call moves a fake clock by its texts' padded tokens at a rate that doubles after the sample (0.001 s a token, then 0.002)."""

    batch_size, threads = 2, 1

    def __init__(self):
        self.now, self.calls, self.warmed = 0.0, [], 0

    def clock(self) -> float:
        return self.now

    def encoded_lengths(self, texts):
        return [len(t) for t in texts]

    def forward(self, batch):
        self.warmed += 1   # untimed: the clock does not move

    def encode(self, texts, progress=None):
        from ragcourse.labs.embedding_schedule import padded_cost

        rate = 0.001 if not self.calls else 0.002
        self.calls.append(list(texts))
        self.now += rate * padded_cost(texts, {t: len(t) for t in texts}, self.batch_size)


class RecordingBar:
    """tqdm's place: what the bar was told."""

    made: list = []

    def __init__(self, **settings):
        self.settings, self.count, self.postfixes = settings, 0, []
        RecordingBar.made.append(self)

    def update(self, n):
        self.count += n

    def set_postfix_str(self, text, refresh=True):
        self.postfixes.append((self.count, text))   # texts counted before the block's update shows it

    def close(self):
        pass


def test_the_bar_shows_the_time_left_at_the_measured_rate_and_the_end_sets_the_estimate_against_the_truth(
        tmp_path, monkeypatch):
    import io

    import tqdm.auto

    from ragcourse.cli.prepare import BAR_FORMAT, _embed, estimate_against_truth, time_left
    from ragcourse.engines.dense import EmbeddingCache
    from ragcourse.labs.embedding_plan import plan_from_groups
    from ragcourse.labs.embedding_schedule import padded_cost

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setattr(tqdm.auto, "tqdm", RecordingBar)
    texts = ["w" * (1 + i % 40) + f"{i:04d}" for i in range(1500)]
    plan = plan_from_groups({"questions": texts[:600], "lab 03": texts[200:]}, EmbeddingCache(tmp_path / "e.sqlite"),
                            "rev", model="model")
    encoder, out, progress = FakeEncoder(), io.StringIO(), tmp_path / "progress"
    assert _embed(plan, encoder, progress, out, 0.0, clock=encoder.clock) == 0
    bar = RecordingBar.made[-1]
    assert bar.settings["bar_format"] == BAR_FORMAT and "remaining" not in BAR_FORMAT   # tqdm's own figure is not shown
    assert bar.count == 1500 and encoder.warmed == 1 and sum(map(len, encoder.calls)) == 1500
    assert progress.read_text().splitlines() == ["questions", "lab 03"]
    # replay the fake clock: each figure is the seconds so far over the tokens done, times the tokens left
    costs = [padded_cost(c, {t: len(t) for t in c}, 2) for c in encoder.calls]
    total, done, seconds, expected = sum(costs), 0, 0.0, []
    for number, cost in enumerate(costs):
        done += cost
        seconds += (0.001 if number == 0 else 0.002) * cost
        expected.append((sum(map(len, encoder.calls[:number])), time_left(seconds / done * (total - done))))
    assert bar.postfixes == expected and len(expected) == 6
    assert expected[0][1] == time_left(0.001 * (total - costs[0])) != expected[1][1]   # the rate doubled: so did the figure
    lines = out.getvalue().splitlines()
    first = 0.001 * total   # the sample's rate over every token of the run
    assert lines[0].startswith(f"prepare: {len(encoder.calls[0]) / (0.001 * costs[0]):.1f} texts/s on a sample")
    assert lines[-1] == f"prepare: {estimate_against_truth(first, seconds)}"
    assert "(-" in lines[-1]   # the rate doubled after the sample: the first estimate was short


def test_the_time_left_reads_in_minutes_from_ninety_seconds():
    from ragcourse.cli.prepare import estimate_against_truth, time_left

    assert time_left(40.4) == "about 40 s left" and time_left(89) == "about 89 s left"
    assert time_left(90) == "about 2 min left" and time_left(245) == "about 4 min left"
    assert estimate_against_truth(366, 324) == "the sample's estimate was 6.1 min, embedding took 5.4 min (+13%)"


def test_prepare_trains_the_cross_encoder_once_and_sets_its_estimate_against_the_truth(monkeypatch):
    import io
    from types import SimpleNamespace

    from ragcourse.cli.prepare import _train_cross_encoder
    from ragcourse.rag.cross_encoder import reranker

    trained = []
    state = {"cached": False}
    monkeypatch.setattr(reranker, "estimate", lambda encoder=None: SimpleNamespace(
        key="k1", cached=state["cached"], seconds=0.0 if state["cached"] else 120.0))
    monkeypatch.setattr(reranker, "train_or_load", lambda **kw: trained.append(kw))
    ticks = iter([10.0, 160.0])
    out = io.StringIO()
    assert _train_cross_encoder(object(), out, clock=lambda: next(ticks)) == 0
    assert len(trained) == 1 and trained[0]["report"] is None
    assert out.getvalue().splitlines() == [
        "prepare: training lab 04's cross-encoder k1; expect about 2.0 minutes",
        "prepare: cross-encoder trained in 150 s; the estimate was 2.0 min, training took 2.5 min (-20%)"]
    state["cached"] = True
    out = io.StringIO()
    assert _train_cross_encoder(object(), out) == 0
    assert len(trained) == 1 and out.getvalue() == "prepare: lab 04's cross-encoder k1 is in the cache\n"


def test_a_second_process_waits_for_the_training_lock(tmp_path, monkeypatch):
    import subprocess
    import sys
    import time

    from ragcourse.rag.cross_encoder.reranker import training_lock

    monkeypatch.setenv("RAGCOURSE_CACHE_DIR", str(tmp_path))
    code = ("import sys, time; from ragcourse.rag.cross_encoder.reranker import training_lock\n"
            "print('asking', flush=True); started = time.monotonic()\n"
            "with training_lock('k'):\n    print(time.monotonic() - started, flush=True)")
    with training_lock("k"):
        waiting = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert waiting.stdout.readline().strip() == "asking"
        time.sleep(1.0)
        assert waiting.poll() is None          # still waiting for the lock this process holds
    assert float(waiting.communicate(timeout=60)[0]) >= 0.9   # it got the lock only once this process let go
