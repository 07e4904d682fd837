"""Lab 04's conventional RAG system in PostgreSQL: ingest, store, search, rerank, assemble, read, trace, health.

What the notebooks import is offered here, from the module that defines it, and imported on first use
(``toolkit.lazy``): ``from ragcourse.rag import ...``; importing the package imports none of its modules.
``generator.MODEL_NAME`` is not offered here: ``engines`` offers the encoder's ``MODEL_NAME``, and a name has
one home.
"""
from __future__ import annotations

from ..toolkit.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "answer_checks": ["NameIndex"],
    "context": ["drop_counts"],
    "cross_encoder.reranker": ["train_or_load"],
    "database": ["close_lab_database", "lab_database", "open_database"],
    "generator": ["BATCH", "BUCKET", "RULE", "SYSTEM", "WINDOW", "GeneratingReader", "Generator"],
    "pipeline": ["DEFAULT_SETTING", "STAGES", "UNTUNED_SETTING", "Pipeline"],
    "reader": ["ExtractiveReader", "abstention_rate", "citation_accuracy", "citation_doc_id", "copied_sentences",
               "strict_citation_accuracy"],
    "rerank": ["FEATURES", "LEARNED_WEIGHTS"],
    "search": ["candidates", "dense"],
    "store": ["Check", "PgIndex", "counts_by_tenant"],
})
del lazy_exports
