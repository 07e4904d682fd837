"""Benchmark (not a test): the labs' dense stage against sentence-transformers' own ``encode``.

Both embed the same distinct texts (lab 02's windows and pages, every query) on the same
threads: once through ``SentenceTransformer.encode`` directly, once through
``DenseEncoder.encode`` with an empty cache (hashing, cache look-up, encode, store), then
once more warm. Prints the seconds, texts per second and the ratio; the target is a
ratio of at most 1.2.

    .venv/bin/python benchmarks/labs_encode_ratio.py [--limit N]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from ragcourse.corpus.apidocs import load_corpus
from ragcourse.engines.chunking.text_chunks import chunk_corpus, word_windows
from ragcourse.engines.dense import BATCH_SIZE, DenseEncoder, EmbeddingCache
from ragcourse.corpus.queries import judged_questions, unanswerable_questions


def lab_texts() -> list[str]:
    corpus = load_corpus()
    texts = [c.text for c in chunk_corpus(corpus.documents, word_windows, size=60, overlap=20)]
    texts += [d.text for d in corpus.documents] + [d.title for d in corpus.documents]
    texts += [q.text for q in judged_questions(corpus) + unanswerable_questions()]
    return sorted(set(texts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="only the first N distinct texts")
    args = parser.parse_args()
    texts = lab_texts()[:args.limit]
    with tempfile.TemporaryDirectory() as scratch:
        ours = DenseEncoder(EmbeddingCache(Path(scratch) / "e.sqlite"))
        model = ours.model
        import torch

        torch.set_num_threads(ours.threads)
        model.encode(texts[:64], batch_size=BATCH_SIZE)   # warm-up: first calls allocate
        started = time.perf_counter()
        reference = model.encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        library_seconds = time.perf_counter() - started
        started = time.perf_counter()
        cold = ours.encode(texts, progress=False)
        cold_seconds = time.perf_counter() - started
        started = time.perf_counter()
        ours.encode(texts, progress=False)
        warm_seconds = time.perf_counter() - started
    print(f"{len(texts)} distinct texts, {ours.threads} threads, batch {BATCH_SIZE}")
    print(f"sentence-transformers encode: {library_seconds:7.1f} s  ({len(texts) / library_seconds:5.1f} texts/s)")
    print(f"DenseEncoder, empty cache:    {cold_seconds:7.1f} s  ({len(texts) / cold_seconds:5.1f} texts/s)")
    print(f"DenseEncoder, warm cache:     {warm_seconds:7.2f} s")
    print(f"ratio (ours cold / library):  {cold_seconds / library_seconds:.3f}")
    print(f"largest vector difference:    {float(np.abs(cold - reference).max()):.1e}")


if __name__ == "__main__":
    main()
