from ragcourse.world import rng
from ragcourse.world.rng import make_rng, mix_seed, pick


def test_first_draws_at_course_seed_are_the_courses():
    draw = make_rng(20260218)
    values = [draw() for _ in range(3)]
    # Recomputed from the course's formula with its constants written out here, so a changed
    # constant in the module (multipliers, increment, mask) fails this test.
    x = ((20260218 ^ (20260218 >> 16)) * 2246822507) & 0xFFFFFFFF
    x = ((x ^ (x >> 13)) * 3266489909) & 0xFFFFFFFF
    state = (x ^ (x >> 16)) & 0xFFFFFFFF
    expected = []
    for _ in range(3):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        expected.append(state / 4294967296)
    assert values == expected


def test_known_values_pin_the_generator():
    assert mix_seed(0) == 0
    draw = make_rng(0)
    assert draw() == 1013904223 / 4294967296
    assert rng.LCG_INCREMENT == 1013904223 and rng.LCG_MULTIPLIER == 1664525


def test_draws_are_in_unit_interval_and_deterministic():
    a, b = make_rng(12345), make_rng(12345)
    first = [a() for _ in range(1000)]
    assert first == [b() for _ in range(1000)]
    assert all(0.0 <= u < 1.0 for u in first)
    other = make_rng(12346)
    assert first != [other() for _ in range(1000)]     # another seed, another sequence


def test_independent_generators_do_not_share_state():
    a, b = make_rng(7), make_rng(7)
    a(), a()
    assert b() == make_rng(7)()


def test_pick_walks_cumulative_weights():
    weights = [0.22, 0.24, 0.20, 0.18, 0.16]
    assert pick(0.0, weights) == 0
    assert pick(0.2199, weights) == 0
    assert pick(0.22, weights) == 1
    assert pick(0.9999, weights) == 4
    assert pick(1.5, weights) == 4          # beyond the total falls back to the last index
    assert pick(0.5, [0.0, 1.0]) == 1       # a zero weight is never chosen


def test_a_changed_increment_changes_the_world(monkeypatch):
    """The suite can fail: a generator constant off by two moves the course's corpus statistics."""
    from collections import Counter

    from ragcourse.world.concepts import CLASSES, FIRST_EDITION
    from ragcourse.world.corpus import build_world

    def statistics():
        documents = build_world(20260218, FIRST_EDITION).documents
        counts = Counter(d.label for d in documents)
        return [counts[c] for c in CLASSES], sum(len(d.paragraphs) for d in documents)

    assert statistics() == ([52, 46, 39, 32, 31], 693)
    monkeypatch.setattr(rng, "LCG_INCREMENT", 1013904225)
    assert statistics()[1] != 693
