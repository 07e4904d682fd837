"""Lab 02's share of the embedding plan: what its notebook and exercises embed, and nothing it no longer uses."""
from __future__ import annotations

from ragcourse.corpus.apidocs import load_corpus, with_summaries
from ragcourse.engines.catalogue import windows
from ragcourse.engines.chunking.text_chunks import chunk_corpus, word_windows
from ragcourse.exercises.labs import lab02 as exercises
from ragcourse.labs.embedding_plan import lab02_texts

PARAMETERS = {"WINDOW": 60, "OVERLAP": 20}


def test_lab02_plans_its_pages_and_windows_the_exercise_subset_and_the_pools_windows():
    corpus = load_corpus()
    planned = set(lab02_texts(corpus, PARAMETERS))
    kept = with_summaries(corpus.documents)
    needed = ({d.text for d in corpus.documents} | {d.text for d in kept}
              | {c.text for c in chunk_corpus(kept, word_windows, size=60, overlap=20)})
    exercise_windows = {c.text for c in exercises.subset_windows()}
    pooled = {c.text for c in windows(corpus, summaries=False)}   # what tests/corpus/test_pooling.py embeds
    assert needed <= planned and exercise_windows <= planned and pooled <= planned
    # nothing else: the lab's own windows without the summary line are the pool's (60 words, 20 overlap)
    assert planned == needed | exercise_windows | pooled
    assert pooled == {c.text for c in chunk_corpus(corpus.documents, word_windows, size=60, overlap=20)}
    assert len(pooled - needed - exercise_windows) > 2500
