"""Sphinx extension of the course website: what the theme's HTML lacks for a screen reader.

The left sidebar (pydata-sphinx-theme's ``generate_toctree_html``) folds each part of the book
into a ``<details>`` whose ``<summary>`` holds only a chevron icon: a screen reader announces an
unnamed control (axe-core's rule ``summary-name``, serious). Each such ``<summary>`` gets an
``aria-label`` naming the pages it shows or hides, from the link beside it. Runs after the
theme's own ``html-page-context`` handler (priority 600 > 500) and wraps the function it adds.
"""
from __future__ import annotations

import functools

from sphinx.application import Sphinx


def label_toggles(soup) -> None:
    """``aria-label`` on each textless ``<summary>`` of a toctree (in place; idempotent)."""
    for summary in soup.find_all("summary"):
        if summary.get_text(strip=True) or summary.get("aria-label"):
            continue
        item = summary.find_parent("li")
        link = item.find("a", recursive=False) if item is not None else None
        name = " ".join(link.get_text().split()) if link is not None else ""
        summary["aria-label"] = f"Show or hide the pages under {name}" if name else "Show or hide these pages"


def wrap_toctree(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    generate = context.get("generate_toctree_html")
    if generate is None or getattr(generate, "course_labelled", False):
        return

    @functools.wraps(generate)
    def labelled(kind, *args, **kwargs):
        html = generate(kind, *args, **kwargs)
        if hasattr(html, "find_all"):   # a BeautifulSoup tree ("sidebar", "raw"); a string is left alone
            label_toggles(html)
        return html

    labelled.course_labelled = True
    context["generate_toctree_html"] = labelled


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", wrap_toctree, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
