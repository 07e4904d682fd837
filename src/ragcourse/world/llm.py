"""The fictional language-model simulator of lessons 07-16, one family with several variants.

No real model is called. Every variant shares the same mechanics, written once in
``SimulatedModel``:

* each call is seeded from ``seed ^ trace_id(text)`` (FNV-1a of the prompt), so the same
  prompt at the same seed always gets the same answer, and any change to the prompt may
  change it;
* the prompt's tokens (``ragcourse.world.text.tokenize``) are counted; above ``window`` tokens the
  call fails with ``context_overflow``;
* a call counter runs over the model's life; every ``rate_limit_every``-th call fails with
  ``rate_limit`` (the 37th, 74th, ... call). Start each experiment with a fresh model or
  ``reset()``, so re-running it gives the same table;
* a choice among options is a softmax with ``temperature`` followed by
  ``ragcourse.world.rng.pick``; ``temperature`` 0 takes the first option with the highest score.

The variants (course lesson in brackets):

* ``ConceptLinker`` (07-10): links a request to one of the twenty concepts. It reads the
  document language, knows the query language of a few concepts (``PRIOR_KNOWLEDGE``),
  replies in free form when the prompt does not ask for "one" concept, caps its output and,
  optionally, copies a record (lesson 10's validity record) from the source it used.
* ``ChunkAnswerer`` (11-13): picks the chunk it answers from; a chunk's position in the
  context changes its weight (first > last > middle).
* ``QueryTransformer`` (11): one call that rewrites or expands a query into the document
  language; on a rate limit the raw query goes through.
* ``PairScorer`` (12): a second-stage reranker that scores a query and a chunk together,
  with noise.
* ``ClassPriorGenerator`` (14): scores the procedure names in its context; its own prior
  knowledge is only the class of the query.
* ``FineTunedModel`` (15): a class-prior generator fine-tuned on labelled examples; it knows
  the concepts it has seen and remembers their stamps as of the training snapshot.

Each call returns a frozen ``Response`` (``world.responses``; ``FineTunedModel.solve`` a ``FineTunedReply``).
Floating point follows the course: weights ``exp(score / temperature)`` are divided by their
left-to-right sum (the course writes ``[x / sum(w) for x in w]`` or ``t = sum(a); x / t``;
both give the same bits).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..toolkit.params import check_non_negative_int
from .concepts import Edition
from .prompts import CodedChunk, answer_prompt
from .responses import CONTEXT_OVERFLOW, EMPTY, OK, RATE_LIMIT, Response
from .rng import Draw, make_rng, pick
from .text import tokenize, trace_id

WINDOW = 240
RATE_LIMIT_EVERY = 37
MAX_OUTPUT = 24

# The concepts whose query-side phrase the linker already knows (lessons 07-10).
PRIOR_KNOWLEDGE = frozenset({"leak", "pressure", "duration", "swap", "valve", "notice", "switch"})
# Replies the linker gives when the prompt does not ask for "one" concept.
FREE_FORM_REPLIES = ("request linked to {k} concept and logged",
                     "{k} record created and passed to the relevant department",
                     "your report was received and the relevant unit will reply")
TRANSFORM_INSTRUCTION = "Translate the query into the document language . Query: "
RERANK_INSTRUCTION = "Is the query about the same record as the chunk . Chunk: "
TRANSFORM_MODES = ("expansion", "rewriting")


class CallCounter:
    """Counts calls; several models may share one (lesson 11's transformer and answerer do)."""

    def __init__(self) -> None:
        self.calls = 0

    def tick(self) -> int:
        """Count one call and return its number (1 for the first call)."""
        self.calls += 1
        return self.calls

    def reset(self) -> None:
        """Start counting from zero again."""
        self.calls = 0


def _check_positive_or_none(name: str, value: object) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{name} must be None or a positive integer; got {value!r}")


def choose(scores: Sequence[float], temperature: float, draw: Draw) -> int:
    """Index of the option chosen: softmax of ``scores`` at ``temperature`` and one draw.

    ``temperature <= 0`` returns the first index with the highest score and draws nothing.
    Where ``exp(score / temperature)`` would overflow (the course stops with an error), the
    scores are shifted by their maximum first; everywhere else the course's bits are kept.
    """
    if not scores:
        raise ValueError("choose needs at least one score")
    if temperature <= 0.0:
        best = max(scores)
        return scores.index(best)
    try:
        weights = [math.exp(score / temperature) for score in scores]
    except OverflowError:   # the course would stop here; shift by the best score instead
        best = max(scores)
        weights = [math.exp((score - best) / temperature) for score in scores]
    total = sum(weights)
    return pick(draw(), [weight / total for weight in weights])


class SimulatedModel:
    """Shared mechanics: seed, temperature, window, call counter and rate limit.

    ``window`` (tokens) and ``rate_limit_every`` (calls) may be None to switch the check off.
    Pass ``counter`` to share one call count between models.
    """

    def __init__(self, edition: Edition, seed: int, *, temperature: float, window: int | None,
                 rate_limit_every: int | None, counter: CallCounter | None = None):
        check_non_negative_int("seed", seed)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
                or not temperature >= 0:
            raise ValueError(f"temperature must be a number >= 0; got {temperature!r}")
        _check_positive_or_none("window", window)
        _check_positive_or_none("rate_limit_every", rate_limit_every)
        self.edition = edition
        self.seed = seed
        self.temperature = float(temperature)
        self.window = window
        self.rate_limit_every = rate_limit_every
        self.counter = counter if counter is not None else CallCounter()

    @property
    def calls(self) -> int:
        """Calls counted so far (since creation or the last ``reset``)."""
        return self.counter.calls

    def reset(self) -> None:
        """Restart the call counter, so the rate limit falls on the same calls again."""
        self.counter.reset()

    def _draw(self, text: str, seed: int | None) -> Draw:
        """The generator of one call: seeded from the model's seed and the FNV trace id of ``text``."""
        return make_rng((self.seed if seed is None else seed) ^ trace_id(text))

    def _refusal(self, call_number: int, n_input: int) -> str | None:
        """The failure status of a call, if any: window first, then the rate limit."""
        if self.window is not None and n_input > self.window:
            return CONTEXT_OVERFLOW
        if self.rate_limit_every is not None and call_number % self.rate_limit_every == 0:
            return RATE_LIMIT
        return None

    def _admit(self, n_input: int, **fields: Any) -> Response | None:
        """Count one call of ``n_input`` tokens; the failed ``Response`` if it is refused, else None."""
        refusal = self._refusal(self.counter.tick(), n_input)
        return Response(refusal, n_input, **fields) if refusal else None

    def _choose(self, scores: Sequence[float], draw: Draw) -> int:
        return choose(scores, self.temperature, draw)


class ConceptLinker(SimulatedModel):
    """Lessons 07-10: links a request to one concept key.

    Score of each concept: 0.15, plus 2.0 per occurrence of its document-side form in the
    prompt, plus 2.0 when it is in ``prior_knowledge`` and its query-side form appears.
    Keys are considered in sorted order. The reply is the bare key when the prompt has the
    token "one", otherwise one of ``FREE_FORM_REPLIES`` (if ``free_form``). With
    ``copy_record`` set (lesson 10: "validity record"), the word after that marker in the
    source segment naming the chosen concept is appended. Output is cut to ``max_output``
    tokens.
    """

    def __init__(self, edition: Edition, seed: int, *, temperature: float = 0.6,
                 window: int | None = WINDOW, rate_limit_every: int | None = RATE_LIMIT_EVERY,
                 max_output: int | None = MAX_OUTPUT,
                 prior_knowledge: frozenset[str] | set[str] = PRIOR_KNOWLEDGE,
                 free_form: bool = True, copy_record: str | None = None,
                 counter: CallCounter | None = None):
        super().__init__(edition, seed, temperature=temperature, window=window,
                         rate_limit_every=rate_limit_every, counter=counter)
        _check_positive_or_none("max_output", max_output)
        unknown = set(prior_knowledge) - set(edition.keys)
        if unknown:
            raise ValueError(f"prior_knowledge holds unknown concepts: {sorted(unknown)}")
        self.max_output = max_output
        self.prior_knowledge = frozenset(prior_knowledge)
        self.free_form = free_form
        self.copy_record = copy_record
        self._sorted_keys = sorted(edition.keys)

    def concept_scores(self, prompt: str) -> dict[str, float]:
        """The score of every concept key for ``prompt`` (before the softmax)."""
        padded = " " + prompt.lower() + " "
        scores = {}
        for concept in self.edition.concepts:
            score = 0.15
            score += 2.0 * padded.count(concept.document_form)
            if concept.key in self.prior_knowledge and concept.query_form in padded:
                score += 2.0
            scores[concept.key] = score
        return scores

    def read_concept(self, text: str) -> str | None:
        """The first word of a reply that is a concept key (None if there is none)."""
        keys = set(self.edition.keys)
        return next((word for word in text.split() if word in keys), None)

    def _copied_record(self, prompt: str, key: str) -> str | None:
        form, marker = self.edition.concept(key).document_form, self.copy_record
        for segment in prompt.split(" . "):
            if form in segment and marker in segment:
                return segment.split(marker + " ")[1].split()[0]
        return None

    def call(self, prompt: str, seed: int | None = None) -> Response:
        """One call; ``seed`` overrides the model's seed for this call only."""
        tokens = tokenize(prompt)
        refused = self._admit(len(tokens))
        if refused:
            return refused
        draw = self._draw(prompt, seed)
        scores = self.concept_scores(prompt)
        keys = self._sorted_keys
        key = keys[self._choose([scores[k] for k in keys], draw)]
        if "one" in tokens or not self.free_form:
            reply = key
        else:
            reply = FREE_FORM_REPLIES[int(draw() * len(FREE_FORM_REPLIES))].format(k=key)
        record = self._copied_record(prompt, key) if self.copy_record else None
        if record is not None:
            reply += " " + record
        reply_tokens = tokenize(reply)
        if self.max_output is not None and len(reply_tokens) > self.max_output:
            reply_tokens = reply_tokens[:self.max_output]
            reply = " ".join(reply_tokens)
        return Response(OK, len(tokens), len(reply_tokens), text=reply,
                        concept=self.read_concept(reply), record=record)

    __call__ = call


class ChunkAnswerer(SimulatedModel):
    """Lessons 11-13: answers from the context by picking one chunk.

    Chunk i of n scores ``position * (relevance_floor + shared / query tokens)``, where
    ``position`` is ``first`` for i = 0, ``last`` for i = n - 1 and ``middle`` otherwise,
    and ``shared`` counts the query's distinct tokens in the chunk's bag. No rate limit by
    default (the course's answerer has none), but the call is counted.
    """

    def __init__(self, edition: Edition, seed: int, *, temperature: float = 0.12,
                 window: int | None = WINDOW, rate_limit_every: int | None = None,
                 first: float = 1.0, last: float = 0.8, middle: float = 0.45,
                 relevance_floor: float = 0.3, counter: CallCounter | None = None):
        super().__init__(edition, seed, temperature=temperature, window=window,
                         rate_limit_every=rate_limit_every, counter=counter)
        self.first, self.last, self.middle = first, last, middle
        self.relevance_floor = relevance_floor

    def position_weight(self, i: int, n: int) -> float:
        """The weight of position ``i`` in a context of ``n`` chunks."""
        return self.first if i == 0 else self.last if i == n - 1 else self.middle

    def chunk_scores(self, query: str, chunks: Sequence[CodedChunk]) -> list[float]:
        """The score of each chunk in context order (before the softmax)."""
        query_bag, n = set(tokenize(query)), len(chunks)
        return [self.position_weight(i, n)
                * (self.relevance_floor + len(query_bag & chunk.bag) / len(query_bag))
                for i, chunk in enumerate(chunks)]

    def answer(self, query: str, chunks: Sequence[CodedChunk], seed: int | None = None) -> Response:
        """Build the answer prompt, then pick the chunk the answer is written from."""
        prompt = answer_prompt(query, chunks)
        n_input = len(tokenize(prompt))
        refused = self._admit(n_input)
        if refused:
            return refused
        if not chunks:
            return Response(EMPTY, n_input)
        draw = self._draw(prompt, seed)
        chosen = chunks[self._choose(self.chunk_scores(query, chunks), draw)]
        reply = f"{chosen.code} : {chosen.text}"
        return Response(OK, n_input, len(tokenize(reply)), text=reply, chunk=chosen)

    __call__ = answer


class QueryTransformer(SimulatedModel):
    """Lesson 11: one call that moves a query towards the document language.

    Every token (of instruction and query) longer than three characters that belongs to
    some concept's query-side form votes 1.0 for that concept (the first concept in axis
    order owning the token). The chosen concept's document form is appended ("expansion")
    or replaces the query, keeping its first filler word ("rewriting"). No vote: status
    "empty"; a rate limit: the raw query goes through. Seeded by the query alone.
    """

    def __init__(self, edition: Edition, seed: int, *, temperature: float = 0.5,
                 window: int | None = None, rate_limit_every: int | None = RATE_LIMIT_EVERY,
                 counter: CallCounter | None = None):
        super().__init__(edition, seed, temperature=temperature, window=window,
                         rate_limit_every=rate_limit_every, counter=counter)
        self.query_trace: dict[str, str] = {}
        for concept in edition.concepts:
            for token in tokenize(concept.query_form):
                if len(token) > 3:
                    self.query_trace.setdefault(token, concept.key)

    def transform(self, query: str, mode: str, seed: int | None = None) -> Response:
        """Rewrite (``mode="rewriting"``) or expand (``mode="expansion"``) ``query``."""
        if mode not in TRANSFORM_MODES:
            raise ValueError(f"mode must be one of {', '.join(TRANSFORM_MODES)}; got {mode!r}")
        tokens = tokenize(TRANSFORM_INSTRUCTION + query)
        refused = self._admit(len(tokens), text=query)
        if refused:
            return refused
        draw = self._draw(query, seed)
        votes: dict[str, float] = {}
        for token in tokens:
            if token in self.query_trace:
                key = self.query_trace[token]
                votes[key] = votes.get(key, 0.0) + 1.0
        if not votes:
            return Response(EMPTY, len(tokens), text=query)
        keys = sorted(votes)
        key = keys[self._choose([votes[k] for k in keys], draw)]
        form = self.edition.concept(key).document_form
        filler_words = self.edition.filler_words
        filler = next((t for t in tokens if t in filler_words), "")
        text = f"{form} for {filler} goes" if mode == "rewriting" else f"{query} {form}"
        return Response(OK, len(tokens), len(tokenize(text)), text=text, concept=key)

    __call__ = transform


class PairScorer(SimulatedModel):
    """Lesson 12: a reranker that reads the query and one chunk together.

    Score = 1.0 * (query and chunk share a concept, through tokens of either language)
    + 1.0 * (they share a filler word, the record) + ``noise`` * (draw - 0.5).
    Costs the prompt's tokens plus one output token. Counted, no window, no rate limit.
    """

    def __init__(self, edition: Edition, seed: int, *, noise: float = 1.4,
                 window: int | None = None, rate_limit_every: int | None = None,
                 counter: CallCounter | None = None):
        super().__init__(edition, seed, temperature=0.0, window=window,
                         rate_limit_every=rate_limit_every, counter=counter)
        self.noise = noise
        self.trace: dict[str, str] = {}
        for concept in edition.concepts:
            for form in (concept.document_form, concept.query_form):
                for token in tokenize(form):
                    if len(token) > 3:
                        self.trace.setdefault(token, concept.key)
        self._filler_words = set(edition.filler_words)

    def score(self, query: str, chunk: CodedChunk, seed: int | None = None) -> Response:
        """Score one (query, chunk) pair; the number is ``Response.score``."""
        tokens = tokenize(RERANK_INSTRUCTION + chunk.text + " Query: " + query)
        refused = self._admit(len(tokens))
        if refused:
            return refused
        draw = self._draw(query + " | " + chunk.text, seed)
        query_bag, trace = set(tokenize(query)), self.trace
        concept_match = bool({trace[t] for t in query_bag if t in trace}
                             & {trace[t] for t in chunk.bag if t in trace})
        record_match = bool(query_bag & chunk.bag & self._filler_words)
        value = 1.0 * concept_match + 1.0 * record_match + self.noise * (draw() - 0.5)
        return Response(OK, len(tokens), 1, score=value)

    __call__ = score


def generation_prompt(query: str, context: Sequence[str]) -> str:
    """Lessons 14-15: the query, ``||``, then the context texts joined by spaces."""
    return query + " || " + " ".join(context)


class ClassPriorGenerator(SimulatedModel):
    """Lesson 14: scores the procedure names (document forms) present in its prompt.

    Its only prior knowledge is the class of the query (the class of the first concept,
    in axis order, whose query-side form the query contains): concepts of that class get
    0.15, and every concept gets one point per occurrence of its document form. Concepts
    scoring zero are left out; the rest are chosen from in axis order. Counted; no window
    and no rate limit by default.
    """

    def __init__(self, edition: Edition, seed: int, *, temperature: float = 0.6,
                 window: int | None = None, rate_limit_every: int | None = None,
                 counter: CallCounter | None = None):
        super().__init__(edition, seed, temperature=temperature, window=window,
                         rate_limit_every=rate_limit_every, counter=counter)

    def query_class(self, query: str) -> str | None:
        """The class the model guesses from the query's own words (None if it knows none)."""
        padded_query = " " + query.lower() + " "
        return next((c.label for c in self.edition.concepts if c.query_form in padded_query), None)

    def name_scores(self, query: str, prompt: str) -> dict[str, float]:
        """Non-zero scores in axis order."""
        padded, label = " " + prompt.lower() + " ", self.query_class(query)
        scores = {}
        for concept in self.edition.concepts:
            score = (0.15 if concept.label == label else 0.0) + padded.count(concept.document_form)
            if score:
                scores[concept.key] = score
        return scores

    def generate(self, query: str, context: Sequence[str] = (), seed: int | None = None) -> Response:
        """Answer ``query`` with the context texts; ``concept`` is the name chosen (None if none)."""
        prompt = generation_prompt(query, context)
        n_input = len(tokenize(prompt))
        refused = self._admit(n_input)
        if refused:
            return refused
        scores = self.name_scores(query, prompt)
        if not scores:
            return Response(EMPTY, n_input)
        names = list(scores)
        name = names[self._choose([scores[k] for k in names], self._draw(prompt, seed))]
        return Response(OK, n_input, len(tokenize(name)), text=name, concept=name)

    __call__ = generate


@dataclass(frozen=True)
class FineTunedReply:
    """Lesson 15's answer: concept, stamp quoted, whether the reply has the trained format, input tokens."""

    concept: str | None
    stamp: str
    format_ok: bool
    input_tokens: int


class FineTunedModel(ClassPriorGenerator):
    """Lesson 15: a class-prior generator fine-tuned on ``training`` (concept keys, in order).

    A query whose concept (first in axis order with its query form in the query) was among
    the training examples is answered from memory; otherwise the model falls back to the
    class-prior generation. The stamp it quotes comes from the first context chunk (the word
    after ``stamp_marker``) when there is a context, else from ``trained_stamps`` (the
    snapshot it was trained on), else "none". The reply has the trained format when the
    model was trained at all and the concept's class was among the examples' classes.
    """

    def __init__(self, edition: Edition, seed: int, training: Sequence[str] = (),
                 trained_stamps: Mapping[str, str] | None = None, *, temperature: float = 0.6,
                 stamp_marker: str = "effective", counter: CallCounter | None = None):
        super().__init__(edition, seed, temperature=temperature, counter=counter)
        unknown = set(training) - set(edition.keys)
        if unknown:
            raise ValueError(f"training holds unknown concepts: {sorted(unknown)}")
        self.training = tuple(training)
        self.seen = set(self.training)
        self.seen_classes = {edition.concept(k).label for k in self.seen}
        self.trained_stamps = dict(trained_stamps or {})
        self.stamp_marker = stamp_marker

    def recalled_concept(self, query: str) -> str | None:
        """The concept the fine-tuning taught for this query's wording, if any."""
        padded_query = " " + query.lower() + " "
        return next((c.key for c in self.edition.concepts
                     if c.query_form in padded_query and c.key in self.seen), None)

    def solve(self, query: str, context: Sequence[str] = (), seed: int | None = None) -> FineTunedReply:
        """Answer with (optional) retrieved context texts."""
        n_input = len(tokenize(generation_prompt(query, context)))
        concept = self.recalled_concept(query)
        if concept is None:
            concept = self.generate(query, context, seed).concept
        if context:
            words = context[0].split()
            stamp = words[words.index(self.stamp_marker) + 1]
        elif self.training and concept is not None:
            stamp = self.trained_stamps[concept]
        else:
            stamp = "none"
        format_ok = bool(self.training) and concept is not None \
            and self.edition.concept(concept).label in self.seen_classes
        return FineTunedReply(concept, stamp, format_ok, n_input)

    __call__ = solve
