"""The fictional world of lessons 01-16: generator, tokenizer, concepts, corpus, simulated models,
and the per-lesson data built on them. Imports nothing of ``retrieval`` or ``batch``.

What the notebooks import is offered here, from the module that defines it, and imported on first use
(``toolkit.lazy``): ``from ragcourse.world import ...``; importing the package imports none of its modules.
``prompts.answer_prompt`` is not offered here: ``labs`` offers lab 03's ``answer_prompt``, and a name has one
home.
"""
from __future__ import annotations

from ..toolkit.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "concepts": ["CLASSES", "FIRST_EDITION", "SECOND_EDITION"],
    "corpus": ["build_world", "paragraph_chunks", "tag_chunk"],
    "embedding": ["EmbeddingModel", "cosine", "dot", "length", "unit"],
    "finetuning": ["read_stamp", "stamped_chunks", "training_examples", "validity_stamps"],
    "llm": ["TRANSFORM_INSTRUCTION", "CallCounter", "ChunkAnswerer", "ClassPriorGenerator", "ConceptLinker",
            "FineTunedModel", "PairScorer", "QueryTransformer", "choose", "generation_prompt"],
    "metadata": ["assign_regions", "filter_widths", "matching"],
    "phrasings": ["phrase_queries"],
    "prompts": ["ANSWER_INSTRUCTION"],
    "query_classes": ["draw_query_classes", "searchable_text"],
    "rng": ["make_rng"],
    "sources": ["CODE_FIELD_PREFIX", "FORM_HEADER", "PAGE_FOOTER", "is_continuation", "raw_sources"],
    "table_source": ["CELL_SEPARATOR", "COLUMNS", "build_tables"],
    "text": ["tokenize", "trace_id"],
    "updates": ["PERIODS", "RECORD_MARKER", "change_stream", "served_text"],
})
del lazy_exports
