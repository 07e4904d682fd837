"""Benchmark (not a test): the generating reader's prefill and decode speed, one prompt and batched.

Prompts are the reader's own chat prompt over numpy pages of the course corpus, cut to an exact
token length, so a batch of them needs no padding (the batch-invariance rule: only inputs of one
exact length share a pass). For each batch size it times the prefill of the whole batch and then
greedy decoding of ``--new`` tokens per prompt with the KV cache, and prints tokens per second.
Batch 1 is what the labs run (``rag.generator.Generator``: prefill on the torch threads, decode on
one); the batched rows show what batching prompts of one length would buy.

    .venv/bin/python benchmarks/generator_throughput.py [--length 800] [--new 48] [--batches 1 4 8]
"""
from __future__ import annotations

import argparse
import time

import torch

from ragcourse.corpus.apidocs import load_corpus
from ragcourse.engines.dense import cache_dir
from ragcourse.rag import generator as generation


def prompts_of_length(tokenizer, length: int, count: int) -> list[list[int]]:
    """``count`` different prompts of exactly ``length`` token ids: the chat template over page texts."""
    pages = [d.text for d in load_corpus().documents if len(d.text) > 8 * length][:count]
    made = []
    for text in pages:
        messages = [{"role": "system", "content": generation.SYSTEM},
                    {"role": "user", "content": text}]
        ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        made.append(list(ids[:length - 3]) + list(ids[-3:]))   # keep the assistant turn's opening
    return made


def run(model, batch: list[list[int]], new: int, prefill_threads: int) -> tuple[float, float]:
    """(prefill seconds, decode seconds) for one batch: greedy, ``new`` tokens each, no stop token."""
    torch.set_num_threads(prefill_threads)
    with torch.inference_mode():
        started = time.perf_counter()
        out = model(input_ids=torch.tensor(batch), use_cache=True, logits_to_keep=1)
        prefill = time.perf_counter() - started
        torch.set_num_threads(generation.DECODE_THREADS)
        started = time.perf_counter()
        for _ in range(new):
            tokens = torch.argmax(out.logits[:, -1], dim=-1, keepdim=True)
            out = model(input_ids=tokens, cache=out.cache, use_cache=True)   # the KV cache of the whole batch
        decode = time.perf_counter() - started
    return prefill, decode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--length", type=int, default=800, help="prompt tokens (the labs' prompts: about 500-900)")
    parser.add_argument("--new", type=int, default=48, help="tokens decoded per prompt (lab 04: at most 48)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--threads", type=int, default=2, help="threads for the prefill")
    args = parser.parse_args()
    started = time.perf_counter()
    tokenizer, model = generation.load(str(cache_dir()))
    print(f"{generation.MODEL_NAME}: loaded in {time.perf_counter() - started:.1f} s; prompts of {args.length} tokens, "
          f"{args.new} new tokens each; prefill on {args.threads} threads, decode on {generation.DECODE_THREADS}")
    prompts = prompts_of_length(tokenizer, args.length, max(args.batches))
    run(model, prompts[:1], 2, args.threads)   # warm-up
    print(f"{'batch':>5}  {'prefill s':>9}  {'prefill tok/s':>13}  {'decode s':>8}  {'decode tok/s':>12}  {'s per answer':>12}")
    for size in args.batches:
        prefill, decode = run(model, prompts[:size], args.new, args.threads)
        print(f"{size:5d}  {prefill:9.2f}  {size * args.length / prefill:13.0f}  {decode:8.2f}  "
              f"{size * args.new / decode:12.1f}  {(prefill + decode) / size:12.2f}")


if __name__ == "__main__":
    main()
