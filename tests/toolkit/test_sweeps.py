"""The stored seed-sweep summaries the lessons print (issue 37): present, well formed, read from sweep.csv."""
import json

import pytest

from ragcourse.toolkit import sweeps


def test_every_listed_measure_is_stored_with_twenty_seeds_or_more():
    stored = json.loads(sweeps.DATA.read_text())
    assert stored["seeds"] == sweeps.SWEEP_SEEDS
    for lesson, measures in sweeps.STORED_MEASURES.items():
        for measure in measures:
            summary = sweeps.stored_sweep(int(lesson), measure)
            assert summary.n >= 20, (lesson, measure)
            assert summary.low <= summary.mean <= summary.high and summary.ci95 >= 0


def test_an_unknown_measure_is_named_in_the_error():
    with pytest.raises(KeyError, match="no stored sweep for lesson 04"):
        sweeps.stored_sweep(4, "no such measure")


def test_summaries_are_read_from_a_sweep_csv(tmp_path):
    csv_file = tmp_path / "sweep.csv"
    csv_file.write_text("lesson,measure,mean,ci95,min,max,n,seed_1\n"
                        "04,two-build difference,0.1,0.02,0.0,0.3,20,0.1\n"
                        "04,not kept,1,1,1,1,20,1\n")
    assert sweeps.summaries_from_csv(csv_file) == {
        "04": {"two-build difference": {"mean": 0.1, "ci95": 0.02, "min": 0.0, "max": 0.3, "n": 20}}}


def test_the_printed_summary_gives_the_interval_of_the_mean(capsys):
    sweeps.print_stored_sweep(4, "two-build difference", "label")
    low, high = sweeps.stored_sweep(4, "two-build difference").interval
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "label" and out[1].startswith("  over 20 seeds") and f"{low:.4f} to {high:.4f}" in out[2]
