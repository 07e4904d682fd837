"""Headline numbers a lesson hands to the seed sweep.

A lesson ends by calling ``record_headline``; when its ``RESULTS_DIR`` parameter is
set, the numbers are written as ``NN-headline.json`` there. The sweep reads these
files, so the numbers always come from the lesson's own computation.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def record_headline(lesson: int, numbers: dict[str, float], results_dir: str | os.PathLike | None,
                    seed: int | None = None) -> Path | None:
    """Write ``{"lesson", "seed", "numbers"}`` to ``<results_dir>/NN-headline.json``; no-op when dir is None."""
    if results_dir is None:
        return None
    folder = Path(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{lesson:02d}-headline.json"
    payload = {"lesson": lesson, "seed": seed, "numbers": {k: float(v) for k, v in numbers.items()}}
    handle, temporary = tempfile.mkstemp(prefix=".headline-", suffix=".json", dir=folder)
    with os.fdopen(handle, "w") as stream:
        json.dump(payload, stream, indent=1, sort_keys=False)
        stream.write("\n")
    os.replace(temporary, target)
    return target
