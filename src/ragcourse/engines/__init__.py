"""Part 3's shared engines: chunk, encode (dense), index and search (lexical, BM25, TF-IDF), fuse, filter.

What the notebooks import is offered here, from the module that defines it, and imported on first use
(``toolkit.lazy``): ``from ragcourse.engines import ...``; importing the package imports none of its modules.
"""
from __future__ import annotations

from ..toolkit.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "catalogue": ["HYBRID", "IN_MEMORY", "HybridSetting", "answers"],
    "chunking.policy": ["ChunkPolicy"],
    "chunking.splitters": ["pysbd_segmenter", "recursive_chunks", "section_chunks", "sentence_units", "with_header"],
    "chunking.text_chunks": ["TextChunk", "chunk_corpus", "pack_paragraphs", "word_windows"],
    "dense": ["MODEL_NAME", "DenseEncoder", "EmbeddingCache", "dense_ranking", "model_folder"],
    "filters": ["USERS", "depth_for", "facets", "late_filter"],
    "lexical": ["SHORT_STOPWORDS", "STOPWORDS", "Analyzer", "LexicalIndex", "document_names", "full_strength",
                "lexical_tokens", "tag_index"],
    "retrievers": ["Bm25Retriever", "DenseRetriever", "HybridRetriever", "LexicalRetriever", "TfidfRetriever", "collapse",
                   "measure", "run_questions"],
    "tfidf": ["TfidfIndex", "tfidf_tokens"],
})
del lazy_exports
