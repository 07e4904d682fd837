"""Lab 04's context assembly: which reranked passages the reader gets, and why the others not.

The reranker hands over its best passages in order; the context has room for a few of
them. ``assemble`` walks the list once and gives every passage it leaves out a reason, the
first that applies:

- ``duplicate``: the same text (whitespace collapsed, lower-cased) is already in;
- ``overlap``: at least half of its character span is already covered by admitted
  passages of the same source (overlapping chunks repeat each other);
- ``passage limit``: ``max_passages`` passages are already in;
- ``budget``: with it, the rendered context would count more than ``max_tokens`` tokens.
  The first passage gets no exemption, so a context can be empty (and the reader then
  abstains); a passage too long for what is left does not end the walk, since a shorter
  one further down may still fit.

Tokens are counted exactly on the rendered text, labels and blank lines included, with the
function the caller passes (in the lab, the MiniLM tokenizer: ``token_counter(encoder)``).
That is the encoder's tokenizer, not a generator's, so the count is a close proxy for
what a generator would see, not its own count. The seed system estimated characters / 4
and left the labels out; this count is measured and complete.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..toolkit.params import check_int
from .passages import Passage, ScoredPassage

REASONS = ("duplicate", "overlap", "passage limit", "budget")
SEPARATOR = "\n\n"

CountTokens = Callable[[str], int]


@dataclass(frozen=True)
class ContextBudget:
    """At most ``max_passages`` passages and ``max_tokens`` tokens of rendered context."""

    max_passages: int = 6
    max_tokens: int = 1500

    def __post_init__(self):
        check_int("max_passages", self.max_passages, 1, 100)
        check_int("max_tokens", self.max_tokens, 1, 100_000)


@dataclass(frozen=True)
class AssembledContext:
    """The admitted passages, the dropped ones with their reason, and the rendered text with its size.

    ``repeated_characters`` counts the characters of admitted passages that an earlier
    admitted passage of the same source already covers: partial overlaps (under half a
    span) that neither dedup nor the overlap rule removes. ``tokens`` is ``count_tokens(text)``
    (0 for an empty context: nothing is sent), ``characters`` is ``len(text)``.
    """

    admitted: tuple[ScoredPassage, ...]
    dropped: tuple[tuple[ScoredPassage, str], ...]
    text: str
    tokens: int
    characters: int
    repeated_characters: int
    sources: tuple[str, ...]


def render_passage(passage: Passage) -> str:
    """One passage as the reader sees it: ``[source#ordinal]`` on its own line, then the text."""
    return f"[{passage.citation}]\n{passage.text}"


def render(passages: Sequence[Passage]) -> str:
    """The context text: every passage rendered, joined by blank lines."""
    return SEPARATOR.join(render_passage(p) for p in passages)


def token_counter(encoder) -> CountTokens:
    """``count_tokens`` from an encoder's tokenizer (``DenseEncoder.token_counts``, special tokens included).

    MiniLM's WordPiece tokenizer never joins two tokens across whitespace, so the count of
    a rendered context is the sum of its blank-line pieces' counts plus the two special
    tokens. Each piece is counted once and remembered, which makes assembly fast;
    ``tests/labs/test_lab04_pipeline.py`` holds this equal to counting the whole text.
    """
    specials = int(encoder.token_counts([""])[0])
    pieces: dict[str, int] = {}

    def count(text: str) -> int:
        parts = text.split(SEPARATOR)
        new = [p for p in dict.fromkeys(parts) if p not in pieces]
        if new:
            pieces.update((p, int(n) - specials) for p, n in zip(new, encoder.token_counts(new)))
        return specials + sum(pieces[p] for p in parts)

    return count


def normalised(text: str) -> str:
    """The text as the duplicate rule compares it: whitespace collapsed, lower-cased."""
    return " ".join(text.split()).lower()


def covered(start: int, end: int, spans: Sequence[tuple[int, int]]) -> int:
    """How many characters of ``[start, end)`` lie in the union of ``spans``."""
    pieces = sorted((max(a, start), min(b, end)) for a, b in spans if a < end and b > start)
    total, reach = 0, start
    for a, b in pieces:
        a = max(a, reach)
        if b > a:
            total += b - a
            reach = b
    return total


def assemble(ranked: Sequence[ScoredPassage], budget: ContextBudget, count_tokens: CountTokens) -> AssembledContext:
    """The context for the reader: the ranked passages admitted in order, each drop with its reason."""
    admitted: list[ScoredPassage] = []
    dropped: list[tuple[ScoredPassage, str]] = []
    seen: set[str] = set()
    spans: dict[str, list[tuple[int, int]]] = {}
    repeated = tokens = 0
    for scored in ranked:
        passage = scored.passage
        length = passage.end - passage.start
        already = covered(passage.start, passage.end, spans.get(passage.source, []))
        reason = None
        if normalised(passage.text) in seen:
            reason = "duplicate"
        elif length > 0 and 2 * already >= length:
            reason = "overlap"
        elif len(admitted) >= budget.max_passages:
            reason = "passage limit"
        else:
            count = count_tokens(render([s.passage for s in admitted] + [passage]))
            if count > budget.max_tokens:
                reason = "budget"
        if reason:
            dropped.append((scored, reason))
            continue
        admitted.append(scored)
        seen.add(normalised(passage.text))
        spans.setdefault(passage.source, []).append((passage.start, passage.end))
        repeated += already
        tokens = count
    text = render([s.passage for s in admitted])
    sources = tuple(dict.fromkeys(s.passage.source for s in admitted))
    return AssembledContext(tuple(admitted), tuple(dropped), text, tokens, len(text), repeated, sources)


def drop_counts(context: AssembledContext) -> dict[str, int]:
    """How many passages each reason dropped (every reason listed, zeros included)."""
    counts = dict.fromkeys(REASONS, 0)
    for _, reason in context.dropped:
        counts[reason] += 1
    return counts
