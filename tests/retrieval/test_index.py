"""The bucket index and the neighbourhood graph (lessons 04 and 05) against the course's numbers."""
import pytest

from ragcourse.retrieval.index import (
    BucketIndex,
    build_bucket_index,
    build_graph,
    draw_representatives,
    neighbour_ranking,
    rank_candidates,
)
from ragcourse.retrieval.metrics import overlap_recall
from ragcourse.retrieval.ranking import rank_by_score
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel, cosine

SEED = 20260218
K = 5


@pytest.fixture(scope="module")
def space():
    """Document vectors, query vectors and the exhaustive top five of the course world."""
    world = build_world(SEED, FIRST_EDITION)
    model = EmbeddingModel(FIRST_EDITION, SEED, dim=32)
    vectors = [model.embed(d.text) for d in world.documents]
    queries = [model.embed(q.text) for q in world.queries]
    baseline = [rank_by_score([cosine(q, v) for v in vectors])[:K] for q in queries]
    return vectors, queries, baseline


@pytest.fixture(scope="module")
def ranking(space):
    return neighbour_ranking(space[0])


def bucket_row(space, buckets, probes, seed=SEED):
    vectors, queries, baseline = space
    index = build_bucket_index(vectors, buckets, seed)
    results = [index.search(q, probes, K) for q in queries]
    recall = sum(overlap_recall(r.ids, baseline[n]) for n, r in enumerate(results)) / len(queries)
    comparisons = sum(r.comparisons for r in results) / len(queries)
    return f"{recall:.4f}", f"{comparisons:.1f}"


# ------------------------------------------------------------------ bucket index

def test_representatives_at_course_seed(space):
    index = build_bucket_index(space[0], 16, SEED)
    assert index.representatives == (193, 124, 150, 119, 60, 189, 27, 33, 63, 145, 42, 98, 116, 102, 43, 37)
    assert [len(m) for m in index.members] == [20, 2, 17, 6, 24, 2, 9, 7, 9, 46, 8, 9, 8, 14, 2, 17]
    assert index.stored_values == 216


@pytest.mark.parametrize("buckets, probes, expected", [
    (8, 1, ("0.5800", "39.7")), (16, 1, ("0.7200", "34.9")), (16, 2, ("0.9500", "47.2")),
    (16, 4, ("1.0000", "69.2")), (25, 2, ("0.8900", "45.0")), (25, 4, ("1.0000", "61.7")),
])
def test_course_table_rows(space, buckets, probes, expected):
    assert bucket_row(space, buckets, probes) == expected


def test_second_build_gives_the_course_difference(space):
    assert bucket_row(space, 16, 2, SEED + 1)[0] == "0.9600"


def test_every_document_in_exactly_one_bucket(space):
    index = build_bucket_index(space[0], 25, SEED)
    assert sorted(i for m in index.members for i in m) == list(range(200))
    assert all(list(m) == sorted(m) for m in index.members)


def test_build_is_deterministic_and_seed_dependent(space):
    first, again = build_bucket_index(space[0], 16, SEED), build_bucket_index(space[0], 16, SEED)
    assert first == again
    other = build_bucket_index(space[0], 16, SEED + 1)
    assert other.representatives[:3] == (2, 190, 192)
    assert other.representatives != first.representatives


def test_repeated_draws_are_skipped():
    representatives = draw_representatives(3, 3, SEED)
    assert sorted(representatives) == [0, 1, 2]


def test_one_search_by_hand(space):
    vectors, queries, _ = space
    index = build_bucket_index(vectors, 16, SEED)
    order = index.bucket_order(queries[0])
    assert order[:4] == [2, 5, 0, 4]
    candidates = list(index.members[2]) + list(index.members[5])
    assert index.candidates(queries[0], 2) == candidates
    result = index.search(queries[0], 2, K)
    assert result.ids == (24, 30, 34, 74, 44)
    assert (result.candidates, result.comparisons) == (19, 35)


def test_one_bucket_is_exhaustive_search(space):
    vectors, queries, baseline = space
    index = build_bucket_index(vectors, 1, SEED)
    assert all(list(index.search(q, 1, K).ids) == baseline[n] for n, q in enumerate(queries))
    assert index.search(queries[0], 1, K).comparisons == 201


def test_filter_inside_the_index(space):
    vectors, queries, _ = space
    index = build_bucket_index(vectors, 16, SEED)
    everything = index.search(queries[0], 2, K)
    even = index.search(queries[0], 2, K, keep=lambda i: i % 2 == 0)
    assert all(i % 2 == 0 for i in even.ids)
    assert even.candidates == sum(1 for i in index.candidates(queries[0], 2) if i % 2 == 0)
    assert even.comparisons == 16 + even.candidates < everything.comparisons
    nothing = index.search(queries[0], 2, K, keep=lambda i: False)
    assert nothing.ids == () and nothing.comparisons == 16


def test_rank_candidates_keeps_given_order_on_ties():
    vectors = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.6, 0.8]]
    assert rank_candidates([1.0, 0.0], vectors, [2, 1, 0, 3]) == [2, 0, 3, 1]
    assert rank_candidates([1.0, 0.0], vectors, []) == []


@pytest.mark.parametrize("buckets", [0, 201, -1, 2.0, True])
def test_bad_bucket_count(space, buckets):
    with pytest.raises(ValueError, match="buckets must be an integer from 1 to 200"):
        build_bucket_index(space[0], buckets, SEED)


def test_bad_probes_and_k(space):
    vectors, queries, _ = space
    index = build_bucket_index(vectors, 8, SEED)
    with pytest.raises(ValueError, match="probes must be an integer from 1 to 8"):
        index.search(queries[0], 9, K)
    with pytest.raises(ValueError, match="k must be an integer"):
        index.search(queries[0], 2, 0)


def test_bucket_index_is_frozen(space):
    index = build_bucket_index(space[0], 4, SEED)
    assert isinstance(index, BucketIndex)
    with pytest.raises(AttributeError):
        index.seed = 1


# ------------------------------------------------------------------ neighbourhood graph

@pytest.mark.parametrize("degree, expected", [
    (8, (1600, 27, "0.0800", "14.0")), (16, (3200, 31, "0.1750", "26.0")),
    (32, (6400, 200, "0.5250", "59.1")), (48, (9600, 200, "0.7650", "84.9")),
])
def test_graph_table_rows(space, ranking, degree, expected):
    vectors, queries, baseline = space
    graph = build_graph(vectors, degree, ranking)
    walks = [graph.search(q, K) for q in queries]
    recall = sum(overlap_recall(w.ids, baseline[n]) for n, w in enumerate(walks)) / len(queries)
    comparisons = sum(w.comparisons for w in walks) / len(queries)
    assert (graph.edges, graph.reachable(), f"{recall:.4f}", f"{comparisons:.1f}") == expected


def test_graph_from_shared_ranking_equals_fresh_build(space, ranking):
    assert build_graph(space[0], 8, ranking) == build_graph(space[0], 8)


def test_walk_at_course_seed(space, ranking):
    vectors, queries, _ = space
    graph = build_graph(vectors, 8, ranking)
    assert graph.neighbours[0] == (104, 18, 22, 29, 37, 38, 199, 40)
    walk = graph.search(queries[0], K)
    assert walk.ids == (5, 25, 40, 54, 68)
    assert walk.expanded == (0, 40, 5, 25)
    assert walk.comparisons == 15
    assert set(walk.ids) <= graph.reachable_from(0)


def test_walk_on_a_small_graph():
    # a path 0 - 1 - 2 - 3 along a quarter circle; the query sits at node 3
    vectors = [[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0]]
    graph = build_graph(vectors, 1)
    assert graph.neighbours == ((1,), (2,), (1,), (2,))
    walk = graph.search([0.0, 1.0], 2)
    assert walk.expanded == (0, 1, 2)
    assert walk.ids == (2, 1) and walk.comparisons == 3  # node 3 is never reached from 0
    assert graph.reachable(0) == 3 and graph.reachable(3) == 3


def test_degree_zero_graph(space):
    graph = build_graph(space[0][:10], 0)
    assert graph.edges == 0 and graph.reachable(4) == 1
    walk = graph.search(space[1][0], 3, entry=4)
    assert walk.ids == (4,) and walk.comparisons == 1


def test_bad_graph_arguments(space):
    vectors = space[0][:10]
    with pytest.raises(ValueError, match="degree must be an integer from 0 to 9"):
        build_graph(vectors, 10)
    graph = build_graph(vectors, 2)
    with pytest.raises(ValueError, match="entry must be an integer from 0 to 9"):
        graph.search(space[1][0], K, entry=10)
    with pytest.raises(ValueError, match="ranking must have one list per vector"):
        build_graph(vectors, 2, ranking=[(1,)])
