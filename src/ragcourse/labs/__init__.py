"""The labs' own measurements, on top of the engines and the RAG system: lab 01's failures, lab 03's practice, lab 04's ladder.

What the notebooks import is offered here, from the module that defines it, and imported on first use
(``toolkit.lazy``): ``from ragcourse.labs import ...``; importing the package imports none of its modules.
"""
from __future__ import annotations

from ..toolkit.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "failures": ["count_by_cause", "misses", "stemmed_index", "stemmed_tokens"],
    "generation": ["causes", "four_cells", "generated_conditions", "generated_reads", "generation_row", "passages_of",
                   "per_question", "reading_agreement", "throughput"],
    "ladder": ["Step", "climb", "final_setting", "hnsw_recall", "mean_passages", "mean_tokens", "spread", "stage_latency",
               "stage_scores", "tenant_leaks", "threshold_sweep"],
    "learned": ["fit"],
    "practice": ["CAUSES", "ChunkSearch", "Context", "Evidence", "answer_prompt", "failure_cause", "first_rank",
                 "parent_contexts", "rrf", "sentence_windows", "word_share"],
    "real_check": ["add_paired", "held_out", "paired", "print_measures", "scores"],
    "second_stage": ["compare_second_stages", "cost_per_query", "fitted_runs", "learning_curve"],
    "systems": ["SettingRuns", "conditions"],
    "tenancy": ["tenant_shortfall"],
})
del lazy_exports
