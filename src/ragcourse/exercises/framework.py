"""Questions, checks and verdicts: the part of the exercises every lesson shares.

A **question** has a key (``q1``), a kind (predict, build, measure), a title, its points, the
names a graded notebook must define for it, and a **check**: a function that takes the
student's answers and either returns the lines to show on success or raises

* ``NotDone``: the answer is still the placeholder the student version ships with (``...``,
  ``None``, a function whose body is ``...`` or raises ``NotImplementedError``);
* ``Mismatch``: on one input the answer disagrees with the package's reference: the message
  says what was tried, what was expected and what came back, with a hint (never the code);
* ``Failed``: any other "not yet" with lines of its own (a wrong prediction, with the
  measurement and the explanation).

``ExerciseSet.check`` prints a ``Verdict`` in a notebook; ``ExerciseSet.grade`` runs every
question against a notebook's namespace (the grader calls it inside the submission's kernel,
through ``grade_in_kernel``). Nothing here prints unless asked to, and nothing is random.
"""
from __future__ import annotations

import importlib
import json
import math
import numbers
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from .. import COURSE_SEED

KINDS = {"predict": "Predict, then check", "build": "Build it", "measure": "Measure it"}
POINTS = {"predict": 1, "build": 3, "measure": 2}
PASSED, FAILED, NOT_DONE, NOT_GRADED = "passed", "not passed yet", "not done yet", "not graded"
GRADE_MARKER = "ragcourse-grades:"
CHECK_SECONDS = 30.0        # a check that runs longer than this is stopped while grading (``--timeout``)
NOTEBOOK_CHECK_SECONDS = 120.0  # and in a notebook, where a student's loop would otherwise hang the cell

# Exercise set name -> the module that defines it (imported on use only).
EXERCISE_SETS = {
    "01-what-is-an-embedding": "ragcourse.exercises.part1.lesson01",
    "02-embedding-models": "ragcourse.exercises.part1.lesson02",
    "03-similarity-metrics": "ragcourse.exercises.part1.lesson03",
    "04-vector-databases": "ragcourse.exercises.part1.lesson04",
    "05-metadata-filtering": "ragcourse.exercises.part1.lesson05",
    "06-hybrid-search": "ragcourse.exercises.part1.lesson06",
    "07-retrieval-augmented-generation": "ragcourse.exercises.part2.lesson07",
    "08-document-preparation": "ragcourse.exercises.part2.lesson08",
    "09-chunking-strategies": "ragcourse.exercises.part2.lesson09",
    "10-indexing-and-updating": "ragcourse.exercises.part2.lesson10",
    "11-query-transformation": "ragcourse.exercises.part2.lesson11",
    "12-reranking": "ragcourse.exercises.part2.lesson12",
    "13-context-construction": "ragcourse.exercises.part2.lesson13",
    "14-retrieval-and-generation-quality": "ragcourse.exercises.part2.lesson14",
    "15-retrieval-and-fine-tuning": "ragcourse.exercises.part2.lesson15",
    "16-tables-and-images": "ragcourse.exercises.part2.lesson16",
    "lab01-lexical-baseline": "ragcourse.exercises.labs.lab01",
    "lab02-evaluation-chunks-and-dense": "ragcourse.exercises.labs.lab02",
    "lab03-rag-practice": "ragcourse.exercises.labs.lab03",
    "lab04-postgres-baseline": "ragcourse.exercises.labs.lab04",
}
LAB_PREFIX = "lab"  # a lab's exercise set is named labNN-name; a lesson's NN-name


def is_lab_set(name: str) -> bool:
    """Whether ``name`` is a lab's exercise set (``lab01-lexical-baseline``) rather than a lesson's."""
    return name.startswith(LAB_PREFIX) and name[len(LAB_PREFIX):len(LAB_PREFIX) + 2].isdigit()


def set_number(name: str) -> int:
    """The lesson's or the lab's number of an exercise set (``01-...`` and ``lab01-...`` are both 1)."""
    return int(name[len(LAB_PREFIX):len(LAB_PREFIX) + 2] if is_lab_set(name) else name[:2])

__all__ = ["COURSE_SEED", "EXERCISE_SETS", "Exercise", "ExerciseSet", "Failed", "Mismatch", "NotDone", "Verdict",
           "as_number", "call", "check_choice", "check_estimate", "expect_equal", "expect_number", "expect_pair",
           "first_hint", "grade_in_kernel", "is_lab_set", "is_placeholder", "likely_hint", "load_set", "require_function",
           "set_number", "shown"]


class NotDone(Exception):
    """The answer is still a placeholder: the check has nothing to judge yet."""


class Failed(Exception):
    """The answer is not right yet; ``lines`` say why (and, for a prediction, what was measured)."""

    def __init__(self, lines: Sequence[str]):
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


class Mismatch(Failed):
    """On one input the answer disagrees with the reference."""

    def __init__(self, tried: str, expected: str, got: str, hint: str):
        super().__init__([f"tried:    {tried}", f"expected: {expected}", f"got:      {got}", f"hint:     {hint}"])
        self.tried, self.expected, self.got, self.hint = tried, expected, got, hint


class CheckTimeout(Exception):
    """A check ran longer than its limit while grading."""


@dataclass(frozen=True)
class Verdict:
    """What a check concluded about one question."""

    question: str
    kind: str
    title: str
    status: str
    points: int
    max_points: int
    lines: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when the question earned its points."""
        return self.status == PASSED

    def headline(self) -> str:
        """``q2 · Build it · the keyword score: passed, 3/3 points``."""
        return (f"{self.question} · {KINDS.get(self.kind, self.kind)} · {self.title}: {self.status},"
                f" {self.points}/{self.max_points} point{'s' if self.max_points != 1 else ''}")

    def text(self) -> str:
        """The headline and the indented lines under it, as a notebook shows them."""
        return "\n".join([self.headline(), *(f"  {line}" for line in self.lines)])

    def as_dict(self) -> dict[str, Any]:
        """The verdict as plain JSON-ready values."""
        return {"question": self.question, "kind": self.kind, "title": self.title, "status": self.status,
                "points": self.points, "max_points": self.max_points, "lines": list(self.lines)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """The inverse of ``as_dict``."""
        return cls(question=str(data["question"]), kind=str(data["kind"]), title=str(data["title"]),
                   status=str(data["status"]), points=int(data["points"]), max_points=int(data["max_points"]),
                   lines=tuple(str(line) for line in data.get("lines", ())))


@dataclass(frozen=True)
class Exercise:
    """One exercise: key, kind, title, the notebook names it reads, and its check."""

    key: str
    kind: str
    title: str
    names: tuple[str, ...]
    check: Callable[..., Sequence[str]]
    points: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {self.kind!r}")

    @property
    def max_points(self) -> int:
        """Points for a pass: ``points`` if given, else the kind's default."""
        return POINTS[self.kind] if self.points is None else self.points


class ExerciseSet:
    """A lesson's questions, checked one at a time in a notebook or all at once by the grader."""

    def __init__(self, name: str, title: str, questions: Sequence[Exercise], seconds: float | None = None):
        keys = [q.key for q in questions]
        if len(set(keys)) != len(keys):
            raise ValueError(f"question keys must be unique; got {keys}")
        self.name = name
        self.lesson = set_number(name)   # the lesson's number, or the lab's for a lab set (see ``is_lab``)
        self.is_lab = is_lab_set(name)
        # The least time a cold run needs (a lab embeds texts or starts a database): the grader
        # gives a notebook of this set at least this long, whatever --timeout says.
        self.seconds = seconds
        self.title = title
        self.questions = tuple(questions)

    def question(self, key: str) -> Exercise:
        """The question with this key."""
        for question in self.questions:
            if question.key == key:
                return question
        raise KeyError(f"no question {key!r} in exercise set {self.name}; it has {', '.join(self.keys)}")

    @property
    def keys(self) -> tuple[str, ...]:
        """The question keys, in notebook order."""
        return tuple(q.key for q in self.questions)

    @property
    def max_points(self) -> int:
        """Points for a notebook that passes everything."""
        return sum(q.max_points for q in self.questions)

    def verdict(self, key: str, *answers: Any) -> Verdict:
        """Run one question's check on the student's answers."""
        question = self.question(key)

        def verdict(status: str, lines: Sequence[str]) -> Verdict:
            points = question.max_points if status == PASSED else 0
            return Verdict(question.key, question.kind, question.title, status, points, question.max_points,
                           tuple(lines))

        if len(answers) != len(question.names):
            raise TypeError(f"check({key!r}, ...) takes {len(question.names)} answer(s): {', '.join(question.names)}")
        try:
            lines = question.check(*answers)
        except NotDone as reason:
            return verdict(NOT_DONE, str(reason).split("\n") if str(reason) else [])
        except CheckTimeout as reason:
            return verdict(FAILED, [str(reason)])
        except Failed as reason:
            return verdict(FAILED, reason.lines)
        except Exception as error:  # the answer broke the check (a wrong type deep inside, say)
            return verdict(FAILED, [f"the check could not use your answer: {type(error).__name__}: {error}",
                                    "hint:     compare what your code returns with what the question asks for"
                                    " (its type and its shape)"])
        return verdict(PASSED, list(lines))

    def check(self, key: str, *answers: Any) -> None:
        """Print the verdict on one question (what a check cell of a notebook does)."""
        with _time_limit(max(NOTEBOOK_CHECK_SECONDS, self.seconds or 0), key):
            verdict = self.verdict(key, *answers)
        print(verdict.text())

    def grade(self, namespace: Mapping[str, Any], seconds: float | None = CHECK_SECONDS) -> list[Verdict]:
        """Every question's verdict, reading its answers by name from a notebook's ``namespace``."""
        if seconds and self.seconds:
            seconds = max(seconds, self.seconds)
        verdicts = []
        for question in self.questions:
            missing = [name for name in question.names if name not in namespace]
            if missing:
                verdicts.append(Verdict(question.key, question.kind, question.title, NOT_DONE, 0,
                                        question.max_points,
                                        (f"the notebook defines no {', '.join(missing)}",)))
                continue
            with _time_limit(seconds, question.key):
                verdicts.append(self.verdict(question.key, *(namespace[name] for name in question.names)))
        return verdicts


def load_set(name: str) -> ExerciseSet:
    """The exercise set called ``name`` (``01-what-is-an-embedding``)."""
    if name not in EXERCISE_SETS:
        raise KeyError(f"no exercise set {name!r}; there are {', '.join(EXERCISE_SETS)}")
    return importlib.import_module(EXERCISE_SETS[name]).EXERCISES


def grade_in_kernel(name: str, namespace: Mapping[str, Any], seconds: float | None = CHECK_SECONDS) -> None:
    """Grade a notebook from inside its kernel: one line, the marker and the verdicts as JSON."""
    verdicts = load_set(name).grade(namespace, seconds)
    print(GRADE_MARKER + json.dumps([v.as_dict() for v in verdicts]))


@contextmanager
def _time_limit(seconds: float | None, key: str) -> Iterator[None]:
    """Stop a check that runs longer than ``seconds`` (main thread only; elsewhere no limit)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise CheckTimeout(f"{key}: the check did not finish within {seconds:g} s; does your code loop forever?")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- helpers for checks

def is_placeholder(value: Any) -> bool:
    """True for the student version's placeholders, ``...`` and ``None``."""
    return value is None or value is Ellipsis


def shown(value: Any, limit: int = 72) -> str:
    """A short, stable rendering of a value for a message (floats to 6 decimals, long text cut)."""
    if isinstance(value, bool) or value is None or value is Ellipsis:
        text = repr(value)
    elif isinstance(value, numbers.Integral):
        text = str(int(value))
    elif isinstance(value, numbers.Real):
        text = f"{float(value):.6f}"
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, (list, tuple)):
        inner = ", ".join(shown(item, limit) for item in value)
        text = f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    else:
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def require_function(value: Any, name: str) -> Callable[..., Any]:
    """The student's function, or NotDone for a placeholder, or Failed when it is not a function."""
    if is_placeholder(value):
        raise NotDone(f"{name} is still a placeholder: write it, run its cell, then run this check again.")
    if not callable(value):
        raise Failed([f"{name} should be a function; it is {shown(value)}.",
                      f"hint:     define it with `def {name}(...):` and run that cell again"])
    return value


def call(function: Callable[..., Any], name: str, args: Sequence[Any], tried: str | None = None) -> Any:
    """``function(*args)``; a placeholder result or NotImplementedError is NotDone, an exception Failed."""
    tried = tried or f"{name}({', '.join(shown(a, 40) for a in args)})"
    try:
        result = function(*args)
    except NotImplementedError:
        raise NotDone(f"{name} still raises NotImplementedError: write its body, run its cell,"
                      " then run this check again.") from None
    except (CheckTimeout, NotDone, Failed):
        raise
    except Exception as error:
        raise Mismatch(tried, "a result", f"{type(error).__name__}: {error}",
                       f"run {tried} in a cell of its own to see where it fails") from None
    if is_placeholder(result):
        raise NotDone(f"{name} returned {result!r}: replace the ... in its body, run its cell, then run this"
                      " check again.\nIf you have written the body, it needs a `return` statement.")
    return result


def expect_equal(got: Any, expected: Any, tried: str, hint: str) -> None:
    """Mismatch unless ``got == expected``."""
    if not _equal(got, expected):
        raise Mismatch(tried, shown(expected), shown(got), hint)


def _equal(got: Any, expected: Any) -> bool:
    try:
        return bool(got == expected)
    except Exception:  # numpy arrays and the like compare element by element
        return False


def expect_pair(got: Any, tried: str, described: str, hint: str) -> Any:
    """``got`` when it is a pair (a tuple or list of two); otherwise a Mismatch: "a pair (``described``)" expected."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Mismatch(tried, f"a pair ({described})", shown(got), hint)
    return got


def as_number(value: Any, tried: str, what: str = "a number") -> float:
    """``value`` as a float, or Mismatch when it is not a real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise Mismatch(tried, what, shown(value), "return a plain number (an int or a float)")
    return float(value)


def expect_number(got: Any, expected: float, tried: str, hint: str, tolerance: float = 1e-6,
                  reveal: bool = True) -> float:
    """Mismatch unless ``got`` is a number within ``tolerance`` of ``expected``.

    With ``reveal=False`` the message does not print the expected value (it is the answer the
    question asks for); it says only that the two differ.
    """
    value = as_number(got, tried)
    if abs(value - expected) > tolerance:
        counts = isinstance(expected, numbers.Integral) and float(value).is_integer()
        shown_expected = ((str(int(expected)) if counts else f"{expected:.6f}") if reveal else
                          "the reference value (not shown here: it is the number the question asks for)")
        raise Mismatch(tried, shown_expected, str(int(value)) if counts else f"{value:.6f}", hint)
    return value


def first_hint(got: Any, variants: Sequence[tuple[Callable[[], Any], str]], default: str) -> str:
    """The hint of the first known wrong variant whose result equals ``got``, else ``default``."""
    for wrong, hint in variants:
        try:
            if _close(got, wrong()):
                return hint
        except Exception:
            continue
    return default


def likely_hint(student: Callable[..., Any], got: Any, failing: Sequence[Any], others: Sequence[Sequence[Any]],
                hints_for: Callable[..., Sequence[tuple[Callable[[], Any], str]]], default: str) -> str:
    """The hint of the known mistake that best explains the student's function.

    A candidate must give ``got`` on the ``failing`` arguments; when several do, the one that
    also reproduces the student's results on the most of ``others`` wins (then list order).
    """
    candidates = [(number, hint) for number, (wrong, hint) in enumerate(hints_for(*failing))
                  if _safe_close(got, wrong)]
    if len(candidates) < 2:
        return candidates[0][1] if candidates else default

    def student_on(arguments):
        try:
            return student(*arguments)
        except CheckTimeout:
            raise
        except Exception:
            return _NO_RESULT

    results = [student_on(arguments) for arguments in others]

    def explained(number: int) -> int:
        return sum(_safe_close(result, hints_for(*arguments)[number][0])
                   for result, arguments in zip(results, others))

    return max(candidates, key=lambda candidate: (explained(candidate[0]), -candidate[0]))[1]


_NO_RESULT = object()


def _safe_close(got: Any, wrong: Callable[[], Any]) -> bool:
    try:
        return got is not _NO_RESULT and _close(got, wrong())
    except Exception:
        return False


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, numbers.Real) and isinstance(b, numbers.Real) and not isinstance(a, bool):
        return abs(float(a) - float(b)) <= 1e-9
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return _equal(a, b)


# ---------------------------------------------------------------- predictions

def check_choice(answer: Any, name: str, options: Mapping[str, str], truth: str, measured: str,
                 explanation: Sequence[str]) -> list[str]:
    """A multiple-choice prediction: placeholder NotDone, else the measurement and the explanation."""
    if is_placeholder(answer):
        raise NotDone(f"{name} is still ...: write your prediction (one of {', '.join(map(repr, options))})"
                      " before you run anything below it.")
    choice = answer.strip().lower().strip("()") if isinstance(answer, str) else answer
    if choice not in options:
        raise Failed([f"{name} = {shown(answer)} is not one of the options {', '.join(map(repr, options))}.",
                      f"hint:     write the letter as a string, for example {name} = {next(iter(options))!r}"])
    verdict = "your prediction was right" if choice == truth else f"you predicted ({choice}) {options[choice]}"
    lines = [f"{verdict}; measured: {measured}, so the answer is ({truth}) {options[truth]}.", *explanation]
    if choice != truth:
        raise Failed(lines)
    return lines


def check_estimate(answer: Any, name: str, truth: float, tolerance: float, measured: str,
                   explanation: Sequence[str], decimals: int = 4) -> list[str]:
    """A numeric prediction that counts when within ``tolerance`` of the measurement."""
    if is_placeholder(answer):
        raise NotDone(f"{name} is still ...: write your prediction as a number before you run anything below it.")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not math.isfinite(float(answer)):
        raise Failed([f"{name} = {shown(answer)} is not a number.",
                      f"hint:     write a plain number, for example {name} = 0.5"])
    off = abs(float(answer) - truth)
    within = off <= tolerance + 1e-12
    verdict = ("your prediction was within" if within else "your prediction was outside") + \
        f" {tolerance:g} of the measurement ({float(answer):.{decimals}f} against {truth:.{decimals}f})"
    lines = [f"{verdict}; measured: {measured}.", *explanation]
    if not within:
        raise Failed(lines)
    return lines
