"""The measurement of lessons 07-09 as one call: retrieve the top k chunks, ask the linker, score both.

Lesson 10 reuses ``retrieve_top_k`` for its own refresh experiment.

For every query the chunks are ranked by cosine similarity between the query's embedding and
each chunk's (ties by chunk order), the top ``k`` go into the linking prompt, and a
``ConceptLinker`` created for the run (so its call counter starts at zero) names a concept.
Retrieval is scored from the chunks alone, generation from the reply alone:

* ``recall``: share of queries with at least one retrieved chunk carrying the query's concept;
* ``precision``: mean share of the ``k`` retrieved chunks carrying it;
* ``label``: mean share of the ``k`` retrieved chunks of the query's class;
* ``generation``: share of replies that are the query's concept;
* ``overflow``: share of calls refused for exceeding the window; ``tokens``: input plus output.

Sums run left to right over the queries, as in the course, so the numbers match to the digit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from ..toolkit.params import check_positive_int
from ..world.corpus import Query
from ..world.embedding import EmbeddingModel, cosine
from ..world.llm import ConceptLinker
from ..world.responses import CONTEXT_OVERFLOW, Response
from .pipeline import link_instruction, link_prompt
from .ranking import top_k


class TaggedChunk(Protocol):
    """Anything that can be retrieved and scored: a text, its class and the concepts it names."""

    label: str
    text: str
    concepts: tuple[str, ...]


def retrieve_top_k(model: EmbeddingModel, texts: Sequence[str], queries: Sequence[str],
                   k: int) -> list[list[int]]:
    """For each query text, the indices of the ``k`` most similar texts (ties by index).

    Each distinct text is embedded once and each distinct vector compared once (texts naming
    the same concepts share a vector); equal vectors give equal scores, so the ranking equals
    the exhaustive one, ties by index included.
    """
    check_positive_int("k", k)
    vector_of_text = {text: tuple(model.embed(text)) for text in dict.fromkeys(texts)}
    number_of_vector = {vector: n for n, vector in enumerate(dict.fromkeys(vector_of_text.values()))}
    distinct_vectors = list(number_of_vector)
    vector_numbers = [number_of_vector[vector_of_text[text]] for text in texts]
    ranked: dict[str, list[int]] = {}
    for query in dict.fromkeys(queries):
        query_vector = model.embed(query)
        similarity = [cosine(query_vector, vector) for vector in distinct_vectors]
        ranked[query] = top_k([similarity[n] for n in vector_numbers], k)
    return [ranked[query] for query in queries]


@dataclass(frozen=True)
class LinkOutcome:
    """One query: the chunks retrieved, how many carry its concept or class, and the reply."""

    query: Query
    retrieved: tuple[int, ...]
    carrying: int      # retrieved chunks that name the query's concept
    same_class: int    # retrieved chunks of the query's class
    response: Response

    @property
    def found(self) -> bool:
        """At least one retrieved chunk carries the query's concept."""
        return self.carrying > 0

    @property
    def correct(self) -> bool:
        """The reply is the query's concept."""
        return self.response.text == self.query.concept


@dataclass(frozen=True)
class LinkingRun:
    """All outcomes of one run with ``k`` chunks per prompt, and the column averages."""

    k: int
    outcomes: tuple[LinkOutcome, ...]

    @property
    def n(self) -> int:
        """Number of queries."""
        return len(self.outcomes)

    @property
    def recall(self) -> float:
        """Share of queries with a carrying chunk among the retrieved."""
        return sum(o.found for o in self.outcomes) / self.n

    @property
    def precision(self) -> float:
        """Mean share of carrying chunks among the ``k`` retrieved."""
        return sum(o.carrying / self.k for o in self.outcomes) / self.n

    @property
    def label(self) -> float:
        """Mean share of retrieved chunks of the query's class."""
        return sum(o.same_class / self.k for o in self.outcomes) / self.n

    @property
    def generation(self) -> float:
        """Share of replies that name the query's concept."""
        return sum(o.correct for o in self.outcomes) / self.n

    @property
    def overflow(self) -> float:
        """Share of calls refused because the prompt exceeded the window."""
        return sum(o.response.status == CONTEXT_OVERFLOW for o in self.outcomes) / self.n

    @property
    def tokens(self) -> int:
        """Input plus output tokens over all calls."""
        return sum(o.response.tokens for o in self.outcomes)


def run_linking(chunks: Sequence[TaggedChunk], queries: Sequence[Query], model: EmbeddingModel,
                seed: int, k: int = 3, **linker_settings: Any) -> LinkingRun:
    """Retrieve ``k`` chunks per query with ``model``, ask a fresh ``ConceptLinker`` at ``seed``.

    ``linker_settings`` go to ``ConceptLinker`` (``temperature=``, ``window=`` ...).
    """
    texts = [chunk.text for chunk in chunks]
    retrieved = retrieve_top_k(model, texts, [query.text for query in queries], k)
    instruction = link_instruction(model.edition)
    linker = ConceptLinker(model.edition, seed, **linker_settings)   # fresh call counter
    outcomes = []
    for query, top in zip(queries, retrieved):
        response = linker.call(link_prompt(instruction, query.text, [texts[i] for i in top]))
        outcomes.append(LinkOutcome(
            query=query, retrieved=tuple(top),
            carrying=sum(query.concept in chunks[i].concepts for i in top),
            same_class=sum(chunks[i].label == query.label for i in top),
            response=response))
    return LinkingRun(k=k, outcomes=tuple(outcomes))
