"""The course's neighbourhood graph beside ``hnswlib`` (lesson 04), split from ``libraries``.

``hnsw_index`` builds an ``hnswlib`` index on one thread, so the seed fixes its graph;
``hnsw_search`` queries it; ``hnsw_graph`` reads the graph the library built, and
``hnsw_replay`` replays the library's search over it to count the distances it computes,
which ``hnswlib`` does not report. The float32 conversion, the seed rule and the result type
are ``libraries``'s, shared with faiss.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import hnswlib
import numpy as np

from .libraries import LibraryResult, Vector, _result, as_float32, library_seed


def hnsw_index(document_vectors: Sequence[Vector], links: int, ef_construction: int, seed: int) -> hnswlib.Index:
    """An ``hnswlib`` index (inner-product space) with ``M = links``, built on one thread so that ``seed`` fixes the graph."""
    documents = as_float32(document_vectors)
    index = hnswlib.Index(space="ip", dim=documents.shape[1])
    index.init_index(max_elements=len(documents), ef_construction=ef_construction, M=links,
                     random_seed=library_seed(seed))
    index.add_items(documents, np.arange(len(documents)), num_threads=1)
    return index


def hnsw_search(index: hnswlib.Index, query_vectors: Sequence[Vector], k: int, ef: int) -> LibraryResult:
    """``knn_query`` at search breadth ``ef``; scores are inner products (hnswlib reports ``1 - ip``). No comparison count."""
    index.set_ef(ef)
    ids, distances = index.knn_query(as_float32(query_vectors), k=k, num_threads=1)
    return _result(1.0 - distances.astype(np.float64), ids, float("nan"))


class _Heap:
    """``std::priority_queue`` of libstdc++ on (key, id) pairs ordered by key alone, ties as the C++ heap leaves them."""

    def __init__(self) -> None:
        self.items: list[tuple[float, int]] = []

    def __len__(self) -> int:
        return len(self.items)

    def top(self) -> tuple[float, int]:
        return self.items[0]

    def _sift_up(self, hole: int, top: int, value: tuple[float, int]) -> None:
        items = self.items
        parent = (hole - 1) // 2
        while hole > top and items[parent][0] < value[0]:
            items[hole] = items[parent]
            hole = parent
            parent = (hole - 1) // 2
        items[hole] = value

    def push(self, value: tuple[float, int]) -> None:
        self.items.append(value)
        self._sift_up(len(self.items) - 1, 0, value)

    def pop(self) -> None:
        items = self.items
        last = items.pop()
        length = len(items)
        if not length:
            return
        hole, child = 0, 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if items[child][0] < items[child - 1][0]:
                child -= 1
            items[hole] = items[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            items[hole] = items[child - 1]
            hole = child - 1
        self._sift_up(hole, 0, last)


@dataclass(frozen=True)
class HnswGraph:
    """The graph an ``hnswlib`` index built, read from its own serialised state.

    ``layer0[i]`` lists the layer-0 links of internal node ``i``; ``upper[(i, level)]``
    its links on a higher layer; ``labels[i]`` the id it was added with; ``entry`` and
    ``top_level`` are where every search starts.
    """

    entry: int
    top_level: int
    layer0: tuple[tuple[int, ...], ...]
    upper: dict[tuple[int, int], tuple[int, ...]]
    labels: tuple[int, ...]
    vectors: np.ndarray
    space: str

    @property
    def links(self) -> int:
        """Stored (directed) links over all layers."""
        return sum(len(n) for n in self.layer0) + sum(len(n) for n in self.upper.values())


def hnsw_graph(index: hnswlib.Index) -> HnswGraph:
    """Read the layers, links, labels and vectors out of ``index.__getstate__()`` (hnswlib's pickle format)."""
    state = index.__getstate__()[0]
    n, dim = state["cur_element_count"], state["dim"]
    per_element, label_offset, data_offset = (state["size_data_per_element"], state["label_offset"],
                                              state["offset_data"])
    level0 = state["data_level0"].view(np.uint8)[:n * per_element].reshape(n, per_element)
    upper_bytes, per_level = state["link_lists"].view(np.uint8), state["size_links_per_element"]

    def read(raw: np.ndarray) -> tuple[int, ...]:
        count = int(raw[:2].copy().view(np.uint16)[0])
        return tuple(raw[4:4 + 4 * count].copy().view(np.uint32).astype(np.int64).tolist())

    upper: dict[tuple[int, int], tuple[int, ...]] = {}
    position = 0
    for node, levels in enumerate(state["element_levels"].tolist()):
        for level in range(1, levels + 1):
            upper[(node, level)] = read(upper_bytes[position:position + per_level])
            position += per_level
    labels = level0[:, label_offset:label_offset + 8].copy().view(np.uint64).ravel().astype(np.int64)
    return HnswGraph(entry=int(state["enterpoint_node"]), top_level=int(state["max_level"]),
                     layer0=tuple(read(level0[i]) for i in range(n)), upper=upper,
                     labels=tuple(labels.tolist()),
                     vectors=level0[:, data_offset:data_offset + 4 * dim].copy().view(np.float32),
                     space=state["space"])


@dataclass(frozen=True)
class HnswReplay:
    """hnswlib's search replayed step by step: ``ids`` per query (as ``knn_query`` orders them) and ``comparisons`` per query."""

    ids: tuple[tuple[int, ...], ...]
    comparisons: tuple[int, ...]


def hnsw_replay(index: hnswlib.Index, query_vectors: Sequence[Vector], k: int, ef: int) -> HnswReplay:
    """Replay ``searchKnn`` of hnswlib 0.8.0 over the graph the index built, counting every distance it computes.

    hnswlib's Python interface does not report how many distances a query costs. This
    function reads the graph from the index's own state (``hnsw_graph``), takes every
    query-document distance from ``hnswlib.BFIndex`` (the same distance function, so the
    same float32 values), and follows the library's search: greedy descent through the
    upper layers, then the best-first search of layer 0 with a candidate queue and a
    result queue of ``max(ef, k)`` entries, both kept as the C++ binary heaps keep them.
    One comparison per distance computed: the entry point once per phase, every link
    read in the upper layers, every not-yet-visited neighbour in layer 0. Check ``ids``
    against ``hnsw_search`` before trusting the counts.
    """
    graph = hnsw_graph(index)
    n = len(graph.layer0)
    brute = hnswlib.BFIndex(space=graph.space, dim=graph.vectors.shape[1])
    brute.init_index(max_elements=n)
    brute.add_items(graph.vectors, np.arange(n))
    all_ids, all_distances = brute.knn_query(as_float32(query_vectors), k=n)
    width = max(ef, k)
    found, counts = [], []
    for row_ids, row_distances in zip(all_ids, all_distances):
        distance = dict(zip(row_ids.tolist(), row_distances.tolist()))
        current = graph.entry
        current_distance, comparisons = distance[current], 1
        for level in range(graph.top_level, 0, -1):
            changed = True
            while changed:
                changed = False
                for candidate in graph.upper[(current, level)]:
                    comparisons += 1
                    if distance[candidate] < current_distance:
                        current, current_distance, changed = candidate, distance[candidate], True
        top, queue = _Heap(), _Heap()
        entry_distance = distance[current]
        comparisons += 1
        top.push((entry_distance, current))
        queue.push((-entry_distance, current))
        bound, visited = entry_distance, {current}
        while len(queue):
            negative, node = queue.top()
            if -negative > bound:
                break
            queue.pop()
            for neighbour in graph.layer0[node]:
                if neighbour in visited:
                    continue
                visited.add(neighbour)
                d = distance[neighbour]
                comparisons += 1
                if len(top) < width or bound > d:
                    queue.push((-d, neighbour))
                    top.push((d, neighbour))
                    if len(top) > width:
                        top.pop()
                    bound = top.top()[0]
        while len(top) > k:
            top.pop()
        found.append(tuple(label for _, label in sorted((d, graph.labels[node]) for d, node in top.items)))
        counts.append(comparisons)
    return HnswReplay(ids=tuple(found), comparisons=tuple(counts))
