"""The pipeline's ranked list of pages (``rag.pipeline.RankedPages``): each page once, as many as asked for.

Issue 51: ``search --retriever postgres -k 10`` stopped at the pages of the second stage's 8 kept chunks
(5.1 pages a question on the 109 answerable ``dev`` questions, none with 10), so past the fifth place it added no right page. The list
is now the second stage's whole order, each page once, searched deeper when the candidates hold too few.

- ``distinct_pages`` and ``deeper_per_path`` on tiny cases (no database);
- the pipeline over six small files: a shallow first stage searched deeper until it holds the pages
  asked for, the first pages never moved by that, a filter applied before the cut, every drop counted;
- the real corpus and the real ``dev`` questions: 10 distinct pages for every one, the context unchanged;
- names as people type them, built from the corpus's own page names: the named page in the top 3.
"""
from __future__ import annotations

import pytest
from support.database import CORPUS, SMALL, FakeEncoder, numpy_index, write_corpus

from ragcourse.rag.passages import Passage, ScoredPassage
from ragcourse.rag.pipeline import (MAX_PER_PATH, PAGES, Pipeline, PipelineRetriever, RankedPages, deeper_per_path,
                                    distinct_pages)
from ragcourse.rag.rerank import FusedOrder


def chunk(doc_id: str, ordinal: int, rank: int) -> ScoredPassage:
    return ScoredPassage(Passage(rank, f"{doc_id}.md", ordinal, 0, 1, "text"), 1.0 / rank, rank)


# a second stage's order: page a's chunks fill places 1, 3 and 4
ORDER = [chunk(doc, n, rank) for rank, (doc, n) in enumerate(
    [("a", 0), ("b", 0), ("a", 1), ("a", 2), ("c", 0), ("b", 1), ("d", 0), ("e", 0)], start=1)]


def test_distinct_pages_lists_each_page_once_in_rank_order_and_counts_what_it_passed_over():
    pages, folded, filtered, left = distinct_pages(ORDER, 3)
    assert [sp.passage.doc_id for sp in pages] == ["a", "b", "c"]
    assert [sp.rank for sp in pages] == [1, 2, 3], "ranked by page, not by chunk"
    assert [sp.passage.ordinal for sp in pages] == [0, 0, 0] and pages[2].score == ORDER[4].score, \
        "each page keeps the chunk that won it, with its score"
    assert (folded, filtered, left) == (2, 0, 2)   # a#1, a#2 before the list was full; d and e had no room
    everything, folded, _, left = distinct_pages(ORDER, 10)
    assert [sp.passage.doc_id for sp in everything] == ["a", "b", "c", "d", "e"] and (folded, left) == (3, 0)


def test_distinct_pages_filters_before_the_cut_and_adds_after_pages_already_listed():
    pages, _, filtered, left = distinct_pages(ORDER, 2, allowed={"b", "d", "e"})
    assert [sp.passage.doc_id for sp in pages] == ["b", "d"] and filtered == 2 and left == 1   # a, c refused
    shallow, *_ = distinct_pages(ORDER[:2], 4)
    deeper_order = [chunk("e", 0, 1), *ORDER]     # a deeper search may rank a new page first
    pages, *_ = distinct_pages(deeper_order, 4, listed=shallow)
    assert [sp.passage.doc_id for sp in pages] == ["a", "b", "e", "c"], "the shallow pages keep their places"
    assert [sp.rank for sp in pages] == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="wanted"):
        distinct_pages(ORDER, 0)


def test_deeper_per_path_projects_from_the_share_found_and_stays_within_bounds():
    assert deeper_per_path(60, 5, 10) == 120           # twice, as projected
    assert deeper_per_path(60, 2, 10) == 300           # 60 * 10 / 2
    assert deeper_per_path(60, 0, 10) == 600           # nothing found: as if one
    assert deeper_per_path(60, 9, 10) == 120           # the projection (67) is below twice
    assert deeper_per_path(600, 1, 10) == MAX_PER_PATH


# ---------------------------------------------------------------- the pipeline over six small files

@pytest.fixture(scope="module")
def small_index(database, tmp_path_factory):
    from ragcourse.rag.store import PgIndex

    index = PgIndex(database, schema="t_ranked_pages", policy=SMALL, encoder=FakeEncoder())
    index.refresh(write_corpus(tmp_path_factory.mktemp("ranked") / "corpus", CORPUS))
    yield index
    index.drop()
    index.close()


def test_a_shallow_first_stage_is_searched_deeper_until_it_holds_the_pages_asked_for(small_index):
    question = "What does the walrus eat?"
    shallow = Pipeline(small_index, FakeEncoder(), second_stage=FusedOrder(), per_path=1, keep=1, pages=1)
    deep = Pipeline(small_index, FakeEncoder(), second_stage=FusedOrder(), per_path=1, keep=1, pages=4)
    one, four = shallow.ask(question), deep.ask(question)
    retriever = PipelineRetriever(deep)
    assert [len(hits) for hits in retriever.search_many([question])] == [4] and retriever.deepened == 1
    assert one.pages.searches == 1 and len(one.pages.hits) == 1
    assert four.pages.searches > 1 and four.pages.per_path > 1, "two candidates hold at most two pages"
    assert len(four.pages.hits) == 4 and len(set(four.ranked_pages())) == 4
    assert four.ranked_pages()[0] == one.ranked_pages()[0], "a deeper search never moves a page found before"
    assert four.reranked == one.reranked and four.context == one.context, "the context reads the first search"
    assert "pages: 4 of 4 wanted" in "\n".join(four.lines()) and four.to_dict()["pages"]["searches"] == four.pages.searches


def test_more_pages_than_the_tenant_has_stop_when_the_paths_run_out_and_are_counted(small_index):
    pipeline = Pipeline(small_index, FakeEncoder(), second_stage=FusedOrder(), pages=50)
    retriever = PipelineRetriever(pipeline)
    found = retriever.search_many(["What does the walrus eat?", "lava and magma"])
    assert all(len(hits) == len(CORPUS) for hits in found), "every page once, no more"
    assert retriever.short == 2 and retriever.folded > 0 and retriever.deepened == 0
    trace = pipeline.ask("lava and magma")
    assert trace.pages.per_path < MAX_PER_PATH, "a path that came back short holds every row: no deeper search"
    filtered = retriever.search_many(["What does the walrus eat?"], allowed={"beta"})
    assert [[h.doc_id for h in hits] for hits in filtered] == [["beta"]]
    assert retriever.filtered_out == len(CORPUS) - 1


def test_the_ranked_list_starts_with_the_pages_of_the_kept_chunks(small_index):
    pipeline = Pipeline(small_index, FakeEncoder(), second_stage=FusedOrder(), keep=3)
    for trace in pipeline.ask_many(["What does the walrus eat?", "lava and magma", "zebra code in the vault"]):
        kept = trace.documents("reranked")
        assert trace.ranked_pages()[:len(kept)] == kept
        assert isinstance(trace.pages, RankedPages) and trace.pages.wanted == PAGES


# ---------------------------------------------------------------- the real corpus and the real dev questions

@pytest.fixture(scope="module")
def numpy_pipeline(database, tmp_path_factory):
    """The package's kept system (``DEFAULT_SETTING``) over the numpy reference, as ``index`` builds it."""
    from ragcourse.rag.pipeline import DEFAULT_SETTING

    for index, encoder in numpy_index(database, tmp_path_factory, "t_ranked_numpy"):
        yield DEFAULT_SETTING.pipeline(index, encoder, pages=10)


@pytest.mark.embeddings("questions", "lab 04")
def test_every_real_dev_question_gets_ten_distinct_pages(numpy_pipeline):
    from ragcourse.corpus.queries import real_questions

    questions = [q.text for q in real_questions("dev")]
    traces = numpy_pipeline.ask_many(questions)
    short = {q: t.ranked_pages() for q, t in zip(questions, traces) if len(set(t.ranked_pages())) != 10}
    assert not short, f"{len(short)} of {len(questions)} dev questions got fewer than 10 distinct pages: {short}"
    for trace in traces:
        kept = trace.documents("reranked")
        assert trace.ranked_pages()[:len(kept)] == kept, "the pages of the 8 kept chunks come first, in their order"
        assert len(trace.reranked.ranked) == 8, "the context still reads the second stage's best 8 chunks"


# Names as people type them, made from the corpus's own page names (never from the real questions): the
# page's name with ``np.``, in full, without ``numpy.`` for a submodule's page, ``arr.NAME()`` for a method.
TYPED_PAGES = ("numpy.linspace", "numpy.concatenate", "numpy.where", "numpy.argsort", "numpy.unique", "numpy.meshgrid",
               "numpy.ndarray.tolist", "numpy.ndarray.flatten", "numpy.linalg.solve", "numpy.linalg.norm",
               "numpy.fft.ifft", "numpy.random.Generator.choice", "numpy.einsum", "numpy.cumsum", "numpy.polyfit",
               "numpy.histogram")
MISSPELT = {"np.concatinate": "numpy.concatenate", "np.meshgird": "numpy.meshgrid", "np.histogramm": "numpy.histogram"}
# Misspellings the system does not find yet (2026-12-06, before and after the ranked list): full text matches
# whole words only and MiniLM reads the misspelt word as other pieces; the name channel (tests/rag/test_rungs.py)
# finds two of the three, but lab 04's dev did not keep it.
NOT_YET = {"np.linespace": "numpy.linspace", "np.argsrot": "numpy.argsort", "np.linalg.slove": "numpy.linalg.solve"}


def typed_forms(doc_id: str) -> list[str]:
    parts = doc_id.split(".")
    if parts[1] == "ndarray":
        return [f"arr.{parts[-1]}()", doc_id]
    return ["np." + ".".join(parts[1:]), doc_id, *([".".join(parts[1:])] if len(parts) > 2 else [])]


TYPED = {**{form: doc_id for doc_id in TYPED_PAGES for form in typed_forms(doc_id)}, **MISSPELT}


def test_the_typed_names_are_the_corpus_pages():
    from ragcourse.corpus.apidocs import load_corpus

    ids = {d.doc_id for d in load_corpus().documents}
    assert set(TYPED.values()) | set(NOT_YET.values()) <= ids
    assert len(TYPED) == 39 and len(set(TYPED_PAGES)) == 16


@pytest.mark.embeddings("questions", "lab 04")
def test_a_typed_name_puts_its_page_in_the_top_3(numpy_pipeline):
    names = list(TYPED)
    missed = {name: trace.ranked_pages()[:3] for name, trace in zip(names, numpy_pipeline.ask_many(names))
              if TYPED[name] not in trace.ranked_pages()[:3]}
    assert not missed, f"{len(missed)} of {len(names)} typed names miss their page in the top 3: {missed}"


@pytest.mark.embeddings("questions", "lab 04")
@pytest.mark.xfail(strict=True, reason="a misspelt name shares no word with its page; the name channel "
                                        "(Setting(names=True)) was not kept on dev")
@pytest.mark.parametrize("name", sorted(NOT_YET))
def test_a_misspelt_name_the_system_does_not_find_yet(numpy_pipeline, name):
    assert NOT_YET[name] in numpy_pipeline.ask(name).ranked_pages()[:3]


def test_search_postgres_returns_k_distinct_pages_and_says_what_it_passed_over(database, tmp_path, capsys, monkeypatch):
    """``search --retriever postgres -k K`` hands K to the pipeline (over six small files here) and prints the counts."""
    import json

    from ragcourse.cli import postgres
    from ragcourse.cli.main import main
    from ragcourse.rag.store import PgIndex

    index = PgIndex(database, schema="t_ranked_command", policy=SMALL, encoder=FakeEncoder())
    index.refresh(write_corpus(tmp_path / "corpus", CORPUS))

    class Borrowed:   # the command closes what it opened; the test's database stays open
        def close(self):
            pass

    monkeypatch.setattr(postgres, "schema_for", lambda args, need_root=True: (None, index.schema))
    monkeypatch.setattr(postgres, "open_index", lambda schema, policy=None, tenant=None: (Borrowed(), index))
    try:
        for k in (1, 4, 9):
            assert main(["search", "What does the walrus eat?", "--retriever", "postgres", "-k", str(k), "--json"]) == 0
            captured = capsys.readouterr()
            pages = [hit["doc_id"] for hit in json.loads(captured.out)["results"]]
            assert len(pages) == len(set(pages)) == min(k, len(CORPUS))
            assert f"pages: {k} asked a question; 0 of 1 questions searched deeper, {int(k > len(CORPUS))} got fewer" \
                in captured.err
    finally:
        index.drop()
        index.close()
