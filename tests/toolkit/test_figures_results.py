import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ragcourse.toolkit.figures import HOUSE_STYLE, save_figure, use_house_style  # noqa: E402
from ragcourse.toolkit.results import record_headline  # noqa: E402


def draw():
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [0.3, 0.7])
    ax.set_title("test")
    return fig


def test_save_figure_is_byte_identical_and_dateless(tmp_path):
    use_house_style()
    first = save_figure(draw(), "01-test", tmp_path / "a")
    second = save_figure(draw(), "01-test", tmp_path / "b")
    plt.close("all")
    assert first.name == "01-test.svg"
    assert first.read_bytes() == second.read_bytes()
    assert b"<dc:date>" not in first.read_bytes()
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["01-test.svg"]   # no temporary left


def test_save_figure_without_folder_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert save_figure(draw(), "01-test", None) is None
    plt.close("all")
    assert list(tmp_path.iterdir()) == []      # not even into the working folder


def test_importing_sets_no_style():
    import importlib

    import ragcourse.toolkit.figures as module
    matplotlib.rcdefaults()
    importlib.reload(module)
    assert matplotlib.rcParams["axes.spines.top"] is True
    use_house_style()
    assert matplotlib.rcParams["axes.spines.top"] is HOUSE_STYLE["axes.spines.top"]
    matplotlib.rcdefaults()


def test_record_headline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert record_headline(3, {"x": 1}, None) is None
    assert list(tmp_path.iterdir()) == []      # no folder, no file
    path = record_headline(3, {"recall": 0.25, "n": 4}, tmp_path, seed=9)
    assert path.name == "03-headline.json"
    # read as the sweep reads it
    assert json.loads(path.read_text()) == {"lesson": 3, "seed": 9, "numbers": {"recall": 0.25, "n": 4.0}}
