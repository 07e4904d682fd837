"""Text handling shared by every lesson: the five-character tokenizer and the FNV trace id."""
from __future__ import annotations

from .rng import MASK32

PIECE = 5
FNV_OFFSET = 2166136261
FNV_PRIME = 16777619


def tokenize(text: str) -> list[str]:
    """Lower-case, split on whitespace (commas stand alone), cut words into pieces of five characters."""
    tokens: list[str] = []
    for word in text.lower().replace(",", " , ").split():
        while len(word) > PIECE:
            tokens.append(word[:PIECE])
            word = word[PIECE:]
        tokens.append(word)
    return tokens


def trace_id(text: str) -> int:
    """32-bit FNV-1a hash of ``text``; the language-model simulator seeds each call with it."""
    value = FNV_OFFSET
    for char in text:
        value = ((value ^ ord(char)) * FNV_PRIME) & MASK32
    return value
