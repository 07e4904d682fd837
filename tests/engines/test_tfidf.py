"""Lab 02's hand-written TF-IDF equals scikit-learn's TfidfVectorizer over the same tokens."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from ragcourse.corpus.apidocs import load_corpus
from ragcourse.engines.chunking.text_chunks import chunk_corpus, word_windows
from ragcourse.engines.tfidf import TfidfIndex, tfidf_tokens


@pytest.fixture(scope="module")
def texts():
    return [c.text for c in chunk_corpus(load_corpus().documents, word_windows)]


@pytest.fixture(scope="module")
def both(texts):
    ours = TfidfIndex(texts)
    library = TfidfVectorizer(analyzer=tfidf_tokens, sublinear_tf=True, smooth_idf=True, norm="l2")
    matrix = library.fit_transform(texts)
    return ours, library, matrix


def test_weights_equal_within_1e_12(both):
    ours, library, matrix = both
    columns = library.vocabulary_
    assert set(columns) == set(ours.idf)
    for term, column in columns.items():
        assert abs(ours.idf[term] - library.idf_[column]) <= 1e-12
    names = library.get_feature_names_out()
    matrix = matrix.tocsr()
    worst = 0.0
    for row, vector in enumerate(ours.vectors):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        theirs = {names[c]: v for c, v in zip(matrix.indices[start:end], matrix.data[start:end])}
        assert set(vector) == set(theirs)
        worst = max([worst] + [abs(vector[t] - v) for t, v in theirs.items()])
    assert worst <= 1e-12


@pytest.mark.parametrize("query", ["Join a sequence of arrays along an existing axis.",
                                   "how do I invert a matrix", "random integers between 1 and 6",
                                   "fft of a real signal"])
def test_rankings_equal(both, query):
    ours, library, matrix = both
    scores = (matrix @ library.transform([query]).T).toarray().ravel()
    theirs = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > 0]
    assert [n for n, _ in ours.search(query)] == theirs
    for n, score in ours.search(query)[:20]:
        assert abs(score - scores[n]) <= 1e-12


def test_a_changed_weighting_would_be_caught(texts):
    """The comparison can fail: plain (not sublinear) term frequency gives other weights."""
    ours = TfidfIndex(texts)
    plain = TfidfVectorizer(analyzer=tfidf_tokens, sublinear_tf=False, smooth_idf=True, norm="l2")
    matrix = plain.fit_transform(texts)
    names = plain.get_feature_names_out()
    matrix = matrix.tocsr()
    differences = [abs(ours.vectors[r][names[c]] - v) for r in range(200)
                   for c, v in zip(matrix.indices[matrix.indptr[r]:matrix.indptr[r + 1]],
                                   matrix.data[matrix.indptr[r]:matrix.indptr[r + 1]])]
    assert max(differences) > 1e-3


def test_a_tokenizer_is_applied_to_units_and_questions_alike():
    """``TfidfIndex(texts, tokenize)`` (lab 02's TF-IDF at full strength): stems on both sides, names kept."""
    from ragcourse.engines.lexical import SHORT_STOPWORDS, Analyzer
    from ragcourse.engines.tfidf import TfidfIndex, tfidf_tokens

    texts = ["Sort an array along an axis.", "Return elements chosen where a condition holds.", "Random numbers"]
    strong = TfidfIndex(texts, Analyzer(SHORT_STOPWORDS, keep={"where"}, stemming=True))
    assert "sort" in strong.idf and "where" in strong.idf and "sorting" not in strong.idf
    assert [n for n, _ in strong.search("sorting")] == [0]          # the question is stemmed too
    assert [n for n, _ in strong.search("where")] == [1]            # a name the default list would drop
    default = TfidfIndex(texts)
    assert default.tokenize is tfidf_tokens
    assert default.search("sorting") == [] and default.search("where") == []


def test_lab02_shows_exactly_this_code():
    """Lab 02 prints the index from the package (``inspect.getsource``), so the code it shows is the code tested here."""
    import inspect
    import json

    from ragcourse.batch.notebooks import NOTEBOOKS_DIR

    cells = json.loads((NOTEBOOKS_DIR / "labs" / "02-evaluation-chunks-and-dense.ipynb").read_text("utf-8"))["cells"]
    shown = ["".join(o.get("text", "")) for c in cells if c["cell_type"] == "code"
             and "inspect.getsource(TfidfIndex)" in "".join(c["source"]) for o in c["outputs"]]
    assert len(shown) == 1
    assert inspect.getsource(TfidfIndex) in shown[0] and inspect.getsource(tfidf_tokens) in shown[0]
