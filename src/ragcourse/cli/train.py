"""``python -m ragcourse train-reranker``: train lab 04's cross-encoder once, or say where the trained one is.

  python -m ragcourse train-reranker              # train (about 1.5 minutes on one core, a progress bar) or read the cache
  python -m ragcourse train-reranker --estimate   # say whether it is cached and what training would cost; no training
  python -m ragcourse train-reranker --groups 1600   # another budget of training queries (another model, its own key)

The training data comes from the corpus alone (``rag.cross_encoder.training_pairs``); the model goes to
``$RAGCOURSE_CACHE_DIR/reranker/<key>``, keyed by the data, the code and the settings, so a second run reads
it in seconds. Exit status 0 when the model is there at the end (``--estimate``: 1 when it is not cached yet).
"""
from __future__ import annotations

import argparse
import os
import time
from typing import TextIO


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``train-reranker`` command's arguments."""
    parser.add_argument("--estimate", action="store_true",
                        help="say whether the model is cached and how long training would take, without training")
    parser.add_argument("--groups", type=int, default=None, metavar="N",
                        help="training queries (each with its positive and negatives); default "
                             "rag.cross_encoder.training.DEFAULT_SETTINGS.groups; another number is another model")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Train the cross-encoder (or find it in the cache) and say what was done, where, and how long it took."""
    from ..rag.cross_encoder.reranker import estimate, train_or_load
    from ..rag.cross_encoder.training import DEFAULT_SETTINGS

    started = time.perf_counter()
    cpu_started = time.process_time()
    settings = DEFAULT_SETTINGS if args.groups is None else DEFAULT_SETTINGS.changed(groups=args.groups)
    if args.estimate:
        found = estimate(settings)
        state = "cached" if found.cached else f"not trained yet: about {found.seconds / 60:.1f} minutes to train"
        print(f"train-reranker: cross-encoder {found.key} is {state}", file=out, flush=True)
        return 0 if found.cached else 1
    model = train_or_load(progress=not os.environ.get("TQDM_DISABLE"), settings=settings,
                          report=lambda line: print(f"train-reranker: {line}", file=out, flush=True))
    log = model.log
    print(f"train-reranker: {log.groups} queries from the corpus ({', '.join(f'{n} {k}' for k, n in log.kinds.items())}), "
          f"{log.pairs} pairs of at most {settings.max_length} tokens; loss {log.losses[0]:.3f} at the first step, "
          f"{log.losses[-1]:.3f} at the last", file=out)
    print(f"train-reranker: model in {model.folder}; scores cached in {model.cache.path}", file=out)
    print(f"train-reranker: {time.perf_counter() - started:.0f} s wall, {time.process_time() - cpu_started:.0f} s CPU "
          f"in this run", file=out, flush=True)
    return 0
