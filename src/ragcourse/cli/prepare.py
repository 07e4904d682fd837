"""``python -m ragcourse prepare``: embed every text the labs and their tests need, once, before they run.

  python -m ragcourse prepare            # plan, say what is cached and what it expects to cost, embed the rest
  python -m ragcourse prepare --check    # plan and report only; exit status 1 when something is missing

The plan comes from ``ragcourse.labs.embedding_plan`` with each lab's parameter values read
from its notebook's parameters cell. The texts are embedded in one pass with one progress
bar, longest first, in blocks of texts of about the same length: an encode batch is padded
to its longest text, and sorting the whole plan by length once (rather than within each
block) measured 25% faster here (46 against 58 texts/s on 2 cores). The time still expected
is estimated in tokens, from the first block's rate. Every vector goes to
the shared cache (``$RAGCOURSE_CACHE_DIR``), where the labs, the command line and the tests
read it: after this step no lab or test embeds a planned text again.
"""
from __future__ import annotations

import argparse
import os
import time
from typing import TextIO

BLOCK = 256   # texts per encode call: the unit of the progress bar and of the first rate measurement


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``prepare`` command's arguments."""
    parser.add_argument("--check", action="store_true",
                        help="report what is planned and cached without embedding; status 1 if anything is missing")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Plan, report, and embed what the cache lacks."""
    from ..batch.notebooks import lab_notebooks, notebook_parameters
    from ..corpus.apidocs import load_corpus
    from ..engines.dense import MODEL_NAME, DenseEncoder, text_key
    from ..labs.embedding_plan import distinct, planned_texts

    started = time.perf_counter()
    corpus = load_corpus()
    encoder = DenseEncoder()
    parameters = {number: notebook_parameters(path) for number, path in lab_notebooks().items()}
    groups = planned_texts(corpus, parameters, encoder.tokenizer)
    texts = distinct(groups)
    keys = {text: text_key(text) for text in texts}
    cached = encoder.cache.get(MODEL_NAME, encoder.revision, list(keys.values()))
    missing = [t for t in texts if keys[t] not in cached]
    by_group = ", ".join(f"{name} {len(set(group))}" for name, group in groups.items())
    print(f"prepare: {len(texts)} distinct texts planned ({by_group}); {len(texts) - len(missing)} already in "
          f"the cache {encoder.cache.path}; {len(missing)} to embed (planned in "
          f"{time.perf_counter() - started:.0f} s)", file=out, flush=True)
    if args.check or not missing:
        return 1 if args.check and missing else 0
    from tqdm.auto import tqdm

    quiet = bool(os.environ.get("TQDM_DISABLE"))
    encoder.model   # load the model first, so the rate measured on the first block is the encoding rate
    window = encoder.max_tokens
    tokens = {t: min(n, window) for t, n in zip(missing, encoder.token_counts(missing))}
    missing.sort(key=lambda t: (-tokens[t], keys[t]))   # longest first; ties in a fixed order
    total_tokens = sum(tokens.values())
    bar = tqdm(total=len(missing), unit="text", desc=f"embedding on {encoder.threads} threads", disable=quiet)
    embed_started = time.perf_counter()
    for start in range(0, len(missing), BLOCK):
        block = missing[start:start + BLOCK]
        encoder.encode(block, progress=False)
        bar.update(len(block))
        if start == 0 and len(missing) > BLOCK:
            # The first block holds the longest texts, so its rate per token over-estimates what is left a little.
            rate = sum(tokens[t] for t in block) / (time.perf_counter() - embed_started)
            left = total_tokens - sum(tokens[t] for t in block)
            print(f"prepare: {rate:,.0f} tokens/s on this machine ({total_tokens:,} tokens in all); expect at most "
                  f"about {left / rate / 60:.1f} more minutes", file=out, flush=True)
    bar.close()
    seconds = time.perf_counter() - embed_started
    print(f"prepare: embedded {len(missing)} texts in {seconds:.0f} s ({len(missing) / seconds:.1f} texts/s); "
          f"{time.perf_counter() - started:.0f} s in all", file=out, flush=True)
    return 0
