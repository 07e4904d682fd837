"""Benchmark (not a test): the generating reader's prefill and decode speed, in the passes it really runs.

Every pass of ``rag.generator.Generator`` has one fixed shape: ``BATCH`` rows, each prompt left-padded
to its bucket (the batch-invariance rule: with the shape fixed, a row's answer does not depend on the
other rows). This times a pass holding one prompt (what ``ask`` runs: the other rows are copies) and a
full pass (what the labs run when a bucket holds eight prompts), on the reader's own chat prompt over
numpy pages of the course corpus, cut to ``--length`` tokens, decoding at most ``--new`` tokens (a row stops at its end of turn).
It prints tokens per second of real prompts (padding and copies not counted) and seconds per answer.

    .venv/bin/python benchmarks/generator_throughput.py [--length 800] [--new 48] [--threads 2]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ragcourse.corpus.apidocs import load_corpus
from ragcourse.rag import generator as generation


def prompts_of_length(tokenizer, length: int, count: int) -> list[generation.Prompt]:
    """``count`` different prompts of exactly ``length`` token ids: the chat template over page texts."""
    pages = [d.text for d in load_corpus().documents if len(d.text) > 8 * length][:count]
    made = []
    for text in pages:
        messages = [{"role": "system", "content": generation.SYSTEM},
                    {"role": "user", "content": text}]
        ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        kept = tuple(list(ids[:length - 3]) + list(ids[-3:]))   # keep the assistant turn's opening
        made.append(generation.Prompt("", (), "", kept))
    return made


def time_pass(generator: generation.Generator, prompts: list[generation.Prompt]) -> tuple[float, float, int]:
    """(prefill seconds, decode seconds, tokens decoded) of one pass over ``prompts``."""
    before = dict(generator.stats)
    generator._decode_pass(prompts)
    return (generator.stats["prefill_seconds"] - before["prefill_seconds"],
            generator.stats["decode_seconds"] - before["decode_seconds"],
            generator.stats["decode_tokens"] - before["decode_tokens"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--length", type=int, default=800, help="prompt tokens (the labs' prompts: about 300-1,100)")
    parser.add_argument("--new", type=int, default=48, help="most tokens decoded per prompt (the labs: 48)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads for the pass")
    args = parser.parse_args()
    started = time.perf_counter()
    cache = generation.GenerationCache(Path(tempfile.mkdtemp()) / "g.sqlite")
    generator = generation.Generator(max_new_tokens=args.new, threads=args.threads, cache=cache)
    tokenizer, _ = generator._load()
    print(f"{generation.MODEL_NAME}: loaded in {time.perf_counter() - started:.1f} s; prompts of {args.length} "
          f"tokens (bucket {generation.bucket(args.length)}), at most {args.new} new tokens; passes of "
          f"{generation.BATCH} rows on {args.threads} threads")
    prompts = prompts_of_length(tokenizer, args.length, generation.BATCH)
    print(f"{'prompts':>7}  {'prefill s':>9}  {'prefill tok/s':>13}  {'decode s':>8}  {'decode tok/s':>12}  "
          f"{'s per answer':>12}")
    for size in (1, generation.BATCH):
        prefill, decode, decoded = time_pass(generator, prompts[:size])
        print(f"{size:7d}  {prefill:9.2f}  {size * args.length / prefill:13.0f}  {decode:8.2f}  "
              f"{decoded / decode if decode else 0:12.1f}  {(prefill + decode) / size:12.2f}")


if __name__ == "__main__":
    main()
