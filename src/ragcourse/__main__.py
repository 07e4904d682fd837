"""Command line: ``python -m ragcourse refresh [LESSON ...]``."""
from __future__ import annotations

import argparse
import sys

from .notebooks import lesson_notebooks, refresh


def parse_lessons(values: list[str], available: dict[int, object]) -> list[int]:
    """Lesson numbers from arguments such as ``3``, ``03`` or ``2-6``; all lessons when empty."""
    if not values:
        return sorted(available)
    chosen: list[int] = []
    for value in values:
        low, _, high = value.partition("-")
        try:
            numbers = range(int(low), int(high or low) + 1)
        except ValueError:
            raise SystemExit(f"error: LESSON must be a number such as 3 or a range such as 2-6; got {value!r}")
        for n in numbers:
            if n not in available:
                raise SystemExit(f"error: no notebook for lesson {n}; available: "
                                 + ", ".join(f"{k:02d}" for k in sorted(available)))
            if n not in chosen:
                chosen.append(n)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ragcourse", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_refresh = sub.add_parser("refresh", help="re-execute notebooks in place to refresh stored outputs")
    p_refresh.add_argument("lessons", nargs="*", metavar="LESSON")
    args = parser.parse_args(argv)
    if args.command == "refresh":
        notebooks = lesson_notebooks()
        for n in parse_lessons(args.lessons, notebooks):
            print(f"refreshing {notebooks[n].name}", flush=True)
            refresh(notebooks[n])
    return 0


if __name__ == "__main__":
    sys.exit(main())
