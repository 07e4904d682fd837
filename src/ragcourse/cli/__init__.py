"""The command line: ``main`` (run, figures, sweep, refresh), ``search``, ``postgres`` (index, ask)."""
