"""Kept only for ``labs.embedding_plan`` (another branch's file) until it imports ``engines.chunking.splitters``.

The splitters live in ``engines.chunking``; delete this module once nothing imports it.
"""
from .chunking.splitters import pysbd_segmenter, recursive_chunks, section_chunks, sentence_units, with_header  # noqa: F401
