"""Tests of the language-model simulator family (ragcourse.world.llm)."""
from __future__ import annotations

import math

import pytest

from ragcourse import COURSE_SEED
from ragcourse.toolkit.params import check_number
from ragcourse.retrieval.pipeline import (
    CosineJaccardRetriever,
    IndexedChunk,
    index_chunks,
    is_relevant,
    link_instruction,
    link_prompt,
)
from ragcourse.retrieval.ranking import top_k
from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks
from ragcourse.world.embedding import EmbeddingModel, cosine
from ragcourse.world.llm import (
    FREE_FORM_REPLIES,
    PRIOR_KNOWLEDGE,
    CallCounter,
    ChunkAnswerer,
    ClassPriorGenerator,
    ConceptLinker,
    FineTunedModel,
    PairScorer,
    QueryTransformer,
    Response,
    choose,
)
from ragcourse.world.rng import make_rng
from ragcourse.world.text import tokenize

ED = SECOND_EDITION
INSTRUCTION = link_instruction(ED)


def prompt_of_tokens(n: int) -> str:
    """A prompt of exactly ``n`` tokens that asks for one concept."""
    words = ["one"] + ["leak"] * (n - 1)
    prompt = " ".join(words)
    assert len(tokenize(prompt)) == n
    return prompt


def chunk(code: str, text: str) -> IndexedChunk:
    return IndexedChunk(code=code, label="fault", main="leak", text=text, vector=(),
                        bag=frozenset(tokenize(text)))


@pytest.fixture(scope="module")
def world():
    return build_world(COURSE_SEED, ED)


@pytest.fixture(scope="module")
def chunks(world):
    return paragraph_chunks(world.documents, ED)


# ---- shared mechanics ----------------------------------------------------------------------

def test_same_prompt_and_seed_give_the_same_response():
    prompt = link_prompt(INSTRUCTION, "water escaping note")
    first = ConceptLinker(ED, COURSE_SEED).call(prompt)
    second = ConceptLinker(ED, COURSE_SEED).call(prompt)
    assert first == second
    assert first.ok and first.input_tokens == len(tokenize(prompt))


def test_seed_changes_the_draw_and_seed_override_equals_a_model_at_that_seed():
    prompt = "which band am i in , reply in free form"
    replies = {ConceptLinker(ED, seed).call(prompt).text for seed in range(30)}
    assert len(replies) > 1
    assert ConceptLinker(ED, 5).call(prompt, seed=9) == ConceptLinker(ED, 9).call(prompt)


def test_prompt_over_the_window_overflows():
    model = ConceptLinker(ED, COURSE_SEED)
    over = model.call(prompt_of_tokens(241))
    assert (over.status, over.input_tokens, over.output_tokens, over.text) == \
        ("context_overflow", 241, 0, "")
    assert model.call(prompt_of_tokens(240)).status == "ok"
    assert ConceptLinker(ED, 1, window=None).call(prompt_of_tokens(500)).ok


def test_rate_limit_falls_on_the_37th_call_only():
    model = ConceptLinker(ED, COURSE_SEED)
    statuses = [model.call("one leak").status for _ in range(75)]
    assert statuses[35] == "ok" and statuses[37] == "ok"          # calls 36 and 38
    assert statuses[36] == "rate_limit" and statuses[73] == "rate_limit"
    assert statuses.count("rate_limit") == 2
    assert model.calls == 75


def test_overflowing_calls_are_counted_and_window_is_checked_first():
    model = ConceptLinker(ED, 1)
    for _ in range(36):
        model.call(prompt_of_tokens(300))
    assert model.call(prompt_of_tokens(300)).status == "context_overflow"   # call 37
    assert model.calls == 37


def test_reset_restarts_the_counter():
    model = ConceptLinker(ED, COURSE_SEED)
    first_run = [model.call(f"one leak {i}") for i in range(40)]
    model.reset()
    assert model.calls == 0
    second_run = [model.call(f"one leak {i}") for i in range(40)]
    assert first_run == second_run


def test_shared_counter_counts_calls_of_both_models():
    counter = CallCounter()
    transformer = QueryTransformer(ED, 1, counter=counter)
    answerer = ChunkAnswerer(ED, 1, counter=counter)
    statuses = []
    for _ in range(20):
        statuses.append(transformer.transform("which band form", "expansion").status)
        answerer.answer("which band form", [chunk("TR001", "tier limit for form goes")])
    assert counter.calls == 40
    assert statuses[18] == "rate_limit"           # the 37th call is the 19th transform
    assert statuses.count("rate_limit") == 1


def test_choose_temperature_zero_is_the_first_argmax_and_draws_nothing():
    def no_draw():
        raise AssertionError("temperature 0 must not draw")
    assert choose([0.2, 0.9, 0.9, 0.1], 0.0, no_draw) == 1


def test_choose_softmax_matches_the_course_arithmetic():
    scores, temperature = [0.15, 2.15, 4.15], 0.6
    weights = [math.exp(s / temperature) for s in scores]
    cumulative = [weights[0] / sum(weights), (weights[0] + weights[1]) / sum(weights)]
    assert choose(scores, temperature, lambda: cumulative[0] - 1e-12) == 0
    assert choose(scores, temperature, lambda: cumulative[0] + 1e-12) == 1
    assert choose(scores, temperature, lambda: 0.999999) == 2


def test_choose_survives_a_tiny_temperature():
    assert choose([0.0, 30.0, 29.0], 0.001, lambda: 0.5) == 1


def test_temperature_zero_linker_is_the_argmax_over_sorted_keys():
    model = ConceptLinker(ED, COURSE_SEED, temperature=0)
    assert model.call("one line leak line leak pressure drop").text == "leak"
    # no signal at all: every key scores 0.15 and the first sorted key wins
    assert model.call("one thing").text == sorted(ED.keys)[0] == "account"


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="temperature"):
        ConceptLinker(ED, 1, temperature=-0.1)
    with pytest.raises(ValueError, match="window"):
        ConceptLinker(ED, 1, window=0)
    with pytest.raises(ValueError, match="rate_limit_every"):
        ChunkAnswerer(ED, 1, rate_limit_every=0)
    with pytest.raises(ValueError, match="seed"):
        ConceptLinker(ED, -1)
    with pytest.raises(ValueError, match="prior_knowledge"):
        ConceptLinker(ED, 1, prior_knowledge={"nosuch"})
    with pytest.raises(ValueError, match="choose"):
        choose([], 0.6, make_rng(1))


# ---- the concept linker (lessons 07-10) -------------------------------------------------------

def test_linker_scores_document_forms_and_prior_knowledge():
    model = ConceptLinker(ED, 1)
    scores = model.concept_scores("Line leak and line leak ; water escaping ; which band am i in")
    assert scores["leak"] == 0.15 + 2.0 * 2 + 2.0        # leak is in PRIOR_KNOWLEDGE
    assert "tier" not in PRIOR_KNOWLEDGE and scores["tier"] == 0.15
    assert scores["unit"] == 0.15


def test_linker_free_form_reply_without_one():
    model = ConceptLinker(ED, 3)
    possible = {t.format(k=k) for t in FREE_FORM_REPLIES for k in ED.keys}
    replies = [model.call(f"water escaping report {i}").text for i in range(20)]
    assert set(replies) <= possible and len(set(replies)) > 1
    bare = ConceptLinker(ED, 3, free_form=False).call("water escaping report 0")
    assert bare.text in ED.keys and bare.concept == bare.text


def test_linker_output_cap():
    model = ConceptLinker(ED, 3, max_output=3)
    response = next(r for r in (model.call(f"water escaping {i}") for i in range(20))
                    if r.output_tokens == 3)
    assert len(tokenize(response.text)) == 3


def test_linker_copies_the_record_of_the_source_it_names():
    model = ConceptLinker(ED, 1, temperature=0, copy_record="validity record")
    prompt = link_prompt(link_instruction(ED, ask_for_record=True), "water escaping note",
                         ["line leak for note goes with line leak and is filed validity record Y03",
                          "field crew for area goes with field crew and is filed validity record Y01"])
    response = model.call(prompt)
    assert (response.text, response.concept, response.record) == ("leak Y03", "leak", "Y03")
    assert response.output_tokens == len(tokenize("leak Y03"))


def test_read_concept():
    model = ConceptLinker(ED, 1)
    assert model.read_concept("request linked to valve concept and logged") == "valve"
    assert model.read_concept("your report was received") is None


# ---- the chunk answerer (lessons 11-13) -----------------------------------------------------

def test_answerer_position_weights_prefer_the_first_then_the_last():
    answerer = ChunkAnswerer(ED, 1)
    same = [chunk(f"AR00{i}", "line leak for note goes") for i in range(4)]
    scores = answerer.chunk_scores("line leak note", same)
    assert scores == [1.0 * (0.3 + 1.0), 0.45 * 1.3, 0.45 * 1.3, 0.8 * 1.3]
    greedy = ChunkAnswerer(ED, 1, temperature=0)
    assert greedy.answer("line leak note", same).chunk is same[0]


def test_answerer_returns_the_chunk_object_and_counts_tokens():
    answerer = ChunkAnswerer(ED, 7)
    context = [chunk("AR001", "line leak for note goes"), chunk("AR002", "field crew for area goes")]
    response = answerer.answer("line leak note", context)
    assert response.chunk is context[0] or response.chunk is context[1]
    assert response.output_tokens == len(tokenize(f"{response.chunk.code} : {response.chunk.text}"))
    assert response.text.startswith(response.chunk.code + " : ")


def test_answerer_overflow_and_empty_context():
    answerer = ChunkAnswerer(ED, 1)
    long_chunks = [chunk(f"AR{i:03d}", "line leak for note goes with line leak and is filed")
                   for i in range(30)]
    over = answerer.answer("water escaping note", long_chunks)
    assert over.status == "context_overflow" and over.chunk is None and over.output_tokens == 0
    assert answerer.answer("water escaping note", []).status == "empty"


# ---- the query transformer (lesson 11) ------------------------------------------------------

def test_transformer_rewrites_and_expands():
    transformer = QueryTransformer(ED, COURSE_SEED)
    assert transformer.transform("which band form", "rewriting") == Response(
        "ok", 16, 5, text="tier limit for form goes", concept="tier")
    assert transformer.transform("which band form", "expansion").text == "which band form tier limit"


def test_transformer_empty_and_rate_limit_pass_the_raw_query():
    transformer = QueryTransformer(ED, 1)
    empty = transformer.transform("hello there", "rewriting")
    assert (empty.status, empty.text, empty.concept) == ("empty", "hello there", None)
    for _ in range(35):
        transformer.transform("which band form", "rewriting")
    limited = transformer.transform("which band form", "rewriting")     # call 37
    assert (limited.status, limited.text, limited.output_tokens) == ("rate_limit", "which band form", 0)
    with pytest.raises(ValueError, match="mode"):
        transformer.transform("which band", "summary")


# ---- the pair scorer (lesson 12) --------------------------------------------------------------

def test_pair_scorer_conditions_and_noise():
    exact = PairScorer(ED, 1, noise=0.0)
    both = exact.score("water escaping note", chunk("AR001", "line leak for note goes"))
    assert both.score == 2.0
    assert both.input_tokens == len(tokenize(
        "Is the query about the same record as the chunk . Chunk: line leak for note goes"
        " Query: water escaping note")) and both.tokens == both.input_tokens + 1
    assert exact.score("water escaping area", chunk("AR001", "line leak for note goes")).score == 1.0
    assert exact.score("which band area", chunk("AR001", "line leak for note goes")).score == 0.0
    noisy = PairScorer(ED, 1)
    values = [noisy.score(f"water escaping note {i}", chunk("AR001", "line leak for note goes")).score
              for i in range(50)]
    assert all(2.0 - 0.7 <= v < 2.0 + 0.7 for v in values) and len(set(values)) == 50


# ---- the class-prior generator and the fine-tuned model (lessons 14-15) ----------------------

def test_generator_without_context_stays_in_the_query_class():
    generator = ClassPriorGenerator(ED, 1)
    picks = {generator.generate(f"which band am i in {filler}").concept for filler in ED.filler_words}
    assert picks <= set(ED.in_class("tariff"))
    assert generator.query_class("which band am i in") == "tariff"
    empty = generator.generate("hello")
    assert empty.status == "empty" and empty.concept is None


def test_generator_name_scores():
    generator = ClassPriorGenerator(ED, 1)
    scores = generator.name_scores("which band am i in", "which band am i in || unit price , line leak")
    assert scores == {"tier": 0.15, "unit": 1.15, "account": 0.15, "switch": 0.15, "leak": 1.0}


def test_generator_reads_names_in_its_context():
    generator = ClassPriorGenerator(ED, 1, temperature=0)
    response = generator.generate("which band am i in note", ["unit price for note goes with unit price"])
    assert response.concept == "unit"
    assert response.input_tokens == len(tokenize(
        "which band am i in note || unit price for note goes with unit price"))


def test_fine_tuned_model_memory_stamps_and_format():
    stamps = {k: f"{k}-old" for k in ED.keys}
    tuned = FineTunedModel(ED, 1, ["leak", "tier"], stamps)
    reply = tuned.solve("water escaping note")
    assert (reply.concept, reply.stamp, reply.format_ok) == ("leak", "leak-old", True)
    with_context = tuned.solve("water escaping note", ["line leak for note goes effective y06b"])
    assert with_context.stamp == "y06b"
    untuned = FineTunedModel(ED, 1)
    reply = untuned.solve("water escaping note")
    assert reply.stamp == "none" and reply.format_ok is False
    assert reply.concept in ED.in_class("fault")
    with pytest.raises(ValueError, match="training"):
        FineTunedModel(ED, 1, ["nosuch"])


# ---- exact values at the course seed ------------------------------------------------------------

def test_course_seed_lesson07_retrieval_row(world, chunks):
    """Lesson 07's retrieval setup: generation 0.9250, 4848 tokens (course table)."""
    model = EmbeddingModel(ED, COURSE_SEED)
    vectors = [model.embed(c.text) for c in chunks]
    linker = ConceptLinker(ED, COURSE_SEED)
    correct = tokens = 0
    for query in world.queries:
        query_vector = model.embed(query.text)
        top = top_k([cosine(query_vector, v) for v in vectors], 3)
        response = linker.call(link_prompt(INSTRUCTION, query.text, [chunks[i].text for i in top]))
        correct += response.concept == query.concept
        tokens += response.tokens
    assert (correct, tokens) == (37, 4848)


def test_course_seed_lesson07_no_retrieval_row(world):
    linker = ConceptLinker(ED, COURSE_SEED)
    responses = [linker.call(link_prompt(INSTRUCTION, q.text)) for q in world.queries]
    assert sum(r.concept == q.concept for r, q in zip(responses, world.queries)) == 8
    assert sum(r.tokens for r in responses) == 3033


def test_course_seed_lesson11_baseline(world, chunks):
    """Lesson 11, first block: recall 0.8000 and generation 0.6750 at k = 5."""
    model = EmbeddingModel(ED, COURSE_SEED)
    retriever = CosineJaccardRetriever(model, index_chunks(chunks, model))
    answerer = ChunkAnswerer(ED, COURSE_SEED)
    recall = generation = 0
    for query in world.queries:
        context = retriever.retrieve(query.text, 5)
        recall += any(is_relevant(c, query, ED) for c in context)
        generation += is_relevant(answerer.answer(query.text, context).chunk, query, ED)
    assert (recall, generation) == (32, 27)


def test_course_seed_lesson14_no_retrieval(world):
    """Lesson 14: without retrieval the class prior gets 15 of 40 right with 258 tokens."""
    generator = ClassPriorGenerator(ED, COURSE_SEED)
    responses = [generator.generate(q.text) for q in world.queries]
    assert sum(r.concept == q.concept for r, q in zip(responses, world.queries)) == 15
    assert sum(r.input_tokens for r in responses) == 258


def test_check_number_for_the_temperature_knob():
    assert check_number("TEMPERATURE", 0, 0.0, 5.0) == 0.0
    assert check_number("TEMPERATURE", 0.6, 0.0, 5.0) == 0.6
    for bad in (-0.1, 5.5, True, "0.6", None, float("nan")):
        with pytest.raises(ValueError, match="TEMPERATURE must be a number from 0.0 to 5.0"):
            check_number("TEMPERATURE", bad, 0.0, 5.0)
