"""The course's figure house style, a deterministic ``save_figure`` and figures that describe themselves.

Nothing here runs at import. A notebook calls ``use_house_style()`` once (in its
imports cell) and ``save_figure(fig, name, FIGURES_DIR)`` after drawing. Saved SVG
files carry no date and a fixed hash salt, so the same figure gives the same bytes.

A figure cell ends with ``show_figure(fig, description, table=...)`` instead of
``plt.show()``: the figure is shown as the same PNG the inline backend draws, and its
output carries ``description`` (written from the plotted values, with ``describe_series``
or ``describe_bars``) as its text, as the image's ``alt`` and in an HTML ``<img alt>``
that JupyterLab renders; ``table`` adds the plotted values as a collapsed table under it.
"""
from __future__ import annotations

import base64
import html
import io
import math
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

if TYPE_CHECKING:   # matplotlib is imported on use only
    from matplotlib.figure import Figure

# Okabe-Ito colours: distinguishable in colour-blind vision and in greyscale print.
PALETTE = {
    "keyword": "#E69F00",
    "embedding": "#0072B2",
    "fusion": "#009E73",
    "second": "#56B4E9",
    "warning": "#D55E00",
    "neutral": "#7F7F7F",
    "accent": "#CC79A7",
    "dark": "#000000",
}
CYCLE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000"]

HOUSE_STYLE: dict[str, object] = {
    "figure.figsize": (7.0, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.family": "DejaVu Sans",
    "font.size": 10.5,
    "axes.titlesize": 12,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelsize": 10.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "axes.axisbelow": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.8,
    "legend.frameon": False,
    "lines.linewidth": 2.0,
    "lines.markersize": 6,
    "svg.hashsalt": "ragcourse",
    "svg.fonttype": "path",
}


def use_house_style() -> None:
    """Apply the house style to matplotlib for the rest of the session (call it from a notebook)."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(HOUSE_STYLE)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=CYCLE)


def save_figure(fig: Figure, name: str, figures_dir: str | os.PathLike | None) -> Path | None:
    """Write ``fig`` as ``<figures_dir>/<name>.svg`` byte for byte reproducibly; no-op when dir is None."""
    if figures_dir is None:
        return None
    import matplotlib as mpl

    folder = Path(figures_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.svg"
    handle, temporary = tempfile.mkstemp(prefix=f".{name}-", suffix=".svg", dir=folder)
    os.close(handle)
    try:
        with mpl.rc_context({"svg.hashsalt": "ragcourse", "svg.fonttype": "path"}):
            fig.savefig(temporary, format="svg", metadata={"Date": None})
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return target


# ------------------------------------------------------------------------ figures that describe themselves

FIGURE_CLASS = "ragcourse-figure"           # the class of the HTML <img> of a described figure
VALUES_CLASS = "ragcourse-figure-values"    # the class of the <details> holding its plotted values
VALUES_SUMMARY = "The values plotted in the figure above"
_INLINE_FIGURE = re.compile(r"^<Figure size \d+x\d+ with \d+ Axes>$")


def figure_png(fig: Figure) -> bytes:
    """``fig`` as the PNG the inline backend shows: at ``fig.dpi``, cropped tight, its own face colour.

    These are the arguments of IPython's ``print_figure`` with the backend's default
    ``bbox_inches="tight"``; Agg draws the same bytes every time for the same figure."""
    buffer = io.BytesIO()
    fig.canvas.print_figure(buffer, format="png", dpi=fig.dpi, bbox_inches="tight",
                            facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor())
    return buffer.getvalue()


def _checked_description(description: str) -> str:
    text = " ".join(str(description).split())
    if not text:
        raise ValueError("a figure needs a description: what is compared, the axes, the extremes")
    if _INLINE_FIGURE.match(text):
        raise ValueError(f"{text!r} is matplotlib's placeholder, not a description of the figure")
    return text


def figure_output(fig: Figure, description: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The display bundle and metadata of a described figure: ``(data, metadata)``.

    ``data`` has ``image/png`` (base64), ``text/plain`` (the description, instead of
    ``<Figure size ...>``) and ``text/html`` (one ``<img>`` of the same PNG with ``alt``: the
    image renderer of JupyterLab 4 sets no ``alt``, its HTML renderer keeps it); ``metadata``
    is ``{"image/png": {"alt": description}}``, where nbconvert and the site look for it."""
    text = _checked_description(description)
    png = base64.b64encode(figure_png(fig)).decode("ascii")
    tag = (f'<img class="{FIGURE_CLASS}" src="data:image/png;base64,{png}" '
           f'alt="{html.escape(text, quote=True)}">')
    return {"image/png": png, "text/plain": text, "text/html": tag}, {"image/png": {"alt": text}}


def _cell(value: object, number_format: str) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return format(value, number_format)
    return str(value)


def values_output(table: Sequence[Sequence[object]], number_format: str = ".3f") -> dict[str, str]:
    """The display bundle of a figure's plotted values: a collapsed HTML table and the same as text.

    ``table``'s first row holds the column titles, each further row one plotted point or bar;
    floats are formatted with ``number_format`` (as the notebook prints them), the rest with ``str``."""
    rows = [[_cell(value, number_format) for value in row] for row in table]
    if len(rows) < 2:
        raise ValueError("a values table needs a header row and at least one row of values")
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        raise ValueError(f"every row of a values table needs {width} cells, as its header has")
    esc = html.escape
    head = "".join(f'<th scope="col">{esc(title)}</th>' for title in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in rows[1:])
    markup = (f'<details class="{VALUES_CLASS}"><summary>{esc(VALUES_SUMMARY)}</summary>'
              f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>")
    widths = [max(len(row[i]) for row in rows) for i in range(width)]
    lines = [f"{VALUES_SUMMARY}:"]
    lines += ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return {"text/plain": "\n".join(lines), "text/html": markup}


def show_figure(fig: Figure, description: str, table: Sequence[Sequence[object]] | None = None,
                number_format: str = ".3f") -> None:
    """Show ``fig`` with its ``description`` (and, given ``table``, its values), then close it.

    Call it where a figure cell called ``plt.show()``. The figure is displayed once, as
    ``figure_output`` builds it, and closed, so the inline backend does not show it again;
    ``table`` (header row first) follows as a collapsed table, see ``values_output``."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    try:
        data, metadata = figure_output(fig, description)
        values = None if table is None else values_output(table, number_format)
        display(data, raw=True, metadata=metadata)
        if values is not None:
            display(values, raw=True)
    finally:
        plt.close(fig)


# ------------------------------------------------------------------------ descriptions from the data

def _fmt(value: object, number_format: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return format(value, number_format)


def describe_series(y_label: str, x_label: str, x: Sequence[object], series: Mapping[str, Sequence[float]],
                    fmt: str = ".3f", x_fmt: str = "g") -> str:
    """One sentence on line series: ``"<y> against <x>, from <x0> to <xn>: A rises from ... to ...; ..."``.

    For each series: whether it rises, falls or ends where it started (read from the values as
    ``fmt`` prints them), first and last value, and its highest or lowest value when that lies
    between the ends. Then, for each pair of series, where one crosses the other (the sign of
    their difference flips between two neighbouring x values, or at an x where they are equal)."""
    xs = [_fmt(v, x_fmt) for v in x]
    if not xs or not series:
        raise ValueError("describe_series needs x values and at least one series")
    parts = []
    for name, values in series.items():
        if len(values) != len(xs):
            raise ValueError(f"series {name!r} has {len(values)} values for {len(xs)} x values")
        shown = [_fmt(v, fmt) for v in values]
        first, last = values[0], values[-1]
        if shown[0] == shown[-1]:
            text = f"{name} starts and ends at {shown[0]}"
        else:
            text = f"{name} {'rises' if last > first else 'falls'} from {shown[0]} to {shown[-1]}"
        extremes = []
        high = max(range(len(values)), key=lambda i: (values[i], -i))
        low = min(range(len(values)), key=lambda i: (values[i], i))
        if 0 < high < len(values) - 1 and shown[high] not in (shown[0], shown[-1]):
            extremes.append(f"highest {shown[high]} at {xs[high]}")
        if 0 < low < len(values) - 1 and shown[low] not in (shown[0], shown[-1]):
            extremes.append(f"lowest {shown[low]} at {xs[low]}")
        parts.append(text + (f" ({', '.join(extremes)})" if extremes else ""))
    names = list(series)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            where = _crossings(series[a], series[b], xs)
            if where:
                parts.append(f"{a} and {b} cross {_join(where)}")
    return f"{y_label} against {x_label}, from {xs[0]} to {xs[-1]}: " + "; ".join(parts) + "."


def _crossings(a: Sequence[float], b: Sequence[float], xs: Sequence[str]) -> list[str]:
    """Where series ``a`` and ``b`` change order: "between x and x'" or "at x" (equal there)."""
    found, previous = [], None   # previous: (index, sign) of the last point where they differ
    for i, (u, v) in enumerate(zip(a, b)):
        difference = u - v
        if difference == 0 or math.isnan(difference):
            continue
        sign = difference > 0
        if previous is not None and previous[1] != sign:
            j = previous[0]
            found.append(f"at {xs[j + 1]}" if i - j == 2 else f"between {xs[j]} and {xs[i]}")
        previous = (i, sign)
    return found


def _join(places: list[str]) -> str:
    if len(places) > 3:
        return f"{len(places)} times, first {places[0]} and last {places[-1]}"
    return places[0] if len(places) == 1 else ", ".join(places[:-1]) + " and " + places[-1]


def describe_bars(y_label: str, categories: Sequence[str], groups: Mapping[str, Sequence[float]],
                  fmt: str = ".3f") -> str:
    """One sentence on grouped bars: ``"<y>, A against B: precision 0.200 against 0.300; ..."``.

    Each category's values in the order of ``groups`` ("against" between two groups, "/"
    between more). With two groups it ends with where the second is higher, read from the values
    as ``fmt`` prints them."""
    if not categories or not groups:
        raise ValueError("describe_bars needs categories and at least one group")
    for name, values in groups.items():
        if len(values) != len(categories):
            raise ValueError(f"group {name!r} has {len(values)} values for {len(categories)} categories")
    names = list(groups)
    between = " against " if len(names) == 2 else " / "
    per_category = [f"{category} " + between.join(_fmt(groups[n][i], fmt) for n in names)
                    for i, category in enumerate(categories)]
    text = f"{y_label}, {between.join(names)}: " + "; ".join(per_category)
    if len(names) == 2:
        first, second = names
        higher = [c for i, c in enumerate(categories)
                  if float(_fmt(groups[second][i], fmt)) > float(_fmt(groups[first][i], fmt))]
        if not higher:
            text += f"; {second} is higher in none"
        elif len(higher) == len(categories):
            text += f"; {second} is higher in all {len(categories)}"
        else:
            text += f"; {second} is higher in {len(higher)} of {len(categories)} ({', '.join(higher)})"
    return text + "."


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?!\w|\.\d)")


def numbers_in(text: str) -> list[str]:
    """The numbers ``text`` states, as written (``"0.641"``, ``"800"``, ``"-0.05"``, ``"1e-05"``).

    A number glued to a word (``v2``) is not one; ``Recall@5`` and ``top-5`` state 5."""
    return _NUMBER.findall(text)


def numbers_not_plotted(description: str, plotted: Iterable[object], fmt: str = ".3f",
                        allowed: Iterable[object] = ()) -> list[str]:
    """The numbers in ``description`` that are not a plotted value as ``fmt`` prints it.

    ``plotted`` holds numbers or sequences of numbers (flattened one level); integers count as
    written, floats as ``fmt`` formats them; ``allowed`` lists other numbers the text may state
    (a k, a corpus size from a label). An empty list means every number is a plotted one."""
    known = set()
    for item in [*plotted, *allowed]:
        values = item if isinstance(item, (list, tuple)) else [item]
        for value in values:
            if isinstance(value, str):
                known.add(value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                known.add(_fmt(value, fmt) if isinstance(value, float) else str(value))
                if isinstance(value, float) and value.is_integer():
                    known.add(str(int(value)))
    return [number for number in numbers_in(description) if number not in known]
