"""``prepare``'s plan of generated answers: the prompts labs 03 and 04 give the local model, answered ahead.

A lab's prompts are made from its own retrieval (lab 03's windows, lab 04's PostgreSQL pipeline over the
fresh test questions), which only the lab runs, so the plan is recorded from the labs, as their outputs
are: with ``$RAGCOURSE_GENERATION_LOG`` set the generator appends every prompt it is asked for
(``rag.generator.log_prompts``), and ``python -m ragcourse prepare --record-generation LOG`` keeps the
prompts a lab's kernel asked for (a lab runs in ``notebooks/labs``) as ``data/generation_plan.json.gz``.
``prepare`` then answers every planned prompt the generation cache lacks, so a lab opened after it reads
its answers instead of waiting for them. ``make test`` logs what the labs ask and fails when less than
``COVERAGE`` of it was planned: a lab changed, and its plan must be recorded again (CONTRIBUTING).
"""
from __future__ import annotations

import gzip
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..rag.generator import BATCH, Prompt, bucket, passes

PLAN = Path(__file__).parent / "data" / "generation_plan.json.gz"
# A prompt holds retrieved passages, and a dense near-tie on another CPU can change what is retrieved: the
# share of the labs' prompts the plan must hold (a lab changed by a maintainer misses far more).
COVERAGE = 0.95
# This 2-core machine, OpenMP threads asleep while they wait (2026-12-06, lab 04's 180 answers): rows of a pass,
# padding and filler copies included, prefilled per second; seconds of one decoding step of a pass.
PREFILL_TOKENS_PER_SECOND = 880.0
DECODE_STEP_SECONDS = 0.085


@dataclass(frozen=True)
class PlannedPrompt:
    """A prompt of the plan: its rendered text and the decoding limit the lab asked with."""

    max_new_tokens: int
    text: str


def lab_prompts(log: Path) -> list[PlannedPrompt]:
    """The prompts a lab's kernel asked for in ``log``, each once, in the order first asked."""
    found: dict[tuple[int, str], None] = {}
    for line in Path(log).read_text("utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            if Path(entry["dir"]).parts[-2:] == ("notebooks", "labs"):
                found.setdefault((int(entry["max_new_tokens"]), entry["text"]), None)
    return [PlannedPrompt(n, text) for n, text in found]


def record(log: Path, path: Path | None = None) -> int:
    """Write the plan of ``log``'s lab prompts to ``path`` (``PLAN``; whole or not at all); the number of prompts."""
    prompts = lab_prompts(log)
    if not prompts:
        raise ValueError(f"{log} holds no prompt a lab asked for (a lab's kernel runs in notebooks/labs): run the "
                         f"labs with RAGCOURSE_GENERATION_LOG={log} first (make refresh)")
    data = json.dumps({"prompts": [{"max_new_tokens": p.max_new_tokens, "text": p.text} for p in prompts]},
                      ensure_ascii=False, indent=0).encode("utf-8")
    path = Path(PLAN if path is None else path)
    handle, staging = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
            packed.write(data)   # mtime 0: the same prompts make the same bytes
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o666 & ~umask)   # mkstemp's file is the owner's alone; a plan is read by anyone
        os.replace(staging, path)
    except BaseException:
        os.unlink(staging)
        raise
    return len(prompts)


def load(path: Path | None = None) -> list[PlannedPrompt]:
    """The planned prompts of ``path`` (``PLAN``; none when there is no plan)."""
    path = Path(PLAN if path is None else path)
    if not path.exists():
        return []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [PlannedPrompt(int(p["max_new_tokens"]), p["text"]) for p in json.load(handle)["prompts"]]


def coverage(log: Path, path: Path | None = None) -> tuple[int, int]:
    """(prompts a lab's kernel asked for that are planned, prompts a lab's kernel asked for)."""
    planned = set(load(path))
    asked = lab_prompts(log)
    return sum(p in planned for p in asked), len(asked)


def generator_prompts(generator, planned: Sequence[PlannedPrompt]) -> list[Prompt]:
    """The planned prompts with ``generator``'s decoding limit, tokenised as ``Generator.prompt`` tokenises them
    (so each has the cache key the lab's prompt has)."""
    return [Prompt("", (), p.text, tuple(generator.tokenizer(p.text, add_special_tokens=False)["input_ids"]))
            for p in planned if p.max_new_tokens == generator.max_new_tokens]


def estimated_seconds(prompts: Sequence[Prompt], max_new_tokens: int) -> float:
    """Seconds to answer ``prompts`` on this machine: each pass prefills ``BATCH`` rows of its bucket's length
    and decodes at most ``max_new_tokens`` steps (a pass stops early when every row has ended)."""
    return sum(BATCH * bucket(group[0].tokens) / PREFILL_TOKENS_PER_SECOND + max_new_tokens * DECODE_STEP_SECONDS
               for group in passes(prompts))
