"""Lab 01's scorer: tokens, rarity weights checked by hand, the stable tie-break, empty results."""
from __future__ import annotations

import math

from ragcourse.engines.chunking.text_chunks import TextChunk
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


# ---------------------------------------------------------------- the strong lexical setting (lab 01)

def test_a_stop_list_that_keeps_names_keeps_every_corpus_object_name():
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.lexical import SHORT_STOPWORDS, STOPWORDS, TOKEN, Analyzer, name_tokens

    corpus = load_corpus()
    names = [name for d in corpus.documents for name in (d.doc_id, *d.aliases)]
    kept = name_tokens(names)
    assert {"where", "all", "any", "empty", "take", "put", "less", "full", "around"} <= kept & STOPWORDS
    for stopwords in (STOPWORDS, SHORT_STOPWORDS):
        for stemming in (False, True):
            analyze = Analyzer(stopwords, keep=kept, stemming=stemming)
            for name in names:   # every one-word name survives (stemmed or not)
                last = name.rsplit(".", 1)[-1]
                if len(TOKEN.findall(last.lower())) == 1:
                    assert len(analyze(last)) == 1, (name, analyze)
    assert "and" not in kept and "and" in STOPWORDS   # logical_and does not make "and" a name
    assert "down" in STOPWORDS and "down" not in SHORT_STOPWORDS   # "turn a matrix upside down"
    assert Analyzer()("where is it") == []            # scikit-learn's list alone drops both words


def test_stemming_is_applied_to_chunks_and_questions_alike():
    from ragcourse.engines.bm25 import Bm25Index
    from ragcourse.engines.lexical import SHORT_STOPWORDS, Analyzer

    texts = ["Sort an array along an axis.", "Sorting arrays in place", "Random numbers"]
    plain, stemmed = Analyzer(SHORT_STOPWORDS), Analyzer(SHORT_STOPWORDS, stemming=True)
    assert plain("sorting arrays") == ["sorting", "arrays"] and stemmed("sorting arrays") == ["sort", "array"]
    index = Bm25Index(texts, tokenize=stemmed)
    assert "sort" in index.vocabulary and "sorting" not in index.vocabulary   # chunks stemmed
    assert sorted(n for n, _ in index.search("sorted arrays")) == [0, 1]       # the question too
    assert [n for n, _ in Bm25Index(texts, tokenize=plain).search("sorted arrays")] == [1]   # "arrays" only


def test_full_strength_is_lab_01s_last_step():
    """``full_strength`` (what lab 03 and ``search --retriever hybrid`` fuse) is lab 01's '+ stemming' analyzer: same words kept, same stems."""
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.lexical import SHORT_STOPWORDS, Analyzer, document_names, full_strength

    corpus = load_corpus()
    names = document_names(corpus.documents)
    strong = full_strength(corpus.documents)
    assert strong.stemming and strong.stopwords == SHORT_STOPWORDS - names
    by_hand = Analyzer(SHORT_STOPWORDS, keep=names, stemming=True)
    for text in ("how do I use np.where to replace values", "turn a matrix upside down", "sorting all the arrays",
                 corpus.documents[0].text[:500]):
        assert strong(text) == by_hand(text)
    assert "where" in strong("np.where") and "all" in strong("all of them") and "down" in strong("upside down")
    assert strong("sorting arrays") == ["sort", "array"]
