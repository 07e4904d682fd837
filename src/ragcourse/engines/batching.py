"""Batches whose arithmetic is a function of each input alone: one exact length, one fixed shape.

A neural model's output for one input can change in its last bits with what it was batched with:
a batch padded to its longest member puts the padding into the attention's sums, and on this
machine's CPU even an unpadded batch gives different bits for the same rows when the batch holds
a different number of them (the matrix product picks its kernel by the shape; measured: texts of
9 and 11 tokens came out differently alone than beside 39 others of their length). So every model
the course runs goes through batches built by ``fixed_shape_batches``: only inputs of one exact
token length share a batch (no padding at all), and every batch holds exactly ``size`` rows (a
short batch is filled with copies of its first input, whose rows are thrown away). A given input
then always meets the same arithmetic: a matrix of the same shape, its own tokens in one row,
whatever else is asked for at the same time, in whatever order, by whichever process.
``tests/engines/test_batch_invariance.py`` checks it on a sample of ``prepare``'s plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class ShapeBatch:
    """One forward pass: the positions of the inputs it computes, and how many filler rows complete it."""

    length: int
    positions: tuple[int, ...]
    filler: int


def fixed_shape_batches(lengths: Sequence[int], size: int) -> list[ShapeBatch]:
    """The inputs grouped by exact length (shortest length first, positions in order within a length),
    ``size`` to a batch; the last batch of a length records how many filler rows make it ``size``."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"size must be a whole number of at least 1; got {size!r}")
    by_length: dict[int, list[int]] = {}
    for position, length in enumerate(lengths):
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"every length must be a whole number of at least 1; got {length!r} at {position}")
        by_length.setdefault(length, []).append(position)
    batches = []
    for length in sorted(by_length):
        positions = by_length[length]
        for start in range(0, len(positions), size):
            part = tuple(positions[start:start + size])
            batches.append(ShapeBatch(length, part, size - len(part)))
    return batches


def filled(items: Sequence, batch: ShapeBatch) -> list:
    """The batch's inputs taken from ``items``, then its filler rows (copies of its first input)."""
    chosen = [items[p] for p in batch.positions]
    return chosen + [chosen[0]] * batch.filler


def computed_rows(batches: Sequence[ShapeBatch]) -> tuple[int, int]:
    """(rows the inputs need, rows computed with the fillers): what the fixed shape costs."""
    needed = sum(len(b.positions) for b in batches)
    return needed, needed + sum(b.filler for b in batches)


def preprocessed_lengths(model, inputs: Sequence) -> list[int]:
    """Tokens per input as a sentence-transformers model reads it (its own ``preprocess``: texts, or
    (question, passage) pairs for a cross-encoder, cut to its window)."""
    lengths: list[int] = []
    for start in range(0, len(inputs), 1024):
        features = model.preprocess(list(inputs[start:start + 1024]))
        lengths.extend(int(n) for n in features["attention_mask"].sum(dim=1))
    return lengths


def run_fixed_shape(inputs: Sequence, lengths: Sequence[int], size: int, compute: Callable[[list], Sequence],
                    on_batch: Callable[[int], None] | None = None) -> list:
    """``compute`` over ``fixed_shape_batches`` of ``inputs`` (each call gets exactly ``size`` inputs of one
    length and returns one result per input); the results in the inputs' order, fillers' results dropped.
    ``on_batch(n)`` is told how many real inputs each pass computed (a progress bar)."""
    if len(lengths) != len(inputs):
        raise ValueError(f"lengths must give one length per input: {len(lengths)} for {len(inputs)} inputs")
    results: list = [None] * len(inputs)
    for batch in fixed_shape_batches(lengths, size):
        rows = compute(filled(inputs, batch))
        for position, row in zip(batch.positions, rows):
            results[position] = row
        if on_batch is not None:
            on_batch(len(batch.positions))
    return results
