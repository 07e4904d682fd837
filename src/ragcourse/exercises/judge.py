"""Grading a submission from outside its kernel: the checks call the student's answers through the kernel.

The kernel holds what the notebook defined and nothing else of the grader's: no check runs
there, no verdict is made there. After the notebook's cells have run, the supervising process
(``supervise``, forked from the grader before any kernel started, so its copy of the package
was imported before any submission could touch a file) puts one small function into the
kernel under a name with a fresh secret in it, and then runs every question's check itself.
The check receives, for each name the question reads,

* the value, when the name holds data (a prediction): the kernel pickles it, and the grader
  loads it with an unpickler that builds nothing but plain data (numbers, strings, containers,
  numpy arrays, the package's own dataclasses and named tuples);
* an ``Answer`` when the name holds a function: calling it sends the arguments the check chose
  to the kernel (cloudpickled: the grader trusts its own arguments), calls the student's
  function there, and brings the result back through the same strict unpickler. A result
  that is not plain data, an exception or a call that runs past the question's time limit is
  what the check sees, exactly as if the function had run in the grader.

An argument object travels once per question: the kernel keeps it, and the question's later
calls refer to it by number (a lab hands the same index to fifty calls). What is lent by
reference, and what the kernel opens afresh rather than receives, is in ``lending``.

So the verdict, its status and its points come from the grader's code alone; a cell that
replaces a check, the verdict or anything else of the package changes only the kernel's copy.
What the kernel sends back can only be an answer: it is the student's to choose, and it is
judged as one.
"""
from __future__ import annotations

import io
import os
import pickle
import re
import secrets
import signal
import socket
import struct
import time
from collections import ChainMap
from dataclasses import dataclass, field, is_dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

from .lending import FORWARDED, LENT_TYPES, rebuilt_reducers
from .framework import FAILED, NOT_DONE, NOT_GRADED, CheckTimeout, ExerciseSet, Verdict, load_set
from .sandbox import INTERRUPT_SECONDS, Account, Kernel, KernelError, become_subreaper

MAX_REPLY_BYTES = 64 * 1024 * 1024   # a result larger than this is not read
SETUP_SECONDS = 30.0
# A cell that only calls a check (``exercises.check("q2", keyword_score)``) is not run by the grader:
# the grader runs the checks itself, so a slow answer costs one question's limit, not the notebook's.
CHECK_CELL = re.compile(r"^\s*exercises\.check\(\s*(['\"])q\w+\1\s*(,\s*[A-Za-z_]\w*\s*)*,?\s*\)\s*;?\s*$")

# What the kernel runs after the notebook, in one request that lasts until the checks are done: it
# connects to the grader's socket, says the run's secret, then answers requests one by one.
KERNEL_HELPER = '''
def _ragcourse_serve(path, secret, _ns=globals()):
    import builtins, io, pickle, socket, struct
    class _Remote:
        """One of the grader's objects (a model with a call counter): its methods run in the grader."""
        __slots__ = ("_id",)
        def __init__(self, handle):
            object.__setattr__(self, "_id", handle)
        def __getattr__(self, attr):
            kind, value = _ask(("attr", object.__getattribute__(self, "_id"), attr, (), {}))
            if kind == "method":
                return lambda *args, **kwargs: _ask(("call", object.__getattribute__(self, "_id"), attr, args,
                                                     kwargs))[1]
            return value
        def __setattr__(self, attr, value):
            raise AttributeError(f"the model you were handed is read-only here (setting {attr!r})")
        def __repr__(self):
            return _ask(("repr", object.__getattribute__(self, "_id"), "", (), {}))[1]
        def _call(self, attr, *args):
            return _ask(("call", object.__getattribute__(self, "_id"), attr, args, {}))[1]
        def __enter__(self):
            return self._call("__enter__")
        def __exit__(self, kind, error, trace):
            self._call("__exit__", kind is not None)
            return False
        def __iter__(self):
            return iter(self._call("__iter__"))
        def __len__(self):
            return self._call("__len__")
        def __getitem__(self, key):
            return self._call("__getitem__", key)
    _plain = (str, bytes, int, float, bool, complex, type(None))
    def _walk(value, found, depth=0):
        # the objects among a request's arguments, in the order the grader counts them too
        if isinstance(value, _plain) or len(found) > 100000 or depth > 20:
            return
        if type(value) in (list, tuple):
            for item in value:
                _walk(item, found, depth + 1)
        elif type(value) is dict:
            for item in value.values():
                _walk(item, found, depth + 1)
        else:
            found.append(value)
    _sent, _kept = {}, {}
    class _In(pickle.Unpickler):
        def persistent_load(self, pid):
            if pid[0] == "kept":
                return _kept[pid[1]]
            return _ns[pid[1]] if pid[0] == "answer" else _Remote(pid[1])
    class _Out(pickle.Pickler):
        def persistent_id(self, obj):
            if type(obj) is _Remote:
                return ("grader", object.__getattribute__(obj, "_id"))
            return ("arg", _sent[id(obj)]) if id(obj) in _sent else None
    link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    link.connect(path)
    def receive(size):
        data = b""
        while len(data) < size:
            chunk = link.recv(min(size - len(data), 1 << 20))
            if not chunk:
                raise EOFError("the grader went away")
            data += chunk
        return data
    def load():
        return _In(io.BytesIO(receive(struct.unpack("!Q", receive(8))[0]))).load()
    def dump(message):
        buffer = io.BytesIO()
        _Out(buffer, protocol=5).dump(message)
        return buffer.getvalue()
    def send(result):
        try:
            data = dump(result)
        except Exception as error:
            data = dump(("unsendable", type(result[1]).__name__, f"{type(error).__name__}: {error}"[:500]))
        link.sendall(struct.pack("!Q", len(data)) + data)
    def _ask(message):
        link.sendall(struct.pack("!Q", len(data := dump(("callback",) + message))) + data)
        reply = load()
        if reply[0] == "raised":
            kind = getattr(builtins, reply[1], None)
            raise (kind if isinstance(kind, type) and issubclass(kind, Exception) else RuntimeError)(reply[2])
        return reply
    send(("hello", secret, ""))
    while True:
        try:
            op, name, args, kwargs, forget, new = load()
            if forget:
                _kept.clear()
            _kept.update(new)
            if op == "stop":
                break
            if op == "kind":
                value = _ns.get(name, _In)
                result = ("ok", "missing" if value is _In else "callable" if callable(value) else "value")
            elif op == "value":
                result = ("ok", _ns[name])
            else:
                found = []
                _walk((args, kwargs), found)
                _sent.clear()
                _sent.update({id(item): number for number, item in enumerate(found)})
                result = ("ok", _ns[name](*args, **kwargs))
        except KeyboardInterrupt:
            result = ("interrupted", "", "")
        except (EOFError, OSError):
            break
        except Exception as error:
            result = ("raised", type(error).__name__, str(error)[:2000])
        send(result)
    link.close()
'''

_BUILTINS = {"set", "frozenset", "complex", "slice", "range", "bytearray", "bytes", "int", "float", "str", "list",
             "dict", "tuple", "bool", "object", "Ellipsis", "NotImplemented"}
_GLOBALS = {("copyreg", "_reconstructor"), ("collections", "OrderedDict"), ("collections", "Counter"),
            ("collections", "deque"), ("collections", "defaultdict"), ("numpy", "ndarray"), ("numpy", "dtype"),
            ("numpy._core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),
            ("numpy._core.numeric", "_frombuffer"), ("numpy.core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "scalar"), ("numpy.core.numeric", "_frombuffer"),
            ("datetime", "date"), ("datetime", "datetime"), ("datetime", "timedelta")}


class Unreadable(Exception):
    """What the kernel sent back is not plain data the grader reads."""


class KernelGone(Exception):
    """The kernel died or stopped answering while a check used it."""


class _Strict(pickle.Unpickler):
    """Plain data only (see the module): anything else is refused before it is built.

    The one exception is a reference to an object the grader lent the kernel (``handles``).
    """

    def __init__(self, file: Any, handles: dict[int, Any] | None = None, sent: list | None = None):
        super().__init__(file)
        self.handles, self.sent = handles or {}, sent or []

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in _BUILTINS or (module, name) in _GLOBALS \
                or module.startswith("numpy.dtypes") and name.endswith("DType"):
            return super().find_class(module, name)
        if module.startswith("ragcourse.") and "." not in name:
            found = super().find_class(module, name)
            if isinstance(found, type) and (is_dataclass(found) or issubclass(found, (tuple, Enum))):
                return found
        raise Unreadable(f"a {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "grader" and type(pid[1]) is int \
                and pid[1] in self.handles:
            return self.handles[pid[1]]
        if isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "arg" and type(pid[1]) is int \
                and 0 <= pid[1] < len(self.sent):
            return self.sent[pid[1]]   # an object the check passed in, handed back: the check's own object
        raise Unreadable("a reference to something the grader never lent")


def strict_loads(data: bytes, handles: dict[int, Any] | None = None, sent: list | None = None) -> Any:
    """Unpickle ``data`` with ``_Strict``; Unreadable for anything but plain data (and lent objects)."""
    try:
        return _Strict(io.BytesIO(data), handles, sent).load()
    except Unreadable:
        raise
    except Exception as error:
        raise Unreadable(f"something malformed ({type(error).__name__})") from None


def _raised(ename: str, message: str) -> Exception:
    """The student's exception as the check sees it: NotImplementedError as itself, others by name only."""
    if ename == "NotImplementedError":
        return NotImplementedError(message)
    name = ename if ename.isidentifier() else "Exception"
    return type(name, (Exception,), {"__module__": "answer"})(message)


class Answer:
    """A function the notebook defined: calling it calls it in the kernel (see the module)."""

    def __init__(self, link: "Link", name: str):
        self._link, self._name = link, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._link.request("call", self._name, args, kwargs)

    def __repr__(self) -> str:
        return f"<{self._name} in the submission's kernel>"


class Link:
    """Requests to one kernel over a socket of its own, each within what is left of the current question's time."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.secret = secrets.token_hex(16)
        self.key, self.deadline, self.limit = "", float("inf"), 0.0
        self.socket: socket.socket | None = None
        self.msg_id: str | None = None
        self.broken: str | None = None
        self.handles: dict[int, Any] = {}
        self.sent: list = []
        # the argument objects the kernel holds for this question: id -> (number, the object, kept alive here)
        self.kept: dict[int, tuple[int, Any]] = {}
        self.forget = False

    def open(self) -> None:
        """Start the kernel's side and accept its connection (only the one that says the secret)."""
        path = self.kernel.folder / f".grader-{secrets.token_hex(4)}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(path))
            if self.kernel.user is not None:
                os.chown(path, self.kernel.user.uid, self.kernel.user.gid)
            listener.listen(1)
            listener.settimeout(SETUP_SECONDS)
            self.msg_id = self.kernel.send(self.kernel.execute_message(
                KERNEL_HELPER + f"_ragcourse_serve({str(path)!r}, {self.secret!r})\ndel _ragcourse_serve\n", store_history=False))
            deadline = time.monotonic() + SETUP_SECONDS
            while self.socket is None:
                listener.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    connection, _ = listener.accept()
                except socket.timeout:
                    raise KernelGone("the kernel did not connect to the grader (was the helper stopped?)") from None
                connection.settimeout(SETUP_SECONDS)
                try:
                    hello = self._receive(connection)
                except (Unreadable, OSError):
                    hello = None
                if hello == ("hello", self.secret, ""):
                    self.socket = connection
                else:
                    connection.close()
                if time.monotonic() > deadline and self.socket is None:
                    raise KernelGone("the kernel did not connect to the grader")
        finally:
            listener.close()
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Tell the kernel's side to stop, and wait a little for its request to end."""
        if self.socket is not None and self.broken is None:
            try:
                self._send(("stop", "", (), {}, False, {}))
            except Exception:
                pass
        if self.socket is not None:
            self.socket.close()
        if self.msg_id is not None and self.kernel.alive:
            self.kernel.outcome(self.msg_id, 2.0, time.monotonic())

    def question(self, key: str, seconds: float) -> None:
        self.key, self.limit, self.deadline = key, seconds, time.monotonic() + seconds
        self.forget, self.kept = self.forget or bool(self.kept), {}

    def _timeout(self) -> CheckTimeout:
        return CheckTimeout(f"{self.key}: the check did not finish within {self.limit:g} s; does your code loop"
                            " forever?")

    def _send(self, request: tuple) -> None:
        buffer = io.BytesIO()
        pickler = _pickler()(buffer, protocol=5)
        pickler.persistent_id = self._persistent_id
        pickler.dump(request)
        assert self.socket is not None
        self.socket.sendall(struct.pack("!Q", len(buffer.getvalue())) + buffer.getvalue())

    def _call_message(self, op: str, name: str, args: tuple, kwargs: dict) -> None:
        """Send a request; its argument objects the kernel does not hold yet go by value, and it keeps them."""
        lent = (Answer,) + LENT_TYPES()
        new: dict[int, tuple[int, Any]] = {}
        for item in self.sent:   # by identity: an argument need not be hashable
            if id(item) not in self.kept and id(item) not in new and not isinstance(item, lent):
                new[id(item)] = (len(self.kept) + len(new), item)
        self._send((op, name, args, kwargs, self.forget, {number: item for number, item in new.values()}))
        self.forget = False
        self.kept.update(new)

    def _persistent_id(self, obj: Any) -> Any:
        """The student's function by name; a lent object by reference; what the kernel keeps by number; the rest
        by value."""
        if isinstance(obj, Answer):
            return ("answer", obj._name)
        if id(obj) in self.kept and self.kept[id(obj)][1] is obj:
            return ("kept", self.kept[id(obj)][0])
        if isinstance(obj, LENT_TYPES()):
            handle = next((k for k, v in self.handles.items() if v is obj), None)
            if handle is None:
                handle = len(self.handles) + 1
                self.handles[handle] = obj
            return ("grader", handle)
        return None

    def _service(self, message: tuple) -> tuple:
        """Run one use of a lent object the kernel asked for: a public attribute, a method call, its repr."""
        try:
            if len(message) != 6:
                raise ValueError("a malformed request")
            _, op, handle, attr, args, kwargs = message
            target = self.handles[handle]
            if op == "repr":
                return ("value", repr(target))
            if op == "call" and attr in FORWARDED and isinstance(args, tuple):
                special = getattr(target, attr)
                return ("value", list(special()) if attr == "__iter__" else special(*args))
            if not isinstance(attr, str) or attr.startswith("_"):
                raise AttributeError(f"{attr!r} is not for answers to use")
            value = getattr(target, attr)
            if op == "attr":
                return ("method", None) if callable(value) else ("value", value)
            if op == "call" and callable(value) and isinstance(args, tuple) and isinstance(kwargs, dict):
                return ("value", value(*args, **kwargs))
            raise ValueError("a malformed request")
        except Exception as error:
            return ("raised", type(error).__name__, str(error)[:2000])

    def _receive(self, connection: socket.socket) -> Any:
        def exactly(size: int) -> bytes:
            data = bytearray()
            while len(data) < size:
                chunk = connection.recv(min(size - len(data), 1 << 20))
                if not chunk:
                    raise EOFError
                data += chunk
            return bytes(data)

        try:
            size = struct.unpack("!Q", exactly(8))[0]
            if size > MAX_REPLY_BYTES:
                raise Unreadable(f"more than the grader reads ({size} bytes)")
            return strict_loads(exactly(size), self.handles, self.sent)
        except EOFError:
            raise KernelGone("the kernel stopped answering (did your code exit, or close the grader's socket?)")

    def request(self, op: str, name: str, args: tuple = (), kwargs: dict | None = None) -> Any:
        if self.broken is not None:
            raise KernelGone(self.broken)
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._timeout()
        assert self.socket is not None
        self.sent = []
        _walk((tuple(args), dict(kwargs or {})), self.sent)
        self._call_message(op, name, tuple(args), dict(kwargs or {}))
        try:
            while True:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout
                self.socket.settimeout(left)
                result = self._receive(self.socket)
                if not (isinstance(result, tuple) and result and result[0] == "callback"):
                    break
                self._send(self._service(result))
        except socket.timeout:
            self.kernel.interrupt()
            try:
                self.socket.settimeout(INTERRUPT_SECONDS)
                while (last := self._receive(self.socket)) and last[0] == "callback":
                    self._send(("raised", "RuntimeError", "the question's time is up"))
            except Exception:
                self.broken = (f"the kernel stopped answering: the answer that ran past {self.key}'s time limit"
                               " did not stop when interrupted")
            raise self._timeout() from None
        except KernelGone as error:
            self.broken = str(error)
            raise
        except OSError as error:
            self.broken = f"the grader's link to the kernel broke: {error}"
            raise KernelGone(self.broken) from None
        status, value = _payload(result)
        if status == "ok":
            return value
        if status == "raised":
            raise _raised(str(value[0]), str(value[1]))
        if status == "interrupted":
            raise self._timeout()
        raise Unreadable(f"a {value[0]} ({value[1]})")


_PLAIN = (str, bytes, int, float, bool, complex, type(None))


def _walk(value: Any, found: list, depth: int = 0) -> None:
    """The objects among a request's arguments, in order (the kernel's helper counts them the same way)."""
    if isinstance(value, _PLAIN) or len(found) > 100000 or depth > 20:
        return
    if type(value) in (list, tuple):
        for item in value:
            _walk(item, found, depth + 1)
    elif type(value) is dict:
        for item in value.values():
            _walk(item, found, depth + 1)
    else:
        found.append(value)


@lru_cache(maxsize=1)
def _pickler() -> type:
    """cloudpickle's pickler, with ``lending.rebuilt_reducers`` for what the kernel opens afresh."""
    import cloudpickle

    class Pickler(cloudpickle.CloudPickler):
        dispatch_table = ChainMap(rebuilt_reducers(), cloudpickle.CloudPickler.dispatch_table)

    return Pickler


def _payload(result: Any) -> tuple[str, Any]:
    """(``ok``, value), (``raised``, (name, message)), (``interrupted``, ...) or (``unsendable``, (type, why))."""
    if not isinstance(result, tuple) or not result:
        raise Unreadable("no result the grader could read")
    if result[0] == "ok" and len(result) == 2:
        return "ok", result[1]
    if result[0] in ("raised", "unsendable", "interrupted") and len(result) == 3:
        return result[0], (str(result[1])[:200], str(result[2])[:2000])
    raise Unreadable("no result the grader could read")


def judge(exercise_set: ExerciseSet, link: Link, seconds: float) -> list[Verdict]:
    """Every question's verdict, its checks run here, its answers fetched from or called in the kernel."""
    if exercise_set.seconds:
        seconds = max(seconds, exercise_set.seconds)
    verdicts = []
    for question in exercise_set.questions:
        def verdict(status: str, *lines: str) -> Verdict:
            return Verdict(question.key, question.kind, question.title, status, 0, question.max_points, lines)

        link.question(question.key, seconds)
        try:
            kinds = [link.request("kind", name) for name in question.names]
            missing = [name for name, kind in zip(question.names, kinds) if kind == "missing"]
            if missing:
                verdicts.append(verdict(NOT_DONE, f"the notebook defines no {', '.join(missing)}"))
                continue
            answers = [Answer(link, name) if kind == "callable" else link.request("value", name)
                       for name, kind in zip(question.names, kinds)]
        except CheckTimeout as error:
            verdicts.append(verdict(FAILED, str(error)))
            continue
        except Unreadable as error:
            verdicts.append(verdict(FAILED, f"{', '.join(question.names)} holds {error}, which the grader does not"
                                    " read", "hint:     give plain values: numbers, strings, lists, tuples, dicts"))
            continue
        except Exception as error:
            verdicts.append(verdict(FAILED, f"the grader could not read {', '.join(question.names)}: {error}"))
            continue
        verdicts.append(exercise_set.verdict(question.key, *answers))
    return verdicts


@dataclass
class Job:
    """What a supervisor needs: the submission (its bytes), where to run it, its set, limits, its user."""

    name: str
    data: bytes
    folder: Path
    file_name: str
    seconds: float
    user: Account | None = None


@dataclass
class Outcome:
    """What the supervisor reports (plain data, back to the grader through a pipe)."""

    verdicts: list[dict] = field(default_factory=list)
    error: tuple[int, str, str] | None = None
    timed_out: int | None = None
    failure: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_cells(kernel: Kernel, nb: Any, seconds: float, outcome: Outcome) -> None:
    """The notebook's code cells in order within ``seconds`` (its check cells left out)."""
    deadline = time.monotonic() + seconds
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        count += 1
        if CHECK_CELL.match(cell.source) or not cell.source.strip():
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            outcome.timed_out = count
            return
        reply = kernel.execute(cell.source, remaining)
        if reply.status == "timeout":
            outcome.timed_out = count
            return
        if reply.status == "dead":
            outcome.failure = f"the kernel died while code cell {count} ran"
            return
        if reply.status == "error" and outcome.error is None:
            outcome.error = (count, reply.ename or "Error", reply.evalue)


def supervise(job: Job, connection: Any) -> None:
    """A forked child's work: run ``job``'s notebook, judge it, kill every process it left, send the outcome."""
    import nbformat

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the grader's to handle: it kills this process
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    become_subreaper()
    started = time.monotonic()
    outcome = Outcome()
    kernel = Kernel(job.folder, job.user)
    try:
        job.folder.mkdir()
        (job.folder / job.file_name).write_bytes(job.data)
        nb = nbformat.reads(job.data.decode("utf-8"), as_version=4)
        kernel.start()
        run_cells(kernel, nb, job.seconds, outcome)
        if outcome.failure is None and outcome.timed_out is None:
            link = Link(kernel)
            try:
                link.open()
                outcome.verdicts = [v.as_dict() for v in judge(load_set(job.name), link, job.seconds)]
            finally:
                link.close()
    except (KernelError, KernelGone) as error:
        outcome.failure = str(error)
    except Exception as error:
        outcome.failure = f"the grader failed on this notebook: {type(error).__name__}: {error}"
    finally:
        kernel.close()
    outcome.seconds = time.monotonic() - started
    connection.send(outcome)
    connection.close()
    os._exit(0)


def not_graded(name: str, reason: str) -> list[Verdict]:
    """Zero points on every question of a set, each saying why."""
    return [Verdict(q.key, q.kind, q.title, NOT_GRADED, 0, q.max_points, (reason,)) for q in load_set(name).questions]
