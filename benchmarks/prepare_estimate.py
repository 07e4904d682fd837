"""Benchmark (not a test): ``prepare``'s first estimate and its re-estimates against the truth, on a cold cache.

A whole cold ``prepare`` takes ten minutes or more of both cores; this runs the same schedule and the same
estimator (``labs.embedding_schedule.encoder_schedule`` and ``embed``, as ``cli.prepare`` does) on a part of
the plan: every ``k``-th of the texts the cache lacks, in the plan's order, so the part keeps the plan's mix
of groups and lengths (about ``--texts`` of them). Point ``$RAGCOURSE_CACHE_DIR`` at an empty folder, or every
text is cached already and nothing runs:

  RAGCOURSE_CACHE_DIR=$(mktemp -d) python benchmarks/prepare_estimate.py --texts 2500

It prints the machine's load before and after, the sample's estimate of the whole embedding against the
seconds it took, and after each group the time left as the bar showed it against the time that was in
fact left; wall and CPU seconds (this process, every thread) of the embedding.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=2500, help="about how many of the missing texts to embed")
    parser.add_argument("--blocks", metavar="FILE", default=None,
                        help="write every block's group, texts, padded tokens, passes and the wall and CPU seconds "
                             "at its end to FILE (JSON lines), to replay other estimators on the same timings")
    args = parser.parse_args()
    if args.texts < 300:
        parser.error("--texts must be at least 300 (the sample alone is 256)")

    from ragcourse.batch.notebooks import lab_parameters
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.dense import DenseEncoder
    from ragcourse.labs.embedding_plan import plan_embeddings
    from ragcourse.labs.embedding_schedule import embed, encoder_schedule

    encoder = DenseEncoder()
    plan = plan_embeddings(load_corpus(), lab_parameters(), encoder)
    step = max(1, len(plan.missing) // args.texts)
    part = dataclasses.replace(plan, missing=plan.missing[::step])
    print(f"plan: {len(plan.texts)} texts, {len(plan.missing)} missing from {plan.cache_path}; "
          f"embedding every {step}th: {len(part.missing)} texts on {encoder.threads} threads, route {encoder.route}")
    if not part.missing:
        return
    schedule = encoder_schedule(part, encoder)
    load_before = os.getloadavg()
    cpu = time.process_time()
    steps, cpu_at = [], []
    for progress in embed(schedule, encoder):
        steps.append(progress)
        cpu_at.append((time.process_time() - cpu, os.getloadavg()[0]))
    cpu = time.process_time() - cpu
    if args.blocks:
        write_blocks(args.blocks, schedule, steps, cpu_at, encoder)
    load_after = os.getloadavg()
    took = steps[-1].seconds
    first = steps[0]
    print(f"load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; {os.cpu_count()} cores")
    print(f"embedded {schedule.texts} texts ({schedule.cost} padded tokens) in {took:.1f} s wall, {cpu:.1f} s CPU")
    print(f"the sample ({schedule.stages[0].texts} texts, {first.seconds:.1f} s) foresaw {first.estimate:.1f} s in all; "
          f"took {took:.1f} s ({(first.estimate - took) / took:+.1%})")
    print(f"{'after':<12}{'texts done':>11}{'seconds':>9}{'shown left':>12}{'truly left':>12}{'error':>8}")
    done = 0
    for progress in steps:
        done += progress.texts
        if not progress.group_done or progress.seconds_left is None:
            continue
        truly = took - progress.seconds
        error = f"{(progress.seconds_left - truly) / truly:+.0%}" if truly > 1 else ""
        print(f"{progress.group or 'the sample':<12}{done:>11}{progress.seconds:>9.1f}{progress.seconds_left:>12.1f}"
              f"{truly:>12.1f}{error:>8}")


def write_blocks(path: str, schedule, steps, cpu_at, encoder) -> None:
    """One JSON line a block (a group with nothing to embed has none): what it held and when it ended."""
    import json

    from ragcourse.engines.batching import fixed_shape_batches

    blocks = [b for stage in schedule.stages for b in stage.blocks]
    timed = [(p, at) for p, at in zip(steps, cpu_at) if p.texts]   # (CPU seconds, 1-minute load) at its end
    with open(path, "w", encoding="utf-8") as handle:
        for block, (progress, (cpu, load)) in zip(blocks, timed, strict=True):
            lengths = encoder.encoded_lengths(list(block.texts))
            passes = len(fixed_shape_batches(lengths, encoder.batch_size))
            handle.write(json.dumps({"group": progress.group, "texts": len(block.texts), "cost": block.cost,
                                     "passes": passes, "tokens": sum(lengths), "seconds": progress.seconds,
                                     "cpu": cpu, "load": load}) + "\n")


if __name__ == "__main__":
    main()
