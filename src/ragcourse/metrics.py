"""Retrieval measures read over a query set: precision, recall, hit rates and the recall ceiling."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .corpus import Document, Query


@dataclass(frozen=True)
class RetrievalScores:
    """Mean precision and recall of the top k, and the first result's concept and class hit rates."""

    precision: float
    recall: float
    concept_hit: float
    class_hit: float

    def as_tuple(self) -> tuple[float, float, float, float]:
        """The four numbers in table order."""
        return (self.precision, self.recall, self.concept_hit, self.class_hit)


def retrieval_scores(rank: Callable[[Query], Sequence[int]], queries: Sequence[Query],
                     documents: Sequence[Document], relevant: dict[str, int], k: int) -> RetrievalScores:
    """Run ``rank`` on every query and average the four measures (relevant = same main concept)."""
    precision = recall = concept = label = 0.0
    for query in queries:
        top = list(rank(query))[:k]
        hits = sum(documents[i].main == query.concept for i in top)
        precision += hits / k
        recall += hits / relevant[query.concept]
        concept += documents[top[0]].main == query.concept
        label += documents[top[0]].label == query.label
    n = len(queries)
    return RetrievalScores(precision / n, recall / n, concept / n, label / n)


def recall_ceiling(queries: Sequence[Query], relevant: dict[str, int], k: int) -> float:
    """The best mean recall any search can reach when it returns ``k`` items per query."""
    return sum(min(k, relevant[q.concept]) / relevant[q.concept] for q in queries) / len(queries)


def mean_relevant(queries: Sequence[Query], relevant: dict[str, int]) -> float:
    """Mean number of relevant documents per query."""
    return sum(relevant[q.concept] for q in queries) / len(queries)


def overlap_recall(found: Sequence[int], reference: Sequence[int]) -> float:
    """Share of the reference result that ``found`` also contains."""
    return len(set(found) & set(reference)) / len(reference)
