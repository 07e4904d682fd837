"""What one call of the language-model simulator returns: a frozen ``Response`` and its status.

Every variant of ``llm.SimulatedModel`` answers with a ``Response`` (lesson 15's fine-tuned
model with its own reply, beside it in ``llm``). A call that produced nothing says why in its
``status``: the prompt was over the window, the call hit the rate limit, or the reply was empty.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OK = "ok"
CONTEXT_OVERFLOW = "context_overflow"
RATE_LIMIT = "rate_limit"
EMPTY = "empty"
STATUSES = (OK, CONTEXT_OVERFLOW, RATE_LIMIT, EMPTY)


@dataclass(frozen=True)
class Response:
    """One model call.

    ``status`` is one of "ok", "context_overflow", "rate_limit", "empty";
    ``input_tokens`` / ``output_tokens`` are token counts (output 0 unless "ok");
    ``text`` is the reply (the linker's words, the transformer's query, the answerer's
    ``CODE : text``); ``concept`` the concept the reply names (or None); ``chunk`` the chunk
    the answerer chose; ``record`` the record the linker copied; ``score`` the pair score.
    """

    status: str
    input_tokens: int
    output_tokens: int = 0
    text: str = ""
    concept: str | None = None
    chunk: Any = None
    record: str | None = None
    score: float | None = None

    @property
    def ok(self) -> bool:
        """True when the call produced an answer."""
        return self.status == OK

    @property
    def tokens(self) -> int:
        """Input plus output tokens: what the call costs."""
        return self.input_tokens + self.output_tokens
