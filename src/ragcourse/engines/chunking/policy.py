"""Lab 04's chunking policy: which chunker of ``spans``, its sizes and their unit, and the version an index records.

Four policies: ``fixed``, ``sentences`` (the default), ``headings`` and ``recursive`` (``spans``
says what each cuts). Sizes are counted in one of two units. The RAG baseline design's policy
counts characters (2,000 with 300 of overlap): a chunk of 2,000 characters is often 400 or more of
MiniLM's tokens, and the encoder reads only its first 256, so the rest of the chunk never reaches
the dense path. The default therefore counts the encoder's own tokens (``unit="tokens"``):
sentences are packed up to ``WINDOW_TOKENS``, so every chunk fits the encoder's window with its
two special tokens. ``PgIndex.health`` names any chunk that does not.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .spans import (DEFAULT_OVERLAP, DEFAULT_SIZE, RECURSIVE_SIZE, ChunkSpan, Spans, TokenRuler, _check_sizes,
                    fixed_spans, header_of, heading_spans, recursive_spans, sentence_spans)

POLICIES = ("fixed", "sentences", "headings", "recursive")
DEFAULT_POLICY = "sentences"
UNITS = ("characters", "tokens")
WINDOW_TOKENS = 254           # MiniLM reads 256 tokens, two of them [CLS] and [SEP]
WINDOW_OVERLAP = 40
HEADER_RESERVE = 32           # tokens kept free for a chunk's header when headers are on
DEFAULT_UNIT = "tokens"
POLICY_VERSION = "v1"         # the chunkers' own version, in every ``ChunkPolicy.version``


@dataclass(frozen=True)
class ChunkPolicy:
    """A chunking policy by name with its sizes and their unit; ``version`` is what the chunk rows record.

    ``unit="tokens"`` counts the encoder's tokens (``tokenizer``: a Hugging Face fast tokenizer;
    MiniLM's own is loaded when none is given). ``headings`` has no size: its chunks can be
    any length, which ``PgIndex.health`` reports against the encoder's window.

    ``headers=True`` gives each chunk a header (``header_of``: the page title and the section
    it starts in), written in front of the chunk's text for the encoder and for full text
    (lab 03's contextual headers). The stored text stays an exact slice of the file; in
    tokens, ``HEADER_RESERVE`` of the ``size`` are left for the header.
    """

    name: str = DEFAULT_POLICY
    size: int | None = None
    overlap: int | None = None
    unit: str | None = None     # the policy's own: characters for ``recursive``, else ``DEFAULT_UNIT``
    headers: bool = False
    tokenizer: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.name not in POLICIES:
            raise ValueError(f"chunking policy must be one of {', '.join(POLICIES)}; got {self.name!r}")
        if self.unit is None:
            object.__setattr__(self, "unit", "characters" if self.name == "recursive" else DEFAULT_UNIT)
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {self.unit!r}")
        tokens = self.unit == "tokens"
        if self.name == "recursive":
            if tokens:
                raise ValueError("the recursive policy counts characters: use unit='characters'")
            if self.size is None:
                object.__setattr__(self, "size", RECURSIVE_SIZE)
            if self.overlap is None:
                object.__setattr__(self, "overlap", 0)
        if self.size is None:
            object.__setattr__(self, "size", WINDOW_TOKENS if tokens else DEFAULT_SIZE)
        if self.overlap is None:
            object.__setattr__(self, "overlap", WINDOW_OVERLAP if tokens else DEFAULT_OVERLAP)
        _check_sizes(self.size, self.overlap)
        if not isinstance(self.headers, bool):
            raise ValueError(f"headers must be True or False; got {self.headers!r}")
        if self.headers and self.unit == "tokens" and self.size <= HEADER_RESERVE + self.overlap:
            raise ValueError(f"size must exceed {HEADER_RESERVE} tokens for the header plus the overlap "
                             f"({self.overlap}); got {self.size}")

    @classmethod
    def recursive(cls, headers: bool = True) -> "ChunkPolicy":
        """Lab 03's winning units: recursive chunks of 800 characters, with the page title and section in front."""
        return cls("recursive", RECURSIVE_SIZE, 0, unit="characters", headers=headers)

    @classmethod
    def seed(cls, name: str = DEFAULT_POLICY) -> "ChunkPolicy":
        """The RAG baseline design's policy (the course's starting point for lab 04): 2,000 characters with 300
        of overlap, counted in characters."""
        return cls(name, DEFAULT_SIZE, DEFAULT_OVERLAP, unit="characters")

    def _version_fields(self) -> list[str]:
        """What ``version`` records after the name: sizes (not for ``headings``), a token unit, headers."""
        sizes = [] if self.name == "headings" else [f"size={self.size}", f"overlap={self.overlap}"]
        unit = ["unit=tokens"] if self.name != "headings" and self.unit == "tokens" else []
        return sizes + unit + (["headers"] if self.headers else [])

    @property
    def version(self) -> str:
        """What the chunk rows record, e.g. ``recursive-v1(size=800,overlap=0,headers)`` (``from_version`` reads it)."""
        fields = self._version_fields()
        return f"{self.name}-{POLICY_VERSION}" + (f"({','.join(fields)})" if fields else "")

    @classmethod
    def from_version(cls, version: object) -> "ChunkPolicy":
        """The policy whose ``version`` is ``version`` (what an index records); ValueError for any other text.

        The fields are read back as ``_version_fields`` writes them, and the policy they give must
        write ``version`` again, so the two cannot drift apart."""
        text = version if isinstance(version, str) else ""
        name, marker, rest = text.partition(f"-{POLICY_VERSION}")
        inside = rest[1:-1] if rest.startswith("(") and rest.endswith(")") else None if rest else ""
        fields: dict[str, str] = {}
        for part in (inside or "").split(",") if inside else []:
            key, _, value = part.partition("=")
            fields[key] = value
        known = {"size", "overlap", "unit", "headers"}
        if not marker or name not in POLICIES or inside is None or not set(fields) <= known:
            raise ValueError(f"chunker version {version!r} is not one this package writes "
                             f"(e.g. {cls.recursive().version!r})")
        numbers = {key: int(fields[key]) for key in ("size", "overlap") if fields.get(key, "").isdigit()}
        unit = fields.get("unit") or (None if name == "headings" else "characters")
        try:
            policy = cls(name, numbers.get("size"), numbers.get("overlap"), unit=unit, headers="headers" in fields)
        except ValueError as error:
            raise ValueError(f"chunker version {version!r}: {error}") from None
        if policy.version != text:
            raise ValueError(f"chunker version {version!r} is not one this package writes (read back: "
                             f"{policy.version!r})")
        return policy

    def _tokenizer(self):
        if self.tokenizer is None:
            from ..dense import load_tokenizer

            object.__setattr__(self, "tokenizer", load_tokenizer())
        return self.tokenizer

    def spans(self, text: str) -> Spans:
        """The character spans of ``text`` under this policy."""
        if self.name == "headings":
            return heading_spans(text)
        if self.name == "recursive":
            return recursive_spans(text, self.size)
        if self.unit == "tokens":
            size = self.size - HEADER_RESERVE if self.headers else self.size
            ruler = TokenRuler(text, self._tokenizer(), size, self.overlap)
            if self.name == "fixed":
                return ruler.windows(0, len(text)) if text else [(0, 0)]
            return sentence_spans(text, size, self.overlap, ruler, ruler.windows)
        if self.name == "fixed":
            return fixed_spans(text, self.size, self.overlap)
        return sentence_spans(text, self.size, self.overlap)

    def chunks(self, text: str) -> list[ChunkSpan]:
        """The chunks of ``text``, numbered from 0, each an exact slice of it."""
        return [ChunkSpan(n, a, b, text[a:b], header_of(text, a) if self.headers else "")
                for n, (a, b) in enumerate(self.spans(text))]
