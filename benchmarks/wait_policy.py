"""Benchmark (not a test): OpenMP's wait policy when processes share the cores (issue 54).

torch's CPU build runs its operators on libgomp threads. Between two parallel regions a libgomp thread
spins (it keeps its core busy, polling) before it sleeps. Alone on the machine that saves a wake-up; in
``make test`` two pytest workers and ``prepare`` each run torch on every core, and a spinning thread holds
a core another process's thread is waiting for. ``OMP_WAIT_POLICY=PASSIVE`` makes the threads sleep at once.

This runs ``--copies`` processes at the same time, each on ``--threads`` threads, once with the policy
unset (libgomp's default) and once with ``PASSIVE``, for two workloads:

- ``encoder``: MiniLM embeds ``--texts`` numpy pages (first 800 characters, each process its own text so
  nothing is shared), in the encoder's fixed-shape passes, into an empty cache;
- ``generator``: SmolLM2 answers one pass of 8 closed-book prompts (48 new tokens at most).

and prints each process's wall and CPU seconds. ``--copies 1`` gives the cost of sleeping on a quiet machine.
The policy changes when a thread sleeps, not what it computes: the vectors and answers are the same.

    python benchmarks/wait_policy.py [--copies 3] [--threads 2] [--texts 600] [--workloads encoder generator]

On the 2-core machine (2026-12-06, nothing else running): 3 copies of the encoder took 155-175 s wall and
103-130 s CPU each with the default, 57-58 s wall and 38 s CPU with ``PASSIVE``; 3 copies of the generator
16-62 s wall and 11-56 s CPU, against 6-8 s and 4-5 s. One copy alone: the encoder 20.3-20.6 s both ways,
the generator 2.3-2.4 s default against 2.5-2.6 s ``PASSIVE``. ``--copies 2 --texts 60`` (this script,
load average 1.6 before it): the encoder 22.9-23.5 s against 11.2 s, the generator 63.1-63.6 s against 4.8 s.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

WORKER = r"""
import sys, tempfile, time
from pathlib import Path
workload, tag, texts = sys.argv[1], sys.argv[2], int(sys.argv[3])
threads = int(sys.argv[4])
root = Path(tempfile.mkdtemp())
if workload == "encoder":
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.dense import DenseEncoder, EmbeddingCache
    pages = [d.text[:800] + f" {tag}" for d in list(load_corpus().by_id.values())[:texts]]
    encoder = DenseEncoder(cache=EmbeddingCache(root / "e.sqlite"), threads=threads)
    encoder.model
    run = lambda: encoder.encode(pages, progress=False)
else:
    from ragcourse.engines.dense import cache_dir
    from ragcourse.rag.generator import Generator
    (root / "generator").symlink_to(cache_dir() / "generator")   # the converted weights, not the answers
    generator = Generator(max_new_tokens=48, threads=threads, cache_root=root)
    generator.model
    verbs = ("join", "stack", "add", "compare", "multiply", "split", "sort", "merge")
    prompts = [generator.prompt(f"How do I {verb} two arrays in numpy ({tag})?", ()) for verb in verbs]
    run = lambda: generator.generate_many(prompts, progress=False)
wall, cpu = time.perf_counter(), time.process_time()
run()
print(f"{time.perf_counter() - wall:.1f} {time.process_time() - cpu:.1f}")
"""


def run_copies(workload: str, policy: str | None, copies: int, threads: int, texts: int) -> list[tuple[float, float]]:
    environment = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        environment["OMP_WAIT_POLICY"] = policy
    started = [subprocess.Popen([sys.executable, "-c", WORKER, workload, f"{policy or 'default'}{n}", str(texts),
                                 str(threads)], env=environment, stdout=subprocess.PIPE, text=True)
               for n in range(copies)]
    times = []
    for process in started:
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"a {workload} copy failed with status {process.returncode}")
        wall, cpu = out.split()[-2:]
        times.append((float(wall), float(cpu)))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--workloads", nargs="+", choices=("encoder", "generator"), default=["encoder", "generator"])
    args = parser.parse_args()
    print(f"{args.copies} copies at once, {args.threads} threads each, {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.1f}")
    for workload in args.workloads:
        for policy in (None, "PASSIVE"):
            started = time.perf_counter()
            times = run_copies(workload, policy, args.copies, args.threads, args.texts)
            print(f"{workload:<9} {policy or 'default':<8} wall " + ", ".join(f"{w:.1f}" for w, _ in times)
                  + " s; CPU " + ", ".join(f"{c:.1f}" for _, c in times)
                  + f" s; all done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
