"""The techniques the lessons teach: ranking, exhaustive and approximate search, fusion, chunking,
the retrieval pipeline and its measures. The generic parts (``ranking``, ``fusion``, ``metrics``)
take plain indices, ids and scores, so the labs reuse them on real text.

What the notebooks import is offered here, from the module that defines it, and imported on first use
(``toolkit.lazy``): ``from ragcourse.retrieval import ...``; importing the package imports none of its
modules.
"""
from __future__ import annotations

from ..toolkit.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "candidates": ["candidate_lists", "changed_share", "generation_share", "precision_at", "recall_at",
                   "target_set_sizes"],
    "chunking": ["body_words", "count_whole", "paragraph_spans", "relation_spans", "token_windows"],
    "fusion": ["check_constant_list", "fused_scores", "reciprocal_rank_fusion"],
    "hnsw": ["hnsw_index", "hnsw_replay", "hnsw_search"],
    "index": ["build_bucket_index", "build_graph", "neighbour_ranking", "rank_candidates"],
    "libraries": ["compare_with_flat", "compare_with_ivf", "ivf_search", "tie_aware_recall", "trained_ivf", "trec_eval",
                  "trec_eval_gap"],
    "linking": ["retrieve_top_k", "run_linking"],
    "metrics": ["distinct_top_sets", "hit_at_k", "mean_measure", "mean_relevant", "mean_top_value", "overlap_recall",
                "recall_at_k", "recall_ceiling", "retrieval_scores", "top_set_divergence"],
    "pipeline": ["CosineJaccardRetriever", "index_chunks", "is_relevant", "link_instruction", "link_prompt"],
    "ranking": ["rank_by_score", "top_k"],
    "search": ["EmbeddingIndex", "KeywordIndex"],
    "significance": ["Family"],
})
del lazy_exports
