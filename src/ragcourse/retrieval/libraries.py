"""The course's hand-built search beside the libraries practitioners use (lessons 01-04, 06, 14).

The lessons build every search by hand. The functions here run the same measurement
with a library, so a notebook (or a test) can print the two side by side:

* exhaustive search: ``faiss.IndexFlatIP`` (``flat_search``);
* the bucket index: ``faiss.IndexIVFFlat``, either over the course's own
  representatives (``ivf_over_representatives``: the same structure, built by the
  library) or over centroids faiss trains itself with k-means (``trained_ivf``);
* the neighbourhood graph: ``hnswlib``, in ``retrieval.hnsw`` (``hnsw_index``, ``hnsw_search``,
  and ``hnsw_replay``, which counts its distance computations by replaying the library's search);
* retrieval measures: trec_eval through ``pytrec_eval`` (``trec_eval``).

The libraries work in float32 and list equal scores in an order of their own, so the
comparisons say what "the same" means: ``same_up_to_ties`` allows documents to trade
places only when the course's (float64) scores of the two are exactly equal, and
``ties_in_course_order`` puts a library's exact ties back in the course's order (lower
index first). Plain vectors, indices and scores in (and a course ``BucketIndex``), plain
lists out; nothing here knows the fictional world. Importing this module prints nothing
and changes no setting.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Collection, Sequence

import faiss
import numpy as np
import pytrec_eval

from .index import BucketIndex

Vector = Sequence[float]


LIBRARY_SEED_LIMIT = 2 ** 31
FLOAT32_UNIT_ROUNDOFF = 2.0 ** -24
FLOAT64_UNIT_ROUNDOFF = 2.0 ** -53


def library_seed(seed: int) -> int:
    """The course's ``SEED`` (an integer in [0, 2**32)) as a seed every library here accepts: ``seed mod 2**31``.

    faiss's k-means stores its seed in a signed 32-bit ``int``, so it rejects half of the
    course's seeds; hnswlib takes any unsigned value. One rule for every library keeps them
    alike: seeds below 2**31 pass unchanged (the course seed among them), and ``S`` and
    ``S + 2**31`` give the libraries the same seed.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    return int(seed) % LIBRARY_SEED_LIMIT


def _gamma(terms: int, unit_roundoff: float) -> float:
    """Higham's constant: the relative error bound of ``terms`` successive roundings."""
    return terms * unit_roundoff / (1.0 - terms * unit_roundoff)


def float32_inner_product_bound(x: Vector, y: Vector) -> float:
    """How far a float32 inner product of ``x`` and ``y`` may lie from the exact one, in any summation order.

    The library rounds both vectors to float32 (two roundings per product) and sums the
    ``d`` products in an order of its own, which depends on the processor's vector
    instructions. Whatever that order, and with or without fused multiply-add, the error
    is at most ``gamma(d + 2) * sum(|x_i * y_i|)`` with ``gamma(n) = n u / (1 - n u)`` and
    ``u = 2**-24`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1). The
    course's own float64 score adds at most ``gamma(d + 2)`` at ``u = 2**-53``.
    """
    magnitude = math.fsum(abs(a * b) for a, b in zip(x, y))
    terms = len(x) + 2
    return (_gamma(terms, FLOAT32_UNIT_ROUNDOFF) + _gamma(terms, FLOAT64_UNIT_ROUNDOFF)) * magnitude


def as_float32(vectors: Sequence[Vector]) -> np.ndarray:
    """The vectors as one C-ordered float32 matrix, the form faiss and hnswlib take."""
    return np.ascontiguousarray(np.array([list(v) for v in vectors], dtype=np.float32))


# ---------------------------------------------------------------- comparing rankings

def same_up_to_ties(course_ids: Sequence[int], library_ids: Sequence[int], scores: Sequence[float]) -> bool:
    """True when the two lists are equally long and, place by place, hold documents of exactly equal score.

    ``scores`` are the course's scores of every document for this query. Equal lists
    pass; a library that lists two exactly tied documents the other way round, or keeps
    another member of a tie group at the cut, passes too; anything else fails.
    """
    return len(course_ids) == len(library_ids) and all(
        scores[a] == scores[b] for a, b in zip(course_ids, library_ids))


def ties_in_course_order(library_ids: Sequence[int], library_scores: Sequence[float], k: int) -> list[int]:
    """The library's first ``k`` after sorting its own scores with the course's tie rule (lower index first).

    Pass the library's complete list (every document), so that a tie group cut at
    place ``k`` is complete too.
    """
    pairs = sorted(zip(library_scores, library_ids), key=lambda pair: (-pair[0], pair[1]))
    return [int(i) for _, i in pairs[:k]]


def tie_aware_recall(found: Sequence[int], reference: Sequence[int], scores: Sequence[float]) -> float:
    """Share of ``reference`` matched by ``found``, a document counting for any reference document of equal score.

    With no exact ties this is ``overlap_recall``; where documents share one score
    (twin vectors), returning any of them is as good as returning another.
    """
    wanted = Counter(scores[i] for i in reference)
    got = Counter(scores[i] for i in found)
    return sum(min(count, got[score]) for score, count in wanted.items()) / len(reference)


# ---------------------------------------------------------------- faiss: exhaustive search

@dataclass(frozen=True)
class LibraryResult:
    """What a library search returned per query: ``ids`` and ``scores`` best first, and mean ``comparisons``."""

    ids: tuple[tuple[int, ...], ...]
    scores: tuple[tuple[float, ...], ...]
    comparisons: float


def _result(scores: np.ndarray, ids: np.ndarray, comparisons: float) -> LibraryResult:
    kept = [[(float(s), int(i)) for s, i in zip(row_s, row_i) if i >= 0] for row_s, row_i in zip(scores, ids)]
    return LibraryResult(ids=tuple(tuple(i for _, i in row) for row in kept),
                         scores=tuple(tuple(s for s, _ in row) for row in kept), comparisons=comparisons)


def flat_search(document_vectors: Sequence[Vector], query_vectors: Sequence[Vector], k: int) -> LibraryResult:
    """``faiss.IndexFlatIP``: every query scored against every document by inner product, the best ``k`` kept."""
    documents = as_float32(document_vectors)
    index = faiss.IndexFlatIP(documents.shape[1])
    index.add(documents)
    scores, ids = index.search(as_float32(query_vectors), k)
    return _result(scores, ids, float(len(documents)))


@dataclass(frozen=True)
class FlatComparison:
    """The course's exhaustive top ``k`` beside ``faiss.IndexFlatIP``'s, over ``queries`` queries.

    ``identical``: queries with the same documents in the same order; ``up_to_ties``:
    the same except where exactly tied documents trade places (``same_up_to_ties``);
    ``in_course_order``: identical once faiss's exact ties are put in the course's order
    (``ties_in_course_order`` over faiss's complete list); ``largest_gap``: the largest
    difference between a faiss score (float32) and the course's score of that document;
    ``within_bound``: queries whose every listed faiss score lies within
    ``float32_inner_product_bound`` of the course's score.

    ``largest_gap`` depends on the processor (the order in which faiss sums in float32),
    so a notebook prints ``within_bound``, a count that does not.
    """

    queries: int
    identical: int
    up_to_ties: int
    in_course_order: int
    largest_gap: float
    within_bound: int


def compare_with_flat(course_top: Sequence[Sequence[int]], scores: Sequence[Sequence[float]],
                      document_vectors: Sequence[Vector], query_vectors: Sequence[Vector]) -> FlatComparison:
    """Run ``faiss.IndexFlatIP`` on the same vectors and compare it with the course's top lists.

    ``course_top[n]`` is the course's top ``k`` for query ``n`` and ``scores[n]`` the
    course's score of every document for it (the same inner product, in float64).
    """
    k = len(course_top[0])
    top = flat_search(document_vectors, query_vectors, k)
    complete = flat_search(document_vectors, query_vectors, len(document_vectors))
    identical = up_to_ties = in_course_order = within_bound = 0
    gap = 0.0
    for n, ours in enumerate(course_top):
        theirs = top.ids[n]
        identical += list(ours) == list(theirs)
        up_to_ties += same_up_to_ties(ours, theirs, scores[n])
        in_course_order += list(ours) == ties_in_course_order(complete.ids[n], complete.scores[n], k)
        gaps = [abs(s - scores[n][i]) for i, s in zip(theirs, top.scores[n])]
        gap = max([gap] + gaps)
        within_bound += all(g <= float32_inner_product_bound(query_vectors[n], document_vectors[i])
                            for g, i in zip(gaps, theirs))
    return FlatComparison(len(course_top), identical, up_to_ties, in_course_order, gap, within_bound)


# ---------------------------------------------------------------- faiss: inverted lists

def ivf_over_representatives(document_vectors: Sequence[Vector], representatives: Sequence[int]) -> faiss.IndexIVFFlat:
    """``faiss.IndexIVFFlat`` whose coarse centroids are the given documents: the course's bucket index, built by faiss.

    No training: the quantizer holds the representatives' vectors, and ``add`` puts each
    document in the list of its most similar representative.
    """
    documents = as_float32(document_vectors)
    quantizer = faiss.IndexFlatIP(documents.shape[1])
    quantizer.add(documents[list(representatives)])
    index = faiss.IndexIVFFlat(quantizer, documents.shape[1], len(representatives), faiss.METRIC_INNER_PRODUCT)
    index.add(documents)
    return index


def trained_ivf(document_vectors: Sequence[Vector], lists: int, seed: int) -> faiss.IndexIVFFlat:
    """``faiss.IndexIVFFlat`` over ``lists`` centroids found by faiss's own k-means (seeded, spherical for inner product).

    The corpus is small, so faiss's minimum of training points per centroid is lowered
    to one (otherwise it warns); everything else is the library's default.
    """
    documents = as_float32(document_vectors)
    quantizer = faiss.IndexFlatIP(documents.shape[1])
    index = faiss.IndexIVFFlat(quantizer, documents.shape[1], lists, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = library_seed(seed)
    index.cp.min_points_per_centroid = 1
    index.train(documents)
    index.add(documents)
    return index


def list_members(index: faiss.IndexIVFFlat) -> list[list[int]]:
    """The document numbers in each inverted list, ascending."""
    lists = index.invlists
    return [sorted(int(i) for i in faiss.rev_swig_ptr(lists.get_ids(b), lists.list_size(b)))
            if lists.list_size(b) else [] for b in range(index.nlist)]


def ivf_search(index: faiss.IndexIVFFlat, query_vectors: Sequence[Vector], probes: int, k: int) -> LibraryResult:
    """Search with ``nprobe = probes``; comparisons are the centroids plus the list entries faiss scored (its own count)."""
    queries = as_float32(query_vectors)
    index.nprobe = probes
    stats = faiss.cvar.indexIVF_stats
    stats.reset()
    scores, ids = index.search(queries, k)
    return _result(scores, ids, (len(queries) * index.nlist + stats.ndis) / len(queries))


@dataclass(frozen=True)
class BucketComparison:
    """The course's bucket index beside ``faiss.IndexIVFFlat`` over the same representatives, at one ``probes``.

    ``same_lists``: every bucket holds the same documents as faiss's inverted list;
    ``other_probes``: queries for which faiss opened other lists, and ``probe_ties``
    whether each of those differences is an exact tie between representatives;
    ``up_to_ties``: queries whose top ``k`` agree up to exact ties; the mean
    ``comparisons`` per query of both (representatives or centroids, plus candidates).
    """

    queries: int
    same_lists: bool
    other_probes: int
    probe_ties: bool
    up_to_ties: int
    course_comparisons: float
    library_comparisons: float


def compare_with_ivf(bucket_index: BucketIndex, query_vectors: Sequence[Vector], probes: int, k: int,
                     scores: Sequence[Sequence[float]]) -> BucketComparison:
    """Build ``ivf_over_representatives`` from a course ``BucketIndex`` and search both with ``probes`` and ``k``.

    ``scores[n]`` holds the course's cosine of query ``n`` with every document.
    """
    vectors = bucket_index.vectors
    index = ivf_over_representatives(vectors, bucket_index.representatives)
    same_lists = list_members(index) == [list(members) for members in bucket_index.members]
    library = ivf_search(index, query_vectors, probes, k)
    _, opened = index.quantizer.search(as_float32(query_vectors), probes)
    other_probes, probe_ties, up_to_ties, comparisons = 0, True, 0, 0
    for n, query_vector in enumerate(query_vectors):
        order = bucket_index.bucket_order(query_vector)[:probes]
        if sorted(order) != sorted(int(b) for b in opened[n]):
            other_probes += 1
            representative_scores = [scores[n][r] for r in bucket_index.representatives]
            probe_ties = probe_ties and same_up_to_ties(order, [int(b) for b in opened[n]], representative_scores)
        ours = bucket_index.search(query_vector, probes, k)
        comparisons += ours.comparisons
        up_to_ties += same_up_to_ties(ours.ids, library.ids[n], scores[n])
    return BucketComparison(len(query_vectors), same_lists, other_probes, probe_ties, up_to_ties,
                            comparisons / len(query_vectors), library.comparisons)


# ---------------------------------------------------------------- trec_eval

def trec_eval(rankings: Sequence[Sequence[int]], relevant: Sequence[Collection[int]],
              measures: Collection[str]) -> dict[str, float]:
    """Mean of each trec_eval measure (``pytrec_eval`` names such as ``P_5``, ``recall_20``, ``success_1``) over the queries.

    Query ``n`` ranks ``rankings[n]`` (best first) and its relevant documents are
    ``relevant[n]`` (every one must have at least one). trec_eval sorts a run by score,
    so each document gets the score ``len(ranking) - place``: trec_eval then reads the
    course's order exactly, ties included. Measures are asked for in trec_eval's own
    syntax (``P.5``), built from the names.
    """
    if len(rankings) != len(relevant) or not rankings:
        raise ValueError("rankings and relevant must be non-empty lists of the same length")
    if any(not r for r in relevant):
        raise ValueError("every query needs at least one relevant document (trec_eval skips the others)")
    names = list(measures)
    requested: dict[str, list[str]] = {}
    for name in names:
        base, _, cutoff = name.rpartition("_") if name[-1].isdigit() else (name, "", "")
        requested.setdefault(base, [])
        if cutoff:
            requested[base].append(cutoff)
    asked = {base + ("." + ",".join(cutoffs) if cutoffs else "") for base, cutoffs in requested.items()}
    qrels = {f"q{n}": {str(i): 1 for i in sorted(r)} for n, r in enumerate(relevant)}
    run = {f"q{n}": {str(i): float(len(ranking) - place) for place, i in enumerate(ranking)}
           for n, ranking in enumerate(rankings)}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, asked).evaluate(run)
    if len(per_query) != len(rankings):
        raise ValueError(f"trec_eval scored {len(per_query)} of {len(rankings)} queries")
    return {name: sum(per_query[f"q{n}"][name] for n in range(len(rankings))) / len(rankings) for name in names}


def trec_eval_gap(rankings: Sequence[Sequence[int]], course_values: Sequence[float],
                  concept_relevant: Sequence[Collection[int]], class_relevant: Sequence[Collection[int]],
                  k: int) -> float:
    """Largest gap between the course's (precision@k, recall@k, concept hit, class hit) and trec_eval's.

    trec_eval's counterparts are ``P_k`` and ``recall_k`` against the concept's documents, ``P_1``
    against the concept's documents (the concept hit rate) and ``P_1`` against the class's documents
    (the class hit rate); lessons 01-03 print this gap in their appendix.
    """
    by_concept = trec_eval(rankings, concept_relevant, (f"P_{k}", f"recall_{k}", "P_1"))
    by_class = trec_eval(rankings, class_relevant, ("P_1",))
    library = (by_concept[f"P_{k}"], by_concept[f"recall_{k}"], by_concept["P_1"], by_class["P_1"])
    return max(abs(a - b) for a, b in zip(course_values, library))
