"""What ``run``, ``figures``, ``sweep`` and ``refresh`` share: their arguments and the notebooks they choose.

``LESSON`` is a number (3 or 03) or a range (2-6), or a Part 3 lab (lab1, lab1-2, labs); every
lesson when none is given. A bad value raises ``UsageError`` naming the argument and what exists.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..batch.contract import UsageError, jobs_value
from ..batch.notebooks import FIGURES_DIR, NOTEBOOKS_DIR, PROJECT_ROOT, lab_notebooks, lesson_notebooks
from ..toolkit.params import SEED_LIMIT   # the seeds a lesson's parameters cell accepts

# what a LESSON value of each kind looks like, for the message that refuses one
FORMS = {"lesson": "a number such as 3 or a range such as 2-6",
         "lab": "a lab such as lab1, a range such as lab1-2, or labs"}


def whole_number(text: str, what: str) -> int:
    """``int(text)``, or an argparse error saying ``what`` the argument must be."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}; got {text!r}") from None


def seed_value(text: str) -> int:
    """``--seed``: an integer in [0, 2**32)."""
    value = whole_number(text, f"must be a whole number in [0, {SEED_LIMIT})")
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be a whole number in [0, {SEED_LIMIT}); got {text!r}")
    return value


def out_dir_value(text: str) -> Path:
    """``--out``: a folder (created if missing) outside the project's notebooks/ and figures/."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is an existing file, not a folder")
    resolved = path.resolve()
    if resolved == PROJECT_ROOT:
        raise argparse.ArgumentTypeError(f"{text!r} is the project itself; its notebooks/ would be overwritten")
    for protected in (NOTEBOOKS_DIR, FIGURES_DIR):
        if resolved == protected or protected in resolved.parents:
            raise argparse.ArgumentTypeError(f"{text!r} is inside the project's {protected.name}/, "
                                             "which only `refresh` and `figures` write")
    return path


def add_common(parser: argparse.ArgumentParser, out: str | None = None) -> None:
    """``--out`` (when the command writes to a folder of its own, ``out`` its default), ``--jobs``, ``LESSON``."""
    if out is not None:
        parser.add_argument("--out", type=out_dir_value, default=out, metavar="DIR",
                            help=f"output folder (default: {out}/)")
    parser.add_argument("--jobs", type=jobs_value, default=None, metavar="N",
                        help="lessons executed at once (default: number of cores)")
    parser.add_argument("lessons", nargs="*", metavar="LESSON",
                        help="3, 03 or 2-6; lab1, lab1-2 or labs for Part 3 (default: every lesson)")


def parse_lessons(values: list[str], available: dict[int, object], kind: str = "lesson") -> list[int]:
    """Notebook numbers from arguments such as ``3``, ``03`` or ``2-6`` (``kind="lab"``: ``lab1``, ``lab1-2``);
    all of ``available`` when ``values`` is empty.

    Raises UsageError naming the value as typed and the notebooks of that kind that exist.
    """
    if kind not in FORMS:
        raise ValueError(f"kind must be one of {', '.join(FORMS)}; got {kind!r}")
    if not values:
        return sorted(available)
    known = ", ".join(f"{k:02d}" for k in sorted(available)) or "none"
    prefix = "lab" if kind == "lab" else ""
    chosen: list[int] = []
    for value in values:
        low, dash, high = value[len(prefix):].partition("-")
        try:
            numbers = range(int(low), int(high if dash else low) + 1)
        except ValueError:
            raise UsageError(f"argument LESSON: must be {FORMS[kind]}; got {value!r}") from None
        if not numbers:
            raise UsageError(f"argument LESSON: range {value!r} runs backwards")
        for n in numbers:
            if n not in available:
                raise UsageError(f"argument LESSON: no notebook for {kind} {n} (from {value!r}); "
                                 f"available: {known}")
            if n not in chosen:
                chosen.append(n)
    return sorted(chosen)


def parse_selection(values: list[str], lessons: dict[int, object],
                    labs: dict[int, object]) -> tuple[list[int], list[int]]:
    """(lessons, labs) chosen by arguments such as ``3``, ``2-6``, ``lab1``, ``lab1-2`` or ``labs``.

    No argument chooses the sixteen lessons (as before Part 3); ``labs`` adds every lab.
    """
    if not values:
        return sorted(lessons), []
    lab_values = [v for v in values if v.lower().startswith("lab")]
    lesson_values = [v for v in values if v not in lab_values]
    chosen_lessons = parse_lessons(lesson_values, lessons) if lesson_values else []
    chosen_labs: list[int] = []
    for value in lab_values:
        numbers = sorted(labs) if value.lower() == "labs" else parse_lessons([value], labs, "lab")
        chosen_labs += [n for n in numbers if n not in chosen_labs]
    return chosen_lessons, sorted(chosen_labs)


def chosen_notebooks(args: argparse.Namespace, with_labs: bool = True) -> tuple[dict[int, Path], dict[int, Path]]:
    """(lessons, labs) by number that ``args.lessons`` chooses from ``args.notebooks_dir``; UsageError if none."""
    folder = Path(args.notebooks_dir)
    notebooks = lesson_notebooks(folder)
    labs = lab_notebooks(folder) if with_labs else {}
    lessons, lab_numbers = parse_selection(args.lessons, notebooks, labs)
    if not lessons and not lab_numbers:
        raise UsageError(f"argument LESSON: no lesson notebooks in {folder}")
    return {n: notebooks[n] for n in lessons}, {n: labs[n] for n in lab_numbers}
