"""The course's cross-encoder as a second stage: trained once (or read from the cache), scores cached by text.

``train_or_load`` builds the training groups from the corpus (``training_pairs``), computes the model's key
(``training.model_key``) and returns a ``TrainedCrossEncoder``: the model in ``reranker/<key>`` if it is there,
otherwise trained into it first, with an estimate up front and a progress bar. ``estimate`` says, before
anything is trained, whether a model is cached and how long training would take (for ``prepare``'s plan).

``TrainedCrossEncoder`` is a reranker in ``rag.rerank``'s sense (``name``, ``score(question, texts)``), so
``rerank`` and ``Pipeline`` use it as they use any other. It reads (question, passage) pairs together: the
question and the first ``max_length`` tokens of the pair. A passage that is a chunk of the corpus is read with
its header in front, as in training (page title and section: ``training_pairs.header_lookup``; ``rerank``
hands over the bare chunk text); a text that is no chunk, or the text of chunks of several pages, is read as it
is, and ``last_bare`` counts those. Scoring every fused candidate (a hundred chunks a
question at the kept setting) would cost seconds a question on two cores, so it scores the first ``depth``
texts it is given, in their incoming order (the fused order), and puts the others after them in that order;
``last_unscored`` counts them, and with ``rerank``'s eight kept passages and ``depth`` of at least eight they
never reach the context. Every score goes to ``reranker_scores.sqlite`` beside the embedding cache, keyed by
the model's key and the sha256 of the question and of the text; a pair scored before is read, not computed.
Pairs are computed in passes of one exact token length and a fixed size (``engines.batching``), so a score
does not depend on what else is scored with it, and ``score_many`` fills the cache for many questions in one
run of such passes.
"""
from __future__ import annotations

import logging
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ...toolkit.params import check_int
from ..rerank import KEEP
from .training import (DEFAULT_SETTINGS, LOG_FILE, TrainSettings, TrainingLog, estimated_seconds, model_key,
                       reranker_dir, train_into_cache)
from ..rerank import ScoresFusedText
from .training_pairs import (NegativeMiner, Supply, groups_digest, header_lookup, page_chunks, query_supply,
                             question_texts, training_groups)

DEPTH = 10          # candidates scored a question, in incoming order (319 dev questions, ten-page lists: MRR@10
                    # of the cross-encoder alone 0.499 at 10, 0.441 at 20; with the learned combination 0.582, 0.581)
SCORES_FILE = "reranker_scores.sqlite"


class ScoreCache:
    """Cross-encoder scores by (model key, question sha256, text sha256) in one SQLite file; safe to share."""

    def __init__(self, path: str | Path | None = None):
        from ...engines.dense import cache_dir

        self.path = Path(path) if path is not None else cache_dir() / SCORES_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, timeout=60)
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("CREATE TABLE IF NOT EXISTS scores (model TEXT, question TEXT, text TEXT,"
                                " score REAL, PRIMARY KEY (model, question, text))")
        self.connection.commit()

    def get(self, model: str, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], float]:
        """The stored scores among ``pairs`` of (question sha256, text sha256)."""
        found: dict[tuple[str, str], float] = {}
        by_question: dict[str, list[str]] = {}
        for question, text in dict.fromkeys(pairs):
            by_question.setdefault(question, []).append(text)
        for question, texts in by_question.items():
            for start in range(0, len(texts), 500):
                part = texts[start:start + 500]
                rows = self.connection.execute(
                    f"SELECT text, score FROM scores WHERE model = ? AND question = ? AND text IN "
                    f"({','.join('?' * len(part))})", [model, question, *part])
                found.update(((question, text), score) for text, score in rows)
        return found

    def put(self, model: str, scores: dict[tuple[str, str], float]) -> None:
        """Store scores, all in one transaction."""
        with self.connection:
            self.connection.executemany("INSERT OR IGNORE INTO scores VALUES (?, ?, ?, ?)",
                                        [(model, q, t, float(s)) for (q, t), s in scores.items()])

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self.connection.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        return self.connection.execute("SELECT COUNT(*) FROM scores WHERE model = ?", [model]).fetchone()[0]

    def close(self) -> None:
        self.connection.close()


@contextmanager
def quiet_loading():
    """sentence-transformers says, as a warning, that it turns MiniLM's folder into a cross-encoder, and
    transformers draws a bar while it reads weights; a lab's output has no stderr, so the warning is held back
    while a model is built or read, and the bar is switched off (as ``engines.dense.model_folder`` does)."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logger = logging.getLogger("sentence_transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class TrainedCrossEncoder(ScoresFusedText):
    """The trained model in ``folder`` as a reranker: ``score`` the first ``depth`` texts, cached by ``key``."""

    def __init__(self, folder: str | Path, key: str, depth: int = DEPTH, cache: ScoreCache | None = None,
                 model=None, log: TrainingLog | None = None, headers: dict | None = None):
        self.folder, self.key = Path(folder), key
        self.depth = check_int("depth", depth, 1, 10_000)
        self.cache = cache or ScoreCache()
        self._model = model
        self.log = log
        self.headers = dict(headers or {})
        self.name = f"cross-encoder trained by the course ({key}), first {self.depth} candidates"
        self.last_unscored = 0      # texts past ``depth`` in the last ``score`` call
        self.last_computed = 0      # pairs computed (not read from the cache) in the last call
        self.last_bare = 0          # texts of the last call read without a header (not a chunk of one page)

    @property
    def model(self):
        """The sentence-transformers ``CrossEncoder``, read from ``folder`` on first use."""
        if self._model is None:
            from ..rerank import CrossEncoderReranker

            with quiet_loading():
                self._model = CrossEncoderReranker(str(self.folder)).model
        return self._model

    def with_depth(self, depth: int) -> "TrainedCrossEncoder":
        """The same model and cache, scoring the first ``depth`` texts."""
        return TrainedCrossEncoder(self.folder, self.key, depth, self.cache, self._model, self.log, self.headers)

    def score(self, question: str, texts: list[str]) -> list[float]:
        """The model's score of the first ``depth`` texts; each later text scores below all of them, lower
        the later it comes (its incoming order kept)."""
        head = list(texts[:self.depth])
        scores = self.score_many([(question, head)])[0] if head else []
        self.last_unscored = len(texts) - len(head)
        floor = min(scores, default=0.0) - 1.0
        return scores + [floor - n * 1e-6 for n in range(1, self.last_unscored + 1)]

    def reorder(self, question: str, candidates, keep: int = KEEP):
        """``rerank`` of ``candidates.fused`` (a ``rag.search.Candidates``), the ``keep`` best kept: the second
        stage's call where the pipeline hands a stage the whole first stage rather than its texts."""
        from ..rerank import rerank

        return rerank(self, question, [sp.passage for sp in candidates.fused], keep=keep)

    def score_many(self, items: Sequence[tuple[str, Sequence[str]]], progress: bool = False) -> list[list[float]]:
        """Every (question, texts) item's scores, all texts scored (no ``depth`` cut); the pairs missing from
        the cache are computed together in fixed-shape passes and stored. A text that is a chunk of the
        corpus (``headers``) is read with its header in front, as in training."""
        from ...engines.dense import text_key

        if self.headers:
            self.last_bare = sum(t not in self.headers for _, texts in items for t in texts)
            items = [(q, self.as_read(texts)) for q, texts in items]
        keyed = [(text_key(q), [text_key(t) for t in texts]) for q, texts in items]
        wanted = [(q, t) for q, ts in keyed for t in ts]
        stored = self.cache.get(self.key, wanted)
        missing: dict[tuple[str, str], tuple[str, str]] = {}
        for (question, texts), (qk, tks) in zip(items, keyed):
            for text, tk in zip(texts, tks):
                if (qk, tk) not in stored:
                    missing.setdefault((qk, tk), (question, text))
        self.last_computed = len(missing)
        if missing:
            computed = self.compute(list(missing.values()), progress)
            fresh = dict(zip(missing, computed))
            self.cache.put(self.key, fresh)
            stored.update(fresh)
        return [[stored[(qk, tk)] for tk in tks] for qk, tks in keyed]

    def as_read(self, texts: Sequence[str]) -> list[str]:
        """The texts as the model reads them: a chunk of the corpus with its header in front (``headers``)."""
        return [self.headers.get(t, t) for t in texts]

    def compute(self, pairs: Sequence[tuple[str, str]], progress: bool = False) -> list[float]:
        """The model's scores of ``pairs``, computed now (no cache), in fixed-shape passes on the encoder's threads."""
        return compute_scores(self.model, pairs, progress)


def compute_scores(model, pairs: Sequence[tuple[str, str]], progress: bool = False) -> list[float]:
    """A cross-encoder's raw scores of ``pairs``: passes of one exact token length and ``encode_batch_size``
    rows (``engines.batching``), on ``engines.dense.torch_threads`` threads."""
    import numpy as np
    import torch

    from ...engines.batching import preprocessed_lengths, run_fixed_shape
    from ...engines.dense import encode_batch_size, torch_threads

    if not pairs:
        return []
    size = encode_batch_size()

    def passes(batch: list) -> list[float]:
        predicted = model.predict(batch, batch_size=size, show_progress_bar=False, activation_fn=torch.nn.Identity())
        return [float(s) for s in np.asarray(predicted).reshape(len(batch), -1)[:, 0]]

    previous = torch.get_num_threads()
    torch.set_num_threads(torch_threads())
    bar = None
    try:
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(pairs), unit="pair", desc="cross-encoder scores")
        return run_fixed_shape(list(pairs), preprocessed_lengths(model, list(pairs)), size, passes,
                               bar.update if bar else None)
    finally:
        if bar is not None:
            bar.close()
        torch.set_num_threads(previous)


@dataclass(frozen=True)
class Prepared:
    """The training groups of a corpus at some settings, what the supply held and skipped, and the key."""

    groups: list
    supply: Supply
    skipped: dict
    key: str
    headers: dict     # chunk text -> the form the model reads (``training_pairs.header_lookup``)


def prepare_groups(settings: TrainSettings = DEFAULT_SETTINGS, corpus=None, encoder=None) -> Prepared:
    """The training groups for ``settings`` from ``corpus`` (the installed numpy reference by default), their
    negatives ranked with ``encoder``'s cached vectors, and the model key they give."""
    from ...corpus.apidocs import load_corpus
    from ...engines.dense import DenseEncoder

    corpus = corpus or load_corpus()
    encoder = encoder or DenseEncoder()
    chunks = page_chunks(corpus)
    supply = query_supply(corpus, chunks, question_texts())
    vectors = encoder.encode([c.indexed_text for c in chunks], progress=False)
    titles = encoder.encode([d.title for d in corpus.documents], progress=False)
    miner = NegativeMiner(corpus, chunks, vectors, dict(zip((d.doc_id for d in corpus.documents), titles)))
    groups, skipped = training_groups(supply, chunks, miner, {d.doc_id: d.title for d in corpus.documents},
                                      settings.groups, settings.negatives, settings.seed, settings.kept_source)
    return Prepared(groups, supply, skipped, model_key(groups_digest(groups), settings), header_lookup(chunks))


@dataclass(frozen=True)
class Estimate:
    """Before training: the model's key, whether it is cached, and the seconds training would take (0 if cached)."""

    key: str
    cached: bool
    seconds: float


def estimate(settings: TrainSettings = DEFAULT_SETTINGS, corpus=None, encoder=None) -> Estimate:
    """Whether the model of ``settings`` is already trained, and if not the seconds it should take."""
    prepared = prepare_groups(settings, corpus, encoder)
    cached = (reranker_dir() / prepared.key / LOG_FILE).exists()
    return Estimate(prepared.key, cached, 0.0 if cached else estimated_seconds(settings))


@contextmanager
def training_lock(key: str):
    """Hold ``reranker/.<key>.lock`` (``fcntl.flock``, released when the process ends however it ends): two
    processes that want the same model (``prepare`` in the background of ``make test`` and lab 04's kernel)
    train it once, the second waiting for the first and then reading its model."""
    import fcntl

    folder = reranker_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{key}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def train_or_load(progress: bool = True, settings: TrainSettings = DEFAULT_SETTINGS, depth: int = DEPTH,
                  corpus=None, encoder=None, report=print) -> TrainedCrossEncoder:
    """The course's cross-encoder: read from ``reranker/<key>`` if trained before, else trained there now
    (``report`` says what and how long, ``progress`` shows a bar)."""
    started = time.perf_counter()
    prepared = prepare_groups(settings, corpus, encoder)
    folder = reranker_dir() / prepared.key
    if not (folder / LOG_FILE).exists():
        with training_lock(prepared.key):   # a process training this model now: wait for it, then read its model
            if not (folder / LOG_FILE).exists():
                if report is not None:
                    report(f"training the cross-encoder {prepared.key}: {len(prepared.groups)} queries x "
                           f"{settings.negatives + 1} texts = {settings.pairs} pairs, at most {settings.max_length} "
                           f"tokens; about {estimated_seconds(settings) / 60:.1f} minutes on a free core")
                with quiet_loading():
                    train_into_cache(prepared.groups, settings, prepared.key, progress=progress)
    log = TrainingLog.from_json((folder / LOG_FILE).read_text(encoding="utf-8"))
    if report is not None:
        report(f"cross-encoder {prepared.key} ready in {time.perf_counter() - started:.0f} s "
               f"(trained in {log.seconds:.0f} s wall, {log.cpu_seconds:.0f} s CPU): {folder}")
    return TrainedCrossEncoder(folder, prepared.key, depth, log=log, headers=prepared.headers)
