"""Approximate nearest-neighbour indexes: the bucket index and the neighbourhood graph.

Both are built over a fixed list of unit vectors (the corpus embeddings) and answer a
query by looking at only part of the corpus. They follow the course's procedures to the
last tie:

* **Bucket index.** ``buckets`` documents drawn by the course generator from a build
  seed become representatives (a repeated draw is skipped); every document joins the
  bucket of the representative it is most similar to (a tie goes to the lower bucket
  number). A search compares the query with the representatives, opens the ``probes``
  nearest buckets, and ranks only their members (the candidates).
* **Neighbourhood graph.** Every document is linked to its ``degree`` most similar
  other documents. A search starts at an entry node and keeps expanding the best node
  it has scored so far, for as long as that node has not been expanded yet.

Ranking is always by descending cosine with a *stable* sort: equal scores keep the
order in which the items were listed (bucket number for buckets, probe order for
candidates, document number for the graph's neighbour lists, discovery order for the
nodes a graph walk scored). Lessons 04 and 05 use this module.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..toolkit.params import check_int
from ..world.embedding import cosine
from ..world.rng import make_rng

Vector = Sequence[float]


def _freeze(vectors: Sequence[Vector]) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(v) for v in vectors)


def rank_candidates(query_vector: Vector, vectors: Sequence[Vector], candidates: Sequence[int]) -> list[int]:
    """``candidates`` ordered by cosine with the query, most similar first; ties keep the given order."""
    return sorted(candidates, key=lambda i: -cosine(query_vector, vectors[i]))


@dataclass(frozen=True)
class SearchResult:
    """What one indexed search returned and what it cost.

    ``ids``: the top documents, best first; ``candidates``: documents ranked in full
    (after any filter); ``comparisons``: cosine similarities computed for the query.
    """

    ids: tuple[int, ...]
    candidates: int
    comparisons: int


# ---------------------------------------------------------------- bucket index

def draw_representatives(n_vectors: int, buckets: int, seed: int) -> list[int]:
    """Distinct document numbers drawn from ``seed`` until there are ``buckets`` of them."""
    check_int("buckets", buckets, 1, n_vectors)
    draw, representatives = make_rng(seed), []
    while len(representatives) < buckets:
        candidate = int(draw() * n_vectors)
        if candidate not in representatives:
            representatives.append(candidate)
    return representatives


@dataclass(frozen=True)
class BucketIndex:
    """A bucket index over ``vectors``: one representative per bucket and each bucket's members.

    ``representatives[b]`` is the document number that stands for bucket ``b``;
    ``members[b]`` lists the documents in bucket ``b`` in ascending order. Every
    document is in exactly one bucket.
    """

    seed: int
    representatives: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]
    vectors: tuple[tuple[float, ...], ...] = field(repr=False)

    @property
    def n_buckets(self) -> int:
        """Number of buckets."""
        return len(self.representatives)

    @property
    def stored_values(self) -> int:
        """What the index stores besides the vectors: one entry per representative and per member."""
        return len(self.representatives) + sum(len(m) for m in self.members)

    def bucket_order(self, query_vector: Vector) -> list[int]:
        """Bucket numbers ordered by their representative's cosine with the query (ties: lower bucket)."""
        return sorted(range(self.n_buckets),
                      key=lambda b: -cosine(query_vector, self.vectors[self.representatives[b]]))

    def candidates(self, query_vector: Vector, probes: int) -> list[int]:
        """Members of the ``probes`` nearest buckets, bucket by bucket in probe order."""
        check_int("probes", probes, 1, max(1, self.n_buckets))
        return [i for b in self.bucket_order(query_vector)[:probes] for i in self.members[b]]

    def search(self, query_vector: Vector, probes: int, k: int,
               keep: Callable[[int], bool] | None = None) -> SearchResult:
        """The ``k`` best candidates of the probed buckets.

        ``keep`` (a predicate on document numbers) is a filter applied inside the index:
        a document it rejects never becomes a candidate, so it is neither compared nor
        ranked. Comparisons are the representatives plus the candidates.
        """
        check_int("k", k, 1, max(1, len(self.vectors)))
        candidates = self.candidates(query_vector, probes)
        if keep is not None:
            candidates = [i for i in candidates if keep(i)]
        ranked = rank_candidates(query_vector, self.vectors, candidates)
        return SearchResult(ids=tuple(ranked[:k]), candidates=len(candidates),
                            comparisons=self.n_buckets + len(candidates))


def build_bucket_index(vectors: Sequence[Vector], buckets: int, seed: int) -> BucketIndex:
    """Draw ``buckets`` representatives from ``seed`` and put every vector in its nearest bucket."""
    frozen = _freeze(vectors)
    representatives = draw_representatives(len(frozen), buckets, seed)
    members: list[list[int]] = [[] for _ in representatives]
    for i, vector in enumerate(frozen):
        nearest = max(range(buckets), key=lambda b: cosine(vector, frozen[representatives[b]]))
        members[nearest].append(i)
    return BucketIndex(seed=seed, representatives=tuple(representatives),
                       members=tuple(tuple(m) for m in members), vectors=frozen)


# ---------------------------------------------------------------- neighbourhood graph

def neighbour_ranking(vectors: Sequence[Vector]) -> tuple[tuple[int, ...], ...]:
    """For every vector, all the others ordered by cosine, most similar first (ties: lower number).

    A graph of any degree takes a prefix of these lists, so one ranking serves every degree.
    """
    n = len(vectors)
    ranking = []
    for i in range(n):
        ordered = sorted(range(n), key=lambda j: -cosine(vectors[i], vectors[j]))
        ranking.append(tuple(j for j in ordered if j != i))
    return tuple(ranking)


@dataclass(frozen=True)
class GraphWalk:
    """A greedy graph search: the top ``ids``, the ``comparisons`` made, the nodes ``expanded`` in order."""

    ids: tuple[int, ...]
    comparisons: int
    expanded: tuple[int, ...]


@dataclass(frozen=True)
class NeighbourGraph:
    """Every document linked to its ``degree`` most similar other documents (``neighbours[i]``)."""

    degree: int
    neighbours: tuple[tuple[int, ...], ...]
    vectors: tuple[tuple[float, ...], ...] = field(repr=False)

    @property
    def edges(self) -> int:
        """Number of stored (directed) edges."""
        return sum(len(n) for n in self.neighbours)

    def reachable_from(self, entry: int = 0) -> set[int]:
        """The documents a walk can reach from ``entry`` by following edges (``entry`` included)."""
        check_int("entry", entry, 0, len(self.neighbours) - 1)
        seen, stack = {entry}, [entry]
        while stack:
            for j in self.neighbours[stack.pop()]:
                if j not in seen:
                    seen.add(j)
                    stack.append(j)
        return seen

    def reachable(self, entry: int = 0) -> int:
        """How many documents can be reached from ``entry``."""
        return len(self.reachable_from(entry))

    def search(self, query_vector: Vector, k: int, entry: int = 0) -> GraphWalk:
        """Greedy walk from ``entry``.

        Score the entry node; then, while the best-scored node is not yet expanded,
        expand it: score each of its neighbours not scored before (one comparison each).
        Stop when the best-scored node has already been expanded. Return the ``k``
        best-scored nodes (ties in the order they were first scored).
        """
        check_int("entry", entry, 0, len(self.neighbours) - 1)
        check_int("k", k, 1, max(1, len(self.neighbours)))
        scores = {entry: cosine(query_vector, self.vectors[entry])}
        expanded: list[int] = []
        done: set[int] = set()
        while True:
            pending = [node for node in scores if node not in done]
            if not pending:
                break
            best = max(pending, key=lambda node: scores[node])
            if scores[best] < max(scores.values()):
                break
            expanded.append(best)
            done.add(best)
            for neighbour in self.neighbours[best]:
                if neighbour not in scores:
                    scores[neighbour] = cosine(query_vector, self.vectors[neighbour])
        ranked = sorted(scores, key=lambda node: -scores[node])
        return GraphWalk(ids=tuple(ranked[:k]), comparisons=len(scores), expanded=tuple(expanded))


def build_graph(vectors: Sequence[Vector], degree: int,
                ranking: Sequence[Sequence[int]] | None = None) -> NeighbourGraph:
    """Link each vector to its ``degree`` nearest others; pass ``ranking`` (from ``neighbour_ranking``) to reuse it."""
    frozen = _freeze(vectors)
    check_int("degree", degree, 0, max(0, len(frozen) - 1))
    if ranking is None:
        ranking = neighbour_ranking(frozen)
    elif len(ranking) != len(frozen):
        raise ValueError(f"ranking must have one list per vector ({len(frozen)}); got {len(ranking)}")
    return NeighbourGraph(degree=degree, neighbours=tuple(tuple(r[:degree]) for r in ranking), vectors=frozen)
