"""The order ``prepare`` embeds its plan in, and the time left, re-measured as it goes.

The texts the cache lacks (``embedding_plan.EmbeddingPlan.missing``) are embedded in blocks of ``BLOCK``
texts. The first block is a sample of the plan's own length mix (``length_mix_sample``: full passes
of lengths taken at even steps through the texts in length order); then each group in ``GROUP_ORDER``,
its texts not embedded yet longest first (blocks of texts of about one length measured 25% faster here
than blocks in random order: 46 against 58 texts/s on 2 cores).

Time grows with tokens, not texts: every forward pass is ``batch`` rows of one token length (a short
pass is filled), so a block costs ``padded_cost`` tokens. ``TimeLeft`` divides the wall seconds so far by
the tokens done so far and multiplies by the tokens left, after every block: the first figure is the
sample's rate scaled to the whole plan, and each later one follows the rate the run has actually had
(on a shared machine, whatever the neighbours leave). ``run_schedule`` drives an ``encode`` function
through the blocks and yields that figure after each one (``Progress``); ``embed`` is the same for a
``DenseEncoder``, after one untimed warm-up pass.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..engines.batching import computed_rows, fixed_shape_batches

if TYPE_CHECKING:   # the plan's module reads the corpus' chunkers; the test session imports GROUP_ORDER from here
    from .embedding_plan import EmbeddingPlan

BLOCK = 256   # texts per encode call: the unit of the progress bar and of the first rate measurement
# Groups are embedded in this order, the cheapest first, and each is announced when it is complete
# (``prepare --progress FILE``), so what needs only lab 02's texts can start while lab 03's are embedded.
GROUP_ORDER = ("questions", "lab 02", "lab 04", "lab 03")
SAMPLE = ""   # the name of the first stage, the sample that measures the rate


@dataclass(frozen=True)
class Block:
    """One ``encode`` call: its texts and the tokens the encoder computes for them (``padded_cost``)."""

    texts: tuple[str, ...]
    cost: int


@dataclass(frozen=True)
class Stage:
    """The blocks of one group (``SAMPLE`` for the sample); a group with nothing left to embed has none."""

    group: str
    blocks: tuple[Block, ...]

    @property
    def texts(self) -> int:
        return sum(len(b.texts) for b in self.blocks)


@dataclass(frozen=True)
class Schedule:
    """Every text to embed, once, as stages of blocks in the order they run: the sample first."""

    stages: tuple[Stage, ...]

    @property
    def sample(self) -> list[str]:
        return [t for b in self.stages[0].blocks for t in b.texts] if self.stages else []

    @property
    def texts(self) -> int:
        return sum(s.texts for s in self.stages)

    @property
    def cost(self) -> int:
        return sum(b.cost for s in self.stages for b in s.blocks)


def length_mix_sample(texts: list[str], tokens: dict[str, int], keys: dict[str, str], batch: int) -> list[str]:
    """About ``BLOCK`` texts that cost what the plan costs per text: ``BLOCK // batch`` lengths taken at even
    steps through the texts in length order (so long and short texts come as often as in the plan), and
    ``batch`` texts of each of those lengths, so that every pass of the sample is full, as nearly all of the
    plan's passes are (one text of each of 250 lengths would cost 8 passes a text)."""
    longest_first = sorted(texts, key=lambda t: (-tokens[t], keys[t]))
    by_length: dict[int, list[str]] = {}
    for text in longest_first:
        by_length.setdefault(tokens[text], []).append(text)
    taken: dict[int, int] = {}
    sample: list[str] = []
    for anchor in longest_first[::max(1, len(texts) * batch // BLOCK)][:max(1, BLOCK // batch)]:
        length = tokens[anchor]   # a length met twice gives its next texts (common lengths weigh as in the plan)
        start = taken.get(length, 0)
        sample.extend(by_length[length][start:start + batch])
        taken[length] = start + batch
    return sample


def padded_cost(block: Sequence[str], tokens: dict[str, int], batch: int) -> int:
    """Tokens the encoder computes for one ``encode`` call: its texts grouped by exact length, ``batch`` rows
    to every forward pass (a short pass is filled up to ``batch``), so a pass costs ``batch`` times its length."""
    passes = fixed_shape_batches([tokens[t] for t in block], batch)
    return sum(computed_rows([p])[1] * p.length for p in passes)


def schedule(plan: EmbeddingPlan, tokens: dict[str, int], batch: int) -> Schedule:
    """The plan's missing texts as stages: the sample, then every group of the plan (``GROUP_ORDER`` first,
    any other after it), each with its texts not embedded by an earlier stage, longest first, ties by key;
    ``tokens`` by text as the model reads them, ``batch`` the rows of every forward pass."""
    if not plan.missing:
        return Schedule(())
    first = length_mix_sample(plan.missing, tokens, plan.keys, batch)
    rest = set(plan.missing) - set(first)
    order = [g for g in GROUP_ORDER if g in plan.groups] + [g for g in plan.groups if g not in GROUP_ORDER]
    lists: list[tuple[str, list[str]]] = [(SAMPLE, first)]
    for name in order:
        mine = sorted({t for t in plan.groups[name] if t in rest}, key=lambda t: (-tokens[t], plan.keys[t]))
        rest.difference_update(mine)
        lists.append((name, mine))
    return Schedule(tuple(Stage(name, tuple(Block(tuple(texts[i:i + BLOCK]), padded_cost(texts[i:i + BLOCK], tokens, batch))
                                            for i in range(0, len(texts), BLOCK)))
                          for name, texts in lists))


class TimeLeft:
    """Seconds left at the rate measured so far: wall seconds since the start over the tokens done, times
    the tokens left. Every block counts, so a rate that changes moves the figure at once, in proportion to
    how much of the run it has lasted."""

    def __init__(self, total_cost: int):
        if not isinstance(total_cost, int) or total_cost < 0:
            raise ValueError(f"total_cost must be a whole number of at least 0; got {total_cost!r}")
        self.total = total_cost
        self.done = 0
        self.seconds = 0.0

    def record(self, cost: int, seconds: float) -> None:
        """A block of ``cost`` tokens finished ``seconds`` after the start."""
        if cost < 0 or self.done + cost > self.total:
            raise ValueError(f"cost must be from 0 to the {self.total - self.done} tokens left; got {cost!r}")
        self.done += cost
        self.seconds = seconds

    @property
    def left(self) -> int:
        """Tokens not done yet."""
        return self.total - self.done

    @property
    def seconds_left(self) -> float | None:
        """The tokens left at the rate so far (None before anything is done)."""
        return self.seconds * self.left / self.done if self.done else None


@dataclass(frozen=True)
class Progress:
    """After one block (or a group with nothing to embed): where the run stands and the time left."""

    group: str            # SAMPLE for the sample
    texts: int            # texts this block embedded
    seconds: float        # wall seconds since the first timed block began
    seconds_left: float | None
    cost_left: int        # tokens not done yet
    group_done: bool      # the last block of its group

    @property
    def estimate(self) -> float | None:
        """The whole run's seconds as this point foresees it (seconds so far and seconds left)."""
        return None if self.seconds_left is None else self.seconds + self.seconds_left


def run_schedule(plan: Schedule, encode: Callable[[list[str]], object],
                 clock: Callable[[], float] = time.perf_counter) -> Iterator[Progress]:
    """``encode`` every block of ``plan`` in order, and after each one the ``Progress`` its timing gives."""
    left = TimeLeft(plan.cost)
    started = clock()
    for stage in plan.stages:
        for position, block in enumerate(stage.blocks):
            encode(list(block.texts))
            left.record(block.cost, clock() - started)
            yield Progress(stage.group, len(block.texts), left.seconds, left.seconds_left, left.left,
                           position == len(stage.blocks) - 1)
        if not stage.blocks:
            yield Progress(stage.group, 0, clock() - started, left.seconds_left, left.left, True)


def encoder_schedule(plan: EmbeddingPlan, encoder) -> Schedule:
    """``schedule`` for a ``DenseEncoder`` (loads its model: the lengths are the model's own, cut to its
    window, and the passes are ``encoder.batch_size`` rows, which follows ``$RAGCOURSE_BATCH_SIZE``)."""
    tokens = dict(zip(plan.missing, encoder.encoded_lengths(plan.missing)))
    return schedule(plan, tokens, encoder.batch_size)


def embed(plan: Schedule, encoder, clock: Callable[[], float] = time.perf_counter) -> Iterator[Progress]:
    """``run_schedule`` with a ``DenseEncoder`` (every vector to its cache), after one untimed pass of the
    sample (the route's set-up and the first call's costs), so the sample times encoding alone."""
    if plan.stages:
        encoder.forward(plan.sample[:encoder.batch_size])
    yield from run_schedule(plan, lambda texts: encoder.encode(texts, progress=False), clock)
