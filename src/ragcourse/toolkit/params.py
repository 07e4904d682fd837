"""Validation of notebook parameters: a wrong value names the parameter and what is allowed."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

SEED_LIMIT = 2 ** 32


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(name: str, value: object, low: int, high: int) -> int:
    """``value`` must be an integer with low <= value <= high."""
    if not _is_integer(value) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}; got {value!r}")
    return value


def check_positive_int(name: str, value: object) -> int:
    """``value`` must be an integer >= 1 (not a bool)."""
    if not _is_integer(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return value


def check_non_negative_int(name: str, value: object) -> int:
    """``value`` must be an integer >= 0 (not a bool)."""
    if not _is_integer(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {value!r}")
    return value


def check_number(name: str, value: object, low: float, high: float) -> float:
    """``value`` must be a real number (int or float, not bool) with low <= value <= high."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low} to {high}; got {value!r}")
    return float(value)


def check_seed(value: object, name: str = "SEED") -> int:
    """A seed must be an integer in [0, 2**32)."""
    if not _is_integer(value) or not 0 <= value < SEED_LIMIT:
        raise ValueError(f"{name} must be an integer in [0, 2**32); got {value!r}")
    return value


def check_choice(name: str, value: object, allowed: Iterable[object]) -> object:
    """``value`` must be one of ``allowed``."""
    allowed = list(allowed)
    if value not in allowed or isinstance(value, bool) != any(isinstance(a, bool) for a in allowed):
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}")
    return value


def check_figures_dir(value: object, name: str = "FIGURES_DIR") -> Path | None:
    """None (show figures only) or a folder path to write figures into; a file there is refused."""
    if value is None:
        return None
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise ValueError(f"{name} must be None or a folder path (a non-empty string); got {value!r}")
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} must be a folder, but {str(path)!r} is a file")
    return path


def check_int_list(name: str, value: object, low: int, high: int, most: int = 8) -> list[int]:
    """``value`` must be a list or tuple of 1 to ``most`` distinct integers from ``low`` to ``high``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) \
            or not 1 <= len(value) <= most or not all(_is_integer(v) and low <= v <= high for v in value) \
            or len(set(value)) != len(value):
        raise ValueError(f"{name} must be a list of 1 to {most} distinct integers from {low} to {high};"
                         f" got {value!r}")
    return list(value)


def check_text(name: str, value: object, longest: int = 1000) -> str:
    """A non-empty string of at most ``longest`` characters (a notebook's question, say)."""
    if not isinstance(value, str) or not value.strip() or len(value) > longest:
        raise ValueError(f"{name} must be a non-empty string of at most {longest} characters; got {value!r}")
    return value
