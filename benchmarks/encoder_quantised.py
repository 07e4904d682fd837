"""Benchmark (not a test): MiniLM in float32 against int8 dynamic quantisation of its linear layers.

Issue 38 asks whether a faster encoder would pay: torch's ``quantize_dynamic`` turns every
``nn.Linear`` of the loaded sentence-transformers model into an int8 one (weights stored in
int8, activations quantised on the fly). Both models encode the same sample of the labs'
texts (every k-th text of lab 02's windows and pages, in length order, so the sample has the
plan's length mix) on the same threads, alternately, three rounds each; the script prints the
median seconds, the speed ratio, and how far the vectors move (cosine between a text's two
vectors) and how often the nearest page of a question changes over lab 02's pages.

    .venv/bin/python benchmarks/encoder_quantised.py [--texts N]

Adopt only at a ratio of at least 1.5 and only if every stored dense verdict holds.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from ragcourse.corpus.apidocs import load_corpus, with_summaries
from ragcourse.corpus.queries import judged_questions, real_questions
from ragcourse.engines.chunking.text_chunks import chunk_corpus, word_windows
from ragcourse.engines.dense import BATCH_SIZE, DenseEncoder


def sample(texts: list[str], tokens: list[int], n: int) -> list[str]:
    """Every k-th text in length order (longest first): the set's own length mix."""
    ordered = [t for _, t in sorted(zip(tokens, texts), key=lambda pair: -pair[0])]
    return ordered[::max(1, len(ordered) // n)][:n]


def timed(model, texts: list[str]) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True)
    return time.perf_counter() - started, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=768, help="texts in the sample (default 768)")
    args = parser.parse_args()
    import torch

    corpus = load_corpus()
    pages = with_summaries(corpus.documents)
    units = [d.text for d in pages] + [c.text for c in chunk_corpus(pages, word_windows, size=60, overlap=20)]
    encoder = DenseEncoder()
    chosen = sample(units, encoder.token_counts(units), args.texts)
    plain = encoder.model
    quantised = torch.ao.quantization.quantize_dynamic(plain, {torch.nn.Linear}, dtype=torch.qint8)
    print(f"{len(chosen)} texts, {encoder.threads} threads, torch {torch.__version__}")
    timed(plain, chosen[:64]), timed(quantised, chosen[:64])          # warm both
    seconds = {"float32": [], "int8": []}
    for _ in range(3):
        for name, model in (("float32", plain), ("int8", quantised)):
            took, vectors = timed(model, chosen)
            seconds[name].append(took)
            if name == "float32":
                reference = vectors
            else:
                moved = vectors
    medians = {name: statistics.median(s) for name, s in seconds.items()}
    for name, median in medians.items():
        print(f"{name:<8} {median:7.2f} s  ({len(chosen) / median:6.1f} texts/s)  rounds {[round(s, 2) for s in seconds[name]]}")
    print(f"speed ratio float32 / int8: {medians['float32'] / medians['int8']:.2f}")
    cosines = np.sum(reference * moved, axis=1)
    print(f"cosine between a text's two vectors: min {cosines.min():.4f}, median {np.median(cosines):.4f}")
    questions = [q.text for q in judged_questions(corpus) + real_questions("dev")]
    page_texts = [d.text for d in pages]
    same = 0
    for model_pair in [(plain, quantised)]:
        a = model_pair[0].encode(questions, normalize_embeddings=True) @ model_pair[0].encode(page_texts, normalize_embeddings=True).T
        b = model_pair[1].encode(questions, normalize_embeddings=True) @ model_pair[1].encode(page_texts, normalize_embeddings=True).T
        same = int(np.sum(a.argmax(axis=1) == b.argmax(axis=1)))
    print(f"nearest page unchanged for {same} of {len(questions)} questions (judged + real dev)")


if __name__ == "__main__":
    main()
