"""The wire between the grader and a kernel (``exercises.wire``), tried without starting a kernel.

``ThreadKernel`` runs the kernel's side of the protocol (``KERNEL_HELPER``, the text a real
kernel is sent) in a thread of this process, over the same Unix socket, on a namespace the
test fills in: the grader's ``Link`` cannot tell it from a kernel. So these tests are fast,
and each of them can fail: the two sides' numbering of argument objects (one ``_walk``, its
source put into the kernel's text) is checked by what comes back, and a helper whose copy
counts differently is shown to be caught.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from ragcourse.exercises.wire import KERNEL_HELPER, Link, Unreadable, _walk
from ragcourse.rag.store import Check
from ragcourse.world.llm import CallCounter


class ThreadKernel:
    """What ``Link`` needs of a kernel, with the helper run by ``exec`` in a thread on ``namespace``."""

    def __init__(self, folder: Path, namespace: dict, helper: str = KERNEL_HELPER):
        self.folder, self.user, self.namespace, self.helper = folder, None, namespace, helper
        self.thread: threading.Thread | None = None

    def execute_message(self, code: str, store_history: bool = True) -> dict:
        assert code.startswith(KERNEL_HELPER), "the link sends the kernel the helper's text"
        return {"header": {"msg_id": "helper"}, "code": self.helper + code[len(KERNEL_HELPER):]}

    def send(self, message: dict) -> str:
        self.thread = threading.Thread(target=exec, args=(message["code"], self.namespace), daemon=True)
        self.thread.start()
        return message["header"]["msg_id"]

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def outcome(self, msg_id: str, seconds: float, started: float) -> None:
        assert self.thread is not None
        self.thread.join(seconds)

    def interrupt(self) -> None:
        pass


def opened(tmp_path: Path, namespace: dict, helper: str = KERNEL_HELPER) -> Link:
    link = Link(ThreadKernel(tmp_path, namespace, helper))
    link.open()
    link.question("q1", 30.0)
    return link


class Thing:
    """An object the grader sends by value (cloudpickled) and must get back as itself."""

    def __init__(self, label):
        self.label = label


def arguments() -> tuple[list, dict]:
    """Objects at every place the walk looks (and at some it does not), with plain values between them."""
    deep = Thing("at depth 20, the deepest the walk looks")   # (args, kwargs) is depth 0, an argument depth 2
    for _ in range(18):
        deep = [deep]
    too_deep = Check("at depth 21", True, 0, ())                # not counted: it comes back by value
    for _ in range(19):
        too_deep = [too_deep]
    positional = [Thing("first"), 3, "text", (Thing("in a tuple"), [Thing("in a list"), None]),
                  {"key": Thing("a dict's value"), "n": 1.5}, np.arange(3), deep, too_deep,
                  [Thing(f"many {n}") for n in range(50)]]
    keywords = {"named": Thing("a keyword"), "nested": {"inner": (Thing("kw tuple"),)}}
    return positional, keywords


def counted(value) -> list:
    found: list = []
    _walk(value, found)
    return found


def sent_back(link: Link) -> tuple[list, dict]:
    positional, keywords = arguments()
    back = link.request("call", "echo", tuple(positional), keywords)
    return (positional, keywords), back


def same_objects(mine, theirs) -> list[bool]:
    """For each object the grader's walk counts in ``mine``: is the one at its place in ``theirs`` the same?"""
    return [a is b for a, b in zip(counted(mine), counted(theirs))]


def test_objects_handed_back_are_the_checks_own(tmp_path):
    """The kernel numbers what it received as the grader numbered what it sent: each comes back as itself."""
    link = opened(tmp_path, {"echo": lambda *args, **kwargs: (list(args), kwargs)})
    try:
        (positional, keywords), back = sent_back(link)
    finally:
        link.close()
    mine = (positional, keywords)
    assert len(counted(mine)) == 58
    assert all(same_objects(mine, back)), "an argument came back as another object"
    assert back[0][1:3] == [3, "text"] and back[1]["nested"]["inner"][0] is keywords["nested"]["inner"][0]
    assert unwrap(back[0][7]) == unwrap(positional[7]) and unwrap(back[0][7]) is not unwrap(positional[7]), \
        "past depth 20 an object is not counted, and comes back by value"


def unwrap(value):
    while isinstance(value, list):
        value = value[0]
    return value


def test_the_kernel_runs_the_graders_walk():
    """One source: the kernel's text holds ``_walk``'s own source (generated, not copied)."""
    import inspect
    import textwrap

    assert textwrap.indent(inspect.getsource(_walk), "    ") in KERNEL_HELPER
    assert KERNEL_HELPER.count("def _walk(") == 1


@pytest.mark.parametrize("change", [("depth > 20", "depth > 19"), ("for item in value.values()",
                                                                      "for item in value")],
                         ids=["shallower", "dict-keys"])
def test_a_kernel_that_counts_otherwise_is_caught(tmp_path, change):
    """The check above can fail: a helper whose walk differs from the grader's returns the wrong objects."""
    old, new = change
    assert old in KERNEL_HELPER
    link = opened(tmp_path, {"echo": lambda *args, **kwargs: (list(args), kwargs)},
                  helper=KERNEL_HELPER.replace(old, new))
    try:
        try:
            (positional, keywords), back = sent_back(link)
        except Unreadable:
            return   # a number the grader never gave out
    finally:
        link.close()
    assert not all(same_objects((positional, keywords), back))


def test_a_counter_lent_to_the_kernel_cannot_be_reset_or_ticked(tmp_path):
    """A function that asked the model too often cannot hide it: reset and tick are withheld, calls is read."""
    counter = CallCounter()
    counter.tick()

    def cheat(handed, what):
        try:
            getattr(handed, what)()
        except AttributeError as error:
            return f"refused: {error}", handed.calls
        return "done", handed.calls

    link = opened(tmp_path, {"cheat": cheat})
    try:
        for what in ("reset", "tick"):
            status, calls = link.request("call", "cheat", (counter, what))
            assert status.startswith("refused") and calls == 1, status
    finally:
        link.close()
    assert counter.calls == 1
