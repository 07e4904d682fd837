"""check_int_list: list-valued notebook parameters such as CHUNK_COUNTS."""
import pytest

from ragcourse.toolkit.params import check_int_list


def test_good_lists_pass_through_in_order():
    assert check_int_list("CHUNK_COUNTS", (1, 3, 5), 1, 50) == [1, 3, 5]
    assert check_int_list("COUNTS", [48, 0], 0, 48) == [48, 0]


@pytest.mark.parametrize("bad", [(), [0], (1, 51), (3, 3), "135", 5, None, (1.0,), (True,),
                                 tuple(range(1, 10))])
def test_bad_lists_name_the_parameter(bad):
    with pytest.raises(ValueError, match=r"CHUNK_COUNTS must be a list of 1 to 8 distinct integers from 1 to 50"):
        check_int_list("CHUNK_COUNTS", bad, 1, 50)


def test_most_is_adjustable():
    with pytest.raises(ValueError, match="1 to 2 distinct"):
        check_int_list("COMPARED", (1, 2, 3), 1, 50, most=2)
