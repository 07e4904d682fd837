"""Every text labs 02-04 embed, known before any lab runs, so that one step embeds them all.

The labs embed tens of thousands of texts with MiniLM: pages, windows, the chunkings of lab
03's bake-off, sentences, the indexes of lab 04's ladder and the sentences its re-scorer and
reader compare with a question. Embedded inside whichever lab or test meets them first, that
cost lands in a random place and hides behind a progress bar per cell; ``planned_texts`` lists
them up front (with the labs' own parameter values, read from their parameters cells by the
caller), and ``python -m ragcourse prepare`` embeds the union once, in one call, with one
progress bar. Texts a lab meets only at run time (a note appended to one file in lab 04's
refresh section) are left to the lab; ``coverage`` says how many of the texts a run asked for
were planned. ``plan_embeddings`` is the plan ``prepare`` prints: the groups, each distinct text
once with its cache key, and the texts the cache lacks (the order they are embedded in, and the
time that takes: ``labs.embedding_schedule``).
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from ..corpus.apidocs import ApiCorpus, export_markdown, with_summaries
from ..corpus.queries import fresh_questions, judged_questions, real_questions, self_retrieval, unanswerable_questions
from ..engines.catalogue import windows
from ..engines.chunking.text_chunks import chunk_corpus, word_windows
from ..engines.dense import MODEL_NAME, EmbeddingCache, text_key
from ..engines.chunking.splitters import pysbd_segmenter, recursive_chunks, section_chunks, sentence_units, with_header
from ..rag.ingest import discover, read_source
from ..rag.reader import SentenceSplitter
from .ladder import LADDER_INDEXES


# The pages whose 60-word windows (20 overlap), without the summary line, lab 02's exercises embed for
# their dense smoke test; ``exercises.labs.lab02`` takes its subset and window from here.
LAB02_EXERCISE_MODULES = ("numpy.linalg", "numpy.fft")
LAB02_EXERCISE_WINDOW = (60, 20)


def question_texts(corpus: ApiCorpus) -> list[str]:
    """Every question the labs ask: self-retrieval summaries, judged, unanswerable, real and fresh questions."""
    return ([q.text for q in self_retrieval(corpus)] + [q.text for q in judged_questions(corpus)]
            + [q.text for q in unanswerable_questions()] + [q.text for q in real_questions("all")]
            + [q.text for q in fresh_questions()])


def lab02_texts(corpus: ApiCorpus, parameters: Mapping[str, object]) -> list[str]:
    """Lab 02: whole pages without the summary line (dense self-retrieval); pages and word windows
    (``WINDOW``, ``OVERLAP``) with it (the judged and real questions); and, for the dense smoke test of
    lab 02's exercises, the windows without the summary line of ``LAB02_EXERCISE_MODULES``' pages. The
    lab's own windows without the summary line are searched by TF-IDF only; the in-memory ``dense``
    retriever's windows without it are planned all the same, because the judged questions' pool was drawn
    with them and ``tests/corpus/test_pooling.py`` draws it again (``catalogue.windows``)."""
    size, overlap = parameters["WINDOW"], parameters["OVERLAP"]
    kept = with_summaries(corpus.documents)
    subset = [d for d in corpus.documents if d.module in LAB02_EXERCISE_MODULES]
    exercise_size, exercise_overlap = LAB02_EXERCISE_WINDOW
    return ([d.text for d in corpus.documents] + [d.text for d in kept]
            + [c.text for c in chunk_corpus(kept, word_windows, size=size, overlap=overlap)]
            + [c.text for c in chunk_corpus(subset, word_windows, size=exercise_size, overlap=exercise_overlap)]
            + [c.text for c in windows(corpus, summaries=False)])


def lab03_texts(corpus: ApiCorpus, parameters: Mapping[str, object]) -> list[str]:
    """Lab 03, every index with each page's summary line: pages, lab 02's 60-word windows, the bake-off's
    recursive chunks (``RECURSIVE_CHARS``) and sections, pysbd sentences and recursive chunks with headers."""
    segment = pysbd_segmenter()
    pages = with_summaries(corpus.documents)
    recursive = [c for d in corpus.documents for c in recursive_chunks(d, parameters["RECURSIVE_CHARS"], summary=True)]
    chunks: list = chunk_corpus(pages, word_windows, size=60, overlap=20)
    chunks += recursive + [c for d in corpus.documents for c in section_chunks(d, summary=True)]
    chunks += [u for d in corpus.documents for u in sentence_units(d, segment, summary=True)]
    chunks += [with_header(c, corpus.by_id[c.doc_id].title) for c in recursive]
    return [d.text for d in pages] + [c.text for c in chunks]


def lab04_texts(corpus: ApiCorpus) -> list[str]:
    """Lab 04: the chunks of every index its ladder can reach, and their sentences.

    Every index keeps each page's summary line (lab 04 asks no self-retrieval question): lab
    03's recursive chunks with and without contextual headers, and the design's 2,000-character
    chunks with headers (``ladder.LADDER_INDEXES``). The re-scorer and the reader compare a
    question with the sentences of the passages it retrieved; which passages those are is
    known only at run time, so every sentence of every chunk is planned (a superset, most of
    it short).
    """
    splitter = SentenceSplitter()
    texts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ragcourse-plan-") as workspace:
        folder = Path(workspace) / "history"
        export_markdown(corpus, folder, summaries=True)
        sources = [read_source(folder, path) for path in discover(folder)]
        for setting in LADDER_INDEXES:
            policy = setting.chunk_policy()
            for source in sources:
                for chunk in policy.chunks(getattr(source, "text", "")):
                    texts.append(chunk.indexed_text)
                    texts.extend(splitter(chunk.text))
    return texts


def planned_texts(corpus: ApiCorpus, parameters: Mapping[int, Mapping[str, object]]) -> dict[str, list[str]]:
    """Texts by where they are needed (``lab 02``, ``lab 03``, ``lab 04``, ``questions``); ``parameters`` by lab number."""
    return {"questions": question_texts(corpus),
            "lab 02": lab02_texts(corpus, parameters[2]),
            "lab 03": lab03_texts(corpus, parameters[3]),
            "lab 04": lab04_texts(corpus)}


def distinct(groups: Mapping[str, Iterable[str]]) -> list[str]:
    """The union of the groups' texts, each once, in first-seen order."""
    return list(dict.fromkeys(text for texts in groups.values() for text in texts))


def coverage(planned: Iterable[str], requested: Iterable[str]) -> tuple[int, int]:
    """(requested texts that were planned, distinct requested texts)."""
    wanted = set(requested)
    return len(wanted & set(planned)), len(wanted)


@dataclass(frozen=True)
class EmbeddingPlan:
    """What ``prepare`` embeds: the planned texts by group (as planned, repeats kept), every distinct text
    once (first-seen order) with its cache key, and those of them the cache lacks (in the same order)."""

    groups: dict[str, list[str]]
    texts: list[str]
    keys: dict[str, str]
    missing: list[str]
    cache_path: Path

    @property
    def group_sizes(self) -> dict[str, int]:
        """Distinct texts per group, in the groups' order (a text two groups share counts in both)."""
        return {name: len(set(texts)) for name, texts in self.groups.items()}

    @property
    def cached(self) -> int:
        """Distinct planned texts already in the cache."""
        return len(self.texts) - len(self.missing)


def plan_from_groups(groups: Mapping[str, Iterable[str]], cache: EmbeddingCache, revision: str,
                     model: str = MODEL_NAME) -> EmbeddingPlan:
    """The plan of ``groups``: a text planned twice (in one group or two) is one text, and a text whose
    vector ``cache`` holds for (``model``, ``revision``) is not embedded again."""
    listed = {name: list(texts) for name, texts in groups.items()}
    texts = distinct(listed)
    keys = {text: text_key(text) for text in texts}
    stored = cache.get(model, revision, list(keys.values()))
    return EmbeddingPlan(listed, texts, keys, [t for t in texts if keys[t] not in stored], cache.path)


def plan_embeddings(corpus: ApiCorpus, parameters: Mapping[int, Mapping[str, object]], encoder) -> EmbeddingPlan:
    """``planned_texts`` against ``encoder``'s cache (a ``DenseEncoder``; its model is not loaded)."""
    return plan_from_groups(planned_texts(corpus, parameters), encoder.cache, encoder.revision)
