"""Lab 04's generated answers: the same questions read by the local model under each condition.

Retrieval and generation are counted apart. For each condition the prompt's passages are scored
against the judged pages (does the prompt hold a right passage?), and the model's answer by the
text measures of ``rag.answer_checks`` (correct, grounded, abstained, cited right).

The conditions (``generated_conditions``), every one on the same questions:

- **closed book**: no passages at all; whatever the model says comes from its training;
- **the kept system at each budget** (``budgets``, tokens of rendered context as the context stage
  counts them); the passage limit and the budget each drop what they drop, and ``GenerationRow``
  shows the passages admitted, so where the limit binds first is visible;
- **oracle**: the judged pages' own chunks under the middle budget;
- **wrong passages**: the kept system's context for another question (any passage of a judged page
  of this question taken out), under the middle budget;
- **the right passage first, in the middle, last**: the oracle's first passage among two passages of
  the kept system's context that belong to no judged page (taken from another question's context when
  this one has fewer), the same three passages in three orders.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..corpus.queries import Question
from ..rag.answer_checks import AnswerMarks, NameIndex, mark
from ..rag.pipeline import Trace
from ..rag.context import ContextBudget, assemble, token_counter
from ..rag.generator import BATCH, GeneratingReader, Generation, Prompt
from ..rag.passages import ScoredPassage
from ..rag.reader import Answer
from .ladder import Setting
from .systems import SettingRuns, oracle_context

BUDGETS = (400, 800, 1600)
POSITIONS = ("first", "middle", "last")


@dataclass(frozen=True)
class Read:
    """One question under one condition: what the model was given, what it wrote, and its marks."""

    condition: str
    question: Question
    prompt: Prompt
    answer: Answer
    generation: Generation
    marks: AnswerMarks

    @property
    def right_passage(self) -> bool:
        """The prompt holds a passage of a judged page."""
        return any(sp.passage.doc_id in self.question.relevant for sp in self.prompt.passages)


@dataclass(frozen=True)
class GenerationRow:
    """One condition, averaged over the questions: retrieval's side, then the answer's."""

    name: str
    passages: float
    tokens: float          # the prompt's tokens as the generator counts them (instructions included)
    cut: int               # passages cut to fit the model's window, over all questions
    right_passage: float
    answered: float
    correct: float
    grounded: float
    cited_right: float
    words: float


def _distractors(passages: Sequence[ScoredPassage], relevant: Sequence[str]) -> list[ScoredPassage]:
    return [sp for sp in passages if sp.passage.doc_id not in relevant]


def condition_prompts(runs: SettingRuns, setting: Setting, questions: Sequence[Question], traces: Sequence[Trace],
                      reader: GeneratingReader, budgets: Sequence[int] = BUDGETS) -> dict[str, list[Prompt]]:
    """condition -> one prompt per question, in the order of ``questions``.

    ``traces`` are the system's runs of ``questions`` (one each, in order): every budget's context is
    assembled again from the same reranked list, so the conditions differ in what the model is given only."""
    if len(traces) != len(questions) or any(t.question != q.text for t, q in zip(traces, questions)):
        raise ValueError("traces must be the system's runs of the questions, one each and in the same order")
    generator = reader.generator
    middle = budgets[len(budgets) // 2]
    count = token_counter(runs.encoder)
    prompts: dict[str, list[Prompt]] = {"closed book": [generator.prompt(q.text, ()) for q in questions]}
    contexts = {}
    for budget in budgets:
        limit = ContextBudget(max_passages=runs.max_passages, max_tokens=budget)
        contexts[budget] = [assemble(t.reranked.ranked, limit, count) for t in traces]
        prompts[f"kept, {budget:,} tokens"] = [generator.prompt(q.text, c.admitted)
                                               for q, c in zip(questions, contexts[budget])]
    limit = ContextBudget(max_passages=runs.max_passages, max_tokens=middle)
    oracle = [oracle_context(runs.index(setting), q, limit, count) for q in questions]
    prompts[f"oracle, {middle:,} tokens"] = [generator.prompt(q.text, c.admitted) for q, c in zip(questions, oracle)]
    base = contexts[middle]
    n = len(questions)
    wrong = [_distractors(base[(i + 1) % n].admitted, q.relevant) for i, q in enumerate(questions)]
    prompts["wrong passages"] = [generator.prompt(q.text, w) for q, w in zip(questions, wrong)]
    for position in POSITIONS:
        prompts[f"right passage {position}"] = []
    for i, (q, o) in enumerate(zip(questions, oracle)):
        others = (_distractors(base[i].admitted, q.relevant) + wrong[i])[:2]
        right = list(o.admitted[:1])
        orders = {"first": right + others, "middle": others[:1] + right + others[1:], "last": others + right}
        for position in POSITIONS:
            prompts[f"right passage {position}"].append(generator.prompt(q.text, orders[position]))
    return prompts


def generated_conditions(runs: SettingRuns, setting: Setting, questions: Sequence[Question], traces: Sequence[Trace],
                         reader: GeneratingReader, names: NameIndex,
                         budgets: Sequence[int] = BUDGETS) -> dict[str, list[Read]]:
    """condition -> one ``Read`` per question (generated once, then read from the generation cache)."""
    prompts = condition_prompts(runs, setting, questions, traces, reader, budgets)
    everything = [p for group in prompts.values() for p in group]
    made = reader.answer_many(everything, desc=f"{len(everything)} answers")
    reads: dict[str, list[Read]] = {}
    position = 0
    for condition, group in prompts.items():
        reads[condition] = []
        for q, prompt in zip(questions, group):
            answer, generation = made[position]
            position += 1
            reads[condition].append(Read(condition, q, prompt, answer, generation,
                                         mark(answer, prompt.passages, q.relevant, names)))
    return reads


def passages_of(chunks: Sequence) -> tuple[ScoredPassage, ...]:
    """Chunks of the in-memory labs (``TextChunk``: ``doc_id``, ``position``, ``text``) as the passages the
    generator numbers, in order; each cites ``page.md#position``."""
    from ..rag.passages import Passage

    return tuple(ScoredPassage(Passage(i, f"{c.doc_id}.md", c.position, 0, len(c.text), c.text), 1.0, i + 1)
                 for i, c in enumerate(chunks))


def generated_reads(condition: str, questions: Sequence[Question], passages: Sequence[Sequence[ScoredPassage]],
                    reader: GeneratingReader, names: NameIndex) -> list[Read]:
    """One ``Read`` per question: the model's answer from that question's passages (cached after the first run)."""
    if len(passages) != len(questions):
        raise ValueError(f"passages must hold one list per question: {len(passages)} for {len(questions)} questions")
    prompts = [reader.generator.prompt(q.text, tuple(given)) for q, given in zip(questions, passages)]
    made = reader.answer_many(prompts, desc=f"{len(prompts)} answers")
    return [Read(condition, q, prompt, answer, generation, mark(answer, prompt.passages, q.relevant, names))
            for q, prompt, (answer, generation) in zip(questions, prompts, made)]


def generation_row(name: str, reads: Sequence[Read]) -> GenerationRow:
    """The averages of one condition."""
    mean = statistics.fmean
    return GenerationRow(name, mean(len(r.prompt.passages) for r in reads), mean(r.prompt.tokens for r in reads),
                         sum(r.prompt.cut for r in reads), mean(r.right_passage for r in reads),
                         mean(not r.marks.abstained for r in reads), mean(r.marks.correct for r in reads),
                         mean(r.marks.grounded for r in reads), mean(r.marks.cited_right for r in reads),
                         mean(len(r.answer.text.split()) for r in reads))


def four_cells(reads: Sequence[Read]) -> dict[tuple[bool, bool], int]:
    """(right passage in the prompt, correct answer) -> how many questions."""
    cells = {(a, b): 0 for a in (True, False) for b in (True, False)}
    for r in reads:
        cells[(r.right_passage, r.marks.correct)] += 1
    return cells


def causes(reads: Sequence[Read]) -> dict[str, list[Read]]:
    """The generation failures by cause, each answer in the first that applies:
    abstained although a right passage was there; answered with no right passage in the prompt;
    named a page that is in no passage (from memory); named only passages' pages, none judged (followed
    a wrong passage)."""
    found: dict[str, list[Read]] = {"abstained, answer there": [], "answered, nothing right given": [],
                                    "named from memory": [], "followed a wrong passage": []}
    for r in reads:
        if r.marks.correct:
            continue
        if r.marks.abstained:
            if r.right_passage:
                found["abstained, answer there"].append(r)
        elif not r.right_passage:
            found["answered, nothing right given"].append(r)
        elif r.marks.ungrounded:
            found["named from memory"].append(r)
        elif r.marks.named:
            found["followed a wrong passage"].append(r)
    return found


def per_question(reads: Sequence[Read], measure: str) -> list[float]:
    """One number per question for a paired test: ``correct``, ``grounded``, ``answered`` or ``right_passage``."""
    if measure == "answered":
        return [float(not r.marks.abstained) for r in reads]
    if measure == "right_passage":
        return [float(r.right_passage) for r in reads]
    if measure in ("correct", "grounded", "cited_right"):
        return [float(getattr(r.marks, measure)) for r in reads]
    raise ValueError(f"measure must be one of correct, grounded, cited_right, answered, right_passage; got {measure!r}")


def throughput(stats: Mapping[str, float]) -> str:
    """The generator's measured rates: prefill and decode tokens per second of the prompts it answered
    (the copies that fill a pass not counted), and how many passes it ran."""
    if not stats.get("generated"):
        return f"all {stats.get('cached', 0)} answers read from the generation cache"
    made, passes = stats["generated"], stats.get("passes", 0)
    return (f"{made} answer{'s' if made != 1 else ''} generated in {passes} pass{'es' if passes != 1 else ''} of "
            f"{BATCH}: prefill {stats['prefill_tokens'] / stats['prefill_seconds']:.0f} tokens/s, decode "
            f"{stats['decode_tokens'] / stats['decode_seconds']:.1f} tokens/s; {stats['cached']} read from the cache")


READINGS = Path(__file__).parent / "data" / "answer_readings.json"
MEASURES = ("correct", "grounded", "abstained", "cited_right")


@dataclass(frozen=True)
class Agreement:
    """The text measures against a person's reading of the same answers."""

    read: int                      # answers in the reading
    matched: int                   # of them, answers this run wrote with the same text (the rest are not compared)
    agree: dict[str, int]          # measure -> answers where the measure and the reading agree
    over: dict[str, int]           # measure -> answers where the measure says yes and the reading no
    disagreements: dict[str, str]  # measure -> where they differ, as "condition qid; ..."


def answer_digest(text: str) -> str:
    """The sha256 of an answer's text (a reading is compared only with the very answer it read)."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reading_agreement(reads: Sequence[Read], path: Path = READINGS) -> Agreement:
    """Compare ``mark``'s four measures with the reading in ``path`` (``data/answer_readings.json``: for each
    answer read, its condition, question id, text digest and the four judgements of the reader)."""
    readings = json.loads(Path(path).read_text(encoding="utf-8"))["answers"]
    by_key = {(r.condition, r.question.qid): r for r in reads}
    agree = dict.fromkeys(MEASURES, 0)
    over = dict.fromkeys(MEASURES, 0)
    differ: dict[str, list[str]] = {m: [] for m in MEASURES}
    matched = 0
    for reading in readings:
        r = by_key.get((reading["condition"], reading["qid"]))
        if r is None or answer_digest(r.answer.text) != reading["sha256"]:
            continue
        matched += 1
        for measure in MEASURES:
            if bool(getattr(r.marks, measure)) == bool(reading[measure]):
                agree[measure] += 1
            else:
                over[measure] += bool(getattr(r.marks, measure))
                differ[measure].append(f"{reading['condition']} {reading['qid']}")
    shown = {m: "; ".join(found[:2]) + (f"; +{len(found) - 2} more" if len(found) > 2 else "")
             for m, found in differ.items()}
    return Agreement(len(readings), matched, agree, over, shown)
