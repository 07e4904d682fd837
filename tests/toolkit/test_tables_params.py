import pytest

from ragcourse.toolkit.params import (
    check_choice,
    check_figures_dir,
    check_int,
    check_non_negative_int,
    check_positive_int,
    check_seed,
)
from ragcourse.toolkit.tables import Column, format_header, format_row, print_library_checks, print_table

COLUMNS = [Column("setup", 16, "", "<"), Column("precision", 9, ".4f"), Column("recall", 7, ".4f")]


def test_header_and_rows_line_up_like_the_course():
    assert format_header(COLUMNS) == "setup            precision  recall"
    assert format_row(("keyword search", 0.08, 0.0363), COLUMNS) == "keyword search      0.0800  0.0363"


def test_print_table_and_row_length_check(capsys):
    print_table([("a", 1, 2)], COLUMNS, header="custom")
    assert capsys.readouterr().out == "custom\na                   1.0000  2.0000\n"
    with pytest.raises(ValueError, match="3 values"):
        format_row(("a", 1), COLUMNS)


@pytest.mark.parametrize("bad", [-1, 2 ** 32, 1.5, "7", True, None])
def test_bad_seeds_are_rejected_with_the_parameter_name(bad):
    with pytest.raises(ValueError, match=r"SEED must be an integer in \[0, 2\*\*32\)"):
        check_seed(bad)


def test_good_values_pass_through():
    assert check_seed(0) == 0 and check_seed(2 ** 32 - 1) == 2 ** 32 - 1
    assert check_int("K", 5, 1, 200) == 5
    assert check_choice("MODE", "row", ["row", "block"]) == "row"
    assert check_figures_dir(None) is None


def test_int_and_choice_messages_name_the_parameter():
    with pytest.raises(ValueError, match="K must be an integer from 1 to 200; got 0"):
        check_int("K", 0, 1, 200)
    with pytest.raises(ValueError, match="K must be"):
        check_int("K", 2.0, 1, 200)
    with pytest.raises(ValueError, match="MODE must be one of 'row', 'block'; got 'col'"):
        check_choice("MODE", "col", ["row", "block"])
    with pytest.raises(ValueError, match="MODE must be one of"):
        check_choice("MODE", True, [1, 2])


def test_figures_dir_refuses_a_file(tmp_path):
    afile = tmp_path / "x.txt"
    afile.write_text("mine")
    with pytest.raises(ValueError, match="FIGURES_DIR must be a folder"):
        check_figures_dir(str(afile))
    with pytest.raises(ValueError, match="FIGURES_DIR must be None or a folder path"):
        check_figures_dir(3)
    assert check_figures_dir(str(tmp_path)) == tmp_path


def test_positive_and_non_negative_counts():
    assert check_positive_int("k", 1) == 1 and check_non_negative_int("n", 0) == 0
    for bad in (0, -1, 2.0, True, "3", None):
        with pytest.raises(ValueError, match=r"^k must be a positive integer; got "):
            check_positive_int("k", bad)
    for bad in (-1, 1.0, False, "0", None):
        with pytest.raises(ValueError, match=r"^n must be a non-negative integer; got "):
            check_non_negative_int("n", bad)


def test_library_checks_print_one_aligned_row_per_check(capsys):
    print_library_checks([("what", "against", "40/40 queries"), ("another check", "a library", "largest gap 0.0e+00")])
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["what", "is", "checked", "against", "result"]
    assert len({len(line) for line in [header, *rows]}) == 1 and rows[0].endswith("40/40 queries")
