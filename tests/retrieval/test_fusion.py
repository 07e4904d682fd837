"""Reciprocal rank fusion (lesson 06): exact scores, the constant, ties, determinism, validation."""
import random

import pytest

from ragcourse.retrieval.fusion import (
    COURSE_CONSTANTS,
    DEFAULT_CONSTANT,
    check_constant_list,
    fused_scores,
    position_terms,
    reciprocal_rank_fusion,
)

# Item 0 wins one list, item 1 wins the other, item 2 is second in both ("the compromise").
FIRST = [0, 2, 3, 1]
SECOND = [1, 2, 3, 0]


def course_fusion(keyword_order, embedding_order, constant):
    """The course's arithmetic, written as the course writes it: two dicts, one sum, stable sort."""
    from_keyword = {i: 1.0 / (constant + n) for n, i in enumerate(keyword_order)}
    from_embedding = {i: 1.0 / (constant + n) for n, i in enumerate(embedding_order)}
    return sorted(range(len(keyword_order)), key=lambda i: -(from_keyword[i] + from_embedding[i]))


def test_position_terms_count_places_from_zero():
    assert position_terms([2, 0, 1], 20) == [1 / 21, 1 / 22, 1 / 20]


def test_fused_scores_exact_values():
    scores = fused_scores([FIRST, SECOND], 20)
    assert scores == [1 / 20 + 1 / 23, 1 / 23 + 1 / 20, 1 / 21 + 1 / 21, 1 / 22 + 1 / 22]


def test_large_constant_lets_the_compromise_win():
    assert reciprocal_rank_fusion([FIRST, SECOND], 20) == [2, 0, 1, 3]


def test_small_constant_lets_a_single_first_place_win():
    # at constant 1: items 0 and 1 score 1 + 1/4, item 2 scores 1/2 + 1/2
    assert fused_scores([FIRST, SECOND], 1) == [1.25, 1.25, 1.0, 1 / 3 + 1 / 3]
    assert reciprocal_rank_fusion([FIRST, SECOND], 1) == [0, 1, 2, 3]


def test_ties_break_by_ascending_index():
    # reversed lists give every item i the same score as item 3 - i
    assert reciprocal_rank_fusion([[0, 1, 2, 3], [3, 2, 1, 0]], 20) == [0, 3, 1, 2]
    assert reciprocal_rank_fusion([[5, 4, 3, 2, 1, 0]] * 2, 7) == [5, 4, 3, 2, 1, 0]
    identical = reciprocal_rank_fusion([[1, 0], [0, 1]], 3)
    assert identical == [0, 1]


def test_single_list_is_returned_unchanged():
    order = [3, 1, 4, 0, 2]
    assert reciprocal_rank_fusion([order], 5) == order


def test_default_constant_is_the_course_default():
    assert DEFAULT_CONSTANT == 20 and COURSE_CONSTANTS == (5, 20, 60)
    assert reciprocal_rank_fusion([FIRST, SECOND]) == reciprocal_rank_fusion([FIRST, SECOND], 20)


@pytest.mark.parametrize("constant", COURSE_CONSTANTS)
def test_equals_the_course_arithmetic_on_random_lists(constant):
    draw = random.Random(constant)
    for _ in range(50):
        keyword, embedding = list(range(200)), list(range(200))
        draw.shuffle(keyword)
        draw.shuffle(embedding)
        assert reciprocal_rank_fusion([keyword, embedding], constant) == course_fusion(keyword, embedding,
                                                                                       constant)


def test_many_ties_equal_the_course_stable_sort():
    # coarse lists full of equal scores: the course's stable sort and ours must agree
    keyword = [0, 1, 2, 3, 4, 5, 6, 7]
    embedding = [7, 6, 5, 4, 3, 2, 1, 0]
    for constant in (1, 2.5, 20, 60):
        assert reciprocal_rank_fusion([keyword, embedding], constant) == course_fusion(keyword, embedding,
                                                                                       constant)


def test_deterministic_and_inputs_untouched():
    first, second = list(FIRST), list(SECOND)
    results = {tuple(reciprocal_rank_fusion([first, second], 20)) for _ in range(5)}
    assert results == {(2, 0, 1, 3)}
    assert first == FIRST and second == SECOND


def test_accepts_tuples_and_float_constants():
    assert reciprocal_rank_fusion((tuple(FIRST), tuple(SECOND)), 20.0) == [2, 0, 1, 3]


@pytest.mark.parametrize("constant", [0, -1, float("nan"), float("inf"), True, "20", None])
def test_bad_constant_is_refused(constant):
    with pytest.raises(ValueError, match="constant must be a finite number above 0"):
        reciprocal_rank_fusion([FIRST, SECOND], constant)


@pytest.mark.parametrize("rankings, message", [
    ([], "non-empty list of rankings"),
    ("0123", "non-empty list of rankings"),
    ([[0, 1, 2], [0, 1]], "same 3 items; ranking 1 has 2"),
    ([[0, 1, 1]], "exactly once"),
    ([[0, 1, 3]], "exactly once"),
    ([[0, 1], "01"], "ranking 1 must be a list"),
])
def test_bad_rankings_are_refused(rankings, message):
    with pytest.raises(ValueError, match=message):
        reciprocal_rank_fusion(rankings, 20)


def test_check_constant_list():
    assert check_constant_list("CONSTANT_SWEEP", (5, 20, 60)) == [5, 20, 60]
    for bad in ([], [5, 0], [5, 2.5], "5 20", 20, [1] * 9, [True]):
        with pytest.raises(ValueError, match="CONSTANT_SWEEP"):
            check_constant_list("CONSTANT_SWEEP", bad)
