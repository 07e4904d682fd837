"""A cross-encoder's score of a (question, passage) pair does not depend on the other candidates.

No cross-encoder ships its weights, so the test builds one from the installed MiniLM with a seeded
scoring head (its scores mean nothing; their bits are what is checked), saves it, and loads it through
``CrossEncoderReranker`` as ``ask --reranker-model`` would."""
from __future__ import annotations

import pytest

# MiniLM's weights under a seeded head, run on pairs of its own: under ``make test`` it waits for all of ``prepare``
# rather than slow it down (the "all" of ``embeddings``).
pytestmark = pytest.mark.embeddings("all")


@pytest.fixture(scope="module")
def reranker(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from sentence_transformers import CrossEncoder

    from ragcourse.engines.dense import model_folder
    from ragcourse.rag.rerank import CrossEncoderReranker

    torch.manual_seed(51)
    folder = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(model_folder(), num_labels=1, device="cpu").save(str(folder))
    return CrossEncoderReranker(str(folder))


def test_a_pair_scores_the_same_alone_and_among_any_candidates(reranker):
    from ragcourse.corpus.apidocs import load_corpus

    question = "How do I join two arrays end to end in numpy?"
    pages = [d.text[:120 + 23 * i] for i, d in enumerate(load_corpus().documents[:12])]
    pages += [pages[0], pages[0][:300]]   # repeats, and one of a length another page shares
    alone = [reranker.score(question, [p])[0] for p in pages]
    together = reranker.score(question, pages)
    backwards = reranker.score(question, pages[::-1])[::-1]
    print(f"cross-encoder: {len(pages)} pairs, identical to alone: together "
          f"{sum(a == b for a, b in zip(alone, together))}, reversed {sum(a == b for a, b in zip(alone, backwards))}")
    assert together == alone and backwards == alone
    assert reranker.score(question, []) == []
