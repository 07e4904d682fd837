"""The region codes of lesson 05."""
import pytest

from ragcourse.world.metadata import assign_regions, filter_widths, matching

SEED = 20260218


def test_regions_at_course_seed():
    regions = assign_regions(SEED, 200)
    assert regions[:12] == [10, 1, 3, 7, 5, 10, 4, 16, 7, 11, 3, 7]
    assert [len(matching(regions, w)) for w in filter_widths(16)] == [200, 101, 52, 27, 18]
    assert set(regions) == set(range(1, 17))


def test_regions_are_deterministic_and_seed_dependent():
    assert assign_regions(SEED, 50) == assign_regions(SEED, 50)
    assert assign_regions(SEED + 1, 12) == [9, 5, 9, 13, 2, 11, 2, 7, 12, 3, 12, 3]
    assert assign_regions(SEED, 30) == assign_regions(SEED, 200)[:30]


def test_region_count_bounds_the_codes():
    assert assign_regions(SEED, 40, 1) == [1] * 40
    assert set(assign_regions(SEED, 200, 4)) <= {1, 2, 3, 4}
    assert assign_regions(SEED, 0) == []


def test_filter_widths_halve_down_to_one():
    assert filter_widths() == (16, 8, 4, 2, 1)
    assert filter_widths(12) == (12, 6, 3, 1)
    assert filter_widths(1) == (1,)


def test_matching_keeps_order_and_boundary():
    assert matching([3, 1, 2, 1], 1) == [1, 3]
    assert matching([3, 1, 2, 1], 2) == [1, 2, 3]
    assert matching([3, 1, 2, 1], 0) == []


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_region_counts(bad):
    with pytest.raises(ValueError, match="n_regions must be a positive integer"):
        assign_regions(SEED, 10, bad)
    with pytest.raises(ValueError, match="n_regions must be a positive integer"):
        filter_widths(bad)


def test_bad_document_count():
    with pytest.raises(ValueError, match="n_documents"):
        assign_regions(SEED, -1)
