"""``python -m ragcourse prepare``: embed every text the labs and their tests need, once, before they run.

  python -m ragcourse prepare            # plan, say what is cached and what it expects to cost, embed the rest
  python -m ragcourse prepare --check    # plan and report only; exit status 1 when something is missing

The plan comes from ``ragcourse.labs.embedding_plan`` (``plan_embeddings``) with each lab's parameter
values read from its notebook's parameters cell; the order it is embedded in and the time that takes come
from ``ragcourse.labs.embedding_schedule``. This command reads its arguments and prints. The texts are
embedded in one pass with one progress bar (texts, rate, and the time left as the schedule measures it:
tokens left at the rate so far, re-estimated after every block; tqdm's own figure, texts left at the text
rate so far, would be wrong, since the longest texts go first). The first block is a sample of the plan's
own length mix; the estimate it gives is printed, and at the end set against the time the embedding took.
Every vector goes to the shared cache (``$RAGCOURSE_CACHE_DIR``), where the labs, the command line and
the tests read it: after this step no lab or test embeds a planned text again.

Then it trains lab 04's cross-encoder (``rag.cross_encoder.reranker.train_or_load``, what ``train-reranker``
does) unless the cache holds it: its estimate first, a progress bar, and the estimate against the time it took.
Last, the local model answers the prompts of labs 03 and 04 that the generation cache lacks
(``labs.generation_plan``; ``--no-generation`` leaves them to the labs), the same way: estimate, bar, truth.
``--check`` looks at the embeddings only; ``--record-generation LOG`` only writes the generation plan.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import TextIO

from ..batch.contract import UsageError, file_value

# tqdm's bar with the schedule's time left (the postfix) where tqdm would put its own
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]"


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
    parser.add_argument("--no-generation", action="store_true",
                        help="leave the generation plan unanswered (the test session: the labs answer their own)")
    parser.add_argument("--record-generation", type=Path, metavar="LOG", default=None,
                        help="only write the generation plan from LOG, the prompts the labs asked for with "
                             "RAGCOURSE_GENERATION_LOG=LOG set (maintainers, after `make refresh`)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Plan, report, and embed what the cache lacks."""
    from ..batch.notebooks import lab_parameters
    from ..corpus.apidocs import load_corpus
    from ..engines.dense import DenseEncoder
    from ..labs.embedding_plan import plan_embeddings

    if args.record_generation is not None:
        from ..labs import generation_plan

        if not args.record_generation.is_file():
            raise UsageError(f"argument --record-generation: {str(args.record_generation)!r} is not a file")
        try:
            written = generation_plan.record(args.record_generation)
        except ValueError as problem:
            raise UsageError(f"argument --record-generation: {problem}") from None
        print(f"prepare: {written} prompts the labs asked for written to {generation_plan.PLAN}", file=out, flush=True)
        return 0
    started = time.perf_counter()
    encoder = DenseEncoder()
    plan = plan_embeddings(load_corpus(), lab_parameters(), encoder)
    if args.keys:
        with open(args.keys, "w", encoding="ascii") as handle:
            handle.writelines(plan.keys[text] + "\n" for text in plan.texts)
    by_group = ", ".join(f"{name} {size}" for name, size in plan.group_sizes.items())
    print(f"prepare: {len(plan.texts)} distinct texts planned ({by_group}); {plan.cached} already in "
          f"the cache {plan.cache_path}; {len(plan.missing)} to embed (planned in "
          f"{time.perf_counter() - started:.0f} s)", file=out, flush=True)
    if args.check:
        return 1 if plan.missing else 0
    if not plan.missing:
        for name in plan.groups:
            _announce(args.progress, name)
    else:
        code = _embed(plan, encoder, args.progress, out, started)
        if code:
            return code
    code = _train_cross_encoder(encoder, out)
    return code or (0 if args.no_generation else _generate(out))


def _generate(out: TextIO, clock=time.perf_counter, make_generator=None) -> int:
    """Answer the generation plan's prompts the cache lacks: the estimate, the bar, the estimate against the truth."""
    from ..labs import generation_plan
    from ..rag.generator import Generator, GeneratorUnavailable

    planned = generation_plan.load()
    if not planned:
        print(f"prepare: no generation plan ({generation_plan.PLAN} is missing): the labs will generate their answers",
              file=out, flush=True)
        return 0
    make_generator = make_generator or (lambda n: Generator(max_new_tokens=n))
    for limit in sorted({p.max_new_tokens for p in planned}):
        try:
            generator = make_generator(limit)
            prompts = generation_plan.generator_prompts(generator, planned)
        except GeneratorUnavailable as missing:
            print(f"prepare: the generation plan was not answered: {missing}", file=out, flush=True)
            return 1
        fingerprint = generator.fingerprint
        waiting = [p for p in prompts if generator.cache.get(fingerprint, generator.key(p)) is None]
        expected = generation_plan.estimated_seconds(waiting, limit)
        print(f"prepare: generation plan: {len(prompts)} prompts of the labs (at most {limit} new tokens), "
              f"{len(prompts) - len(waiting)} in the cache"
              + (f"; answering {len(waiting)}, expect about {expected / 60:.1f} minutes" if waiting else ""),
              file=out, flush=True)
        if not waiting:
            continue
        started = clock()
        generator.generate_many(waiting, desc="answering the labs' prompts")
        seconds = clock() - started
        print(f"prepare: {len(waiting)} answers written in {seconds:.0f} s; the estimate was {expected / 60:.1f} min, "
              f"generation took {seconds / 60:.1f} min ({(expected - seconds) / seconds:+.0%})", file=out, flush=True)
    return 0


def _train_cross_encoder(encoder, out: TextIO, clock=time.perf_counter) -> int:
    """Lab 04's cross-encoder, trained into the cache unless it is there: the estimate, then the truth."""
    from ..rag.cross_encoder.reranker import estimate, train_or_load

    found = estimate(encoder=encoder)
    if found.cached:
        print(f"prepare: lab 04's cross-encoder {found.key} is in the cache", file=out, flush=True)
        return 0
    print(f"prepare: training lab 04's cross-encoder {found.key}; expect about {found.seconds / 60:.1f} minutes",
          file=out, flush=True)
    started = clock()
    train_or_load(progress=not os.environ.get("TQDM_DISABLE"), encoder=encoder, report=None)
    seconds = clock() - started
    print(f"prepare: cross-encoder trained in {seconds:.0f} s; the estimate was {found.seconds / 60:.1f} min, "
          f"training took {seconds / 60:.1f} min ({(found.seconds - seconds) / seconds:+.0%})", file=out, flush=True)
    return 0


def _embed(plan, encoder, progress_file: Path | None, out: TextIO, started: float, clock=time.perf_counter) -> int:
    """Embed ``plan.missing`` by ``labs.embedding_schedule`` (timed by ``clock``): the bar, the estimates, the
    groups announced."""
    from tqdm.auto import tqdm

    from ..labs.embedding_schedule import BLOCK, SAMPLE, embed, encoder_schedule

    quiet = bool(os.environ.get("TQDM_DISABLE"))
    schedule = encoder_schedule(plan, encoder)   # loads the model first, so the sample times encoding alone
    bar = tqdm(total=schedule.texts, unit="text", desc=f"embedding on {encoder.threads} threads", disable=quiet,
               bar_format=BAR_FORMAT)
    first = None   # the whole embedding's seconds as the sample foresaw them
    seconds = 0.0
    for step in embed(schedule, encoder, clock):
        seconds = step.seconds
        if step.seconds_left is not None:   # shown by the update that follows
            bar.set_postfix_str(time_left(step.seconds_left), refresh=False)
        bar.update(step.texts)
        if not step.group_done:
            continue
        minutes = (step.seconds_left or 0.0) / 60
        if step.group == SAMPLE and len(plan.missing) > BLOCK:
            first = step.estimate
            print(f"prepare: {schedule.stages[0].texts / step.seconds:.1f} texts/s on a sample of the plan's own "
                  f"length mix; expect about {minutes:.1f} more minutes", file=out, flush=True)
        if step.group != SAMPLE:
            _announce(progress_file, step.group)
            if quiet:
                left = f"; about {minutes:.1f} more minutes" if step.cost_left else ""
                print(f"prepare: {step.group} ready after {step.seconds:.0f} s{left}", file=out, flush=True)
    bar.close()
    print(f"prepare: embedded {schedule.texts} texts in {seconds:.0f} s ({schedule.texts / seconds:.1f} texts/s); "
          f"{time.perf_counter() - started:.0f} s in all", file=out, flush=True)
    if first is not None:
        print(f"prepare: {estimate_against_truth(first, seconds)}", file=out, flush=True)
    return 0


def time_left(seconds: float) -> str:
    """The progress bar's figure: ``about 4 min left`` (whole minutes from 90 s up), ``about 40 s left``."""
    if seconds >= 90:
        return f"about {seconds / 60:.0f} min left"
    return f"about {seconds:.0f} s left"


def estimate_against_truth(estimate: float, seconds: float) -> str:
    """The sample's estimate of the embedding against the time it took, both in minutes, and how far off."""
    return (f"the sample's estimate was {estimate / 60:.1f} min, embedding took {seconds / 60:.1f} min "
            f"({(estimate - seconds) / seconds:+.0%})")


def _announce(path: Path | None, group: str) -> None:
    """Append ``group`` to the progress file, if one was asked for."""
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(group + "\n")
