"""``python -m ragcourse prepare``: embed every text the labs and their tests need, once, before they run.

  python -m ragcourse prepare            # plan, say what is cached and what it expects to cost, embed the rest
  python -m ragcourse prepare --check    # plan and report only; exit status 1 when something is missing

The plan comes from ``ragcourse.labs.embedding_plan`` with each lab's parameter values read
from its notebook's parameters cell. The texts are embedded in one pass with one progress
bar (texts, rate, time left). The first block is a sample of the plan's own length mix
(``length_mix_sample``: full passes of lengths taken at even steps through the plan), so the
time it takes, scaled by the tokens the rest will cost (``padded_cost``: every forward pass is
a fixed number of rows of one token length), predicts the rest; the rest
goes longest first, in blocks of texts of about the same length, which measured 25% faster here
than blocks in random order (46 against 58 texts/s on 2 cores). Every vector goes to
the shared cache (``$RAGCOURSE_CACHE_DIR``), where the labs, the command line and the tests
read it: after this step no lab or test embeds a planned text again.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import TextIO

from ..batch.contract import file_value

BLOCK = 256   # texts per encode call: the unit of the progress bar and of the first rate measurement
# Groups are embedded in this order, the cheapest first, and each is announced when it is complete
# (``--progress FILE``), so what needs only lab 02's texts can start while lab 03's are embedded.
GROUP_ORDER = ("questions", "lab 02", "lab 04", "lab 03")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``prepare`` command's arguments."""
    parser.add_argument("--check", action="store_true",
                        help="report what is planned and cached without embedding; status 1 if anything is missing")
    parser.add_argument("--progress", type=file_value, metavar="FILE", default=None,
                        help="append each group's name (questions, lab 02, lab 04, lab 03) to FILE once all its "
                             "texts are cached (the test session uses it to start what a group makes possible)")
    parser.add_argument("--keys", type=file_value, metavar="FILE", default=None,
                        help="write the cache key of every planned text to FILE, one per line (the test session "
                             "checks what the labs asked for against it)")


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
    groups = planned_texts(corpus, parameters)
    texts = distinct(groups)
    keys = {text: text_key(text) for text in texts}
    if args.keys:
        with open(args.keys, "w", encoding="ascii") as handle:
            handle.writelines(key + "\n" for key in keys.values())
    cached = encoder.cache.get(MODEL_NAME, encoder.revision, list(keys.values()))
    missing = [t for t in texts if keys[t] not in cached]
    by_group = ", ".join(f"{name} {len(set(group))}" for name, group in groups.items())
    print(f"prepare: {len(texts)} distinct texts planned ({by_group}); {len(texts) - len(missing)} already in "
          f"the cache {encoder.cache.path}; {len(missing)} to embed (planned in "
          f"{time.perf_counter() - started:.0f} s)", file=out, flush=True)
    if args.check:
        return 1 if missing else 0
    if not missing:
        for name in groups:
            _announce(args.progress, name)
        return 0
    from tqdm.auto import tqdm

    quiet = bool(os.environ.get("TQDM_DISABLE"))
    encoder.model   # load the model first, so the rate measured on the first block is the encoding rate
    tokens = dict(zip(missing, encoder.encoded_lengths(missing)))   # as the model reads them, cut to its window
    batch = encoder.batch_size   # rows of every forward pass, so the estimate follows $RAGCOURSE_BATCH_SIZE
    first = length_mix_sample(missing, tokens, keys, batch)
    rest = set(missing) - set(first)
    order = [name for name in GROUP_ORDER if name in groups] + [name for name in groups if name not in GROUP_ORDER]
    plan: list[tuple[str, list[str]]] = [("", first)]
    for name in order:   # each group's texts not embedded yet, longest first, ties in a fixed order
        mine = sorted({t for t in groups[name] if t in rest}, key=lambda t: (-tokens[t], keys[t]))
        rest.difference_update(mine)
        plan.append((name, mine))
    bar = tqdm(total=len(missing), unit="text", desc=f"embedding on {encoder.threads} threads", disable=quiet)
    costs = [[padded_cost(g[i:i + BLOCK], tokens, batch) for i in range(0, len(g), BLOCK)] for _, g in plan]
    remaining = sum(map(sum, costs))
    encoder.forward(first[:batch])   # one warm-up pass (and the route's set-up), so the sample times encoding alone
    embed_started = time.perf_counter()
    for (name, texts_of_group), group_costs in zip(plan, costs):
        for start, cost in zip(range(0, len(texts_of_group), BLOCK), group_costs):
            block = texts_of_group[start:start + BLOCK]
            encoder.encode(block, progress=False)
            bar.update(len(block))
            remaining -= cost
        seconds = time.perf_counter() - embed_started
        done = sum(map(sum, costs)) - remaining
        minutes = seconds * remaining / max(done, 1) / 60   # the rate so far, per padded token
        if not name and len(missing) > BLOCK:
            print(f"prepare: {len(first) / seconds:.1f} texts/s on a sample of the plan's own length mix; "
                  f"expect about {minutes:.1f} more minutes", file=out, flush=True)
        if name:
            _announce(args.progress, name)
            if quiet:
                left = f"; about {minutes:.1f} more minutes" if remaining else ""
                print(f"prepare: {name} ready after {seconds:.0f} s{left}", file=out, flush=True)
    bar.close()
    seconds = time.perf_counter() - embed_started
    print(f"prepare: embedded {len(missing)} texts in {seconds:.0f} s ({len(missing) / seconds:.1f} texts/s); "
          f"{time.perf_counter() - started:.0f} s in all", file=out, flush=True)
    return 0


def length_mix_sample(texts: list[str], tokens: dict[str, int], keys: dict[str, str], batch: int) -> list[str]:
    """About ``BLOCK`` texts that cost what the plan costs per text: ``BLOCK // batch`` lengths taken at even
    steps through the texts in length order (so long and short texts come as often as in the plan), and
    ``batch`` texts of each of those lengths, so that every pass of the sample is full, as nearly all of the
    plan's passes are (one text of each of 250 lengths would cost 8 passes a text)."""
    longest_first = sorted(texts, key=lambda t: (-tokens[t], keys[t]))
    by_length: dict[int, list[str]] = {}
    for text in longest_first:
        by_length.setdefault(tokens[text], []).append(text)
    taken: dict[int, int] = {}
    sample: list[str] = []
    for anchor in longest_first[::max(1, len(texts) * batch // BLOCK)][:max(1, BLOCK // batch)]:
        length = tokens[anchor]   # a length met twice gives its next texts (common lengths weigh as in the plan)
        start = taken.get(length, 0)
        sample.extend(by_length[length][start:start + batch])
        taken[length] = start + batch
    return sample


def padded_cost(block: list[str], tokens: dict[str, int], batch: int) -> int:
    """Tokens the encoder computes for one ``encode`` call: its texts grouped by exact length, ``batch`` rows
    to every forward pass (a short pass is filled up to ``batch``), so a pass costs ``batch`` times its length."""
    from ..engines.batching import computed_rows, fixed_shape_batches

    passes = fixed_shape_batches([tokens[t] for t in block], batch)
    return sum(computed_rows([p])[1] * p.length for p in passes)


def _announce(path: Path | None, group: str) -> None:
    """Append ``group`` to the progress file, if one was asked for."""
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(group + "\n")
