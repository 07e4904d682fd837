"""The in-memory retrievers of the ``search`` command, by name, each over its lab's chunks.

Every one searches the pages with their summary line kept (``ApiDocument.searched_text``), as
an index built for people's questions should; only self-retrieval, whose queries are those
summaries, searches without them (``summaries=False``, also the setting the judged questions'
pool was drawn with). ``lexical`` is lab 01's baseline scorer and ``bm25`` lab 01's last step,
BM25 at full strength (``lexical.full_strength``: short stop list, names kept, Snowball stems),
both over lab 01's paragraphs (800 characters); ``tfidf`` and ``dense`` use lab 02's word
windows (60 words, 20 overlap); ``hybrid`` is the configuration lab 03 chose on the real ``dev``
questions (``HYBRID``: recursive chunks of 800 characters with the page title and section heading
written in front, BM25 at full strength and dense, 100 candidates a path fused by RRF with k = 10).
Lab 04 compares its final system with each of them on the same questions, so they are built
here once, not in the command line.
"""
from __future__ import annotations

from dataclasses import dataclass

from .stages import Retriever

IN_MEMORY = ("lexical", "bm25", "tfidf", "dense", "hybrid")
UNITS = ("recursive", "headed")
LEXICAL = ("lab 01", "full strength")


@dataclass(frozen=True)
class HybridSetting:
    """One configuration of the hybrid: units (recursive chunks, or the same with headers), BM25's
    tokens (lab 01's or full strength), RRF's constant and the candidates each path hands in (None: all)."""

    units: str = "headed"
    lexical: str = "full strength"
    constant: int = 10
    depth: int | None = 100

    def __post_init__(self):
        if self.units not in UNITS:
            raise ValueError(f"units must be one of {', '.join(UNITS)}; got {self.units!r}")
        if self.lexical not in LEXICAL:
            raise ValueError(f"lexical must be one of {', '.join(LEXICAL)}; got {self.lexical!r}")

    def __str__(self) -> str:
        depth = "every" if self.depth is None else str(self.depth)
        return (f"{'headed ' if self.units == 'headed' else ''}recursive chunks, BM25 "
                f"{'at full strength' if self.lexical == 'full strength' else 'with lab 01 tokens'}, "
                f"{depth} candidates a path, RRF k = {self.constant}")


# What lab 03 chose on the real dev questions (MRR@10, then hit@5): ``search --retriever hybrid``.
HYBRID = HybridSetting()


def build_retriever(name: str, corpus=None, summaries: bool = True):
    """The named retriever over its lab's chunks of ``corpus`` (the installed numpy reference by default).

    ``summaries=False`` cuts the chunks from the pages without their summary line, and ``bm25`` is
    then lab 01's first BM25 (its default tokens): the retrievers the judged questions were pooled with.
    """
    from ..corpus.apidocs import load_corpus, with_summaries
    from ..engines.chunking.text_chunks import chunk_corpus, pack_paragraphs
    from .lexical import full_strength
    from .retrievers import Bm25Retriever, DenseRetriever, LexicalRetriever, TfidfRetriever

    if name not in IN_MEMORY:
        raise ValueError(f"retriever must be one of {', '.join(IN_MEMORY)}; got {name!r}")
    if not isinstance(summaries, bool):
        raise ValueError(f"summaries must be True or False; got {summaries!r}")
    corpus = corpus if corpus is not None else load_corpus()
    pages = with_summaries(corpus.documents) if summaries else corpus.documents
    if name in ("lexical", "bm25"):
        chunks = chunk_corpus(pages, pack_paragraphs, max_chars=800)
        if name == "lexical":
            return LexicalRetriever(chunks)
        return Bm25Retriever(chunks, full_strength(corpus.documents)) if summaries else Bm25Retriever(chunks)
    if name == "hybrid":
        return hybrid_retriever(corpus, summaries)
    chunks = windows(corpus, summaries)
    if name == "tfidf":
        return TfidfRetriever(chunks)
    from .dense import DenseEncoder

    return DenseRetriever(chunks, DenseEncoder())


def windows(corpus, summaries: bool = True) -> list:
    """The units of ``tfidf`` and ``dense``: lab 02's word windows (60 words, 20 overlap) of the pages, with their
    summary line unless ``summaries=False`` (as the judged questions' pool was drawn)."""
    from ..corpus.apidocs import with_summaries
    from ..engines.chunking.text_chunks import chunk_corpus, word_windows

    pages = with_summaries(corpus.documents) if summaries else corpus.documents
    return chunk_corpus(pages, word_windows, size=60, overlap=20)


def hybrid_retriever(corpus, summaries: bool = True, setting: HybridSetting = HYBRID):
    """The hybrid at ``setting`` (lab 03's dev choice by default) over recursive 800-character chunks of
    the pages (with their summary line unless ``summaries=False``)."""
    from .dense import DenseEncoder
    from .lexical import full_strength
    from .retrievers import Bm25Retriever, DenseRetriever, HybridRetriever
    from ..engines.chunking.splitters import recursive_chunks, with_header

    chunks = [chunk for d in corpus.documents for chunk in recursive_chunks(d, chunk_size=800, summary=summaries)]
    if setting.units == "headed":
        chunks = [with_header(chunk, corpus.by_id[chunk.doc_id].title) for chunk in chunks]
    bm25 = (Bm25Retriever(chunks, full_strength(corpus.documents)) if setting.lexical == "full strength"
            else Bm25Retriever(chunks))
    return HybridRetriever(bm25, DenseRetriever(chunks, DenseEncoder()), setting.constant, setting.depth)


def answers(name: str, questions: list[str], corpus=None, summaries: bool = True, allowed=None) -> list[list]:
    """Each question's document hits from the named retriever (built once), through ``stages.Retriever``;
    ``allowed`` (page ids) filters inside the hybrid's search, before its candidates are cut, and keeps the
    allowed pages of the others' rankings of every chunk."""
    retriever: Retriever = build_retriever(name, corpus, summaries)
    return retriever.search_many(questions, allowed)
