"""Figures that describe themselves (issue 53): ``show_figure`` and the helpers that write a description.

A figure cell ends with ``show_figure(fig, description, table=...)`` instead of ``plt.show()``. Checked
here: the output bundle (PNG, the description as text and as the PNG's ``alt``, an HTML ``<img alt>``
for JupyterLab), the PNG's bytes (the same run to run, and the same as the inline backend's), that the
figure is closed (shown once), the collapsed values table, and that ``describe_series`` /
``describe_bars`` state only numbers that are plotted, formatted as the notebooks print them. One
test runs a real kernel (nbclient, the inline backend) to compare with ``plt.show()``.
"""
from __future__ import annotations

import base64
import html
import re

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from ragcourse.toolkit.figures import (  # noqa: E402
    FIGURE_CLASS, VALUES_CLASS, describe_bars, describe_series, figure_output, figure_png, numbers_in,
    numbers_not_plotted, show_figure, use_house_style, values_output,
)

SIZES = [200, 400, 800, 1600, 3200]
SELF = [0.512, 0.598, 0.641, 0.633, 0.587]
JUDGED = [0.351, 0.372, 0.386, 0.344, 0.310]


def draw() -> plt.Figure:
    """A two-series line figure in the house style, like the labs' sweeps."""
    use_house_style()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(SIZES, SELF, marker="o", label="self-retrieval")
    ax.plot(SIZES, JUDGED, marker="s", label="judged questions")
    ax.set_xscale("log")
    ax.set_xlabel("max_chars (log scale)")
    ax.set_ylabel("Recall@5")
    ax.set_title("Recall@5 of IDF overlap")
    ax.legend()
    return fig


@pytest.fixture
def published(monkeypatch):
    """What ``IPython.display.display`` would publish: a list of (data, metadata)."""
    shown = []

    def fake_display(data, raw=False, metadata=None):
        assert raw, "show_figure publishes ready-made bundles"
        shown.append((data, metadata))

    import IPython.display
    monkeypatch.setattr(IPython.display, "display", fake_display)
    return shown


def test_the_bundle_carries_the_description_as_text_alt_and_html():
    fig = draw()
    description = describe_series("Recall@5", "max_chars", SIZES, {"self-retrieval": SELF, "judged questions": JUDGED})
    data, metadata = figure_output(fig, description)
    plt.close(fig)
    assert set(data) == {"image/png", "text/plain", "text/html"}
    assert data["text/plain"] == description and not data["text/plain"].startswith("<Figure size")
    assert metadata == {"image/png": {"alt": description}}
    png = base64.b64decode(data["image/png"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    # JupyterLab's image renderer sets no alt: its HTML renderer (preferred to image/png) shows the
    # same PNG with the description as alt.
    tag = re.fullmatch(r'<img class="([^"]+)" src="data:image/png;base64,([^"]+)" alt="([^"]*)">', data["text/html"])
    assert tag, data["text/html"][:200]
    assert tag.group(1) == FIGURE_CLASS
    assert tag.group(2) == data["image/png"]
    assert html.unescape(tag.group(3)) == description


def test_the_description_is_escaped_in_html_and_a_placeholder_is_refused():
    fig = draw()
    data, _ = figure_output(fig, 'A "quoted" <b>value</b> & more')
    assert 'alt="A &quot;quoted&quot; &lt;b&gt;value&lt;/b&gt; &amp; more"' in data["text/html"]
    for bad in ("", "   ", "<Figure size 600x350 with 1 Axes>"):
        with pytest.raises(ValueError):
            figure_output(fig, bad)
    plt.close(fig)


def test_the_png_is_the_same_bytes_run_to_run_and_as_the_inline_backend_draws_it():
    from IPython.core.pylabtools import print_figure

    first, second = draw(), draw()
    try:
        assert figure_png(first) == figure_png(first) == figure_png(second)
        # IPython's formatter with the inline backend's default print_figure_kwargs ({"bbox_inches": "tight"})
        assert figure_png(first) == print_figure(first, "png", bbox_inches="tight")
        assert first.dpi == 100   # the house style's figure.dpi, not savefig.dpi
    finally:
        plt.close(first)
        plt.close(second)


def test_show_figure_displays_once_with_its_values_and_closes_the_figure(published):
    fig = draw()
    table = [("max_chars", "self-retrieval", "judged questions"), *zip(SIZES, SELF, JUDGED)]
    show_figure(fig, "a description", table=table)
    assert not plt.fignum_exists(fig.number), "the figure is still open: the inline backend would show it again"
    assert len(published) == 2
    (figure, metadata), (values, values_metadata) = published
    assert figure["text/plain"] == "a description" and metadata == {"image/png": {"alt": "a description"}}
    assert set(values) == {"text/plain", "text/html"} and values_metadata is None
    assert values["text/html"].startswith(f'<details class="{VALUES_CLASS}"><summary>')
    assert "<th scope=\"col\">judged questions</th>" in values["text/html"]
    assert "<td>800</td><td>0.641</td><td>0.386</td>" in values["text/html"]
    assert values["text/plain"].split("\n")[4].split() == ["800", "0.641", "0.386"]


def test_show_figure_closes_the_figure_even_when_the_description_is_refused(published):
    fig = draw()
    with pytest.raises(ValueError):
        show_figure(fig, "")
    assert not plt.fignum_exists(fig.number) and not published


def test_values_table_is_deterministic_and_checked():
    table = [("k", "score"), (5, 0.12345), ("ten", 1.0)]
    assert values_output(table) == values_output(table)
    assert values_output(table, ".4f")["text/plain"].split("\n") == [
        "The values plotted in the figure above:", "  k   score", "  5  0.1235", "ten  1.0000"]
    with pytest.raises(ValueError):
        values_output([("only a header",)])
    with pytest.raises(ValueError):
        values_output([("a", "b"), (1,)])


def test_describe_series_states_direction_ends_extremes_and_crossings():
    text = describe_series("Recall@5", "max_chars", SIZES, {"self-retrieval": SELF, "judged questions": JUDGED})
    assert text == ("Recall@5 against max_chars, from 200 to 3200: self-retrieval rises from 0.512 to 0.587 "
                    "(highest 0.641 at 800); judged questions falls from 0.351 to 0.310 (highest 0.386 at 800).")
    crossing = describe_series("share", "k", [1, 2, 3, 4], {"a": [0.1, 0.2, 0.4, 0.5], "b": [0.3, 0.3, 0.3, 0.3]})
    assert crossing.endswith("b starts and ends at 0.300; a and b cross between 2 and 3.")
    touching = describe_series("share", "k", [1, 2, 3], {"a": [0.1, 0.3, 0.5], "b": [0.3, 0.3, 0.3]}, fmt=".2f")
    assert touching.endswith("a and b cross at 2.")
    many = describe_series("y", "x", [1, 2, 3, 4, 5, 6], {"a": [1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
                                                          "b": [0.5] * 6}, fmt=".1f")
    assert "a and b cross 5 times, first between 1 and 2 and last between 5 and 6" in many
    with pytest.raises(ValueError):
        describe_series("y", "x", [1, 2], {"a": [0.1]})


def test_describe_bars_compares_two_groups_as_printed():
    text = describe_bars("mean over 40 queries", ["precision", "recall", "class hit"],
                         {"keyword search": [0.2, 0.45, 0.7], "embedding": [0.3, 0.45, 0.8]})
    assert text == ("mean over 40 queries, keyword search against embedding: precision 0.200 against 0.300; "
                    "recall 0.450 against 0.450; class hit 0.700 against 0.800; embedding is higher in 2 of 3 "
                    "(precision, class hit).")
    three = describe_bars("share", ["a"], {"x": [0.1], "y": [0.2], "z": [0.3]}, fmt=".1f")
    assert three == "share, x / y / z: a 0.1 / 0.2 / 0.3."


def test_a_descriptions_numbers_are_the_plotted_numbers():
    text = describe_series("Recall@5", "max_chars", SIZES, {"self-retrieval": SELF, "judged questions": JUDGED})
    assert numbers_in(text)[:3] == ["5", "200", "3200"]
    assert numbers_not_plotted(text, [SIZES, SELF, JUDGED], allowed=[5]) == []
    assert numbers_not_plotted(text, [SIZES, SELF, JUDGED]) == ["5"]           # the k of the label
    assert numbers_not_plotted(text.replace("0.641", "0.640"), [SIZES, SELF, JUDGED], allowed=[5]) == ["0.640"]
    assert numbers_in("top-5 of 60, v2, 1e-05, ends at -0.05.") == ["5", "60", "1e-05", "-0.05"]


@pytest.mark.notebooks
def test_in_a_kernel_show_figure_replaces_plt_show(tmp_path):
    """In a real kernel with the inline backend: the same PNG as ``plt.show()``, one output, text = description."""
    import nbformat
    from nbclient import NotebookClient

    draw_source = ("import matplotlib.pyplot as plt\n"
                   "from ragcourse.toolkit.figures import use_house_style, show_figure\n"
                   "use_house_style()\n"
                   "def draw():\n"
                   "    fig, ax = plt.subplots(figsize=(6, 3.5))\n"
                   f"    ax.plot({SIZES}, {SELF}, marker='o')\n"
                   "    ax.set_title('Recall@5 of IDF overlap')\n"
                   "    return fig\n")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(draw_source),
        nbformat.v4.new_code_cell("fig = draw()\nplt.show()"),
        nbformat.v4.new_code_cell("fig = draw()\nshow_figure(fig, 'Recall@5 against max_chars')"),
        nbformat.v4.new_code_cell("print(plt.get_fignums())"),
    ])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    inline, described, open_figures = (cell.outputs for cell in nb.cells[1:])
    assert len(inline) == 1 and len(described) == 1, "the figure is shown exactly once"
    assert described[0].data["image/png"] == inline[0].data["image/png"], "not the inline backend's PNG"
    assert inline[0].data["text/plain"].startswith("<Figure size")
    assert described[0].data["text/plain"] == "Recall@5 against max_chars"
    assert dict(described[0].metadata) == {"image/png": {"alt": "Recall@5 against max_chars"}}
    assert open_figures[0].text.strip() == "[]"
