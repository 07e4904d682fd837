"""Every retriever, second stage and reader the course has implements its stage's protocol (``engines.stages``).

Each is checked with ``isinstance`` against its ``runtime_checkable`` protocol, then called through the
protocol on a small case whose answer is known: a protocol whose members exist but do the wrong thing
(a filter ignored, a list not re-ordered, a citation that names no passage) fails here.
"""
from __future__ import annotations

import pytest
from support.database import CORPUS, SMALL, FakeEncoder, write_corpus

from ragcourse.engines.chunking.text_chunks import TextChunk
from ragcourse.engines.retrievers import (Bm25Retriever, DenseRetriever, DocumentHit, HybridRetriever,
                                          LexicalRetriever, TfidfRetriever, run_questions)
from ragcourse.engines.stages import Reader, Retriever, SecondStage
from ragcourse.rag.context import ContextBudget, assemble, token_counter
from ragcourse.rag.passages import Passage, ScoredPassage
from ragcourse.rag.reader import Answer, ExtractiveReader
from ragcourse.rag.rerank import FusedOrder, LearnedOrder, RerankResult, SentenceMaxSimReranker
from ragcourse.rag.search import Candidates

PAGES = {"walrus": "The walrus eats clams on the sea floor. Walruses haul out on the ice.",
         "volcano": "Volcanoes erupt lava and ash. The magma chamber below a volcano refills slowly.",
         "oyster": "Oysters filter the water of the bay. An oyster reef protects the coast."}
CHUNKS = [TextChunk(doc_id, 0, text) for doc_id, text in PAGES.items()]


def in_memory() -> dict[str, Retriever]:
    encoder = FakeEncoder()
    bm25, dense = Bm25Retriever(CHUNKS), DenseRetriever(CHUNKS, encoder)
    return {"lexical": LexicalRetriever(CHUNKS), "bm25": bm25, "tfidf": TfidfRetriever(CHUNKS), "dense": dense,
            "hybrid": HybridRetriever(bm25, dense, constant=10, depth=2)}


def through_retriever(retriever: Retriever, questions: list[str], allowed=None) -> list[list[DocumentHit]]:
    assert isinstance(retriever, Retriever), f"{type(retriever).__name__} is not a stages.Retriever"
    return retriever.search_many(questions, allowed)


@pytest.mark.parametrize("name", ["lexical", "bm25", "tfidf", "dense", "hybrid"])
def test_every_in_memory_retriever_answers_a_batch_and_filters(name):
    retriever = in_memory()[name]
    found = through_retriever(retriever, ["what does the walrus eat", "lava and magma"])
    assert [hits[0].doc_id for hits in found] == ["walrus", "volcano"]
    filtered = through_retriever(retriever, ["what does the walrus eat", "lava and magma"], allowed={"oyster", "volcano"})
    assert all(hit.doc_id in {"oyster", "volcano"} for hits in filtered for hit in hits)
    assert filtered[1][0].doc_id == "volcano"
    assert through_retriever(retriever, []) == []


def test_run_questions_goes_through_the_protocol():
    from ragcourse.corpus.queries import Question

    class Recording:
        name = "recording"

        def __init__(self):
            self.batches = []

        def search_many(self, questions, allowed=None):
            self.batches.append(list(questions))
            return [[DocumentHit(q.split()[0], 0, 1.0)] for q in questions]

    recording = Recording()
    questions = [Question("q1", "walrus?", ("walrus",), "test"), Question("q2", "oyster?", ("oyster",), "test")]
    assert run_questions(recording, questions) == {"q1": ["walrus?"], "q2": ["oyster?"]}
    assert recording.batches == [["walrus?", "oyster?"]], "one batch, not one call a question"


def test_the_catalogue_calls_the_protocol_for_the_hybrid_filter_too(monkeypatch):
    from ragcourse.engines import catalogue

    built = in_memory()
    monkeypatch.setattr(catalogue, "build_retriever", lambda name, corpus=None, summaries=True: built[name])
    for name in ("bm25", "hybrid"):
        hits = catalogue.answers(name, ["what does the walrus eat"], allowed={"oyster"})
        assert [[h.doc_id for h in found] for found in hits] in ([["oyster"]], [[]])


# ---------------------------------------------------------------- second stages

def passage(number: int, doc_id: str, text: str) -> Passage:
    return Passage(number, f"{doc_id}.md", 0, 0, len(text), text)


def candidates_for(question: str) -> Candidates:
    """Full text ranks the oyster page first, dense the walrus page; the fusion puts volcano first."""
    walrus, volcano, oyster = (passage(n, d, t) for n, (d, t) in enumerate(PAGES.items(), start=1))
    full_text = (ScoredPassage(oyster, 3.0, 1), ScoredPassage(volcano, 2.0, 2))
    dense = (ScoredPassage(walrus, 0.9, 1), ScoredPassage(volcano, 0.5, 2))
    fused = (ScoredPassage(volcano, 0.03, 1), ScoredPassage(oyster, 0.02, 2), ScoredPassage(walrus, 0.01, 3))
    return Candidates(question, full_text, dense, fused)


def through_second_stage(stage: SecondStage, question: str, keep: int) -> RerankResult:
    assert isinstance(stage, SecondStage), f"{type(stage).__name__} is not a stages.SecondStage"
    return stage.reorder(question, candidates_for(question), keep)


def test_fused_order_keeps_the_fusion():
    result = through_second_stage(FusedOrder(), "what does the walrus eat", 2)
    assert [sp.passage.doc_id for sp in result.ranked] == ["volcano", "oyster"]
    assert [sp.rank for sp in result.ranked] == [1, 2] and result.scored == 3


def test_the_sentence_rescorer_reads_the_text():
    result = through_second_stage(SentenceMaxSimReranker(FakeEncoder()), "what does the walrus eat", 3)
    assert result.ranked[0].passage.doc_id == "walrus" and result.scored == 3


def test_the_learned_order_reads_both_paths_not_the_fusion():
    from dataclasses import replace

    stage = LearnedOrder()
    assert isinstance(stage, SecondStage)
    question = "which reef protects the oyster coast"
    unfused = replace(candidates_for(question), fused=())
    result = stage.reorder(question, unfused, 2)
    assert result.scored == 3, "every candidate of either path, once, with no fused list to read"
    assert len(result.ranked) == 2 and result.ranked[0].score >= result.ranked[1].score
    assert result.ranked[0].passage.doc_id == "oyster", "the page named in the question, first in full text"


@pytest.mark.slow
@pytest.mark.embeddings
def test_a_cross_encoder_is_a_second_stage(tmp_path):
    torch = pytest.importorskip("torch")
    from sentence_transformers import CrossEncoder

    from ragcourse.engines.dense import model_folder
    from ragcourse.rag.rerank import CrossEncoderReranker

    torch.manual_seed(51)
    CrossEncoder(model_folder(), num_labels=1, device="cpu").save(str(tmp_path))
    stage = CrossEncoderReranker(str(tmp_path))
    result = through_second_stage(stage, "what does the walrus eat", 2)
    texts = [sp.passage.text for sp in candidates_for("q").fused]
    scores = stage.score("what does the walrus eat", texts)
    best = sorted(range(3), key=lambda i: -scores[i])[:2]
    assert [sp.passage.text for sp in result.ranked] == [texts[i] for i in best]


# ---------------------------------------------------------------- readers

def context_of(question: str):
    ranked = [ScoredPassage(passage(n, d, t), 1.0, n) for n, (d, t) in enumerate(PAGES.items(), start=1)]
    return assemble(ranked, ContextBudget(), token_counter(FakeEncoder()))


def through_reader(reader: Reader, question: str) -> Answer:
    assert isinstance(reader, Reader), f"{type(reader).__name__} is not a stages.Reader"
    return reader.answer(question, context_of(question))


def test_the_extractive_reader_cites_what_it_was_given():
    answer = through_reader(ExtractiveReader(FakeEncoder(), threshold=-1.0), "what does the walrus eat")
    assert not answer.abstained and answer.citations[0] == "walrus.md#0"
    assert set(answer.citations) <= {sp.passage.citation for sp in context_of("q").admitted}


@pytest.mark.generator
def test_the_generating_reader_is_a_reader():
    from ragcourse.rag.generator import GeneratingReader, Generator, GeneratorUnavailable

    try:
        reader = GeneratingReader(Generator(max_new_tokens=8))
        answer = through_reader(reader, "what does the walrus eat")
    except GeneratorUnavailable as missing:
        pytest.skip(str(missing))
    assert isinstance(answer, Answer) and answer.question == "what does the walrus eat"
    assert set(answer.citations) <= {sp.passage.citation for sp in context_of("q").admitted}
    assert reader.last_prompt is not None and len(reader.last_prompt.passages) == 3


# ---------------------------------------------------------------- the PostgreSQL pipeline as a retriever

def test_the_postgres_pipeline_is_a_retriever(database, tmp_path):
    from ragcourse.rag.pipeline import Pipeline, PipelineRetriever
    from ragcourse.rag.store import PgIndex

    index = PgIndex(database, schema="t_stage_protocols", policy=SMALL, encoder=FakeEncoder())
    try:
        index.refresh(write_corpus(tmp_path / "corpus", CORPUS))
        retriever = PipelineRetriever(Pipeline(index, FakeEncoder(), second_stage=FusedOrder()))
        found = through_retriever(retriever, ["What does the walrus eat?", "lava and magma"])
        assert found[0][0].doc_id == "alpha" and found[1][0].doc_id == "beta"
        assert all(len({h.doc_id for h in hits}) == len(hits) for hits in found), "each page once"
        before = sum(len(hits) for hits in found)
        kept = through_retriever(retriever, ["What does the walrus eat?", "lava and magma"], allowed={"beta"})
        assert [[h.doc_id for h in hits] for hits in kept] == [[h.doc_id for h in hits if h.doc_id == "beta"]
                                                               for hits in found]
        assert retriever.filtered_out == before - sum(len(hits) for hits in kept)
    finally:
        index.drop()
        index.close()
