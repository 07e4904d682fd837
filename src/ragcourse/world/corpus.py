"""The fictional corpus: 200 procedure documents, 40 queries and paragraph chunks.

Documents and queries are drawn from the course generator, seeded from SEED with
the course's strides, so the same SEED gives the same world in every lesson.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .concepts import CLASS_CODES, CLASS_WEIGHTS, CLASSES, Edition
from .rng import make_rng, pick

N_DOCUMENTS = 200
N_QUERIES = 40
DOCUMENT_STRIDE = 7919
QUERY_STRIDE = 104729


@dataclass(frozen=True)
class Document:
    """A procedure document: code like ``BK001``, class label, main concept, title, paragraphs."""

    code: str
    label: str
    main: str
    concepts: tuple[str, ...]  # the main concept first, then one per paragraph
    title: str
    paragraphs: tuple[str, ...]

    @property
    def text(self) -> str:
        """Title and paragraphs joined by single spaces: what gets embedded and matched."""
        return self.title + " " + " ".join(self.paragraphs)


@dataclass(frozen=True)
class Query:
    """A subscriber question in the query-side language, with its target concept and class."""

    text: str
    label: str
    concept: str

    @property
    def filler(self) -> str:
        """The filler word that ends the query (lesson 11 calls it the record type)."""
        return self.text.split()[-1]


@dataclass(frozen=True)
class Chunk:
    """A paragraph of a document, with the concepts whose document-side form it contains."""

    code: str
    label: str
    main: str
    text: str
    concepts: tuple[str, ...]


def build_documents(seed: int, edition: Edition, n: int = N_DOCUMENTS) -> list[Document]:
    """Draw the corpus: class, main concept, then two to five paragraphs per document."""
    documents = []
    for i in range(n):
        draw = make_rng(seed + DOCUMENT_STRIDE * i)
        label = CLASSES[pick(draw(), CLASS_WEIGHTS)]
        pool = edition.in_class(label)
        main = pool[int(draw() * len(pool))]
        n_paragraphs = 2 + int(draw() * 4)
        main_form = edition.concept(main).document_form
        concepts, paragraphs = [main], []
        for _ in range(n_paragraphs):
            concept = pool[int(draw() * len(pool))]
            concepts.append(concept)
            filler = edition.filler_words[int(draw() * len(edition.filler_words))]
            paragraphs.append(edition.paragraph_template.format(
                concept=edition.concept(concept).document_form, filler=filler, main=main_form))
        documents.append(Document(code=f"{CLASS_CODES[label]}{i + 1:03d}", label=label, main=main,
                                  concepts=tuple(concepts), title=f"{main_form} procedure",
                                  paragraphs=tuple(paragraphs)))
    return documents


def draw_query_sources(seed: int, edition: Edition, documents: Sequence[Document],
                       n: int = N_QUERIES) -> list[tuple[Document, str]]:
    """The draws behind the query set: a source document and a filler word per query, in order."""
    sources = []
    for i in range(n):
        draw = make_rng(seed + QUERY_STRIDE * i)
        document = documents[int(draw() * len(documents))]
        filler = edition.filler_words[int(draw() * len(edition.filler_words))]
        sources.append((document, filler))
    return sources


def build_queries(seed: int, edition: Edition, documents: list[Document],
                  n: int = N_QUERIES) -> list[Query]:
    """Draw the query set: a document's main concept in query-side form plus a filler word."""
    return [Query(text=f"{edition.concept(document.main).query_form} {filler}",
                  label=document.label, concept=document.main)
            for document, filler in draw_query_sources(seed, edition, documents, n)]


def tag_chunk(document: Document, text: str, edition: Edition) -> Chunk:
    """A piece of ``document``'s text as a ``Chunk``, tagged with the concepts whose document form it holds."""
    return Chunk(code=document.code, label=document.label, main=document.main, text=text,
                 concepts=tuple(c.key for c in edition.concepts if c.document_form in text))


def paragraph_chunks(documents: list[Document], edition: Edition) -> list[Chunk]:
    """One chunk per paragraph (the source's own boundary), tagged with the concepts it names."""
    return [tag_chunk(d, p, edition) for d in documents for p in d.paragraphs]


def relevant_counts(documents: list[Document], edition: Edition) -> dict[str, int]:
    """Number of documents whose main concept is each concept."""
    return {key: sum(1 for d in documents if d.main == key) for key in edition.keys}


@dataclass(frozen=True)
class World:
    """The corpus and query set of one SEED and edition."""

    seed: int
    edition: Edition
    documents: list[Document]
    queries: list[Query]

    @property
    def relevant(self) -> dict[str, int]:
        """Documents per main concept."""
        return relevant_counts(self.documents, self.edition)

    def chunks(self) -> list[Chunk]:
        """Paragraph chunks of the corpus."""
        return paragraph_chunks(self.documents, self.edition)


def build_world(seed: int, edition: Edition) -> World:
    """Documents and queries for ``seed`` on ``edition``."""
    documents = build_documents(seed, edition)
    return World(seed=seed, edition=edition, documents=documents,
                 queries=build_queries(seed, edition, documents))
