"""The course's figure house style and a deterministic ``save_figure``.

Nothing here runs at import. A notebook calls ``use_house_style()`` once (in its
imports cell) and ``save_figure(fig, name, FIGURES_DIR)`` after drawing. Saved SVG
files carry no date and a fixed hash salt, so the same figure gives the same bytes.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

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
