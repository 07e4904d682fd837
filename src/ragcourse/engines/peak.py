"""How close the course's neural stages come to this machine's arithmetic limit.

``measure_peak`` times a square fp32 matrix product with torch on the current thread count (warm-up first,
then the best of several repeats) and returns what it reached, in GFLOP/s. That is the *achievable* matmul
peak measured here, on this machine as it is loaded at the time, not a datasheet number: a processor's
nominal figure (cores x clock x vector width x fused multiply-adds) is higher, and no neural stage beats a
large matrix product of one library on the same threads. It is measured once per process and thread count.
On a shared machine a thread waiting for a core costs wall time but no CPU time, so the peak is also kept per
CPU second of the process (``cpu_gflops``, all threads summed), and ``stage_line`` compares a stage's FLOPs per
CPU second with it when given the stage's CPU seconds: the fairer of the two figures while others run.

The FLOPs of a stage are counted from the model's own configuration (a ``transformers`` config or anything
with the same attributes), one multiply-add counted as two FLOPs, matrix products only (layer norms,
softmax, activations, biases and rotary embeddings are left out: a few percent at the course's lengths):

- an encoder (BERT: MiniLM, and the cross-encoder built on it), per token
  ``2 x`` the layer weights (query, key, value, output, and the two feed-forward matrices) plus, per layer,
  ``4 x length x hidden`` for the attention (scores, then their weighted sum), plus, per sequence, the pooler
  (``hidden x hidden``, which BERT computes even when a sentence encoder pools otherwise) and a classifier's
  ``hidden x labels``: ``encoder_flops``;
- a decoder (Llama: SmolLM2, grouped-query attention, gated feed-forward), per token ``2 x`` the layer weights
  (query and output ``hidden x heads x head_dim``, key and value ``hidden x kv_heads x head_dim``, three
  feed-forward matrices), plus ``4 x context x heads x head_dim`` per layer for the attention, plus the
  output head (``hidden x vocabulary``, tied to the embedding) for every token whose logits are computed:
  ``prefill_flops`` (a prompt read at once; the attention over the full square, as a dense kernel computes
  it, and logits for its last token only, as the generator asks) and ``decode_flops`` (one new token a row
  and step, attending to every position so far).

``stage_line`` writes one stage's throughput against the peak.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

PEAK_SIZE = 1536      # the matrix side: 7.2 GFLOP a product, compute-bound on any CPU
PEAK_REPEATS = 5
PEAK_WARMUP = 2


@dataclass(frozen=True)
class Peak:
    """The best fp32 matrix-product rate measured: ``gflops`` per wall second on ``threads`` threads, ``size`` x
    ``size``; ``cpu_gflops`` per CPU second of the process (the product that took the least CPU time)."""

    gflops: float
    threads: int
    size: int
    best_seconds: float
    repeats: int
    cpu_gflops: float = float("nan")

    def describe(self) -> str:
        return f"{self.gflops:.1f} GFLOP/s, {self.threads} thread{'s' if self.threads != 1 else ''}"


def measure_peak(threads: int | None = None, size: int = PEAK_SIZE, repeats: int = PEAK_REPEATS) -> Peak:
    """This machine's achievable fp32 matmul rate on ``threads`` threads (default: ``torch.get_num_threads()``),
    measured once per process and arguments: ``PEAK_WARMUP`` products, then the best of ``repeats``."""
    import torch

    if threads is None:
        threads = torch.get_num_threads()
    for name, value, low in (("threads", threads, 1), ("size", size, 16), ("repeats", repeats, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be a whole number of at least {low}; got {value!r}")
    return _measured(threads, size, repeats)


@lru_cache(maxsize=None)
def _measured(threads: int, size: int, repeats: int) -> Peak:
    import torch

    generator = torch.Generator().manual_seed(54)
    a = torch.randn(size, size, generator=generator, dtype=torch.float32)
    b = torch.randn(size, size, generator=generator, dtype=torch.float32)
    out = torch.empty(size, size, dtype=torch.float32)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.inference_mode():
            for _ in range(PEAK_WARMUP):
                torch.mm(a, b, out=out)
            best, best_cpu = float("inf"), float("inf")
            for _ in range(repeats):
                started, cpu = time.perf_counter(), time.process_time()
                torch.mm(a, b, out=out)
                best = min(best, time.perf_counter() - started)
                best_cpu = min(best_cpu, time.process_time() - cpu)
    finally:
        torch.set_num_threads(previous)
    flops = 2 * size ** 3
    return Peak(flops / best / 1e9, threads, size, best, repeats, flops / best_cpu / 1e9 if best_cpu > 0 else float("nan"))


@dataclass(frozen=True)
class Arithmetic:
    """What a transformer's matrix products cost, read from its config (see the module's docstring)."""

    layers: int
    layer_weights: int     # weights of one layer's matrix products (each used once per token)
    attention_width: int   # query heads x head size: the width of scores and weighted sums
    sequence_weights: int  # weights used once per sequence (an encoder's pooler and classifier)
    head_weights: int      # weights used once per token whose logits are computed (a decoder's output head)


def _field(config, name: str) -> int:
    value = getattr(config, name, None)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"config.{name} must be a whole number of at least 1; got {value!r}")
    return value


def arithmetic(config, pooler: bool = True, labels: int = 0) -> Arithmetic:
    """The costs of ``config``'s model: ``model_type`` ``bert`` (an encoder, with its pooler if ``pooler`` and a
    classifier of ``labels`` outputs) or ``llama`` (a decoder with its output head)."""
    kind = getattr(config, "model_type", None)
    if kind not in ("bert", "llama"):
        raise ValueError(f"config.model_type must be 'bert' (an encoder) or 'llama' (a decoder); got {kind!r}")
    hidden, layers = _field(config, "hidden_size"), _field(config, "num_hidden_layers")
    inner, heads = _field(config, "intermediate_size"), _field(config, "num_attention_heads")
    if not isinstance(labels, int) or isinstance(labels, bool) or labels < 0:
        raise ValueError(f"labels must be a whole number of at least 0; got {labels!r}")
    if kind == "bert":
        if hidden % heads:
            raise ValueError(f"config.hidden_size ({hidden}) must be a multiple of num_attention_heads ({heads})")
        return Arithmetic(layers, 4 * hidden * hidden + 2 * hidden * inner, hidden,
                          (hidden * hidden if pooler else 0) + hidden * labels, 0)
    if labels:
        raise ValueError(f"labels must be 0 for a decoder (its output head is counted); got {labels!r}")
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    width, kv_width = heads * head_dim, kv_heads * head_dim
    layer = 2 * hidden * width + 2 * hidden * kv_width + 3 * hidden * inner
    return Arithmetic(layers, layer, width, 0, hidden * _field(config, "vocab_size"))


def _lengths(name: str, values: Sequence[int]) -> list[int]:
    values = list(values)
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in values):
        raise ValueError(f"{name} must be whole numbers of at least 1; got {values[:8]!r}")
    return values


def encoder_flops(config, lengths: Sequence[int], pooler: bool = True, labels: int = 0) -> int:
    """FLOPs of an encoder (``model_type`` bert) over sequences of ``lengths`` tokens, each unpadded (as the
    course's fixed-shape passes compute them; a filler row is a sequence too)."""
    cost = arithmetic(config, pooler, labels)
    if cost.head_weights:
        raise ValueError("encoder_flops counts an encoder (config.model_type 'bert'); use prefill_flops for a decoder")
    return sum(2 * n * cost.layers * cost.layer_weights + 4 * cost.layers * n * n * cost.attention_width
               + 2 * cost.sequence_weights for n in _lengths("lengths", lengths))


def _decoder(config) -> Arithmetic:
    cost = arithmetic(config)
    if not cost.head_weights:
        raise ValueError("this counts a decoder (config.model_type 'llama'); use encoder_flops for an encoder")
    return cost


def prefill_flops(config, lengths: Sequence[int], logits: int = 1) -> int:
    """FLOPs of a decoder reading prompts of ``lengths`` tokens at once (padding counts as tokens: it is
    computed), the attention over the full square, and the output head for the last ``logits`` tokens of each."""
    cost = _decoder(config)
    lengths = _lengths("lengths", lengths)
    if not isinstance(logits, int) or isinstance(logits, bool) or not 0 <= logits <= min(lengths, default=0):
        raise ValueError(f"logits must be a whole number from 0 to the shortest length; got {logits!r}")
    return sum(2 * n * cost.layers * cost.layer_weights + 4 * cost.layers * n * n * cost.attention_width
               + 2 * logits * cost.head_weights for n in lengths)


def decode_flops(config, contexts: Sequence[int]) -> int:
    """FLOPs of a decoder writing one token per entry of ``contexts``: each new token's layers, its attention
    over ``context`` positions (the prompt, the tokens before it and itself) and the output head."""
    cost = _decoder(config)
    return sum(2 * cost.layers * cost.layer_weights + 4 * cost.layers * c * cost.attention_width
               + 2 * cost.head_weights for c in _lengths("contexts", contexts))


def decode_contexts(rows: int, prompt: int, steps: int) -> list[int]:
    """The context of every token ``steps`` decoding steps write into ``rows`` rows after a ``prompt``-token
    (padded) pass: ``prompt + 1``, ``prompt + 2``, ... for each row."""
    for name, value, low in (("rows", rows, 1), ("prompt", prompt, 1), ("steps", steps, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be a whole number of at least {low}; got {value!r}")
    return [prompt + step for step in range(1, steps + 1) for _ in range(rows)]


def stage_line(stage: str, tokens: int, seconds: float, flops: float, peak: Peak, cpu_seconds: float | None = None) -> str:
    """``encoder: 1,234 tokens/s, 25.1 GFLOP/s = 31% of this machine's measured fp32 peak (80.2 GFLOP/s, 1 thread)``;
    with ``cpu_seconds`` (the process's, all threads) it goes on: ``; per CPU second 90.3 GFLOP = 70% of the
    peak's 129.0``."""
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise ValueError(f"tokens must be a whole number of at least 0; got {tokens!r}")
    if not seconds > 0:
        raise ValueError(f"seconds must be more than 0; got {seconds!r}")
    if not flops >= 0:
        raise ValueError(f"flops must be at least 0; got {flops!r}")
    rate = flops / seconds / 1e9
    line = (f"{stage}: {tokens / seconds:,.0f} tokens/s, {rate:,.1f} GFLOP/s = {100 * rate / peak.gflops:.0f}% of "
            f"this machine's measured fp32 peak ({peak.describe()})")
    if cpu_seconds is None:
        return line
    if not cpu_seconds > 0:
        raise ValueError(f"cpu_seconds must be more than 0; got {cpu_seconds!r}")
    per_cpu = flops / cpu_seconds / 1e9
    return (f"{line}; per CPU second {per_cpu:,.1f} GFLOP = {100 * per_cpu / peak.cpu_gflops:.0f}% of the peak's "
            f"{peak.cpu_gflops:,.1f}")
