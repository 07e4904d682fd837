"""The in-memory retrievers of the ``search`` command, by name, each over its lab's chunks.

Every one searches the pages with their summary line kept (``ApiDocument.searched_text``), as
an index built for people's questions should; only self-retrieval, whose queries are those
summaries, searches without them (``summaries=False``, also the setting the judged questions'
pool was drawn with). ``lexical`` is lab 01's baseline scorer and ``bm25`` lab 01's last step,
BM25 at full strength (``lexical.full_strength``: short stop list, names kept, Snowball stems),
both over lab 01's paragraphs (800 characters); ``tfidf`` and ``dense`` use lab 02's word
windows (60 words, 20 overlap); ``hybrid`` is lab 03's final configuration: recursive chunks of
800 characters with the page title and section heading written in front, BM25 at full
strength and dense fused by RRF (k = 60). Lab 04 compares its final system with each of them
on the same questions, so they are built here once, not in the command line.
"""
from __future__ import annotations

IN_MEMORY = ("lexical", "bm25", "tfidf", "dense", "hybrid")


def build_retriever(name: str, corpus=None, summaries: bool = True):
    """The named retriever over its lab's chunks of ``corpus`` (the installed numpy reference by default).

    ``summaries=False`` cuts the chunks from the pages without their summary line, and ``bm25`` is
    then lab 01's first BM25 (its default tokens): the retrievers the judged questions were pooled with.
    """
    from ..corpus.apidocs import load_corpus, with_summaries
    from .chunkers import chunk_corpus, pack_paragraphs, word_windows
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
    chunks = chunk_corpus(pages, word_windows, size=60, overlap=20)
    if name == "tfidf":
        return TfidfRetriever(chunks)
    from .dense import DenseEncoder

    return DenseRetriever(chunks, DenseEncoder())


def hybrid_retriever(corpus, summaries: bool = True):
    """Lab 03's best row: recursive 800-character chunks of the pages with their summary line, with headers,
    full-strength BM25 and dense fused (RRF, k = 60)."""
    from .dense import DenseEncoder
    from .lexical import full_strength
    from .retrievers import Bm25Retriever, DenseRetriever, HybridRetriever
    from .splitters import recursive_chunks, with_header

    chunks = [with_header(chunk, d.title) for d in corpus.documents
              for chunk in recursive_chunks(d, chunk_size=800, summary=summaries)]
    return HybridRetriever(Bm25Retriever(chunks, full_strength(corpus.documents)), DenseRetriever(chunks, DenseEncoder()))


def answers(name: str, questions: list[str], corpus=None, summaries: bool = True) -> list[list]:
    """Each question's document hits from the named retriever (built once)."""
    retriever = build_retriever(name, corpus, summaries)
    if hasattr(retriever, "search_many"):
        return retriever.search_many(questions)
    return [retriever.search(q) for q in questions]
