"""The course's printed blocks appear verbatim, in order, in each lesson's stored outputs."""
import pytest
from support.notebooks import ALL_LESSONS, blocks_in_order, documented_blocks, lesson_notebook, stored_stdout


def test_there_are_38_documented_blocks():
    assert sum(len(documented_blocks(n)) for n in ALL_LESSONS) == 38


@pytest.mark.parametrize("lesson", ALL_LESSONS, ids=lambda n: f"lesson{n:02d}")
def test_stored_outputs_contain_every_documented_block_in_order(lesson):
    path = lesson_notebook(lesson)
    blocks = documented_blocks(lesson)
    found = blocks_in_order(stored_stdout(path), blocks)
    missing = [i + 1 for i, ok in enumerate(found) if not ok]
    assert not missing, f"{path.name}: documented blocks {missing} of {len(blocks)} not printed verbatim in order"


def test_block_matching_is_strict():
    text = "a\nb\nc\n"
    assert blocks_in_order(text, ["a\nb", "c"]) == [True, True]
    assert blocks_in_order(text, ["c", "a"]) == [True, False]       # order matters
    assert blocks_in_order(text, ["a\nc"]) == [False]               # contiguous lines only
    assert blocks_in_order("xa\n", ["a"]) == [False]                # whole lines only
