"""The course's hand-built search beside the libraries practitioners use (issue 15).

One group of tests per claim the lessons make in their "Beside the libraries" sections:

* exhaustive search (lessons 01-04) equals ``faiss.IndexFlatIP`` over the same vectors;
* the bucket index (lesson 04) is ``faiss.IndexIVFFlat`` over its own representatives,
  and the hnswlib comparison counts what hnswlib computes;
* reciprocal rank fusion (lesson 06) equals ranx's RRF with ``k = constant - 1``;
* the retrieval measures (lessons 01-06, 14) equal trec_eval (pytrec_eval) and ranx.

"Equal" allows only what the libraries cannot help: float32 scores, and their own order
among documents whose course scores are exactly equal. The course's side comes from the
package (``ragcourse.retrieval``), so a change to its ranking, tie rule, bucket rule,
fusion constant or measures makes a test here fail; where a measure only exists in a
notebook, the library's number is compared with the course's documented block instead.
"""
from __future__ import annotations

import re
from functools import lru_cache

import faiss
import pytest
import ranx
from support.notebooks import documented_blocks

from ragcourse.retrieval.fusion import fused_scores, reciprocal_rank_fusion
from ragcourse.retrieval.hnsw import _Heap, hnsw_graph, hnsw_index, hnsw_replay, hnsw_search
from ragcourse.retrieval.index import build_bucket_index, build_graph, neighbour_ranking, rank_candidates
from ragcourse.retrieval.libraries import (
    as_float32,
    compare_with_flat,
    float32_inner_product_bound,
    compare_with_ivf,
    flat_search,
    ivf_over_representatives,
    ivf_search,
    library_seed,
    list_members,
    same_up_to_ties,
    tie_aware_recall,
    ties_in_course_order,
    trained_ivf,
    trec_eval,
    trec_eval_gap,
)
from ragcourse.retrieval.metrics import overlap_recall, retrieval_scores
from ragcourse.retrieval.ranking import rank_by_score, top_k
from ragcourse.retrieval.search import EmbeddingIndex, KeywordIndex
from ragcourse.world.concepts import FIRST_EDITION, SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel, cosine, dot
from ragcourse.world.metadata import assign_regions, filter_widths, matching
from ragcourse.world.query_classes import draw_query_classes, searchable_text

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast from uint64 to int64")  # inside ranx's numba code

COURSE_SEED = 20260218
SEEDS = (COURSE_SEED, 4242, 7)
K = 5
BUCKET_GRID = ((8, 1), (16, 1), (16, 2), (16, 4), (25, 2), (25, 4))
# (dimension, in-domain, projection seed offset): lesson 02's five setups and its dimension sweep, both models
EMBEDDING_SETUPS = ((32, True, 0), (32, True, 1), (32, False, 0), (32, False, 1),
                    (64, True, 0), (64, True, 1), (16, True, 0), (16, True, 1), (8, True, 0), (8, True, 1),
                    (4, True, 0), (4, True, 1))


@lru_cache(maxsize=None)
def first_world(seed: int):
    return build_world(seed, FIRST_EDITION)


@lru_cache(maxsize=None)
def embedded(seed: int, dim: int = 32, in_domain: bool = True, projection_offset: int = 0):
    """Document and query vectors of the first edition's world, and the course's scores of every pair."""
    world = first_world(seed)
    model = EmbeddingModel(world.edition, projection_seed=seed + projection_offset, dim=dim, in_domain=in_domain)
    index = EmbeddingIndex(model, [d.text for d in world.documents])
    queries = [model.embed(q.text) for q in world.queries]
    scores = [index.scores(q.text) for q in world.queries]
    return index, queries, scores


def rankings_of(index, queries):
    return [list(index.rank(q.text)) for q in queries]


@lru_cache(maxsize=None)
def embedding_rankings(seed: int, dim: int = 32, in_domain: bool = True, projection_offset: int = 0):
    """The course's full ranking of every query: ``EmbeddingIndex.rank``, once per setup."""
    return rankings_of(embedded(seed, dim, in_domain, projection_offset)[0], first_world(seed).queries)


@lru_cache(maxsize=None)
def keyword_rankings(seed: int):
    world = first_world(seed)
    return rankings_of(KeywordIndex([d.text for d in world.documents]), world.queries)


def concept_and_class_relevance(world):
    concept = [{i for i, d in enumerate(world.documents) if d.main == q.concept} for q in world.queries]
    label = [{i for i, d in enumerate(world.documents) if d.label == q.label} for q in world.queries]
    return concept, label


def numbers(block: str) -> list[list[float]]:
    """The decimal numbers of each line of a documented block (lines without any left out)."""
    rows = [[float(x) for x in re.findall(r"(?<![\w/])-?\d+\.\d+", line)] for line in block.splitlines()]
    return [row for row in rows if row]


# ---------------------------------------------------------------- the helpers themselves

def test_same_up_to_ties_allows_only_exact_ties():
    scores = [0.5, 0.9, 0.9, 0.1]
    assert same_up_to_ties([1, 2, 0], [1, 2, 0], scores)
    assert same_up_to_ties([1, 2, 0], [2, 1, 0], scores)          # 1 and 2 tie exactly
    assert not same_up_to_ties([1, 2, 0], [1, 0, 2], scores)      # 0 and 2 do not
    assert not same_up_to_ties([1, 2], [1, 2, 0], scores)
    assert not same_up_to_ties([0], [1], [0.9, 0.9 + 1e-9])      # a near tie is not a tie


def test_ties_in_course_order_sorts_ties_by_index_and_cuts_after():
    assert ties_in_course_order([7, 3, 5, 1], [0.8, 0.8, 0.8, 0.2], 2) == [3, 5]
    assert ties_in_course_order([2, 0], [0.1, 0.3], 2) == [0, 2]


def test_tie_aware_recall_counts_an_exactly_tied_document_as_found():
    scores = [0.9, 0.7, 0.7, 0.7, 0.1]
    assert tie_aware_recall([0, 1], [0, 1], scores) == 1.0
    assert tie_aware_recall([0, 3], [0, 1], scores) == 1.0       # 3 ties exactly with 1
    assert tie_aware_recall([0, 4], [0, 1], scores) == 0.5
    assert tie_aware_recall([2, 3], [1, 2], scores) == 1.0
    assert tie_aware_recall([2, 3, 1], [0, 1, 2], scores) == 2 / 3  # only two places hold 0.7
    assert overlap_recall([0, 3], [0, 1]) == 0.5                   # the plain overlap does not


def test_heap_pops_the_largest_key_first():
    heap = _Heap()
    for key, item in [(0.3, 1), (0.9, 2), (0.1, 3), (0.9, 4), (0.5, 5)]:
        heap.push((key, item))
    popped = []
    while len(heap):
        popped.append(heap.top()[0])
        heap.pop()
    assert popped == [0.9, 0.9, 0.5, 0.3, 0.1]


def test_trec_eval_reads_the_given_order_and_names():
    means = trec_eval([[2, 0, 1], [0, 1, 2]], [{1, 2}, {2}], ["P_1", "P_2", "recall_2", "success_1", "recip_rank"])
    assert means == {"P_1": 0.5, "P_2": 0.25, "recall_2": 0.25, "success_1": 0.5, "recip_rank": (1 + 1 / 3) / 2}
    with pytest.raises(ValueError, match="at least one relevant"):
        trec_eval([[0, 1]], [set()], ["P_1"])
    with pytest.raises(ValueError, match="same length"):
        trec_eval([[0, 1]], [{0}, {1}], ["P_1"])


def test_flat_search_and_lists_on_a_tiny_example():
    vectors = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]
    found = flat_search(vectors, [[1.0, 0.0]], 2)
    assert found.ids == ((0, 2),) and found.comparisons == 3.0
    assert as_float32(vectors).dtype.name == "float32"
    index = ivf_over_representatives(vectors, [0, 1])
    assert list_members(index) == [[0], [1, 2]]


# ---------------------------------------------------------------- exhaustive search = faiss.IndexFlatIP

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dim,in_domain,offset", EMBEDDING_SETUPS)
@pytest.mark.parametrize("k", (1, K))
def test_exhaustive_top_k_equals_faiss_flat_ip(seed, dim, in_domain, offset, k):
    """EmbeddingIndex (lessons 01-04, the sweeps of 02) against IndexFlatIP over the same vectors at unit length.

    faiss gets the model's raw vectors and brings them to unit length itself (``normalize_L2``),
    so the course's normalisation is checked too.
    """
    index, _, scores = embedded(seed, dim, in_domain, offset)
    course = [top_k(s, k) for s in scores]
    world = first_world(seed)
    assert course == [r[:k] for r in embedding_rankings(seed, dim, in_domain, offset)]
    documents = as_float32([index.model.raw(d.text) for d in world.documents])
    queries = as_float32([index.model.raw(q.text) for q in world.queries])
    faiss.normalize_L2(documents)                   # the library normalises the raw vectors itself
    faiss.normalize_L2(queries)
    check = compare_with_flat(course, scores, documents, queries)
    assert check.up_to_ties == check.queries == len(world.queries)
    assert check.in_course_order == check.queries   # a flipped tie rule on our side fails here
    assert check.largest_gap < 1e-6


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offset", (0, 1))
def test_dot_product_ranker_equals_faiss_flat_ip_over_raw_vectors(seed, offset):
    """Lesson 03's dot-product ranker: the same index over the raw (unnormalised) vectors."""
    world = first_world(seed)
    model = EmbeddingModel(world.edition, projection_seed=seed + offset, dim=32)
    documents = [model.raw(d.text) for d in world.documents]
    queries = [model.raw(q.text) for q in world.queries]
    scores = [[dot(q, d) for d in documents] for q in queries]
    check = compare_with_flat([top_k(s, K) for s in scores], scores, documents, queries)
    assert (check.up_to_ties, check.in_course_order) == (len(queries), len(queries))
    assert check.largest_gap < 1e-4
    assert check.within_bound == len(queries)


@pytest.mark.parametrize("seed", SEEDS)
def test_flat_comparison_counts_scores_within_the_float32_bound(seed):
    """What lessons 01-04 print instead of a machine-dependent gap: every faiss score within the bound, and a real defect outside it."""
    index, query_vectors, scores = embedded(seed)
    course = [top_k(s, K) for s in scores]
    check = compare_with_flat(course, scores, index.vectors, query_vectors)
    assert check.within_bound == check.queries == len(query_vectors)
    assert 0 < check.largest_gap < 1e-5
    # a course score off by a thousandth (a wrong vector, a wrong formula) is far outside the bound
    shifted = [[value + 1e-3 for value in row] for row in scores]
    assert compare_with_flat(course, shifted, index.vectors, query_vectors).within_bound == 0


def test_float32_bound_is_higham_bound_for_the_vectors():
    """gamma(d + 2) * sum |x_i y_i| at u = 2**-24, plus the float64 side's own (tiny) share."""
    x, y = [0.6, -0.8], [1.0, 0.5]
    u = 2.0 ** -24
    expected32 = 4 * u / (1 - 4 * u) * (0.6 + 0.4)
    assert expected32 < float32_inner_product_bound(x, y) < expected32 * (1 + 1e-8)
    assert float32_inner_product_bound([0.0, 0.0], y) == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1])
def test_library_seed_takes_every_course_seed_into_the_libraries_range(seed):
    """Every SEED in [0, 2**32) gives faiss (signed 32-bit) and hnswlib a seed they accept; the course seed passes unchanged."""
    value = library_seed(seed)
    assert 0 <= value < 2 ** 31
    assert value == (seed if seed < 2 ** 31 else seed - 2 ** 31)
    index, query_vectors, _ = embedded(COURSE_SEED)
    assert len(list_members(trained_ivf(index.vectors, 16, seed))) == 16
    assert hnsw_search(hnsw_index(index.vectors, 8, 32, seed), query_vectors, K, 32).ids


def test_library_seed_passes_the_course_seed_unchanged_and_rejects_bad_seeds():
    assert library_seed(COURSE_SEED) == COURSE_SEED
    for bad in (-1, 2 ** 32, 1.5, "7", True):
        with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*32\)"):
            library_seed(bad)


# ---------------------------------------------------------------- approximate indexes

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("buckets,probes", BUCKET_GRID)
def test_bucket_index_is_ivf_flat_over_its_representatives(seed, buckets, probes):
    """Same lists; other lists opened only on exact ties between representatives; otherwise same answer and cost."""
    index, query_vectors, scores = embedded(seed)
    buckets_index = build_bucket_index(index.vectors, buckets, seed)
    check = compare_with_ivf(buckets_index, query_vectors, probes, K, scores)
    assert check.same_lists
    assert check.probe_ties
    library = ivf_over_representatives(index.vectors, buckets_index.representatives)
    _, opened = library.quantizer.search(as_float32(query_vectors), probes)
    for n, query_vector in enumerate(query_vectors):
        if sorted(buckets_index.bucket_order(query_vector)[:probes]) != sorted(opened[n].tolist()):
            continue
        ours = buckets_index.search(query_vector, probes, K)
        theirs = ivf_search(library, [query_vector], probes, K)
        assert same_up_to_ties(ours.ids, theirs.ids[0], scores[n])
        assert ours.comparisons == theirs.comparisons
    if check.other_probes == 0:
        assert check.up_to_ties == check.queries
        assert check.course_comparisons == check.library_comparisons


def test_twin_representatives_explain_the_course_seed_difference():
    """Lesson 04's reading: at 25 buckets faiss opens an empty list where two representatives tie."""
    index, query_vectors, scores = embedded(COURSE_SEED)
    buckets_index = build_bucket_index(index.vectors, 25, COURSE_SEED)
    empty = [b for b, members in enumerate(buckets_index.members) if not members]
    vectors = [index.vectors[r] for r in buckets_index.representatives]
    assert empty and all(vectors[b] in vectors[:b] for b in empty)
    check = compare_with_ivf(buckets_index, query_vectors, 4, K, scores)
    assert (check.other_probes, check.probe_ties, check.up_to_ties) == (6, True, 40)
    assert check.library_comparisons < check.course_comparisons


@pytest.mark.parametrize("seed", SEEDS)
def test_trained_ivf_opening_every_list_is_the_exhaustive_search(seed):
    index, query_vectors, scores = embedded(seed)
    library = trained_ivf(index.vectors, 16, seed)
    assert sorted(i for members in list_members(library) for i in members) == list(range(len(index.vectors)))
    found = ivf_search(library, query_vectors, 16, K)
    assert all(same_up_to_ties(top_k(s, K), ids, s) for s, ids in zip(scores, found.ids))
    assert found.comparisons == 16 + len(index.vectors)
    again = ivf_search(trained_ivf(index.vectors, 16, seed), query_vectors, 2, K)
    assert again == ivf_search(library, query_vectors, 2, K)      # k-means is seeded


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("links", (4, 8, 16))
def test_hnsw_replay_returns_hnswlib_answer_and_counts_its_distances(seed, links):
    """The distance counts of lesson 04's figure: the replay must return exactly what knn_query returns."""
    index, query_vectors, _ = embedded(seed)
    library = hnsw_index(index.vectors, links, 64, seed)
    graph = hnsw_graph(library)
    assert sorted(graph.labels) == list(range(len(index.vectors)))
    for ef in (5, 10, 32, 64):
        for k in (1, K):
            replay = hnsw_replay(library, query_vectors, k, ef)
            assert replay.ids == hnsw_search(library, query_vectors, k, ef).ids
            assert all(1 <= c <= len(index.vectors) + graph.links + 2 for c in replay.comparisons)
    assert hnsw_index(index.vectors, links, 64, seed).__getstate__()[0]["data_level0"].tobytes() \
        == library.__getstate__()[0]["data_level0"].tobytes()        # the graph is fixed by the seed


@pytest.mark.parametrize("seed", SEEDS)
def test_graph_and_hnsw_at_full_effort_are_the_exhaustive_search(seed):
    """Both graph indexes, pushed to the limit, agree with the course's full scan (up to exact ties)."""
    index, query_vectors, scores = embedded(seed)
    exhaustive = [top_k(s, K) for s in scores]
    complete = build_graph(index.vectors, len(index.vectors) - 1, neighbour_ranking(index.vectors))
    walks = [complete.search(v, K) for v in query_vectors]
    assert all(same_up_to_ties(e, w.ids, s) for e, w, s in zip(exhaustive, walks, scores))
    widest = hnsw_search(hnsw_index(index.vectors, 8, 64, seed), query_vectors, K, len(index.vectors))
    assert all(same_up_to_ties(e, ids, s) for e, ids, s in zip(exhaustive, widest.ids, scores))
    assert all(tie_aware_recall(ids, e, s) == 1.0 for e, ids, s in zip(exhaustive, widest.ids, scores))


# ---------------------------------------------------------------- reciprocal rank fusion = ranx

@lru_cache(maxsize=None)
def lesson06_rankings(seed: int):
    world = first_world(seed)
    searchable = [searchable_text(d) for d in world.documents]
    keyword = KeywordIndex(searchable)
    embedding = EmbeddingIndex(EmbeddingModel(world.edition, projection_seed=seed, dim=32), searchable)
    second = EmbeddingIndex(EmbeddingModel(world.edition, projection_seed=seed + 1, dim=32), searchable)
    classes = draw_query_classes(seed, world.edition, world.documents)
    return {name: [(keyword.rank(q.text), embedding.rank(q.text), second.rank(q.text)) for q in queries]
            for name, queries in classes.items()}


def as_run(rankings: list[list[int]]) -> ranx.Run:
    """Rankings as a ranx Run: each document scored by its place, so ranx reads the course's order."""
    return ranx.Run({f"q{n}": {str(i): float(len(r) - place) for place, i in enumerate(r)}
                     for n, r in enumerate(rankings)})


@pytest.mark.ranx
@pytest.mark.parametrize("seed,constant,lists", [(COURSE_SEED, 1, 2), (COURSE_SEED, 5, 2), (COURSE_SEED, 20, 2),
                                                 (COURSE_SEED, 60, 2), (COURSE_SEED, 20, 3), (4242, 20, 2),
                                                 (4242, 60, 3)])
def test_fusion_equals_ranx_rrf_with_k_one_below_the_constant(seed, constant, lists):
    """ranx ranks from 1 (1/(k + rank)); the course counts positions from 0 (1/(c + p)): k = c - 1."""
    pairs = [triple[:lists] for per_class in lesson06_rankings(seed).values() for triple in per_class]
    runs = [as_run([list(p[j]) for p in pairs]) for j in range(lists)]
    fused = ranx.fuse(runs, method="rrf", params={"k": constant - 1}).to_dict()
    for n, rankings in enumerate(pairs):
        ours = fused_scores(list(rankings), constant)
        theirs = {int(i): s for i, s in fused[f"q{n}"].items()}
        assert sorted(theirs) == list(range(len(ours)))
        assert max(abs(ours[i] - theirs[i]) for i in theirs) <= 1e-12
        library_order = sorted(theirs, key=lambda i: -theirs[i])
        course_order = reciprocal_rank_fusion(list(rankings), constant)
        assert same_up_to_ties(course_order, library_order, ours)
        assert ties_in_course_order(library_order, [theirs[i] for i in library_order], len(ours)) == course_order
        ranks_from_one = fused_scores(list(rankings), constant - 1, first_position=1) if constant > 1 else None
        assert ranks_from_one is None or max(abs(ranks_from_one[i] - theirs[i]) for i in theirs) <= 1e-12


# ---------------------------------------------------------------- retrieval measures = trec_eval, ranx

def four_measures_by_library(rankings, world, k):
    concept, label = concept_and_class_relevance(world)
    by_concept = trec_eval(rankings, concept, (f"P_{k}", f"recall_{k}", "P_1"))
    by_class = trec_eval(rankings, label, ("P_1",))
    return (by_concept[f"P_{k}"], by_concept[f"recall_{k}"], by_concept["P_1"], by_class["P_1"])


def ranx_means(rankings, relevant, metrics):
    qrels = ranx.Qrels({f"q{n}": {str(i): 1 for i in sorted(r)} for n, r in enumerate(relevant)})
    return ranx.evaluate(qrels, as_run(rankings), list(metrics))


@pytest.mark.ranx
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", (1, K, 10))
def test_retrieval_scores_equal_trec_eval_and_ranx(seed, k):
    """Lessons 01-03: precision, recall, concept hit and class hit of every setup (``retrieval_scores``)."""
    world = first_world(seed)
    setups = {"keyword": keyword_rankings(seed)}
    for setup in EMBEDDING_SETUPS:
        setups[setup] = embedding_rankings(seed, *setup)
    concept, label = concept_and_class_relevance(world)
    for setup, rankings in setups.items():
        by_query = dict(zip((q.text for q in world.queries), rankings))
        ours = retrieval_scores(lambda q: by_query[q.text], world.queries, world.documents, world.relevant, k)
        libraries = four_measures_by_library(rankings, world, k)
        assert max(abs(a - b) for a, b in zip(ours.as_tuple(), libraries)) <= 1e-12, setup
        if setup in ("keyword", (32, True, 0), (32, False, 0)):
            by_ranx = ranx_means(rankings, concept, (f"precision@{k}", f"recall@{k}", "precision@1"))
            by_ranx_class = ranx_means(rankings, label, ("precision@1",))
            assert max(abs(a - b) for a, b in zip(ours.as_tuple(), (by_ranx[f"precision@{k}"], by_ranx[f"recall@{k}"],
                                                                    by_ranx["precision@1"], by_ranx_class))) <= 1e-12


@pytest.mark.parametrize("seed", SEEDS)
def test_dot_product_measures_equal_trec_eval(seed):
    """Lesson 03's second ranker."""
    world = first_world(seed)
    model = EmbeddingModel(world.edition, projection_seed=seed, dim=32)
    documents = [model.raw(d.text) for d in world.documents]
    rankings = {q.text: rank_by_score([dot(model.raw(q.text), d) for d in documents]) for q in world.queries}
    ours = retrieval_scores(lambda q: rankings[q.text], world.queries, world.documents, world.relevant, K)
    libraries = four_measures_by_library([rankings[q.text] for q in world.queries], world, K)
    assert max(abs(a - b) for a, b in zip(ours.as_tuple(), libraries)) <= 1e-12


def test_documented_tables_of_lessons_01_to_03_equal_trec_eval():
    """The course's own printed numbers (tests/documented) read off trec_eval at the course seed."""
    world = first_world(COURSE_SEED)
    keyword = keyword_rankings(COURSE_SEED)
    model_1 = embedding_rankings(COURSE_SEED)
    table = [row for row in numbers(documented_blocks(1)[1]) if len(row) == 4]
    assert [[round(x, 4) for x in four_measures_by_library(r, world, K)] for r in (keyword, model_1)] == table
    table_02 = [row[:4] for row in numbers(documented_blocks(2)[1])[:5]]
    setups_02 = [keyword] + [embedding_rankings(COURSE_SEED, 32, d, o)
                             for d, o in ((True, 0), (True, 1), (False, 0), (False, 1))]
    assert [[round(x, 4) for x in four_measures_by_library(r, world, K)] for r in setups_02] == table_02
    sweep = numbers(documented_blocks(2)[2])
    for row, dim in zip(sweep, (64, 32, 16, 8, 4)):
        first = four_measures_by_library(embedding_rankings(COURSE_SEED, dim), world, K)
        second = four_measures_by_library(embedding_rankings(COURSE_SEED, dim, True, 1), world, K)
        assert [round(x, 4) for x in (first[2], first[3], second[2], second[3])] == row
    cosine_rows = [row[:4] for row in numbers(documented_blocks(3)[1]) if len(row) == 5]
    ours = []
    for offset in (0, 1):
        model = EmbeddingModel(world.edition, projection_seed=COURSE_SEED + offset, dim=32)
        raw = [model.raw(d.text) for d in world.documents]
        unit_documents = [model.embed(d.text) for d in world.documents]
        ours.append(embedding_rankings(COURSE_SEED, 32, True, offset))
        assert ours[-1] == [rank_by_score([cosine(model.embed(q.text), v) for v in unit_documents])
                            for q in world.queries]
        ours.append([rank_by_score([dot(model.raw(q.text), v) for v in raw]) for q in world.queries])
    assert [[round(x, 4) for x in four_measures_by_library(r, world, K)] for r in ours] == cosine_rows


def test_documented_lesson_04_recall_and_precision_equal_trec_eval():
    """Lesson 04: recall against the full scan is trec_eval's recall_K with the full scan's top K as relevant."""
    world = first_world(COURSE_SEED)
    index, query_vectors, scores = embedded(COURSE_SEED)
    baseline = [top_k(s, K) for s in scores]
    concept, _ = concept_and_class_relevance(world)
    assert round(trec_eval(baseline, concept, [f"P_{K}"])[f"P_{K}"], 4) == numbers(documented_blocks(4)[0])[-1][0]
    printed = numbers(documented_blocks(4)[1])
    for (buckets, probes), row in zip(BUCKET_GRID, printed):
        results = [build_bucket_index(index.vectors, buckets, COURSE_SEED).search(v, probes, K).ids
                   for v in query_vectors]
        ours = sum(overlap_recall(found, baseline[n]) for n, found in enumerate(results)) / len(results)
        recall = trec_eval([list(r) for r in results], [set(b) for b in baseline], [f"recall_{K}"])[f"recall_{K}"]
        precision = trec_eval([list(r) for r in results], concept, [f"P_{K}"])[f"P_{K}"]
        assert abs(ours - recall) <= 1e-12
        assert [round(recall, 4), round(precision, 4)] == [row[0], row[2]]
    ranking = neighbour_ranking(index.vectors)
    for degree, row in zip((8, 16, 32, 48), numbers(documented_blocks(4)[2])):
        walks = [build_graph(index.vectors, degree, ranking).search(v, K).ids for v in query_vectors]
        library = trec_eval([list(w) for w in walks], [set(b) for b in baseline], [f"recall_{K}"])
        assert round(library[f"recall_{K}"], 4) == row[0]


def test_documented_lesson_05_inside_filter_recall_equals_trec_eval():
    """Lesson 05's third table: recall of the in-index filter against the scan of the filtered set."""
    index, query_vectors, _ = embedded(COURSE_SEED)
    regions = assign_regions(COURSE_SEED, len(index.vectors), 16)
    bucket_index = build_bucket_index(index.vectors, 16, COURSE_SEED)
    printed = numbers(documented_blocks(5)[2])
    for width, row in zip(filter_widths(16), printed):
        allowed = matching(regions, width)
        correct = [rank_candidates(v, index.vectors, allowed)[:K] for v in query_vectors]
        found = [list(bucket_index.search(v, 2, K, keep=lambda i, w=width: regions[i] <= w).ids)
                 for v in query_vectors]
        ours = sum(overlap_recall(f, c) for f, c in zip(found, correct)) / len(found)
        library = trec_eval(found, [set(c) for c in correct], [f"recall_{K}"])[f"recall_{K}"]
        assert abs(ours - library) <= 1e-12 and round(library, 4) == row[1]


def test_documented_lesson_06_table_equals_trec_eval():
    """Lesson 06's main table: top1 = P_1, precision@5 = P_5, recall@20 = recall_20, target document@5 = success_5."""
    world = first_world(COURSE_SEED)
    classes = draw_query_classes(COURSE_SEED, world.edition, world.documents)
    rankings = lesson06_rankings(COURSE_SEED)
    rows = iter(numbers(documented_blocks(6)[1]))
    for name, queries in classes.items():
        concept = [{i for i, d in enumerate(world.documents) if d.main == q.concept} for q in queries]
        source = [{i for i, d in enumerate(world.documents) if d.code == q.code} for q in queries]
        orders = {"keyword": [list(t[0]) for t in rankings[name]], "embedding": [list(t[1]) for t in rankings[name]],
                  "hybrid": [reciprocal_rank_fusion([t[0], t[1]], 20) for t in rankings[name]]}
        for setup in ("keyword", "embedding", "hybrid"):
            by_concept = trec_eval(orders[setup], concept, ("P_1", f"P_{K}", "recall_20"))
            by_source = trec_eval(orders[setup], source, (f"success_{K}",))
            values = [by_concept["P_1"], by_concept[f"P_{K}"], by_concept["recall_20"], by_source[f"success_{K}"]]
            assert [round(v, 4) for v in values] == next(rows), (name, setup)


@pytest.mark.ranx
def test_documented_lesson_14_retrieval_column_equals_trec_eval_and_ranx():
    """Lesson 14: retrieval recall is success_k, retrieval precision P_k (relevant: chunks naming the target)."""
    world = build_world(COURSE_SEED, SECOND_EDITION)
    chunks = paragraph_chunks(world.documents, world.edition)
    index = EmbeddingIndex(EmbeddingModel(world.edition, projection_seed=COURSE_SEED, dim=32), [c.text for c in chunks])
    rankings = [index.rank(q.text)[:5] for q in world.queries]
    carriers = [{i for i, c in enumerate(chunks) if world.edition.concept(q.concept).document_form in c.text}
                for q in world.queries]
    printed = [row for row in numbers(documented_blocks(14)[0]) if len(row) == 2]
    by_trec = trec_eval(rankings, carriers, [f"success_{k}" for k in (1, 3, 5)] + [f"P_{k}" for k in (1, 3, 5)])
    by_ranx = ranx_means(rankings, carriers, [f"hit_rate@{k}" for k in (1, 3, 5)] + [f"precision@{k}" for k in (1, 3, 5)])
    for k, row in zip((1, 3, 5), printed):
        course_recall = sum(any(i in r for i in ranking[:k]) for ranking, r in zip(rankings, carriers)) / len(rankings)
        course_precision = sum(len([i for i in ranking[:k] if i in r]) / k
                               for ranking, r in zip(rankings, carriers)) / len(rankings)
        assert [round(course_recall, 4), round(course_precision, 4)] == row
        assert abs(by_trec[f"success_{k}"] - course_recall) <= 1e-12
        assert abs(by_trec[f"P_{k}"] - course_precision) <= 1e-12
        assert abs(by_ranx[f"hit_rate@{k}"] - course_recall) <= 1e-12
        assert abs(by_ranx[f"precision@{k}"] - course_precision) <= 1e-12


def test_trec_eval_gap_is_the_largest_difference_of_the_four_measures():
    """The appendix of lessons 01-03 prints this gap: zero for the course's own numbers, the size of a change otherwise."""
    world = first_world(COURSE_SEED)
    concept, label = concept_and_class_relevance(world)
    rankings = embedding_rankings(COURSE_SEED)
    library = four_measures_by_library(rankings, world, K)
    assert trec_eval_gap(rankings, library, concept, label, K) == 0.0
    shifted = (library[0], library[1] + 0.25, library[2], library[3])
    assert trec_eval_gap(rankings, shifted, concept, label, K) == pytest.approx(0.25)
