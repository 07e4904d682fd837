"""Benchmark (not a test): every neural stage's throughput against this machine's measured fp32 peak (issue 54).

For each thread count (``--threads``, default 1 and 2) it measures the achievable fp32 matmul rate
(``engines.peak.measure_peak``) before and after timing the stages, and compares each stage with the better of
the two (another process's work can hold a core for seconds). The stages run on realistic inputs, in the
passes the course runs:

- the encoder (MiniLM, both routes: PyTorch, the default, and onnxruntime): a sample of ``prepare``'s own plan
  (``encoder_routes.plan_sample``: ``--texts`` texts drawn as whole passes of one length), no cache;
- the generator (SmolLM2-135M): one pass of ``BATCH`` different prompts of ``--prompt`` tokens (the reader's chat
  template over numpy pages, ``generator_throughput.prompts_of_length``), each padded to its bucket as the
  generator pads it; prefill and decode (at most ``--new`` tokens a row) reported apart;
- the trained cross-encoder: the first ``dev`` question and its 20 best BM25 chunks of the kept system's cut,
  read with their headers, scored with nothing cached. Only if a trained model is in the cache: this never trains.

Every stage's FLOPs are counted from its model's config (``engines.peak``) over what the pass computes:
the filler rows of a fixed-shape pass and a prompt's padding are computed, so they are counted in GFLOP/s;
tokens/s counts the real inputs only (decode: every row's step, also after the row's end of turn).
The encoders and the cross-encoder are timed ``--repeats`` times after a warm-up pass (the median is shown),
the generator's pass once (it runs for tens of seconds), with the CPU seconds of the process. The machine may
be shared: the load average is printed beside, and each line also gives the stage's FLOPs per CPU second
against the peak's (a thread that waits for a core costs wall time, not CPU time: the fairer comparison under
load).

    PYTHONPATH=src .venv/bin/python benchmarks/neural_throughput.py [--threads 1 2] [--texts 256] [--prompt 600]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent))


def timed(compute, repeats: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of the process) of ``repeats`` calls of ``compute``."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        compute()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def load() -> str:
    return f"load average {os.getloadavg()[0]:.2f}"


class Measured(NamedTuple):
    """One stage timed: what ``stage_line`` needs besides the peak, and a line of detail."""

    stage: str
    tokens: int
    wall: float
    flops: int
    cpu: float
    detail: str


def encoder_stages(texts: list[str], lengths: list[int], threads: int, repeats: int) -> list[Measured]:
    import torch

    from ragcourse.engines.batching import computed_rows, fixed_shape_batches, run_fixed_shape
    from ragcourse.engines.dense import DenseEncoder, onnx_compute
    from ragcourse.engines.peak import encoder_flops

    encoder = DenseEncoder(threads=threads)
    model, size = encoder.model, encoder.batch_size
    bert = model[0].auto_model
    batches = fixed_shape_batches(lengths, size)
    flops = sum(encoder_flops(bert.config, [b.length] * size, pooler=bert.pooler is not None) for b in batches)
    needed, computed = computed_rows(batches)
    torch.set_num_threads(threads)
    routes = {"torch": encoder.forward, "onnx": onnx_compute(model, threads)}
    measured = []
    for route, compute in routes.items():
        run_fixed_shape(texts[:size], lengths[:size], size, compute)   # warm-up (and the onnx session)
        wall, cpu = timed(lambda: run_fixed_shape(texts, lengths, size, compute), repeats)
        measured.append(Measured(
            f"encoder ({route})", sum(lengths), wall, flops, cpu, f"    {len(texts)} texts of the plan, {sum(lengths) / len(texts):.1f} tokens a text, in {len(batches)} "
                     f"passes of {size} ({computed - needed} filler rows); {wall:.2f} s wall, {cpu:.2f} s CPU; {load()}"))
    return measured


def generator_stages(prompts, threads: int) -> list[Measured]:
    from ragcourse.engines.peak import decode_contexts, decode_flops, prefill_flops
    from ragcourse.rag import generator as generation

    generator = generation.Generator(max_new_tokens=prompts.new, threads=threads,
                                     cache=generation.GenerationCache(Path(tempfile.mkdtemp()) / "g.sqlite"))
    model = generator.model
    rows = prompts.rows
    length = generation.bucket(rows[0].tokens)
    ends = []   # the process's CPU seconds at the end of every forward pass: the first ends the prefill
    hook = model.register_forward_hook(lambda *_: ends.append(time.process_time()))
    before = dict(generator.stats)
    cpu = time.process_time()
    try:
        made = generator._decode_pass(rows)
    finally:
        hook.remove()
    prefill_cpu, decode_cpu = ends[0] - cpu, time.process_time() - ends[0]
    prefill_s = generator.stats["prefill_seconds"] - before["prefill_seconds"]
    decode_s = generator.stats["decode_seconds"] - before["decode_seconds"]
    steps = len(ends) - 1   # forward passes after the prefill
    measured = [Measured(
        "generator prefill", sum(p.tokens for p in rows), prefill_s, prefill_flops(model.config, [length] * generation.BATCH),
        prefill_cpu, f"    {len(rows)} prompts of {rows[0].tokens} tokens, padded to {length}, one pass of "
        f"{generation.BATCH} rows; {prefill_s:.2f} s wall, {prefill_cpu:.2f} s CPU; {load()}")]
    if steps > 0:
        measured.append(Measured(
            "generator decode", generation.BATCH * steps, decode_s,
            decode_flops(model.config, decode_contexts(generation.BATCH, length, steps)), decode_cpu,
            f"    {steps} steps of {generation.BATCH} rows after the prompt ({sum(g.tokens_out for g in made)} tokens "
            f"written in all, each row's first from the prefill's logits); {decode_s:.2f} s wall, {decode_cpu:.2f} s CPU; "
            f"{load()}"))
    return measured


def cross_encoder_stage(scorer, pairs, threads: int, repeats: int) -> Measured:
    from ragcourse.engines.batching import computed_rows, fixed_shape_batches, preprocessed_lengths
    from ragcourse.engines.dense import encode_batch_size
    from ragcourse.engines.peak import encoder_flops

    os.environ["RAGCOURSE_TORCH_THREADS"] = str(threads)   # compute_scores runs on torch_threads()
    model, size = scorer.model, encode_batch_size()
    lengths = preprocessed_lengths(model, pairs)
    batches = fixed_shape_batches(lengths, size)
    config = model.model.config
    flops = sum(encoder_flops(config, [b.length] * size, labels=config.num_labels) for b in batches)
    needed, computed = computed_rows(batches)
    scorer.compute(pairs[:1])   # warm-up
    wall, cpu = timed(lambda: scorer.compute(pairs), repeats)
    return Measured(
        "cross-encoder", sum(lengths), wall, flops, cpu, f"    {len(pairs)} pairs of a dev question, {sum(lengths) / len(pairs):.1f} tokens a pair, in {len(batches)} "
            f"passes of {size} ({computed - needed} filler rows: {100 * needed / computed:.0f}% of the rows are real); "
        f"{wall:.3f} s wall, {cpu:.3f} s CPU; {load()}")


def trained_scorer():
    """The cross-encoder of today's settings and 20 (question, chunk) pairs of the first dev question, or None and
    why (never trained here)."""
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.corpus.queries import real_questions
    from ragcourse.engines.bm25 import Bm25Index
    from ragcourse.rag.cross_encoder.reranker import TrainedCrossEncoder, prepare_groups
    from ragcourse.rag.cross_encoder.training import LOG_FILE, reranker_dir
    from ragcourse.rag.cross_encoder.training_pairs import page_chunks

    prepared = prepare_groups()
    folder = reranker_dir() / prepared.key
    if not (folder / LOG_FILE).exists():
        return None, f"no trained cross-encoder {prepared.key} in {reranker_dir()}: not measured (this never trains)"
    scorer = TrainedCrossEncoder(folder, prepared.key, headers=prepared.headers)
    chunks = page_chunks(load_corpus())
    question = real_questions("dev")[0].text
    best = Bm25Index([c.text for c in chunks]).search(question)[:20]
    pairs = [(question, text) for text in scorer.as_read([chunks[n].text for n, _ in best])]
    return (scorer, pairs), f"cross-encoder {prepared.key}: {question!r} and its {len(pairs)} best BM25 chunks"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--texts", type=int, default=256, help="encoder texts, drawn as whole passes of the plan")
    parser.add_argument("--seed", type=int, default=54)
    parser.add_argument("--prompt", type=int, default=600, help="generator prompt tokens")
    parser.add_argument("--new", type=int, default=32, help="most tokens decoded a row")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import platform

    import torch

    from encoder_routes import plan_sample
    from generator_throughput import prompts_of_length
    from ragcourse.engines.dense import DenseEncoder
    from ragcourse.engines.peak import PEAK_REPEATS, measure_peak, stage_line
    from ragcourse.rag import generator as generation

    started = time.perf_counter()
    print(f"torch {torch.__version__}, {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
          f"{load()} at the start")
    encoder = DenseEncoder()
    texts, mix = plan_sample(args.texts, args.seed, encoder)
    lengths = mix["lengths"]
    generator = generation.Generator(max_new_tokens=args.new)
    prompts = argparse.Namespace(rows=prompts_of_length(generator.tokenizer, args.prompt, generation.BATCH),
                                 new=args.new)
    found, said = trained_scorer()
    print(f"inputs ready in {time.perf_counter() - started:.0f} s; {said}\n")
    for threads in args.threads:
        torch.set_num_threads(threads)
        first = measure_peak(threads)
        measured = encoder_stages(texts, lengths, threads, args.repeats) + generator_stages(prompts, threads)
        if found is not None:
            measured.append(cross_encoder_stage(*found, threads, args.repeats))
        torch.set_num_threads(threads)
        second = measure_peak(threads, repeats=2 * PEAK_REPEATS)   # again after the stages: the load moves
        peak = replace(max(first, second, key=lambda p: p.gflops), cpu_gflops=max(first.cpu_gflops, second.cpu_gflops))
        print(f"{threads} thread{'s' if threads != 1 else ''}: peak {peak.gflops:.1f} GFLOP/s, {peak.cpu_gflops:.1f} GFLOP "
              f"per CPU second, the better of two measurements ({peak.size} x {peak.size} fp32 matmul, best of "
              f"{first.repeats} before the stages: {first.gflops:.1f} GFLOP/s, {first.cpu_gflops:.1f} per CPU second; "
              f"best of {second.repeats} after them: {second.gflops:.1f}, {second.cpu_gflops:.1f}); {load()}")
        for stage in measured:
            print(stage_line(stage.stage, stage.tokens, stage.wall, stage.flops, peak, stage.cpu))
            print(stage.detail)
        print(flush=True)
    print(f"done in {time.perf_counter() - started:.0f} s; {load()}")


if __name__ == "__main__":
    main()
