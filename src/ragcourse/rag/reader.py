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

A relevant page is not yet support. A numpy page's See Also section lists other pages with
their one-line descriptions ("concatenate : Join a sequence of arrays along an existing
axis."), so a sentence copied from page P can be page Q's description. ``copied_sentence``
tells such a sentence from P's own text, ``strict_citation_accuracy`` counts a citation only
when its page is relevant and one of the sentences cited with it is that page's own text,
and ``copied_sentences`` counts the copies, overall and among the relevant-page citations.
The reader itself answers from a page's own text: it leaves out the lines under a passage's
``## See Also`` heading (``own_text``), so each sentence it cites is about the page it cites.
Ties between sentences go to the passage that came first in the context, which is the order
of the stages before it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Mapping, Sequence

import numpy as np

from ..toolkit.params import check_int, check_number
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

    The default rule is the one sentence packing uses at ingest (``engines.chunking.spans.split_sentences``:
    a cut after ``.``, ``!`` or ``?`` and whitespace), fast enough to split every candidate
    of every question; pass ``segment=pysbd_segmenter()`` for lab 03's segmenter.
    """

    segment: Segment | None = None
    memo: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def __call__(self, text: str) -> tuple[str, ...]:
        """The sentences of ``text`` (split once, then read from the memo)."""
        if text not in self.memo:
            if self.segment is None:
                from ..engines.chunking.spans import split_sentences

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
    margin: float = float("inf")   # the last sentence kept minus the first left out (inf: none left out)

    def closest_call(self, threshold: float) -> float:
        """How far a score would have to move to change this answer: the smaller of the gap between the
        best sentence and the threshold and the gap between the last sentence kept and the first left out."""
        return min(abs(self.best_score - threshold), self.margin)


class ExtractiveReader:
    """Answers with the ``sentences`` context sentences closest to the question, or abstains."""

    def __init__(self, encoder, sentences: int = DEFAULT_SENTENCES, threshold: float = DEFAULT_THRESHOLD):
        self.encoder = encoder
        self.sentences = check_int("sentences", sentences, 1, 10)
        self.threshold = check_number("threshold", threshold, -1.0, 1.0)
        self.splitter = SentenceSplitter()

    def answer(self, question: str, context: AssembledContext) -> Answer:
        """The answer to ``question`` from ``context.admitted`` only; its citations are checked.

        Sentences come from each passage's own text (``own_text``: its See Also lines left
        out); equal scores keep the context's order (a stable sort)."""
        units = [(sentence, scored.passage.citation) for scored in context.admitted
                 for sentence in self.splitter(own_text(scored.passage.text))]
        if not units:
            result = Answer(question, NO_CONTEXT, (), True, (), -1.0)
        else:
            vectors = np.asarray(self.encoder.encode([question] + [s for s, _ in units]), dtype=np.float32)
            scores = (vectors[1:] @ vectors[0]).tolist()
            ranked = _distinct(sorted(range(len(units)), key=lambda i: -scores[i]),
                               [units[i][0] for i in range(len(units))])
            order = ranked[:self.sentences]
            evidence = tuple((units[i][0], units[i][1], float(scores[i])) for i in order)
            margin = (float(scores[order[-1]]) - float(scores[ranked[self.sentences]])
                      if len(ranked) > self.sentences else float("inf"))
            result = replace(self._decide(question, evidence), margin=margin)
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


def own_text(text: str) -> str:
    """A passage without the lines under its ``## See Also`` heading (up to the next heading).

    Those lines describe other pages ("concatenate : Join a sequence of arrays ..."), so a
    sentence copied from them would be cited to the wrong page. A passage that starts inside
    such a section, below its heading, keeps its lines: nothing in the passage says so.
    """
    if _SEE_ALSO_HEADING not in text:
        return text
    return _see_also_and_rest(text)[1]


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
    """How many of the answered questions' citations point to a relevant page (doc id).

    This is the lenient rule: a citation of a relevant page counts even when the sentence
    cited is a See Also entry describing another page (``strict_citation_accuracy``).
    """
    return _citation_scores(answers, relevant_by_question, None)


def strict_citation_accuracy(answers: Sequence[Answer], relevant_by_question: Mapping[str, Collection[str]],
                             pages: Mapping[str, str]) -> CitationScores:
    """``citation_accuracy`` where a citation counts only when it also cites the page's own text.

    A citation is correct when its page is relevant and at least one of the answer's
    sentences cited with it is not copied (``copied_sentence``): the page's own words, not a
    See Also line describing another page. A citation with no sentence in the evidence has
    nothing to check and does not count. ``pages`` maps a doc id to the page's Markdown as it
    was indexed (``export_markdown``'s files, or ``{d.doc_id: d.markdown(summary=False) for d in
    corpus.documents}``); only the relevant pages that are cited are read. The denominators are
    those of ``citation_accuracy``, so the strict figures are never above the lenient ones.
    """
    return _citation_scores(answers, relevant_by_question, pages)


def _citation_scores(answers: Sequence[Answer], relevant_by_question: Mapping[str, Collection[str]],
                     pages: Mapping[str, str] | None) -> CitationScores:
    answered = [a for a in answers if not a.abstained]
    citations = correct = with_correct = 0
    for answer in answered:
        relevant = _relevant(answer, relevant_by_question)
        hits = 0
        for citation in answer.citations:
            if citation_doc_id(citation) not in relevant:
                continue
            if pages is None or any(cited == citation and not copied_sentence(sentence, cited, pages)
                                    for sentence, cited, _ in answer.evidence):
                hits += 1
        citations += len(answer.citations)
        correct += hits
        with_correct += hits > 0
    return CitationScores(len(answered), citations, correct, _share(correct, citations),
                          with_correct, _share(with_correct, len(answered)))


def _relevant(answer: Answer, relevant_by_question: Mapping[str, Collection[str]]) -> set[str]:
    if answer.question not in relevant_by_question:
        raise ValueError(f"relevant_by_question has no entry for the question {answer.question!r}")
    return set(relevant_by_question[answer.question])


_SEE_ALSO_HEADING = "## See Also"


def see_also_section(page: str) -> str:
    """The text of a page's See Also section: the lines under ``## See Also`` up to the next heading.

    ``page`` is Markdown as ``ApiDocument.markdown`` writes it (sections under ``## ``
    headings); a page without the section gives ``""``.
    """
    return _see_also_and_rest(page)[0]


def _see_also_and_rest(page: str) -> tuple[str, str]:
    """The page's See Also section, and the page without it (heading and section removed)."""
    lines = page.splitlines()
    stripped = [line.rstrip() for line in lines]
    if _SEE_ALSO_HEADING not in stripped:
        return "", page
    heading = stripped.index(_SEE_ALSO_HEADING)
    end = next((i for i in range(heading + 1, len(lines)) if lines[i].startswith(("# ", "## "))), len(lines))
    return "\n".join(lines[heading + 1:end]).strip(), "\n".join(lines[:heading] + [""] + lines[end:])


def _key(text: str) -> str:
    """Text compared as the reader compares sentences: whitespace runs made one space, lower case."""
    return " ".join(text.split()).lower()


def copied_sentence(sentence: str, citation: str, pages: Mapping[str, str]) -> bool:
    """Whether ``sentence``, cited as ``citation``, is a See Also entry of the cited page, not its own text.

    The rule: after whitespace and case are normalised, the sentence lies inside the cited
    page's See Also section (``see_also_section``), and it is not also a whole sentence of
    the rest of the page. Every See Also entry counts, with or without a description: an
    entry names another page ("sum : Sum array elements.", "ndarray.transpose : Equivalent
    method.", "scipy.interpolate") and says nothing the cited page itself claims. Containment
    rather than equality, so a sentence from a chunk that starts or ends inside the section
    is still recognised. ``pages`` maps a doc id to the page's Markdown as indexed; a cited
    page that is missing raises ``ValueError``.
    """
    page_id = citation_doc_id(citation)
    if page_id not in pages:
        raise ValueError(f"pages has no text for the cited page {page_id!r} (citation {citation!r})")
    section, rest = _see_also_and_rest(pages[page_id])
    key = _key(sentence)
    if not key or key not in _key(section):
        return False
    from ..engines.chunking.spans import split_sentences

    return key not in {_key(own) for own in passage_sentences(rest, split_sentences)}


@dataclass(frozen=True)
class CopiedSentences:
    """The answered questions' sentences, and those copied from a See Also section (``copied_sentence``).

    ``relevant`` counts the sentences whose citation names a relevant page (what
    ``citation_accuracy`` rewards) and ``copied_relevant`` the copies among them. Citations
    are scored, not sentences: a citation whose sentences are all such copies is one that
    ``citation_accuracy`` credits and ``strict_citation_accuracy`` does not, while a copy
    cited beside an own sentence of the same passage leaves its citation correct.
    """

    sentences: int
    copied: int
    relevant: int
    copied_relevant: int


def copied_sentences(answers: Sequence[Answer], relevant_by_question: Mapping[str, Collection[str]],
                     pages: Mapping[str, str]) -> CopiedSentences:
    """Count the evidence sentences of the answers that did not abstain, and the copies among them."""
    sentences = copied = relevant_count = copied_relevant = 0
    for answer in answers:
        if answer.abstained:
            continue
        relevant = _relevant(answer, relevant_by_question)
        for sentence, citation, _ in answer.evidence:
            is_copy = copied_sentence(sentence, citation, pages)
            is_relevant = citation_doc_id(citation) in relevant
            sentences += 1
            copied += is_copy
            relevant_count += is_relevant
            copied_relevant += is_copy and is_relevant
    return CopiedSentences(sentences, copied, relevant_count, copied_relevant)


def _share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan
