"""The cross-encoder's training data, made from the corpus alone: queries written from each page, that page's
own chunk as the positive, and other pages' chunks that the two first-stage paths rank high as hard negatives.

No question set is read for its content: every query is a piece of a page or its name. Five kinds, mixed in
the proportions of ``SHARES`` when the budget is smaller than the supply (``ordered``):

- ``summary``: the page's one-line summary (``ApiDocument.title``), when no other page has the same one;
- ``description``: the first sentence of the page's Extended Summary, when no other page has it;
- ``parameter``: the first sentence of a parameter's or a return value's description, when no other
  page holds that sentence and it has at least ``MIN_WORDS`` words;
- ``name``: the page's name as people type it (``np.concatenate``, ``concatenate(``, ``linalg.solve``,
  ``rng.choice``, ``arr.tolist()``: ``typed_names``);
- ``heading``: the page's short name and one of its section headings (``concatenate returns``).

A summary, description or parameter sentence becomes a query as someone might type it (``phrased``: as it
is, or ``how to ...``, ``how do I ... in numpy``, ``numpy ...``, chosen by a hash). Its positive is the chunk
of its page that holds its source (the first chunk for a summary, a description or a name, the section's
first chunk for a heading, the chunk holding the sentence for a parameter). Its negatives are chunks of other
pages, one a page, taken alternately from two rankings of every chunk: BM25 for the query (full-strength
tokens, ``engines.lexical.full_strength``), each such page's chunk in the positive's place (``in_slot``), and
the dense cosine with the page's summary line (vectors from the embedding cache, where ``prepare`` put
them), the chunk as ranked.

The words a query was written from are cut out of every text of its group (the positive and the negatives:
another page's See Also list often repeats a summary word for word), so the model cannot score a pair by
spotting the query copied into the passage; for a summary every first chunk of the group also loses its own
summary, so the positive is not the one first chunk without one. A share of those queries (``kept_whole``)
keeps its words instead, so that sharing the query's words does not become a sign against a text. A name is
kept, since finding a typed name is the point. Every text is read with its header in front (``headed``: page
title and section, as the index embeds it); ``header_lookup`` lets a reranker handed a bare chunk text read it
the same way.

Queries that equal a question of any question set are dropped and counted (``Supply.dropped``), which
``tests/rag/test_cross_encoder.py`` checks; so are queries whose page yields no usable positive.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Sequence

KINDS = ("summary", "description", "name", "parameter", "heading")
SHARES = {"summary": 0.3, "description": 0.25, "parameter": 0.25, "name": 0.15, "heading": 0.05}   # of a smaller budget
CUT_KINDS = ("summary", "description", "parameter")   # their source sentence is cut out of their group's texts
PHRASINGS = ("{}", "how to {}", "how do I {} in numpy", "numpy {}")
MIN_WORDS = 5
MIN_POSITIVE_CHARS = 40           # a positive left shorter than this once its query is cut out is not used
DESCRIBED_SECTIONS = ("Parameters", "Returns", "Other Parameters", "Yields")
NAMED_BLOCK = re.compile(r"^[A-Za-z_*][\w*, .]*(?: : .*)?$")


@dataclass(frozen=True)
class PageChunk:
    """One chunk of a page as the first stage returns it: the page, its ordinal, its text (what a reranker
    reads), the section headings it holds (else the one section it sits in), and the text the dense index
    embedded (header and text)."""

    doc_id: str
    ordinal: int
    text: str
    headings: tuple[str, ...]
    indexed_text: str


@dataclass(frozen=True)
class TrainingQuery:
    """A query written from a page: its text, its kind (one of ``KINDS``), its page, the ordinal of the
    page's chunk that answers it, and the page's words it was written from (``source``: the summary line or
    the sentence, before ``phrased`` turned it into a question; the text itself for names and headings)."""

    text: str
    kind: str
    doc_id: str
    ordinal: int
    source: str = ""


@dataclass(frozen=True)
class Group:
    """One training example: a query, its positive text, and its negative texts (with their pages)."""

    query: str
    kind: str
    doc_id: str
    positive: str
    negatives: tuple[str, ...]
    negative_pages: tuple[str, ...]
    source: str = ""     # the page's words the query was written from (``TrainingQuery.source``)

    @property
    def texts(self) -> tuple[str, ...]:
        """The positive first, then the negatives: the order the listwise loss reads them in."""
        return (self.positive, *self.negatives)


@dataclass(frozen=True)
class Supply:
    """Every query the corpus yields, by kind, and what was dropped on the way (kind -> count)."""

    queries: tuple[TrainingQuery, ...]
    dropped: dict = field(default_factory=dict)

    def count(self, kind: str) -> int:
        return sum(q.kind == kind for q in self.queries)


def headed(chunk: PageChunk, text: str | None = None) -> str:
    """What the cross-encoder reads of a chunk: its header (page title and section) on a line, then its text
    (``text`` in its place: the chunk with a query cut out); the same form the index embeds."""
    header = chunk.indexed_text[:len(chunk.indexed_text) - len(chunk.text)]
    return header + (chunk.text if text is None else text)


def header_lookup(chunks: Sequence[PageChunk]) -> dict[str, str]:
    """Chunk text -> its headed form (``headed``), for texts that belong to one header only: how a reranker
    that is handed a chunk's bare text (``rag.rerank.rerank``) reads it as it was trained to."""
    found: dict[str, set] = {}
    for chunk in chunks:
        found.setdefault(chunk.text, set()).add(headed(chunk))
    return {text: forms.pop() for text, forms in found.items() if len(forms) == 1}


def page_chunks(corpus) -> list[PageChunk]:
    """Every page cut as the kept system cuts it (``ChunkPolicy.recursive(headers=True)`` over the exported
    Markdown with summary lines, ``corpus.apidocs.export_markdown``), in page order."""
    from ...engines.chunking.policy import ChunkPolicy
    from ...engines.chunking.spans import SECTION_LINE

    policy = ChunkPolicy.recursive(headers=True)
    chunks = []
    for document in corpus.documents:
        text = document.markdown(True)
        sections = [(m.start(), m.group(1).strip()) for m in SECTION_LINE.finditer(text)]
        for span in policy.chunks(text):
            opened = [name for start, name in sections if span.start <= start < span.end]
            headings = tuple(opened or [name for start, name in sections if start < span.start][-1:])
            chunks.append(PageChunk(document.doc_id, span.ordinal, span.text, headings, span.indexed_text))
    return chunks


def typed_names(doc_id: str) -> list[str]:
    """A page's name as people type it in a search box or a question, most common form first."""
    parts = doc_id.split(".")
    last = parts[-1]
    if doc_id.startswith("numpy.random.Generator."):
        return [f"rng.{last}", f"Generator.{last}", f"{last}("]
    if doc_id.startswith("numpy.ndarray."):
        return [f"arr.{last}()", f"ndarray.{last}", f".{last}()"]
    short = ".".join(["np", *parts[1:]]) if parts[0] == "numpy" else doc_id
    forms = [short, f"{last}("]
    if len(parts) > 2:
        forms.insert(1, ".".join(parts[-2:]))
    return list(dict.fromkeys(forms))


def first_sentence(text: str) -> str:
    """The first sentence of a description, its lines joined by spaces."""
    flat = " ".join(text.split())
    cut = re.search(r"(?<=[a-z0-9)`'\"])\.(\s|$)", flat)
    return flat[:cut.start() + 1] if cut else flat


def described_sentences(document) -> list[tuple[str, str]]:
    """(section heading, first sentence of a parameter's or result's description) for every described name."""
    found = []
    for section in document.sections:
        if section.heading not in DESCRIBED_SECTIONS:
            continue
        for block in section.text.split("\n\n"):
            lines = block.split("\n")
            if len(lines) > 1 and NAMED_BLOCK.match(lines[0]):
                found.append((section.heading, first_sentence("\n".join(lines[1:]))))
    return found


def normalised(text: str) -> str:
    return " ".join(text.lower().split())


def query_supply(corpus, chunks: Sequence[PageChunk], excluded: Sequence[str]) -> Supply:
    """Every query of every page (see the module's docstring), minus those equal to a text of ``excluded``
    (the question sets' texts), each with the ordinal of its positive chunk."""
    by_page: dict[str, list[PageChunk]] = {}
    for chunk in chunks:
        by_page.setdefault(chunk.doc_id, []).append(chunk)
    sentence_pages: dict[str, set] = {}
    for document in corpus.documents:
        for _, sentence in described_sentences(document):
            sentence_pages.setdefault(normalised(sentence), set()).add(document.doc_id)
    title_pages: dict[str, int] = {}
    description_pages: dict[str, int] = {}
    for document in corpus.documents:
        title_pages[normalised(document.title)] = title_pages.get(normalised(document.title), 0) + 1
        for section in document.sections:
            if section.heading == "Extended Summary":
                key = normalised(first_sentence(section.text.split("\n\n", 1)[0]))
                description_pages[key] = description_pages.get(key, 0) + 1
    banned = {normalised(text) for text in excluded}
    queries: list[TrainingQuery] = []
    dropped = {"equal to a question": 0, "no chunk holds it": 0, "shared with another page or short": 0}

    def add(text: str, kind: str, doc_id: str, ordinal: int | None) -> None:
        asked = phrased(text, kind, doc_id)
        if normalised(text) in banned or normalised(asked) in banned:
            dropped["equal to a question"] += 1
        elif ordinal is None:
            dropped["no chunk holds it"] += 1
        else:
            queries.append(TrainingQuery(asked, kind, doc_id, ordinal, text))

    for document in corpus.documents:
        own = by_page.get(document.doc_id, [])
        if not own:
            dropped["no chunk holds it"] += 1
            continue
        first = own[0].ordinal
        if title_pages[normalised(document.title)] > 1:   # numpy.ma.outerproduct is numpy.outer's page again
            dropped["shared with another page or short"] += 1
        else:
            add(document.title, "summary", document.doc_id, first)
        for name in typed_names(document.doc_id):
            add(name, "name", document.doc_id, first)
        extended = next((sec.text for sec in document.sections if sec.heading == "Extended Summary"), "")
        described = first_sentence(extended.split("\n\n", 1)[0]) if extended else ""
        if len(described.split()) >= MIN_WORDS and description_pages[normalised(described)] == 1:
            holder = first if described in " ".join(own[0].text.split()) else None
            add(described, "description", document.doc_id, holder)
        elif described:
            dropped["shared with another page or short"] += 1
        for heading, sentence in described_sentences(document):
            if len(sentence.split()) < MIN_WORDS or len(sentence_pages[normalised(sentence)]) > 1:
                dropped["shared with another page or short"] += 1
                continue
            holder = next((c.ordinal for c in own if sentence in " ".join(c.text.split())), None)
            add(sentence, "parameter", document.doc_id, holder)
        short = document.doc_id.rsplit(".", 1)[-1]
        for section in document.sections:
            holder = next((c.ordinal for c in own if section.heading in c.headings), None)
            add(f"{short} {section.heading.lower()}", "heading", document.doc_id, holder)
    return Supply(tuple(queries), {k: v for k, v in dropped.items()})


def phrased(text: str, kind: str, doc_id: str) -> str:
    """A summary line or a parameter sentence as someone might type it: one of ``PHRASINGS`` (chosen by a
    hash of the page and the text), applied to the sentence with its first letter lowered and its full stop
    dropped; names and headings are typed as they are."""
    if kind not in CUT_KINDS:
        return text
    form = PHRASINGS[int(hashlib.sha256(f"{doc_id}:{text}".encode("utf-8")).hexdigest(), 16) % len(PHRASINGS)]
    body = text.rstrip(". ")
    return form.format(body[:1].lower() + body[1:]) if form != "{}" else text


def ordered(queries: Sequence[TrainingQuery], seed: int) -> list[TrainingQuery]:
    """The queries in the order a budget takes them: every kind in proportion to its ``SHARES`` (the ``n``-th
    query of a kind comes at time ``n / share``), within a kind in an order fixed by a hash of the seed, the
    page and the text, so a small budget still mixes the kinds and spreads over the pages."""
    by_kind: dict[str, list[TrainingQuery]] = {}
    for query in queries:
        by_kind.setdefault(query.kind, []).append(query)
    timed = []
    for kind, found in by_kind.items():
        found.sort(key=lambda q: hashlib.sha256(f"{seed}:{q.doc_id}:{q.text}".encode("utf-8")).hexdigest())
        timed += [((n + 1) / SHARES[kind], KINDS.index(kind), q) for n, q in enumerate(found)]
    return [q for *_, q in sorted(timed, key=lambda item: item[:2])]


def without(text: str, query: str) -> str:
    """``text`` with every occurrence of ``query`` cut out (case and white space compared loosely), spaces tidied."""
    words = [re.escape(w) for w in query.split()]
    if not words:
        return text
    cut = re.sub(r"\s+".join(words), " ", text, flags=re.IGNORECASE)
    return re.sub(r"[ \t]{2,}", " ", cut).strip()


class NegativeMiner:
    """Both first-stage rankings of every chunk: BM25 for a query's text, the dense cosine for a page's
    summary line (``vectors``: the chunks' ``indexed_text`` vectors; ``summaries``: doc id -> unit vector)."""

    def __init__(self, corpus, chunks: Sequence[PageChunk], vectors, summaries: dict):
        import numpy as np

        from ...engines.bm25 import Bm25Index
        from ...engines.lexical import full_strength

        self.chunks = list(chunks)
        self.pages: dict[str, list[PageChunk]] = {}
        for chunk in self.chunks:
            self.pages.setdefault(chunk.doc_id, []).append(chunk)
        self.bm25 = Bm25Index([c.indexed_text for c in self.chunks], full_strength(corpus.documents))
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.summaries = summaries
        self._dense: dict[str, list[int]] = {}

    def dense_order(self, doc_id: str) -> list[int]:
        """Chunk positions by cosine with the page's summary line, best first, ties by position."""
        if doc_id not in self._dense:
            from ...engines.dense import dense_ranking

            self._dense[doc_id] = [int(i) for i in dense_ranking(self.vectors, self.summaries[doc_id])[0]]
        return self._dense[doc_id]

    def in_slot(self, chunk: PageChunk, positive: PageChunk) -> PageChunk:
        """The chunk of ``chunk``'s page in the positive's place: its first chunk for a first chunk, else its
        first chunk holding one of the positive's section headings; ``chunk`` itself when it has none. So a
        negative differs from the positive by what it says, not by where on a page it sits."""
        own = self.pages[chunk.doc_id]
        if positive.ordinal == 0:
            return own[0]
        if set(chunk.headings) & set(positive.headings):
            return chunk
        return next((c for c in own if set(c.headings) & set(positive.headings)), chunk)

    def negatives(self, query: TrainingQuery, positive: PageChunk, count: int) -> list[PageChunk]:
        """``count`` chunks of other pages, one a page, taken alternately from BM25's ranking of the chunks
        (each page's chunk in the positive's place, ``in_slot``) and the dense path's (the chunk as ranked)."""
        rankings = [iter([n for n, _ in self.bm25.search(query.text)]), iter(self.dense_order(query.doc_id))]
        chosen: list[PageChunk] = []
        seen = {query.doc_id}
        exhausted = [False, False]
        turn = 0
        while len(chosen) < count and not all(exhausted):
            side = turn % 2
            position = next((p for p in rankings[side] if self.chunks[p].doc_id not in seen), None)
            if position is None:
                exhausted[side] = True
            else:
                seen.add(self.chunks[position].doc_id)
                chosen.append(self.in_slot(self.chunks[position], positive) if side == 0 else self.chunks[position])
            turn += 1
        return chosen


def kept_whole(query: TrainingQuery, seed: int, share: float) -> bool:
    """Whether ``query``'s group keeps its source in its texts (a ``share`` of the cut kinds' queries, chosen by a
    hash of the seed, the page and the text)."""
    if query.kind not in CUT_KINDS or share <= 0:
        return False
    draw = int(hashlib.sha256(f"kept:{seed}:{query.doc_id}:{query.text}".encode("utf-8")).hexdigest()[:8], 16)
    return draw < share * 16 ** 8


def training_groups(supply: Supply, chunks: Sequence[PageChunk], miner: NegativeMiner, titles: dict, groups: int,
                    negatives: int, seed: int, kept: float = 0.0) -> tuple[list[Group], dict]:
    """The first ``groups`` queries of ``supply`` in ``ordered``'s order, each with its positive and
    ``negatives`` hard negatives, then shuffled by ``seed`` into training order; with what was skipped.

    A summary or a sentence (``TrainingQuery.source``) is cut out of every text of its group; for a summary every
    first chunk of the group also loses its own page's summary line (``titles``: doc id -> summary), so the
    positive is not the one first chunk without one. A ``kept`` share of those queries (``kept_whole``) keeps its
    words in every text instead: the negatives are ranked high for the query's words, so with every source cut
    the one text lacking them would always be the positive and the model would learn that sharing a query's
    words speaks against a passage (the inverse cloze task keeps a share of its sentences for this reason)."""
    import random

    at = {(c.doc_id, c.ordinal): c for c in chunks}
    made: list[Group] = []
    skipped = {"positive too short once the query is cut": 0, "too few negatives": 0}

    def shown(chunk: PageChunk, query: TrainingQuery) -> str:
        text = chunk.text
        if query.kind in CUT_KINDS and not kept_whole(query, seed, kept):
            text = without(text, query.source)
            text = without(text, titles[chunk.doc_id]) if query.kind == "summary" and chunk.ordinal == 0 else text
        return headed(chunk, text)

    for query in ordered(supply.queries, seed):
        if len(made) == groups:
            break
        holder = at[(query.doc_id, query.ordinal)]
        positive = shown(holder, query)
        if len(positive) < MIN_POSITIVE_CHARS:
            skipped["positive too short once the query is cut"] += 1
            continue
        found = miner.negatives(query, holder, negatives)
        if len(found) < negatives:
            skipped["too few negatives"] += 1
            continue
        made.append(Group(query.text, query.kind, query.doc_id, positive, tuple(shown(c, query) for c in found),
                          tuple(c.doc_id for c in found), query.source))
    random.Random(seed).shuffle(made)
    return made, skipped


def groups_digest(groups: Sequence[Group]) -> str:
    """sha256 of the groups in training order (queries, texts, pages): the data part of the model's key."""
    payload = json.dumps([[g.query, g.kind, g.doc_id, list(g.texts), list(g.negative_pages), g.source] for g in groups],
                         ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def question_texts() -> list[str]:
    """The text of every question of every question set (judged, unanswerable, real, fresh): what a training
    query must never be. Only their wording is read, never their judgements."""
    from ...corpus.queries import fresh_questions, judged_questions, real_questions, unanswerable_questions

    return [q.text for q in (*judged_questions(), *unanswerable_questions(), *real_questions("all"),
                             *fresh_questions())]
