"""Lab 04's reader: it answers with sentences copied from the context, each with its citation.

An extractive reader generates nothing. It cuts every admitted passage into sentences,
embeds them with the question, and answers with the few sentences closest to the question,
each followed by the ``source#ordinal`` of the passage it was copied from. Because every
word of the answer comes from a passage it was given, a citation can be checked
mechanically: ``check_citations`` lists any citation that does not name an admitted
passage, and the reader refuses to return such an answer.

When nothing in the context is close enough (or the context is empty) the reader abstains
and says so, with the best score it saw. ``abstention_rate`` and ``citation_accuracy``
measure a batch of answers against the judged relevant pages.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Collection, Mapping, Sequence

import numpy as np

from ..lesson.params import check_int, check_number
from .context import AssembledContext

DEFAULT_SENTENCES = 2
DEFAULT_THRESHOLD = 0.45
NO_CONTEXT = "The supplied passages do not answer the question: no passage was admitted to the context."

Segment = Callable[[str], list[str]]

_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def passage_sentences(text: str, segment: Segment) -> list[str]:
    """The sentences of a passage: paragraphs on blank lines, lines joined by spaces, then ``segment``."""
    sentences: list[str] = []
    for paragraph in _BLANK_LINE.split(text):
        flat = " ".join(line.strip() for line in paragraph.splitlines() if line.strip())
        for sentence in segment(flat) if flat else []:
            sentence = sentence.strip()
            if sentence:
                sentences.append(sentence)
    return sentences


@dataclass
class SentenceSplitter:
    """``passage_sentences`` with every text's split remembered.

    The default rule is the one sentence packing uses at ingest (``ingest.split_sentences``:
    a cut after ``.``, ``!`` or ``?`` and whitespace), fast enough to split every candidate
    of every question; pass ``segment=pysbd_segmenter()`` for lab 03's segmenter.
    """

    segment: Segment | None = None
    memo: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def __call__(self, text: str) -> tuple[str, ...]:
        """The sentences of ``text`` (split once, then read from the memo)."""
        if text not in self.memo:
            if self.segment is None:
                from .ingest import split_sentences

                self.segment = split_sentences
            self.memo[text] = tuple(passage_sentences(text, self.segment))
        return self.memo[text]


@dataclass(frozen=True)
class Answer:
    """What the reader said: the text, the passages it cites, whether it abstained, and why."""

    question: str
    text: str
    citations: tuple[str, ...]
    abstained: bool
    evidence: tuple[tuple[str, str, float], ...]   # (sentence, citation, score), best first
    best_score: float


class ExtractiveReader:
    """Answers with the ``sentences`` context sentences closest to the question, or abstains."""

    def __init__(self, encoder, sentences: int = DEFAULT_SENTENCES, threshold: float = DEFAULT_THRESHOLD):
        self.encoder = encoder
        self.sentences = check_int("sentences", sentences, 1, 10)
        self.threshold = check_number("threshold", threshold, -1.0, 1.0)
        self.splitter = SentenceSplitter()

    def answer(self, question: str, context: AssembledContext) -> Answer:
        """The answer to ``question`` from ``context.admitted`` only; its citations are checked."""
        units = [(sentence, scored.passage.citation) for scored in context.admitted
                 for sentence in self.splitter(scored.passage.text)]
        if not units:
            result = Answer(question, NO_CONTEXT, (), True, (), -1.0)
        else:
            vectors = np.asarray(self.encoder.encode([question] + [s for s, _ in units]), dtype=np.float32)
            scores = (vectors[1:] @ vectors[0]).tolist()
            order = _distinct(sorted(range(len(units)), key=lambda i: -scores[i]),
                              [units[i][0] for i in range(len(units))])[:self.sentences]
            evidence = tuple((units[i][0], units[i][1], float(scores[i])) for i in order)
            result = self._decide(question, evidence)
        problems = check_citations(result, context)
        if problems:
            raise RuntimeError(f"the reader cited passages that are not in the context: {problems}")
        return result

    def _decide(self, question: str, evidence: tuple[tuple[str, str, float], ...]) -> Answer:
        best = evidence[0][2]
        if best < self.threshold:
            text = (f"The supplied passages do not answer the question: the closest sentence scores"
                    f" {best:.3f}, below the threshold {self.threshold:.2f}.")
            return Answer(question, text, (), True, evidence, best)
        text = " ".join(f"{sentence} [{citation}]" for sentence, citation, _ in evidence)
        citations = tuple(dict.fromkeys(citation for _, citation, _ in evidence))
        return Answer(question, text, citations, False, evidence, best)


def _distinct(order: list[int], sentences: list[str]) -> list[int]:
    """``order`` without a sentence whose text (whitespace and case aside) came earlier.

    A See Also line such as "concatenate : Join a sequence of arrays ..." sits on many
    pages; the reader says it once, citing the best-ranked passage that holds it.
    """
    seen: set[str] = set()
    kept = []
    for i in order:
        key = " ".join(sentences[i].split()).lower()
        if key not in seen:
            seen.add(key)
            kept.append(i)
    return kept


def check_citations(answer: Answer, context: AssembledContext) -> list[str]:
    """The citations of ``answer`` (and of its evidence) that name no admitted passage; empty is good."""
    admitted = {scored.passage.citation for scored in context.admitted}
    cited = dict.fromkeys([*answer.citations, *(citation for _, citation, _ in answer.evidence)])
    return [citation for citation in cited if citation not in admitted]


def citation_doc_id(citation: str) -> str:
    """The page a citation points to: ``numpy.concatenate.md#3`` -> ``numpy.concatenate``."""
    name = citation.rsplit("#", 1)[0].rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def abstention_rate(answers: Sequence[Answer]) -> float:
    """The share of answers that abstained."""
    if not answers:
        raise ValueError("answers must hold at least one answer; got none")
    return sum(a.abstained for a in answers) / len(answers)


@dataclass(frozen=True)
class CitationScores:
    """Citations of the answers that did not abstain, checked against the judged relevant pages.

    ``accuracy`` is ``correct_citations / citations``; ``answered_with_correct`` counts the
    answers with at least one correct citation and ``answered_with_correct_share`` divides
    it by ``answered``. A share over nothing (no answer, no citation) is NaN.
    """

    answered: int
    citations: int
    correct_citations: int
    accuracy: float
    answered_with_correct: int
    answered_with_correct_share: float


def citation_accuracy(answers: Sequence[Answer],
                      relevant_by_question: Mapping[str, Collection[str]]) -> CitationScores:
    """How many of the answered questions' citations point to a relevant page (doc id)."""
    answered = [a for a in answers if not a.abstained]
    citations = correct = with_correct = 0
    for answer in answered:
        if answer.question not in relevant_by_question:
            raise ValueError(f"relevant_by_question has no entry for the question {answer.question!r}")
        relevant = set(relevant_by_question[answer.question])
        hits = sum(citation_doc_id(c) in relevant for c in answer.citations)
        citations += len(answer.citations)
        correct += hits
        with_correct += hits > 0
    return CitationScores(len(answered), citations, correct, _share(correct, citations),
                          with_correct, _share(with_correct, len(answered)))


def _share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan
