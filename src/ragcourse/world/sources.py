"""The raw source of lesson 08: the corpus as a field team's record sheets, before preparation.

Each document of the corpus is written out as lines, the way a scanned form might come back
from text extraction:

* a **form header** line, the same on every sheet;
* a **code field** line, ``document code SY003 class meter``, with the metadata inside the text;
* the document's title;
* its paragraphs, a share of them (``split_share``, 0.45 in the course) broken over two lines
  after the first, fifth or seventh word; the continuation line is indented by two spaces;
* a **page footer** line, the same on every sheet.

The draws come from the course generator seeded with ``seed + 3011 * i`` for document ``i``:
for each paragraph one draw decides whether it is split, and a second (only when it is) picks
the split point. Nothing here prepares the source; that is the lesson's technique.
"""
from __future__ import annotations

from typing import Sequence

from .corpus import Document
from .rng import make_rng, pick

FORM_HEADER = "regional directorate field record sheet"
PAGE_FOOTER = "for internal use only do not distribute"
CODE_FIELD_PREFIX = "document code"
CONTINUATION_INDENT = "  "
RAW_STRIDE = 3011
SPLIT_SHARE = 0.45
SPLIT_AFTER_WORDS = (1, 5, 7)
SPLIT_WEIGHTS = (0.4, 0.25, 0.35)


def code_field(document: Document) -> str:
    """The line that carries the document's code and class inside the text."""
    return f"{CODE_FIELD_PREFIX} {document.code} class {document.label}"


def _check_split_share(split_share: object) -> float:
    if isinstance(split_share, bool) or not isinstance(split_share, (int, float)) \
            or not 0.0 <= split_share <= 1.0:
        raise ValueError(f"split_share must be a number from 0 to 1; got {split_share!r}")
    return float(split_share)


def raw_sheet(document: Document, seed: int, index: int,
              split_share: float = SPLIT_SHARE) -> list[str]:
    """The raw lines of document number ``index`` (0-based): header, code field, title,
    paragraphs (some split over two lines), footer."""
    split_share = _check_split_share(split_share)
    draw = make_rng(seed + RAW_STRIDE * index)
    lines = [FORM_HEADER, code_field(document), document.title]
    for paragraph in document.paragraphs:
        words = paragraph.split()
        if draw() < split_share:
            cut = SPLIT_AFTER_WORDS[pick(draw(), SPLIT_WEIGHTS)]
            lines.append(" ".join(words[:cut]))
            lines.append(CONTINUATION_INDENT + " ".join(words[cut:]))
        else:
            lines.append(paragraph)
    lines.append(PAGE_FOOTER)
    return lines


def raw_sources(documents: Sequence[Document], seed: int,
                split_share: float = SPLIT_SHARE) -> list[list[str]]:
    """The raw lines of every document, in corpus order."""
    return [raw_sheet(document, seed, index, split_share) for index, document in enumerate(documents)]


def is_continuation(line: str) -> bool:
    """True for a line that continues the previous one (it starts with the two-space indent)."""
    return line.startswith(CONTINUATION_INDENT)
