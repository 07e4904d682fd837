"""Retrieval measures: the lessons' precision, recall, hit rates and recall ceiling over the fictional
queries, and Recall@k, MRR and nDCG over ranked lists of plain ids, which the labs use on real text."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Collection, Mapping, Sequence

if TYPE_CHECKING:  # the lessons' measures read the fictional world's types; the generic ones need none
    from ..world.corpus import Document, Query


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


def distinct_top_sets(rank: Callable[[Query], Sequence[int]], queries: Sequence[Query], k: int) -> int:
    """How many different top-``k`` sets (order ignored) ``rank`` hands the queries; 1 means all get the same."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k!r}")
    return len({frozenset(list(rank(query))[:k]) for query in queries})


def top_set_divergence(rank_a: Callable[[Query], Sequence[int]], rank_b: Callable[[Query], Sequence[int]],
                       queries: Sequence[Query], depth: int) -> int:
    """Number of queries whose first ``depth`` results differ as sets between two rankers (order ignored)."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1; got {depth!r}")
    return sum(set(list(rank_a(q))[:depth]) != set(list(rank_b(q))[:depth]) for q in queries)


def mean_top_value(rank: Callable[[Query], Sequence[int]], queries: Sequence[Query],
                   values: Sequence[float], k: int) -> float:
    """Mean over queries of the mean of ``values[i]`` over the top ``k`` (a 1/0 list gives a share)."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k!r}")
    if not queries:
        raise ValueError("queries must not be empty")
    return sum(sum(values[i] for i in list(rank(q))[:k]) / k for q in queries) / len(queries)


# ---- ranked lists of plain ids (the labs measure real rankings with these) ------------------

def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant ids found in the first ``k`` of ``ranked``."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k!r}")
    if not relevant:
        raise ValueError("relevant must hold at least one id")
    wanted = set(relevant)
    return len(wanted.intersection(ranked[:k])) / len(wanted)


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str]) -> float:
    """1 / the rank (counted from 1) of the first relevant id; 0 when none is ranked."""
    wanted = set(relevant)
    for rank, item in enumerate(ranked, start=1):
        if item in wanted:
            return 1.0 / rank
    return 0.0


def reciprocal_rank_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1 / the rank of the first relevant id among the first ``k`` of ``ranked``; 0 when none is (MRR@k's term)."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k!r}")
    return reciprocal_rank(ranked[:k], relevant)


def hit_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when a relevant id is among the first ``k`` of ``ranked``, else 0.0 (success@k; hit@1 is "the first is right")."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k!r}")
    return 1.0 if set(relevant).intersection(ranked[:k]) else 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Binary-gain nDCG of the first ``k``: hits discounted by ``log2(rank + 1)``, over the ideal."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k!r}")
    wanted = set(relevant)
    gain = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(ranked[:k], start=1) if item in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return gain / ideal


def mean_measure(runs: Mapping[str, Sequence[str]], judgements: Mapping[str, Collection[str]],
                 measure: Callable[..., float], *args: int) -> float:
    """Mean of ``measure(ranked, relevant, *args)`` over the judged queries, in judgement order."""
    if not judgements:
        raise ValueError("judgements must not be empty")
    return sum(measure(runs.get(q, ()), relevant, *args) for q, relevant in judgements.items()) / len(judgements)


def per_question(runs: Mapping[str, Sequence[str]], judgements: Mapping[str, Collection[str]],
                 measure: Callable[..., float], *args: int) -> list[float]:
    """``measure(ranked, relevant, *args)`` for each judged query, in judgement order (for paired tests)."""
    return [measure(runs.get(q, ()), relevant, *args) for q, relevant in judgements.items()]


def measure(runs: Mapping[str, Sequence[str]], judged: Mapping[str, Sequence[str]],
            ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """Recall@k for each k, MRR and nDCG@10 of rankings (qid -> ids) over the judged queries (qid -> ids)."""
    scores = {f"recall@{k}": mean_measure(runs, judged, recall_at_k, k) for k in ks}
    scores["mrr"] = mean_measure(runs, judged, reciprocal_rank)
    scores["ndcg@10"] = mean_measure(runs, judged, ndcg_at_k, 10)
    return scores
