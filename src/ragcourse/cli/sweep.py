"""``python -m ragcourse sweep --seeds 1-20 [--scheduler ADDRESS|local:N] [--jobs N] [--out DIR] [LESSON ...]``.

Runs the chosen lessons at every seed (the labs take no SEED, so it runs lessons only) and
collects their headline numbers into a table, ``sweep.csv`` and figures (``ragcourse.batch.sweep``);
``--scheduler`` hands one task per seed to a Dask cluster (``ragcourse.batch.cluster``). A malformed
``--scheduler``, or one where no scheduler answers, is a bad argument (exit status 2) found before
anything is written. Exit status 0 when every run succeeded, 1 when one failed.
"""
from __future__ import annotations

import argparse

from ..batch.contract import UsageError
from .selection import add_common, chosen_notebooks, seed_value

MAX_SEEDS = 1000


def seeds_value(text: str) -> list[int]:
    """``--seeds``: ``1-20``, ``1,5,9`` or a mix (``1-3,7``); each in [0, 2**32), no repeats kept."""
    seeds: list[int] = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if not low or (dash and not high):
            raise argparse.ArgumentTypeError(f"must look like 1-20 or 1,5,9; got {text!r}")
        first, last = seed_value(low), seed_value(high) if dash else seed_value(low)
        if last < first:
            raise argparse.ArgumentTypeError(f"range {part.strip()!r} runs backwards")
        if last - first + 1 + len(seeds) > MAX_SEEDS:
            raise argparse.ArgumentTypeError(f"at most {MAX_SEEDS} seeds; got {text!r}")
        seeds.extend(s for s in range(first, last + 1) if s not in seeds)
    return seeds


def scheduler_value(text: str) -> str:
    """``--scheduler``: ``local:N`` or a Dask scheduler's address (syntax here; whether it answers, in ``run``)."""
    from ..batch.cluster import parse_scheduler

    try:
        return parse_scheduler(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``sweep`` command's arguments."""
    parser.add_argument("--seeds", type=seeds_value, required=True, metavar="SEEDS",
                        help="1-20, 1,5,9 or a mix")
    parser.add_argument("--scheduler", type=scheduler_value, default=None, metavar="ADDRESS",
                        help="run on a Dask cluster, one task per seed: a scheduler's address "
                             "(tcp://HOST:8786) or local:N to start N worker processes here; "
                             "--jobs is then the lessons each task runs at once (default 1)")
    add_common(parser, out="build/sweep")


def run(args: argparse.Namespace, out) -> int:
    """Run the sweep here or on the cluster, the table printed to ``out``; the exit status."""
    from ..batch.sweep import run_sweep

    if any(v.lower().startswith("lab") for v in args.lessons):
        raise UsageError("argument LESSON: the labs take no SEED, so the sweep runs lessons only")
    chosen, _ = chosen_notebooks(args, with_labs=False)
    if args.scheduler is None:
        return run_sweep(chosen, args.seeds, args.out, jobs=args.jobs, stream=out)
    from ..batch.cluster import SchedulerError, open_cluster

    try:  # before anything is written: an unusable --scheduler is a bad argument
        cluster = open_cluster(args.scheduler)
    except SchedulerError as error:
        raise UsageError(f"argument --scheduler: {error}") from None
    with cluster:
        return run_sweep(chosen, args.seeds, args.out, jobs=args.jobs, stream=out, cluster=cluster)
