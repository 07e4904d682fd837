"""Sphinx extension of the course website: docstrings that are not valid reStructuredText.

The package's docstrings are written for a reader of the source first. Now and then one is
not valid reStructuredText (``P(|T| <= t)`` reads as a substitution; ``` `` | `` ``` is an
inline literal that starts with a space). With warnings as errors that would stop the whole
site, so each docstring is parsed once on its own first; one that draws a warning is shown
verbatim, as a literal block, and the build log names it (``site: docstring of ...``). Fix
the docstring and it renders as reStructuredText again.
"""
from __future__ import annotations

import functools
import io
import re

from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.transforms.references import Substitutions
from docutils.utils import new_document
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _problems(app: Sphinx, text: str) -> str:
    """What docutils reports (warnings and worse) for ``text`` parsed on its own."""
    stream = io.StringIO()
    settings = _settings()
    settings.warning_stream = stream
    settings.env = app.env
    try:
        document = new_document("<docstring>", settings)
        Parser().parse(text, document)
        document.transformer.add_transform(Substitutions)
        document.transformer.apply_transforms()
    except Exception:  # a role that needs more context than a lone docstring has: keep it
        return ""
    return stream.getvalue().strip()


@functools.cache
def _settings():
    """docutils settings for the dry run, made once (making them is the slow part)."""
    settings = get_default_settings(Parser)
    settings.report_level = 2
    settings.halt_level = 5
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    return settings


def verbatim_when_invalid(app: Sphinx, what: str, name: str, obj, options, lines: list[str]) -> None:
    """``autodoc-process-docstring``: a docstring docutils warns about becomes a literal block."""
    if not lines:
        return
    problems = _problems(app, "\n".join(lines))
    if not problems:
        return
    first = re.sub(r"^.*?\((?:INFO|WARNING|ERROR|SEVERE)/\d\)\s*", "", problems.splitlines()[0])
    logger.info(f"site: docstring of {name} is not valid reStructuredText ({first}); shown verbatim")
    original = list(lines)
    lines[:] = ["::", ""] + [f"    {line}" if line else "" for line in original] + [""]


def setup(app: Sphinx) -> dict:
    app.connect("autodoc-process-docstring", verbatim_when_invalid, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
