"""Benchmark (not a test): lab 04's second stages on ``dev``, and what the course's cross-encoder costs.

  .venv/bin/python benchmarks/second_stage_dev.py               # the comparison, the learning curve, the cost
  .venv/bin/python benchmarks/second_stage_dev.py --cold-cost   # also: score dev cold, timed
  .venv/bin/python benchmarks/second_stage_dev.py --depths 10,30   # also: the comparison at other depths

It starts its own embedded PostgreSQL (or uses ``$RAGCOURSE_DATABASE_URL``), indexes the numpy reference at
the kept setting (``rag.pipeline.DEFAULT_SETTING``: recursive headed chunks with summary lines), runs ``dev``
(every real question the corpus can answer: ``answerable_in(corpus, real_questions("all"))``, 319 of them)
through its first stage (both paths, fused; no second stage), trains the cross-encoder or reads it from the
cache (``rag.cross_encoder.reranker.train_or_load``), and prints:

- the four second stages on ``dev`` (``labs.second_stage.compare_second_stages``), each scored on its ranked
  list of ten pages: hit@1, hit@5, MRR@10, and each against today's learned combination with its paired
  interval (one Holm family);
- the learning curve: the loss over training (means over tenths of the steps) and MRR@10 of the reranked
  first stage at each checkpoint, on a fixed subset of ``dev`` (``labs.second_stage.CURVE_QUESTIONS``);
- the cost per question of scoring its candidates with nothing cached.

``--cold-cost`` then times scoring every pair the lab's cross-encoder rows need for ``dev`` (the first ``depth``
fused candidates and the learned combination's first ``depth``) into an empty score cache of its own: what the
scores add to a cold ``make course``. No fresh question is read. ``--depths`` repeats the comparison with the
cross-encoder reading other numbers of candidates.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold-cost", action="store_true", help="also time scoring dev from nothing")
    parser.add_argument("--depth", type=int, default=None, help="candidates the cross-encoder reads (default: DEPTH)")
    parser.add_argument("--depths", default="", help="comma-separated depths to compare as well (e.g. 10,30)")
    args = parser.parse_args()

    from ragcourse.corpus.apidocs import export_markdown, load_corpus
    from ragcourse.corpus.queries import answerable_in, real_questions
    from ragcourse.engines.dense import DenseEncoder
    from ragcourse.rag.pipeline import DEFAULT_SETTING as KEPT
    from ragcourse.labs.second_stage import compare_second_stages, cost_per_query, fused_texts, learning_curve
    from ragcourse.labs.systems import SettingRuns
    from ragcourse.rag.cross_encoder.reranker import ScoreCache, TrainedCrossEncoder, train_or_load
    from ragcourse.rag.database import close_lab_database, lab_database
    from ragcourse.rag.reader import ExtractiveReader

    started = time.perf_counter()
    workspace = Path(tempfile.mkdtemp(prefix="ragcourse-second-stage-"))
    try:
        corpus = load_corpus()
        export_markdown(corpus, workspace / "history", summaries=True)
        encoder = DenseEncoder()
        runs = SettingRuns(lab_database(), encoder, {True: workspace / "history"}, ExtractiveReader(encoder),
                           report=None)
        first = KEPT.changed(second_stage="none")
        dev = answerable_in(corpus, real_questions("all"))
        traces = runs.traces(first, dev, "dev")
        print(f"first stage: {first}\n{len(dev)} dev questions through it in {time.perf_counter() - started:.0f} s\n")

        wall, cpu = time.perf_counter(), time.process_time()
        scorer = train_or_load(progress=True, encoder=encoder)
        if args.depth is not None:
            scorer = scorer.with_depth(args.depth)
        log = scorer.log
        print(f"train_or_load: {time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU in this "
              f"process; the training itself took {log.seconds:.0f} s wall, {log.cpu_seconds:.0f} s CPU "
              f"({log.groups} queries: {log.kinds}; {log.pairs} pairs; settings {log.settings})\n")

        wall, cpu = time.perf_counter(), time.process_time()
        comparison = compare_second_stages(traces, dev, scorer, progress=True)
        print("\n".join(comparison.lines()))
        print(f"(scored and compared in {time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU)\n")
        for depth in [int(d) for d in args.depths.split(",") if d.strip()]:
            wall, cpu = time.perf_counter(), time.process_time()
            other = compare_second_stages(traces, dev, scorer.with_depth(depth), progress=True)
            print("\n".join(other.lines()))
            print(f"(depth {depth}: scored and compared in {time.perf_counter() - wall:.0f} s wall, "
                  f"{time.process_time() - cpu:.0f} s CPU)\n")

        wall = time.perf_counter()
        curve = learning_curve(scorer, traces, dev, progress=True)
        tenth = max(1, len(curve.losses) // 10)
        means = [statistics.fmean(curve.losses[i:i + tenth]) for i in range(0, len(curve.losses), tenth)]
        print(f"learning curve ({len(curve.losses)} steps): mean loss by tenth of the steps "
              + " ".join(f"{m:.3f}" for m in means))
        print(f"MRR@10 on a fixed subset of {curve.questions} dev questions (fused order alone: {curve.fused_mrr:.3f}):")
        for pairs, value in curve.mrr.items():
            print(f"  after {pairs:5} pairs: {value:.3f}")
        print(f"(curve in {time.perf_counter() - wall:.0f} s)\n")

        cost = cost_per_query(scorer, traces, count=10)
        print(f"cost per question, nothing cached ({cost.questions} questions, {cost.pairs:.0f} pairs each): median "
              f"{cost.median_ms:.0f} ms wall (p95 {cost.p95_ms:.0f} ms), median {cost.cpu_ms:.0f} ms CPU")

        if args.cold_cost:
            from ragcourse.rag.cross_encoder.combined import first_step
            from ragcourse.rag.rerank import INPUT_CHARS, LEARNED_WEIGHTS

            items = []
            for t in traces:
                passages, _, _, top, _ = first_step(LEARNED_WEIGHTS, t.question, t.candidates.full_text,
                                                    t.candidates.dense, scorer.depth)
                texts = list(dict.fromkeys(fused_texts(t, scorer.depth) + [passages[i].text[:INPUT_CHARS] for i in top]))
                items.append((t.question, texts))
            cold = TrainedCrossEncoder(scorer.folder, scorer.key, scorer.depth, ScoreCache(workspace / "cold.sqlite"),
                                       headers=scorer.headers)
            wall, cpu = time.perf_counter(), time.process_time()
            cold.score_many(items, progress=True)
            seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
            print(f"\ncold scores for the {len(traces)} dev questions: "
                  f"{cold.last_computed} pairs in {seconds:.0f} s wall, {cpu_seconds:.0f} s CPU "
                  f"({1000 * cpu_seconds / max(1, cold.last_computed):.0f} ms CPU a pair)")
        runs.close()
    finally:
        close_lab_database()
        shutil.rmtree(workspace, ignore_errors=True)
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
