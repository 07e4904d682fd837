"""The prompt the simulated answerer reads (lessons 11-13): coded chunks, then the question.

It lives with the model because the model parses it; the retrieval pipeline builds it
from what it retrieved.
"""
from __future__ import annotations

from typing import Protocol, Sequence

ANSWER_INSTRUCTION = ("Answer by looking at the chunks below and write the code of the chunk "
                      "you used . ")


class CodedChunk(Protocol):
    """Anything the chunk answerer can read: a document code, a text and its token bag."""

    code: str
    text: str
    bag: frozenset[str]


def answer_prompt(query: str, chunks: Sequence[CodedChunk]) -> str:
    """The answer instruction, each chunk as ``[CODE] text .``, then ``Question: ...``."""
    return (ANSWER_INSTRUCTION + " ".join(f"[{chunk.code}] {chunk.text} ." for chunk in chunks)
            + " Question: " + query)
