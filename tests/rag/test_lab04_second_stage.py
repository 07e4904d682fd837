"""Lab 04 after retrieval: the reranker, the context assembly and the extractive reader.

A fake encoder (hashed bag of words, 64 dimensions) stands in for MiniLM so that these
tests need no model; one test at the end runs the real encoder.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse.rag.context import (REASONS, AssembledContext, ContextBudget, assemble, covered, drop_counts,
                                    render)
from ragcourse.rag.passages import Passage, ScoredPassage
from ragcourse.rag.reader import (NO_CONTEXT, Answer, ExtractiveReader, abstention_rate, check_citations,
                                   citation_accuracy, citation_doc_id, passage_sentences)
from ragcourse.rag.rerank import (INPUT_CHARS, KEEP, CrossEncoderReranker, Reranker, SentenceMaxSimReranker,
                                   make_reranker, rerank)


class FakeEncoder:
    """Unit vectors from words hashed into 64 dimensions; ``token_counts`` counts whitespace words."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in re.findall(r"\w+", text.lower()):
                row[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
            if not row.any():
                row[0] = 1.0
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def token_counts(self, texts):
        return [len(t.split()) for t in texts]


def words(text: str) -> int:
    return len(text.split())


def passage(text: str, source: str = "a.md", ordinal: int = 0, start: int = 0, end: int | None = None) -> Passage:
    return Passage(ordinal + 1, source, ordinal, start, start + len(text) if end is None else end, text)


def scored(passages) -> list[ScoredPassage]:
    return [ScoredPassage(p, 1.0 - i / 100, i + 1) for i, p in enumerate(passages)]


class Recorder:
    """A reranker that is not one of ours: it has a name and a score method, nothing else."""

    name = "recorder"

    def __init__(self, scores=None):
        self.scores = scores
        self.seen: list[list[str]] = []

    def score(self, question, texts):
        self.seen.append(list(texts))
        return list(self.scores) if self.scores is not None else [0.5] * len(texts)


# ---------------------------------------------------------------- rerank

def test_truncation_is_counted_and_every_text_is_cut_once():
    candidates = [passage("x" * n, ordinal=i) for i, n in enumerate([10, 1999, 2000, 2001, 5000])]
    recorder = Recorder()
    result = rerank(recorder, "q", candidates)
    assert (result.truncated, result.scored, result.name) == (2, 5, "recorder")
    assert len(recorder.seen) == 1
    assert [len(t) for t in recorder.seen[0]] == [10, 1999, 2000, 2000, 2000]


def test_text_beyond_the_cut_cannot_change_a_score():
    head = ("Draw samples from a distribution. " * 70)[:INPUT_CHARS]
    tail = " Join a sequence of arrays along an existing axis." * 5
    reranker = SentenceMaxSimReranker(FakeEncoder())
    plain, padded = passage(head, ordinal=0), passage(head + tail, ordinal=1)
    result = rerank(reranker, "join a sequence of arrays", [plain, padded])
    assert result.truncated == 1
    assert result.ranked[0].score == result.ranked[1].score
    assert [s.passage for s in result.ranked] == [plain, padded]   # tie: incoming order


def test_keep_eight_ranks_from_one_and_stable_ties():
    candidates = [passage(f"text {i}", ordinal=i) for i in range(12)]
    scores = [0.1, 0.9, 0.5, 0.9, 0.5, 0.5, 0.2, 0.9, 0.5, 0.3, 0.0, 0.5]
    result = rerank(Recorder(scores), "q", candidates)
    assert KEEP == 8 and len(result.ranked) == 8
    assert [s.rank for s in result.ranked] == list(range(1, 9))
    assert [s.passage.ordinal for s in result.ranked] == [1, 3, 7, 2, 4, 5, 8, 11]
    assert [s.score for s in result.ranked] == [0.9, 0.9, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5]
    assert len(rerank(Recorder(scores[:3]), "q", candidates[:3]).ranked) == 3


def test_any_object_with_name_and_score_is_a_reranker():
    assert isinstance(Recorder(), Reranker)
    empty = rerank(Recorder(), "q", [])
    assert empty == type(empty)((), 0, 0, "recorder")


def test_rerank_refuses_bad_parameters_and_bad_scores():
    with pytest.raises(ValueError, match="keep"):
        rerank(Recorder(), "q", [passage("a")], keep=0)
    with pytest.raises(ValueError, match="input_chars"):
        rerank(Recorder(), "q", [passage("a")], input_chars=0)
    with pytest.raises(RuntimeError, match="1 scores for 2 texts"):
        rerank(Recorder([0.3]), "q", [passage("a"), passage("b", ordinal=1)])
    with pytest.raises(RuntimeError, match="finite"):
        rerank(Recorder([math.nan]), "q", [passage("a")])


def test_max_sim_scores_the_best_sentence_in_one_encode_call():
    encoder = FakeEncoder()
    reranker = SentenceMaxSimReranker(encoder)
    texts = ["Random numbers come from a generator. Join arrays along an\nexisting axis.",
             "Compute the inverse of a matrix.",
             "  \n\n  "]
    scores = reranker.score("join arrays along an existing axis", texts)
    assert len(encoder.calls) == 1
    assert encoder.calls[0][0] == "join arrays along an existing axis"
    assert len(encoder.calls[0]) == 1 + 3   # question + two sentences + one, the blank text has none
    assert scores[0] == pytest.approx(1.0, abs=1e-6)
    assert scores[1] < 0.5
    assert scores[2] == -1.0
    reranker.score("again", texts)
    assert len(reranker.splitter.memo) == 3   # every text split once


def test_passage_sentences_joins_wrapped_lines_and_splits_paragraphs():
    text = "First line of a\nwrapped sentence. Second one.\n\n  \n\nA new paragraph\n"
    assert passage_sentences(text, lambda s: re.split(r"(?<=\.) ", s)) == [
        "First line of a wrapped sentence.", "Second one.", "A new paragraph"]


def test_cross_encoder_bad_path_says_what_to_give(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ValueError, match=r"reranker model path .*no-such-model.* does not exist: give a folder"
                                         r" holding a sentence-transformers CrossEncoder"):
        CrossEncoderReranker(str(missing))
    with pytest.raises(ValueError, match="does not exist"):
        CrossEncoderReranker("")
    with pytest.raises(ValueError, match="does not exist"):
        make_reranker(FakeEncoder(), str(missing))
    default = make_reranker(FakeEncoder())
    assert isinstance(default, SentenceMaxSimReranker)
    assert default.name == "MiniLM sentence max-sim (bi-encoder re-scorer)"


# ---------------------------------------------------------------- context

def test_render_labels_every_passage():
    a, b = passage("alpha", "x.md", 0), passage("beta", "y.md", 3)
    assert render([a, b]) == "[x.md#0]\nalpha\n\n[y.md#3]\nbeta"


def test_duplicate_after_whitespace_and_case():
    a = passage("Join  arrays\nalong an axis.", "x.md", 0)
    b = passage("join arrays along AN axis. ", "y.md", 4, start=500)
    context = assemble(scored([a, b]), ContextBudget(), words)
    assert [s.passage for s in context.admitted] == [a]
    assert [(s.passage, r) for s, r in context.dropped] == [(b, "duplicate")]


def test_overlap_at_half_is_dropped_below_half_admitted_and_counted():
    first = passage("a" * 100, "x.md", 0, start=0)
    half = passage("b" * 100, "x.md", 1, start=50)           # 50 of 100 covered: dropped
    less = passage("c" * 100, "x.md", 2, start=51)           # 49 of 100 covered: admitted
    other = passage("d" * 100, "y.md", 0, start=0)            # same span, other source: admitted
    context = assemble(scored([first, half, less, other]), ContextBudget(), words)
    assert [s.passage for s in context.admitted] == [first, less, other]
    assert [(s.passage, r) for s, r in context.dropped] == [(half, "overlap")]
    assert context.repeated_characters == 49
    assert context.sources == ("x.md", "y.md")


def test_overlap_counts_the_union_of_admitted_spans():
    left = passage("l" * 30, "x.md", 0, start=0)              # [0, 30)
    right = passage("r" * 30, "x.md", 1, start=70)            # [70, 100)
    middle = passage("m" * 100, "x.md", 2, start=0)           # 60 of 100 covered by the two
    context = assemble(scored([left, right, middle]), ContextBudget(), words)
    assert drop_counts(context)["overlap"] == 1
    assert covered(0, 100, [(0, 30), (10, 40), (70, 100)]) == 70


def test_passage_limit():
    passages = [passage(f"text number {i}", f"s{i}.md", 0) for i in range(5)]
    context = assemble(scored(passages), ContextBudget(max_passages=3), words)
    assert len(context.admitted) == 3
    assert drop_counts(context) == {"duplicate": 0, "overlap": 0, "passage limit": 2, "budget": 0}


def test_first_passage_over_budget_leaves_an_empty_context():
    long = passage("word " * 50, "x.md", 0)
    context = assemble(scored([long]), ContextBudget(max_tokens=20), words)
    assert context.admitted == () and context.text == "" and context.tokens == 0 and context.characters == 0
    assert [r for _, r in context.dropped] == ["budget"]


def test_a_short_passage_still_fits_after_a_budget_drop():
    a = passage("one two three", "a.md", 0)                 # rendered: label + 3 words = 4 tokens
    big = passage("w " * 30, "b.md", 0)
    short = passage("four five", "c.md", 0)                  # 4 + 1 + 2 = 7 tokens
    context = assemble(scored([a, big, short]), ContextBudget(max_tokens=8), words)
    assert [s.passage for s in context.admitted] == [a, short]
    assert [(s.passage, r) for s, r in context.dropped] == [(big, "budget")]
    assert context.tokens == words(context.text) == 7
    assert context.characters == len(context.text)


def test_the_first_matching_reason_wins():
    a = passage("same text", "x.md", 0)
    copy = passage("Same  text", "x.md", 1)                 # duplicate, overlap and over the limit
    near = passage("other text", "x.md", 2, start=2)         # overlap and over the limit
    far = passage("word " * 50, "y.md", 0)                   # over the limit and over budget
    context = assemble(scored([a, copy, near, far]), ContextBudget(max_passages=1, max_tokens=10), words)
    assert [s.passage for s in context.admitted] == [a]
    assert [r for _, r in context.dropped] == ["duplicate", "overlap", "passage limit"]


@pytest.mark.parametrize("field, value", [("max_passages", 0), ("max_passages", 101), ("max_tokens", 0),
                                          ("max_tokens", 100_001), ("max_tokens", 2.5), ("max_passages", True)])
def test_budget_fields_are_validated(field, value):
    with pytest.raises(ValueError, match=field):
        ContextBudget(**{field: value})


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.integers(min_value=0, max_value=60), min_size=0, max_size=15),
       max_tokens=st.integers(min_value=1, max_value=200), max_passages=st.integers(min_value=1, max_value=8))
def test_rendered_context_never_exceeds_the_budget(lengths, max_tokens, max_passages):
    passages = [passage(" ".join(f"w{i}x{j}" for j in range(n)), f"s{i}.md", 0) for i, n in enumerate(lengths)]
    context = assemble(scored(passages), ContextBudget(max_passages, max_tokens), words)
    assert context.tokens == (words(context.text) if context.text else 0) <= max_tokens
    assert len(context.admitted) <= max_passages
    assert len(context.admitted) + len(context.dropped) == len(passages)
    assert set(r for _, r in context.dropped) <= set(REASONS)
    assert context.text == render([s.passage for s in context.admitted])


# ---------------------------------------------------------------- reader

def context_of(*passages: Passage) -> AssembledContext:
    return assemble(scored(passages), ContextBudget(), words)


CONCAT = passage("Join a sequence of arrays along an existing axis. The arrays must have the same shape.",
                 "numpy.concatenate.md", 0)
RANDOM = passage("Draw random samples from a normal distribution.", "numpy.random.normal.md", 2)


def test_reader_answers_with_cited_sentences_of_admitted_passages():
    encoder = FakeEncoder()
    reader = ExtractiveReader(encoder, sentences=2, threshold=0.3)
    context = context_of(RANDOM, CONCAT)
    answer = reader.answer("join a sequence of arrays along an existing axis", context)
    assert not answer.abstained
    assert answer.text.startswith("Join a sequence of arrays along an existing axis. [numpy.concatenate.md#0]")
    assert len(answer.evidence) == 2 and answer.evidence[0][2] == answer.best_score
    assert answer.evidence[0][2] >= answer.evidence[1][2]
    assert set(answer.citations) <= {s.passage.citation for s in context.admitted}
    assert answer.citations[0] == "numpy.concatenate.md#0"
    assert len(encoder.calls) == 1 and len(encoder.calls[0]) == 1 + 3
    assert check_citations(answer, context) == []


def test_an_answer_knows_how_close_it_is_to_changing():
    """``margin`` is the last sentence kept minus the first left out, by the encoder's own scores; the closest
    call is the smaller of that and the best score's distance from the threshold."""
    encoder = FakeEncoder()
    question = "join a sequence of arrays along an existing axis"
    answer = ExtractiveReader(encoder, sentences=2, threshold=0.3).answer(question, context_of(RANDOM, CONCAT))
    vectors = encoder.encode([question])
    sentences = [s for p in (RANDOM, CONCAT) for s in passage_sentences(p.text, lambda t: re.split(r"(?<=[.!?])\s+", t))]
    scores = sorted((encoder.encode([s])[0] @ vectors[0] for s in sentences), reverse=True)
    assert len(scores) == 3
    assert answer.margin == pytest.approx(scores[1] - scores[2], abs=1e-6) and answer.margin >= 0
    assert answer.closest_call(0.3) == pytest.approx(min(answer.best_score - 0.3, answer.margin), abs=1e-9)
    assert answer.closest_call(answer.best_score) == 0.0   # a best score on the threshold: no room at all
    lone = ExtractiveReader(FakeEncoder(), sentences=3, threshold=0.3).answer(question, context_of(RANDOM, CONCAT))
    assert lone.margin == float("inf")   # nothing left out: only the threshold can change it


def test_reader_abstains_on_an_empty_context():
    answer = ExtractiveReader(FakeEncoder()).answer("anything", context_of())
    assert answer.abstained and answer.text == NO_CONTEXT and answer.citations == () and answer.best_score == -1.0
    assert "do not answer the question" in answer.text


def test_reader_abstains_below_the_threshold_and_names_the_score():
    answer = ExtractiveReader(FakeEncoder(), threshold=0.99).answer("how do I invert a matrix", context_of(CONCAT))
    assert answer.abstained and answer.citations == ()
    assert "do not answer the question" in answer.text and f"{answer.best_score:.3f}" in answer.text
    assert answer.best_score < 0.99


def test_check_citations_catches_a_forged_citation():
    context = context_of(CONCAT)
    answer = ExtractiveReader(FakeEncoder(), threshold=0.0).answer("join arrays", context)
    forged = dataclasses.replace(answer, citations=answer.citations + ("numpy.linalg.inv.md#1",))
    assert check_citations(forged, context) == ["numpy.linalg.inv.md#1"]
    # a passage the assembly dropped cannot be cited either
    dropped = assemble(scored([CONCAT, RANDOM]), ContextBudget(max_passages=1), words)
    assert check_citations(dataclasses.replace(answer, citations=(RANDOM.citation,)), dropped) == [RANDOM.citation]


def test_reader_refuses_to_return_an_unchecked_answer(monkeypatch):
    import ragcourse.rag.reader as reader_module

    monkeypatch.setattr(reader_module, "check_citations", lambda answer, context: ["forged.md#0"])
    with pytest.raises(RuntimeError, match="forged.md#0"):
        ExtractiveReader(FakeEncoder(), threshold=0.0).answer("join arrays", context_of(CONCAT))


@pytest.mark.parametrize("kwargs, name", [({"sentences": 0}, "sentences"), ({"sentences": 11}, "sentences"),
                                          ({"threshold": 1.5}, "threshold"), ({"threshold": "0.4"}, "threshold")])
def test_reader_parameters_are_validated(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ExtractiveReader(FakeEncoder(), **kwargs)


def make_answer(question: str, citations: tuple[str, ...], abstained: bool = False) -> Answer:
    return Answer(question, "text", citations, abstained, (), 0.5)


def test_citation_accuracy_by_hand():
    answers = [make_answer("q1", ("numpy.concatenate.md#0", "numpy.stack.md#2")),    # 1 of 2 correct
               make_answer("q2", ("numpy.random.normal.md#1",)),                     # 0 of 1
               make_answer("q3", ("numpy.linalg.inv.md#0", "numpy.linalg.inv.md#3")),  # 2 of 2
               make_answer("q4", (), abstained=True)]                                # not counted
    relevant = {"q1": {"numpy.concatenate"}, "q2": {"numpy.random.uniform"}, "q3": ["numpy.linalg.inv"],
                "q4": {"numpy.sort"}}
    scores = citation_accuracy(answers, relevant)
    assert (scores.answered, scores.citations, scores.correct_citations) == (3, 5, 3)
    assert scores.accuracy == pytest.approx(3 / 5)
    assert scores.answered_with_correct == 2 and scores.answered_with_correct_share == pytest.approx(2 / 3)
    assert abstention_rate(answers) == 0.25
    nothing = citation_accuracy([answers[-1]], relevant)
    assert nothing.answered == 0 and math.isnan(nothing.accuracy)
    with pytest.raises(ValueError, match="q1"):
        citation_accuracy(answers[:1], {})
    with pytest.raises(ValueError, match="answers"):
        abstention_rate([])


def test_citation_doc_id():
    assert citation_doc_id("numpy.concatenate.md#3") == "numpy.concatenate"
    assert citation_doc_id("api/numpy.linalg.inv.md#12") == "numpy.linalg.inv"
    assert citation_doc_id("README#0") == "README"


# ---------------------------------------------------------------- hygiene and the real model

def test_importing_prints_nothing_and_loads_no_model_library():
    code = ("import sys, ragcourse.rag.rerank, ragcourse.rag.context, ragcourse.rag.reader;"
            "bad = [m for m in ('torch', 'sentence_transformers', 'pysbd') if m in sys.modules];"
            "sys.stderr.write(repr(bad))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "" and done.stderr == "[]"


@pytest.mark.embeddings
def test_real_encoder_puts_concatenation_above_random_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCOURSE_CACHE_DIR", str(tmp_path))
    from ragcourse.engines.dense import DenseEncoder

    concatenate = passage("numpy.concatenate(arrays, axis=0)\n\nJoin a sequence of arrays along an existing"
                          " axis. The arrays must have the same shape, except in the dimension corresponding"
                          " to axis.", "numpy.concatenate.md", 0)
    random = passage("numpy.random.random(size=None)\n\nReturn random floats in the half-open interval"
                     " [0.0, 1.0). Results are from the continuous uniform distribution.",
                     "numpy.random.random.md", 0)
    encoder = DenseEncoder()
    result = rerank(SentenceMaxSimReranker(encoder), "how do I join two arrays end to end", [random, concatenate])
    assert [s.passage for s in result.ranked] == [concatenate, random]
    assert result.ranked[0].score > result.ranked[1].score
