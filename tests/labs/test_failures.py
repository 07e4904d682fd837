"""Lab 01's failure causes, each shown on a small index where the cause is known."""
from __future__ import annotations

from ragcourse.engines.chunking.text_chunks import TextChunk
from ragcourse.labs.failures import CAUSES, count_by_cause, misses, stem, stemmed_index
from ragcourse.engines.lexical import LexicalIndex
from ragcourse.corpus.queries import Question

CHUNKS = [TextChunk("sort", 0, "Return a sorted copy of an array."),
          TextChunk("concatenate", 0, "Join a sequence of arrays along an existing axis."),
          TextChunk("zeros", 0, "Return a new array of given shape, filled with zeros."),
          TextChunk("ones", 0, "Return a new array of given shape, filled with ones."),
          TextChunk("full", 0, "Return a new array of given shape, filled with a value.")]


def cause_of(text: str, relevant: str, k: int = 1) -> str | None:
    found = misses([Question("q", text, (relevant,))], LexicalIndex(CHUNKS), stemmed_index(CHUNKS), k)
    return found[0].cause if found else None


def test_each_cause():
    assert cause_of("zebra giraffe", "sort") == "no answer at all"
    assert cause_of("sorting arrays", "sort") == "word form"     # stems join sorting~sorted, arrays~array
    assert cause_of("new array shape ones", "full") == "common words win"
    assert cause_of("glue arrays", "sort", k=1) == "no shared word"  # 'arrays' is only concatenate's
    assert cause_of("sorted copy", "sort") is None                 # a hit is no miss


def test_counts_keep_the_order_of_causes():
    assert stem("sorting") == stem("sort") == "sort"
    assert list(count_by_cause([])) == list(CAUSES)
