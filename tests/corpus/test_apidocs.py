"""The numpy-reference corpus: its fingerprint, ids and aliases, sections, See Also, export."""
from __future__ import annotations

import numpy
import pytest

from ragcourse.corpus.apidocs import LEFT_OUT_SECTIONS, export_markdown, load_corpus

# If the pinned numpy (or the way we read it) changes, these change: update them on purpose,
# together with every lab's stored outputs, never to make a failing test pass.
NUMPY_VERSION = "2.4.6"
DOCUMENTS = 686
FINGERPRINT = "eb32cd4c77d6aef56b1375544f99e9c01443a5664d064e6c6e6b013f97009e0c"


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


def test_the_corpus_is_the_one_the_labs_were_measured_on(corpus):
    assert numpy.__version__ == NUMPY_VERSION
    assert len(corpus) == DOCUMENTS
    assert corpus.fingerprint() == FINGERPRINT


def test_other_libraries_editing_numpy_docstrings_do_not_change_the_corpus():
    import scipy.signal  # noqa: F401  (appends an "Array API" note to numpy.sinc's docstring)

    assert "Array API" in numpy.sinc.__doc__
    load_corpus.cache_clear()
    assert load_corpus().fingerprint() == FINGERPRINT
    assert "Array API" not in load_corpus().by_id["numpy.sinc"].text


def test_the_fingerprint_sees_a_one_character_change(corpus):
    from dataclasses import replace

    from ragcourse.corpus.apidocs import ApiCorpus

    first = corpus.documents[0]
    changed = ApiCorpus((replace(first, title=first.title + "."),) + corpus.documents[1:], corpus.numpy_version)
    assert changed.fingerprint() != corpus.fingerprint()


def test_one_document_per_object_with_its_other_names_as_aliases(corpus):
    ids = [d.doc_id for d in corpus.documents]
    assert len(ids) == len(set(ids)) and ids == sorted(ids)
    concatenate = corpus.by_id["numpy.concatenate"]
    assert "numpy.concat" in concatenate.aliases and "numpy.concat" not in corpus.by_id
    assert corpus.alias_table["numpy.concat"] == "numpy.concatenate"
    assert numpy.concat is numpy.concatenate


def test_kinds_modules_and_titles(corpus):
    assert {d.kind for d in corpus.documents} == {"function", "ufunc", "class", "method"}
    assert corpus.by_id["numpy.add"].kind == "ufunc"
    assert corpus.by_id["numpy.linalg.inv"].module == "numpy.linalg"
    normal = corpus.by_id["numpy.random.Generator.normal"]
    assert normal.kind == "method" and normal.module == "numpy.random"
    assert normal.title == "Draw random samples from a normal (Gaussian) distribution."
    # the ufunc's signature line is not its title
    assert corpus.by_id["numpy.add"].title == "Add arguments element-wise."
    assert corpus.by_id["numpy.add"].signature.startswith("add(x1, x2")
    # the legacy RandomState functions are left out
    assert "numpy.random.normal" not in corpus.by_id


def test_the_summary_is_never_indexed_and_examples_are_left_out(corpus):
    for document in corpus.documents:
        headings = {s.heading for s in document.sections}
        assert not headings & {*LEFT_OUT_SECTIONS, "Summary", "Signature"}
        assert not document.text.split("\n\n")[1:2] == [document.title]   # the summary paragraph is not kept
    inv = corpus.by_id["numpy.linalg.inv"]
    assert [s.heading for s in inv.sections][:3] == ["Extended Summary", "Parameters", "Returns"]
    assert "Compute the inverse of a matrix." not in inv.text


def test_see_also_names_become_ids(corpus):
    see_also = corpus.by_id["numpy.concatenate"].see_also
    assert "numpy.stack" in see_also and "numpy.split" in see_also
    assert all(ref in corpus.by_id for d in corpus.documents for ref in d.see_also)


def test_markdown_export_writes_one_file_per_document_and_refuses_a_full_folder(corpus, tmp_path):
    target = tmp_path / "pages"
    assert export_markdown(corpus, target) == DOCUMENTS
    page = (target / "numpy.linalg.inv.md").read_text(encoding="utf-8")
    assert page.startswith("# numpy.linalg.inv\n\nCompute the inverse of a matrix.\n")
    assert "\n## Parameters\n" in page and "\n## Returns\n" in page
    with pytest.raises(ValueError, match="new or empty directory"):
        export_markdown(corpus, target)
    assert len(list(target.iterdir())) == DOCUMENTS
    assert [p.name for p in tmp_path.iterdir()] == ["pages"]   # no staging folder left behind


def test_the_modules_real_questions_need_are_in_by_their_rules(corpus):
    ids = corpus.by_id
    for needed in ("numpy.lib.stride_tricks.sliding_window_view", "numpy.lib.stride_tricks.as_strided",
                   "numpy.testing.assert_allclose", "numpy.testing.assert_array_equal",
                   "numpy.polynomial.polynomial.polyfit", "numpy.polynomial.polynomial.Polynomial",
                   "numpy.strings.upper", "numpy.ma.masked_where", "numpy.ndarray.item", "numpy.ndarray.tolist"):
        assert needed in ids, needed
    by_module = {}
    for document in corpus.documents:
        by_module.setdefault(document.doc_id.rsplit(".", 1)[0], []).append(document.doc_id.rsplit(".", 1)[1])
    # numpy.testing: its assertions only, not the test-runner helpers
    assert all(name.startswith("assert") for name in by_module["numpy.testing"])
    # numpy.ma and ndarray's methods: only what has no top-level namesake (the rest repeat a top-level page)
    for module in ("numpy.ma", "numpy.ndarray"):
        assert by_module[module] and not [name for name in by_module[module] if hasattr(numpy, name)], module
    assert "numpy.ndarray.sum" not in ids and "numpy.ma.concatenate" not in ids
    # numpy.char repeats numpy.strings; the other polynomial families repeat the power series
    assert not [d for d in ids if d.startswith(("numpy.char.", "numpy.polynomial.chebyshev."))]
    assert corpus.by_id["numpy.ndarray.item"].kind == "method"



def test_searched_text_is_text_with_the_summary_after_the_head():
    """The searched index keeps the summary line; ``text`` (self-retrieval's index) never holds it."""
    from ragcourse.corpus.apidocs import with_summaries

    corpus = load_corpus()
    pages = with_summaries(corpus.documents)
    assert [p.doc_id for p in pages] == [d.doc_id for d in corpus.documents]
    for document, page in zip(corpus.documents, pages):
        head, _, rest = document.text.partition("\n\n")
        assert page.text == "\n\n".join(part for part in (head, document.title, rest) if part)
        assert document.title not in document.text.split("\n\n")[:2]   # the summary never opens text
