"""Part 3's real corpus (numpy's API reference, read from the installed package) and its question sets.

What the notebooks import is offered here, from the module that defines it, and imported on first use
(``toolkit.lazy``): ``from ragcourse.corpus import ...``; importing the package imports none of its modules.
"""
from __future__ import annotations

from ..toolkit.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "apidocs": ["describe", "export_markdown", "load_corpus", "with_summaries"],
    "queries": ["answerable_in", "coverage", "judged_questions", "judgements", "pooled_relevant", "pooling", "real_questions",
                "self_retrieval", "unanswerable_questions"],
})
del lazy_exports
