"""A text's vector is a function of the text alone: the same bits alone, in any batch, in any order.

The encoder batches only texts of one exact token length, always ``batch_size`` rows to a pass
(``ragcourse.engines.batching``). The real MiniLM embeds a sample of ``prepare``'s own plan four ways,
each into a cache of its own, and every vector must be bit-identical across the four. (72 texts with 16
each of lengths 256, 13 and 19 gave the same result; this smaller sample keeps the test to seconds.)"""
from __future__ import annotations

import random

import numpy as np
import pytest

from ragcourse.engines.batching import ShapeBatch, computed_rows, filled, fixed_shape_batches


def test_batches_hold_one_length_and_a_fixed_number_of_rows():
    lengths = [5, 3, 5, 5, 3, 9]
    batches = fixed_shape_batches(lengths, 2)
    assert batches == [ShapeBatch(3, (1, 4), 0), ShapeBatch(5, (0, 2), 0), ShapeBatch(5, (3,), 1),
                       ShapeBatch(9, (5,), 1)]
    assert all(len(b.positions) + b.filler == 2 for b in batches)
    assert sorted(p for b in batches for p in b.positions) == list(range(len(lengths)))   # every input once
    assert computed_rows(batches) == (6, 8)
    assert filled(list("abcdef"), batches[2]) == ["d", "d"]
    assert fixed_shape_batches([], 8) == []


@pytest.mark.parametrize("size", [0, -1, 2.0, True, "8"])
def test_a_bad_batch_size_names_itself(size):
    with pytest.raises(ValueError, match="size must be a whole number of at least 1"):
        fixed_shape_batches([3], size)


def test_a_bad_length_is_named_with_its_position():
    with pytest.raises(ValueError, match="at 1"):
        fixed_shape_batches([3, 0], 8)


@pytest.fixture(scope="module")
def plan_sample():
    """42 texts of the labs' plan: 10 each of the three commonest lengths up to 64 tokens among a draw of
    1,200 (so that several texts share every pass; the hazard was measured at 9 and 11 tokens) and 12 others
    up to 128 tokens, plus 40 others of any length up to 128 to serve as neighbours."""
    from ragcourse.batch.notebooks import lab_notebooks, notebook_parameters
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.dense import DenseEncoder, EmbeddingCache
    from ragcourse.labs.embedding_plan import distinct, planned_texts

    corpus = load_corpus()
    parameters = {number: notebook_parameters(path) for number, path in lab_notebooks().items()}
    texts = distinct(planned_texts(corpus, parameters))
    draw = random.Random(47).sample(texts, 1200)
    encoder = DenseEncoder(EmbeddingCache(":memory:"))
    lengths = dict(zip(draw, encoder.encoded_lengths(draw)))
    by_length: dict[int, list[str]] = {}
    for text in draw:
        by_length.setdefault(lengths[text], []).append(text)
    common = sorted((n for n in by_length if n <= 64), key=lambda n: (-len(by_length[n]), n))[:3]
    shared = [t for n in common for t in by_length[n][:10]]
    others = [t for t in draw if t not in set(shared) and lengths[t] <= 128]
    return shared + others[:12], others[12:52], common


# The real model, run hard, on caches of this file's own: under ``make test`` it waits for all of ``prepare`` (the
# "all" of ``embeddings``) rather than slow it, and its first estimate, down.
@pytest.mark.slow
@pytest.mark.embeddings("all")
def test_a_vector_does_not_depend_on_its_batch(plan_sample, tmp_path):
    from ragcourse.engines.dense import DenseEncoder, EmbeddingCache

    sample, neighbours, common = plan_sample

    def fresh(name):
        return DenseEncoder(EmbeddingCache(tmp_path / f"{name}.sqlite"))

    alone = np.vstack([fresh(f"alone{i}").encode([text]) for i, text in enumerate(sample)])
    together = fresh("together").encode(sample)
    mixed = fresh("mixed").encode(neighbours[:20] + sample[::-1] + neighbours[20:])[20:20 + len(sample)][::-1]
    shuffled_order = random.Random(3).sample(range(len(sample)), len(sample))
    in_fives = fresh("fives")
    shuffled = np.empty_like(alone)
    for start in range(0, len(sample), 5):
        part = shuffled_order[start:start + 5]
        shuffled[part] = in_fives.encode([sample[i] for i in part])
    identical = [int(np.all(np.all(alone == other, axis=1))) for other in (together, mixed, shuffled)]
    rows = [int(np.all(alone == other, axis=1).sum()) for other in (together, mixed, shuffled)]
    print(f"batch invariance: {len(sample)} texts (lengths {common} shared by 10 each), bit-identical to "
          f"alone: together {rows[0]}, reversed among 40 others {rows[1]}, shuffled in fives {rows[2]}")
    assert rows == [len(sample)] * 3 and identical == [1, 1, 1]


@pytest.mark.embeddings("all")
def test_the_hazard_is_real_a_padded_batch_changes_the_bits(plan_sample):
    """What the rule prevents: the library's default (sort by length, pad each batch of 32 to its longest)
    gives some texts other bits than they get alone, so the test above could fail."""
    from ragcourse.engines.dense import load_model

    sample = plan_sample[0]
    model = load_model()
    alone = np.vstack([model.encode([text], normalize_embeddings=True) for text in sample])
    padded = model.encode(sample, batch_size=32, normalize_embeddings=True)
    assert not np.array_equal(alone, padded)
    assert np.allclose(alone, padded, atol=1e-5)   # the last bits only
