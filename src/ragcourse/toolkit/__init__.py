"""What a notebook cell uses around the measurement: parameter checks, fixed-width tables,
the house style and deterministic figures, headline numbers for the sweep.
Imports neither ``world`` nor ``retrieval``.

What the notebooks import is offered here, from the module that defines it, and imported on first use
(``toolkit.lazy``): ``from ragcourse.toolkit import ...``; importing the package imports none of its modules.
"""
from __future__ import annotations

from .lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "figures": ["PALETTE", "describe_bars", "describe_series", "save_figure", "show_figure", "use_house_style"],
    "params": ["check_choice", "check_figures_dir", "check_int", "check_int_list", "check_number", "check_seed",
               "check_text"],
    "results": ["record_headline"],
    "sweeps": ["print_stored_sweep"],
    "tables": ["Column", "format_header", "format_row", "print_library_checks", "print_table"],
})
del lazy_exports
