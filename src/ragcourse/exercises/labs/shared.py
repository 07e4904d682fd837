"""What the lab sets share: the corpus as the labs load it, and the judged questions, read once per process."""
from __future__ import annotations

from functools import lru_cache

from ...corpus.apidocs import load_corpus
from ...corpus.queries import Question, judged_questions

corpus = load_corpus   # cached by ``load_corpus`` itself


@lru_cache(maxsize=1)
def judged() -> tuple[Question, ...]:
    """The 50 judged questions of labs 01-04, resolved against the corpus."""
    return tuple(judged_questions(corpus()))
