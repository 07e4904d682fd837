"""Lab 01's scorer: tokens, rarity weights checked by hand, the stable tie-break, empty results."""
from __future__ import annotations

import math

from ragcourse.engines.chunkers import TextChunk
from ragcourse.engines.lexical import LexicalIndex, lexical_tokens, tag_index

CHUNKS = [TextChunk("b-doc", 0, "Sort an array in place."), TextChunk("a-doc", 1, "sort the array, then stack it"),
          TextChunk("a-doc", 0, "Stack arrays along an axis."), TextChunk("c-doc", 0, "Sort the array, stack it.")]


def test_tokens_are_lowercase_runs_without_stopwords():
    assert lexical_tokens("How do I sort an Array, from 2-D?") == ["sort", "array", "2", "d"]


def test_scores_add_log_one_plus_n_over_df_per_shared_token():
    index = LexicalIndex(CHUNKS)
    hits = index.search("how do I sort and stack the array")
    by_id = {h.chunk.chunk_id: h for h in hits}
    weight = math.log(1 + 4 / 3)   # sort, array and stack each occur in 3 of the 4 chunks
    assert by_id["a-doc#1"].shared == ("array", "sort", "stack")
    assert by_id["a-doc#1"].score == by_id["c-doc#0"].score == weight + weight + weight
    assert by_id["a-doc#0"].shared == ("stack",) and by_id["a-doc#0"].score == weight
    # equal scores are ordered by (doc_id, position): a-doc#1 before c-doc#0
    assert [h.chunk.chunk_id for h in hits] == ["a-doc#1", "c-doc#0", "b-doc#0", "a-doc#0"]


def test_no_shared_token_means_no_result():
    assert LexicalIndex(CHUNKS).search("what is a good chunk size") == []


def test_tag_index_lists_sorted_ids_per_key():
    assert tag_index([("x", ["sort", "array"]), ("a", ["sort"])]) == {"array": ["x"], "sort": ["a", "x"]}
