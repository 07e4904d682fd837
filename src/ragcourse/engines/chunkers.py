"""Kept only for ``labs.embedding_plan`` (another branch's file) until it imports ``engines.chunking.text_chunks``.

The chunkers live in ``engines.chunking``; delete this module once nothing imports it.
"""
from .chunking.text_chunks import chunk_corpus, word_windows  # noqa: F401
