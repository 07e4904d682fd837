"""Lab 03's permission filters: no retriever ever returns a page its user may not see."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse.engines.chunking.text_chunks import TextChunk
from ragcourse.engines.filters import depth_for, facets, late_filter, permission
from ragcourse.labs.practice import METHODS, ChunkSearch
from ragcourse.engines.retrievers import Bm25Retriever, DenseRetriever

MODULES = ("numpy", "numpy.random", "numpy.linalg", "numpy.fft")
KINDS = ("function", "ufunc", "class", "method")
WORDS = ("array", "random", "matrix", "inverse", "normal", "sort", "fourier", "axis", "shuffle", "norm")


@dataclass(frozen=True)
class Page:
    doc_id: str
    module: str
    kind: str


PAGES = [Page(f"p{n:02d}", MODULES[n % 4], KINDS[(n // 4) % 4]) for n in range(24)]
CHUNKS = [TextChunk(p.doc_id, position, " ".join(WORDS[(n * 3 + position * 7 + j) % len(WORDS)] for j in range(4)))
          for n, p in enumerate(PAGES) for position in range(2)]


class FakeEncoder:
    """Deterministic unit vectors from word hashes: the dense path without the model."""

    def encode(self, texts):
        rows = []
        for text in texts:
            vector = np.zeros(16)
            for word in text.split() or [""]:
                vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 16] += 1.0
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows, dtype=np.float32).reshape(len(texts), 16)


SEARCH = ChunkSearch(Bm25Retriever(CHUNKS), DenseRetriever(CHUNKS, FakeEncoder()))


users = st.builds(lambda modules, kinds: permission("user", modules or None, kinds),
                  st.lists(st.sampled_from(MODULES), unique=True, max_size=4),
                  st.lists(st.sampled_from(KINDS), unique=True, max_size=3))
questions = st.lists(st.sampled_from(WORDS + ("nothing", "zzz")), min_size=1, max_size=5).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(users, questions, st.sampled_from(METHODS), st.sampled_from([None, 3, 10]), st.sampled_from([10, 60]))
def test_no_result_holds_a_page_its_user_may_not_see(user, question, method, depth, constant):
    visible = user.visible(PAGES)
    hits = SEARCH.pages(question, method, allowed=visible, constant=constant, depth=depth)
    assert all(hit.doc_id in visible for hit in hits)
    assert len({h.doc_id for h in hits}) == len(hits)
    if depth is None:
        # Inside the search, every visible page is still ranked (BM25: every visible page it matched):
        # the filter only removes.
        matched = {CHUNKS[n].doc_id for n in SEARCH.bm25.matched_ranking(question)}
        assert {h.doc_id for h in hits} == (set(visible) & matched if method == "bm25" else set(visible))
    assert all(p in visible for p in late_filter([h.doc_id for h in SEARCH.pages(question, method)], visible, 5))


def test_permissions_facets_and_late_filter():
    user = permission("linalg + fft", ["numpy.linalg", "numpy.fft"], ["class"])
    assert user.visible(PAGES) == {p.doc_id for p in PAGES if p.module in ("numpy.linalg", "numpy.fft")
                                   and p.kind != "class"}
    assert permission("everything").visible(PAGES) == {p.doc_id for p in PAGES}
    with pytest.raises(ValueError, match="modules"):
        permission("nobody", [])
    assert facets(PAGES, "module") == {m: 6 for m in sorted(MODULES)}
    with pytest.raises(ValueError, match="field"):
        facets(PAGES, "date")
    ranked = ["a", "b", "c", "d", "e", "f"]
    assert late_filter(ranked, frozenset({"b", "f"}), 5) == ["b"]
    assert depth_for(ranked, frozenset({"b", "f"}), 2) == 6
    assert depth_for(ranked, frozenset({"b"}), 2) is None


def test_bad_method_names_the_parameter():
    with pytest.raises(ValueError, match="method"):
        SEARCH.pages("array", "lexical")


# ---------------------------------------------------------------- fusion of what was matched

def test_bm25_ranks_only_the_chunks_it_matched():
    matched = SEARCH.bm25.matched_ranking("inverse")
    scores = SEARCH.bm25.index.scores("inverse")
    assert matched and all(scores[n] > 0 for n in matched)
    assert sorted(matched) == [n for n in range(len(CHUNKS)) if scores[n] > 0]
    assert SEARCH.bm25.matched_ranking("zzz") == []   # a question sharing no term matches nothing


def test_rrf_gives_an_unmatched_chunk_only_its_dense_term():
    from ragcourse.engines.retrievers import HybridRetriever
    from ragcourse.labs.practice import rrf

    question = "inverse"
    matched = SEARCH.bm25.matched_ranking(question)
    dense = SEARCH.dense.full_ranking(question)
    unmatched = [n for n in dense if n not in matched]
    assert unmatched   # the fixture has chunks without the word
    fused = dict(rrf([matched, dense], 60))
    for n in unmatched:   # 1 / (60 + dense rank) and nothing for a BM25 rank it does not have
        assert fused[n] == 1.0 / (60 + dense.index(n) + 1)
    hybrid = HybridRetriever(SEARCH.bm25, SEARCH.dense, constant=60)
    pages = [hit.doc_id for hit in hybrid.search(question)]
    assert pages == [hit.doc_id for hit in SEARCH.pages(question, "hybrid", constant=60)]


@pytest.mark.parametrize("constant, depth", [(10, 3), (60, None), (30, 1)])
def test_the_hybrid_with_a_depth_and_a_filter_equals_chunk_search(constant, depth):
    """``search --retriever hybrid`` runs HybridRetriever at lab 03's dev choice (a depth and k): the same pages
    as the lab's ChunkSearch, with the filter applied to both paths before the depth cut."""
    from ragcourse.engines.retrievers import HybridRetriever

    hybrid = HybridRetriever(SEARCH.bm25, SEARCH.dense, constant=constant, depth=depth)
    allowed = {p.doc_id for p in PAGES if p.module in ("numpy.linalg", "numpy.fft")}
    for question in ("inverse matrix norm", "random shuffle", "fourier axis sort"):
        assert ([h.doc_id for h in hybrid.search(question)]
                == [h.doc_id for h in SEARCH.pages(question, "hybrid", constant=constant, depth=depth)])
        filtered = [h.doc_id for h in hybrid.search(question, allowed)]
        assert filtered == [h.doc_id for h in SEARCH.pages(question, "hybrid", allowed=allowed, constant=constant,
                                                            depth=depth)]
        assert filtered and set(filtered) <= allowed
    with pytest.raises(ValueError, match="depth"):
        HybridRetriever(SEARCH.bm25, SEARCH.dense, depth=0)


def test_the_search_commands_hybrid_is_lab_03s_dev_choice():
    from ragcourse.engines.catalogue import HYBRID, HybridSetting

    assert HYBRID == HybridSetting("headed", "full strength", 10, 100)
    assert str(HYBRID) == "headed recursive chunks, BM25 at full strength, 100 candidates a path, RRF k = 10"
    with pytest.raises(ValueError, match="units"):
        HybridSetting(units="pages")
    with pytest.raises(ValueError, match="lexical"):
        HybridSetting(lexical="tfidf")
