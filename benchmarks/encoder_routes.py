"""Benchmark (not a test): exact-precision CPU routes for MiniLM against today's PyTorch path (issue 54).

Today's route is ``engines.dense``: sentence-transformers on PyTorch, fp32, window 256, passes of
exactly ``BATCH_SIZE`` rows of one token length (``engines.batching``), on ``torch_threads()``
threads. Every other route here computes the same passes, in fp32, and is timed against it:

- ``torch-eager``: the same model with transformers' eager attention instead of SDPA;
- ``torch-jit``: the BERT traced and frozen (``torch.jit.freeze`` + ``optimize_for_inference``:
  oneDNN fusion of the linear layers);
- ``torch-compile``: ``torch.compile(dynamic=True)`` (inductor; its compile time is reported apart);
- ``ort-basic``, ``ort-all``, ``ort-all-nospin``: the BERT exported to ONNX by torch's own exporter
  (offline, from the installed package) and run by onnxruntime with graph optimisation basic / all,
  the last without busy-waiting threads;
- ``ort-fused``: the same file through ``onnxruntime.transformers.optimizer`` (fused attention,
  skip-layer-norm, GELU), then optimisation all.

sentence-transformers' own ONNX backend (``backend="onnx"``) goes through optimum-onnx, and every
release of optimum-onnx requires transformers < 4.58 (the course pins 5.24.0): it cannot be installed
at the project's pins, so it is not measured; the ONNX routes here run the same kind of graph without
optimum. Each ONNX route's transformer output is pooled and normalised by the model's own modules, so
the routes differ only in the transformer's arithmetic.

The sample: ``prepare``'s whole plan (every group, every distinct text) cut into the passes the encoder
would run (texts of one length, shuffled with ``--seed``, ``BATCH_SIZE`` to a pass), and ``--texts /
BATCH_SIZE`` of those passes drawn with ``--seed``: a uniform sample of the plan's own passes, so lengths
come as often as in the plan and partly filled passes as rarely (about 2,000 texts by default). Routes
run alternately, ``--repeats`` rounds; the table gives the median wall seconds, texts/s, CPU seconds
of the process (all threads), the speed ratio against ``torch``, and the
agreement with ``torch`` over every text of the sample (minimum cosine, largest absolute difference).
``--prefill`` adds the generator's prefill (SmolLM2-135M, fp32, one 800-token prompt) by route.

    python benchmarks/encoder_routes.py [--texts 2000] [--seed 54] [--repeats 3] [--routes ...] [--prefill]

Needs onnx and onnxruntime (not in requirements.txt; see the commit that added this file).
"""
from __future__ import annotations

import argparse
import copy
import os
import random
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

FEATURES = ("input_ids", "attention_mask", "token_type_ids")


def plan_sample(count: int, seed: int, encoder) -> tuple[list[str], dict]:
    """``count`` texts of prepare's plan as full passes (see the module's docstring), and the plan's mix."""
    from ragcourse.batch.notebooks import lab_notebooks, notebook_parameters
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.labs.embedding_plan import distinct, planned_texts

    corpus = load_corpus()
    groups = planned_texts(corpus, {n: notebook_parameters(p) for n, p in lab_notebooks().items()})
    texts = distinct(groups)
    lengths = dict(zip(texts, encoder.encoded_lengths(texts)))
    size = encoder.batch_size
    draw = random.Random(seed)
    passes = []   # the plan's own passes: its texts of one length, shuffled, ``size`` to a pass
    for length in sorted(set(lengths.values())):
        same = [t for t in texts if lengths[t] == length]
        draw.shuffle(same)
        passes.extend(same[i:i + size] for i in range(0, len(same), size))
    chosen = [t for chunk in draw.sample(passes, max(1, count // size)) for t in chunk]
    group_of = {}
    for name, members in groups.items():
        for text in members:
            group_of.setdefault(text, name)
    mix = {"plan": len(texts), "plan_tokens": float(np.mean(list(lengths.values()))),
           "sample_tokens": float(np.mean([lengths[t] for t in chosen])),
           "plan_groups": _shares([group_of[t] for t in texts]),
           "sample_groups": _shares([group_of[t] for t in chosen]),
           "plan_quartiles": np.percentile(list(lengths.values()), [25, 50, 75, 90]).tolist(),
           "sample_quartiles": np.percentile([lengths[t] for t in chosen], [25, 50, 75, 90]).tolist()}
    return chosen, {"lengths": [lengths[t] for t in chosen], **mix}


def _shares(names: list[str]) -> str:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{k} {100 * v / len(names):.0f}%" for k, v in sorted(counts.items()))


class Bert(torch.nn.Module):
    """The BERT with positional inputs and one output (what tracing and exporting need)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state


def routes(model, threads: int, folder: Path, wanted: list[str]) -> dict:
    """Route name -> compute(batch) -> unit vectors; built lazily, in ``wanted``'s order."""
    from ragcourse.engines.dense import BATCH_SIZE, pooled

    def through(forward):
        def compute(batch):
            features = model.preprocess(list(batch))
            with torch.inference_mode():
                return pooled(model, features, forward(*[features[k] for k in FEATURES]))
        return compute

    def today():
        return lambda batch: model.encode(batch, batch_size=BATCH_SIZE, normalize_embeddings=True,
                                          convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    def eager():
        other = copy.deepcopy(model)
        other[0].auto_model.config._attn_implementation = "eager"
        return lambda batch: other.encode(batch, batch_size=BATCH_SIZE, normalize_embeddings=True,
                                          convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    def example():
        features = model.preprocess(["numpy.sum adds the elements of an array along an axis"] * BATCH_SIZE)
        return tuple(features[k] for k in FEATURES)

    def jit():
        with torch.inference_mode():
            traced = torch.jit.trace(Bert(model[0].auto_model).eval(), example(), check_trace=False)
            frozen = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
        return through(frozen)

    def compiled():
        compiled_bert = torch.compile(Bert(model[0].auto_model).eval(), dynamic=True)
        return through(compiled_bert)

    def exported() -> Path:
        path = folder / "minilm.onnx"
        if not path.exists():
            torch.onnx.export(Bert(model[0].auto_model).eval(), example(), str(path), dynamo=False,
                              opset_version=17, input_names=list(FEATURES), output_names=["last_hidden_state"],
                              dynamic_axes={k: {0: "batch", 1: "seq"} for k in (*FEATURES, "last_hidden_state")})
        return path

    def session(path: Path, level: str, spin: bool = True):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        if not spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        run = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run
        return through(lambda *inputs: run(["last_hidden_state"], {k: v.numpy() for k, v in zip(FEATURES, inputs)})[0])

    def fused():
        from onnxruntime.transformers.optimizer import optimize_model

        path = folder / "minilm-fused.onnx"
        if not path.exists():
            config = model[0].auto_model.config
            optimize_model(str(exported()), model_type="bert", num_heads=config.num_attention_heads,
                           hidden_size=config.hidden_size, opt_level=1, use_gpu=False).save_model_to_file(str(path))
        return session(path, "ORT_ENABLE_ALL")

    makers = {"torch": today, "torch-eager": eager, "torch-jit": jit, "torch-compile": compiled,
              "ort-basic": lambda: session(exported(), "ORT_ENABLE_BASIC"),
              "ort-all": lambda: session(exported(), "ORT_ENABLE_ALL"),
              "ort-all-nospin": lambda: session(exported(), "ORT_ENABLE_ALL", spin=False),
              "ort-fused": fused}
    unknown = [name for name in wanted if name not in makers]
    if unknown:
        raise ValueError(f"routes must be among {sorted(makers)}; got {unknown}")
    return {name: makers[name] for name in wanted}


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine in float64 (a float32 dot product of a unit vector with itself is not exactly 1)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def run_route(compute, texts: list[str], lengths: list[int], size: int) -> tuple[float, float, np.ndarray]:
    """(wall seconds, CPU seconds, vectors) of one route over the sample, in fixed-shape passes."""
    from ragcourse.engines.batching import run_fixed_shape

    wall, cpu = time.perf_counter(), time.process_time()
    vectors = np.vstack(run_fixed_shape(texts, lengths, size, compute))
    return time.perf_counter() - wall, time.process_time() - cpu, vectors


def encoder_table(args) -> None:
    from ragcourse.engines.dense import MODEL_NAME, DenseEncoder, text_key

    os.environ["RAGCOURSE_ENCODER_ROUTE"] = "torch"   # the cache's torch vectors, to check the baseline against
    encoder = DenseEncoder()
    model = encoder.model
    torch.set_num_threads(encoder.threads)
    started = time.perf_counter()
    texts, mix = plan_sample(args.texts, args.seed, encoder)
    lengths = mix["lengths"]
    print(f"plan: {mix['plan']} distinct texts, {mix['plan_tokens']:.1f} tokens a text on average, quartiles and "
          f"90th percentile {mix['plan_quartiles']}; groups (first seen) {mix['plan_groups']}")
    print(f"sample: {len(texts)} texts (seed {args.seed}) in {len(texts) // encoder.batch_size + 1} or fewer passes, "
          f"{mix['sample_tokens']:.1f} tokens a text, {mix['sample_quartiles']}; groups {mix['sample_groups']} "
          f"(drawn in {time.perf_counter() - started:.0f} s)")
    print(f"torch {torch.__version__}, {encoder.threads} threads, batch {encoder.batch_size}, "
          f"window {model.max_seq_length}, cpu count {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    folder = Path(tempfile.mkdtemp(prefix="encoder-routes-"))
    makers = routes(model, encoder.threads, folder, ["torch"] + [r for r in args.routes if r != "torch"])
    computes, setup = {}, {}
    for name, make in makers.items():
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            computes[name] = make()
            warm = [t for t, n in zip(texts, lengths) if n == lengths[0]][:encoder.batch_size]
            computes[name](warm)   # a first pass (compiles what a route compiles)
        except Exception as failure:   # a route that cannot be built on this machine is reported, not fatal
            print(f"{name}: not measured ({type(failure).__name__}: {str(failure)[:200]})")
            computes.pop(name, None)
            continue
        setup[name] = (time.perf_counter() - wall, time.process_time() - cpu)
    walls = {name: [] for name in computes}
    cpus = {name: [] for name in computes}
    vectors = {}
    for round_ in range(args.repeats):
        for name, compute in computes.items():
            wall, cpu, made = run_route(compute, texts, lengths, encoder.batch_size)
            walls[name].append(wall)
            cpus[name].append(cpu)
            if name in vectors and not np.array_equal(vectors[name], made):
                print(f"{name}: round {round_ + 1} gave different bits from round 1")
            vectors.setdefault(name, made)
            print(f"  round {round_ + 1} {name:<15} {wall:7.1f} s wall {cpu:7.1f} s CPU  "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    stored = encoder.cache.get(MODEL_NAME, encoder.revision, [text_key(t) for t in texts])
    same = sum(1 for t, v in zip(texts, vectors["torch"]) if text_key(t) in stored
               and np.array_equal(stored[text_key(t)], v))
    print(f"torch's vectors bit-identical to the shared cache's for {same} of {len(stored)} cached sample texts")
    reference = vectors["torch"]
    base = statistics.median(walls["torch"])
    print(f"\n{'route':<15} {'setup s':>8} {'median s':>9} {'texts/s':>8} {'CPU s':>7} {'speed':>6} "
          f"{'min cosine':>11} {'max |diff|':>11}  rounds (wall s)")
    for name in computes:
        median = statistics.median(walls[name])
        cosines = cosine(reference, vectors[name])
        print(f"{name:<15} {setup[name][0]:8.1f} {median:9.1f} {len(texts) / median:8.1f} "
              f"{statistics.median(cpus[name]):7.1f} {base / median:6.2f} {cosines.min():11.7f} "
              f"{np.abs(reference - vectors[name]).max():11.2e}  {[round(w, 1) for w in walls[name]]}")


def prefill_table(args) -> None:
    """The generator's prefill (one prompt of ``--prefill-length`` tokens) by route, alternately."""
    from generator_throughput import prompts_of_length
    from ragcourse.engines.dense import torch_threads
    from ragcourse.rag.generator import Generator

    generator = Generator()
    tokenizer, model = generator.tokenizer, generator.model
    threads = torch_threads()
    torch.set_num_threads(threads)
    ids = torch.tensor(prompts_of_length(tokenizer, args.prefill_length, 1))

    def today(inputs):
        with torch.inference_mode():
            return model(input_ids=inputs, use_cache=True, logits_to_keep=1).logits[0, -1].numpy()

    eager_model = copy.deepcopy(model)
    eager_model.config._attn_implementation = "eager"

    def eager(inputs):
        with torch.inference_mode():
            return eager_model(input_ids=inputs, use_cache=True, logits_to_keep=1).logits[0, -1].numpy()

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):   # an explicit mask: without one transformers looks for packed sequences
            return self.inner(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), use_cache=False,
                              logits_to_keep=1).logits   # with aten::diff, which the exporter cannot write

    compute = {"torch": today, "torch-eager": eager}
    folder = Path(tempfile.mkdtemp(prefix="prefill-routes-"))
    try:
        import onnxruntime as ort

        path = folder / "smollm2.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Logits(model).eval(), (ids,), str(path), dynamo=False, opset_version=17,
                              input_names=["input_ids"], output_names=["logits"],
                              dynamic_axes={"input_ids": {0: "batch", 1: "seq"}})
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        compute["ort-all (no KV out)"] = lambda inputs: session.run(["logits"], {"input_ids": inputs.numpy()})[0][0, -1]
    except Exception as failure:
        print(f"ort prefill: not measured ({type(failure).__name__}: {str(failure)[:300]})")
    results = {name: [] for name in compute}
    cpus = {name: [] for name in compute}
    outputs = {name: fn(ids) for name, fn in compute.items()}   # warm
    for _ in range(args.repeats):
        for name, fn in compute.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn(ids)
            results[name].append(time.perf_counter() - wall)
            cpus[name].append(time.process_time() - cpu)
    reference = outputs["torch"]
    base = statistics.median(results["torch"])
    print(f"\nprefill: SmolLM2-135M fp32, one prompt of {ids.shape[1]} tokens, {threads} threads, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'route':<22} {'median s':>9} {'tokens/s':>9} {'CPU s':>7} {'speed':>6} {'max |logit diff|':>17} "
          f"{'same arg-max':>13}")
    for name in compute:
        median = statistics.median(results[name])
        print(f"{name:<22} {median:9.3f} {ids.shape[1] / median:9.0f} {statistics.median(cpus[name]):7.2f} "
              f"{base / median:6.2f} {np.abs(outputs[name] - reference).max():17.2e} "
              f"{str(int(outputs[name].argmax()) == int(reference.argmax())):>13}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=2000, help="texts in the sample, a multiple of the batch size")
    parser.add_argument("--seed", type=int, default=54)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--routes", nargs="+", default=["torch-eager", "torch-jit", "torch-compile", "ort-basic",
                                                        "ort-all", "ort-all-nospin", "ort-fused"])
    parser.add_argument("--prefill", action="store_true", help="also time the generator's prefill by route")
    parser.add_argument("--prefill-only", action="store_true")
    parser.add_argument("--prefill-length", type=int, default=800)
    args = parser.parse_args()
    if not args.prefill_only:
        encoder_table(args)
    if args.prefill or args.prefill_only:
        prefill_table(args)


if __name__ == "__main__":
    main()
