"""The wire between the grader and a submission's kernel: the kernel's side, the grader's ``Link``, the strict loader.

``judge`` runs the checks; this module is how a check reaches the kernel. After the notebook
has run, ``Link.open`` sends the kernel ``KERNEL_HELPER`` (one function, run in one request
that lasts until the checks are done): it connects to a socket of the grader's, says the
run's secret, and answers requests one by one: what kind of thing a name holds, a value
(pickled; the grader reads it with ``strict_loads``, which builds plain data only), or a call
of the student's function on arguments the check chose (cloudpickled by the grader; objects
of ``lending.LENT_TYPES`` go by reference, and their uses come back to the grader as callbacks).

Both sides number the objects among a call's arguments with one function, ``_walk``: its
source is put into the kernel's text (``inspect.getsource``), so the two counts cannot drift
apart (``tests/exercises/test_grader_wire.py`` checks that they agree on what comes back).
"""
from __future__ import annotations

import inspect
import io
import os
import pickle
import secrets
import socket
import struct
import textwrap
import time
from collections import ChainMap
from dataclasses import is_dataclass
from enum import Enum
from functools import lru_cache
from typing import Any

from .framework import CheckTimeout
from .lending import FORWARDED, LENT_TYPES, WITHHELD, rebuilt_reducers
from .sandbox import INTERRUPT_SECONDS, Kernel

MAX_REPLY_BYTES = 64 * 1024 * 1024   # a result larger than this is not read
SETUP_SECONDS = 30.0


def _walk(value, found, depth=0):
    """The objects among a request's arguments, in order, into ``found``.

    Both sides count with this one function: the grader numbers the check's arguments with it,
    and the kernel (``KERNEL_HELPER`` holds its source) numbers what it received the same way,
    so that an argument the student's function hands back is known by its number. Plain values
    are not counted; lists, tuples and dicts (their values) are walked to a depth of 20; past
    100,000 objects the rest are sent by value. No annotations: the kernel runs this text as it is.
    """
    if isinstance(value, (str, bytes, int, float, bool, complex, type(None))) or len(found) > 100000 or depth > 20:
        return
    if type(value) in (list, tuple):
        for item in value:
            _walk(item, found, depth + 1)
    elif type(value) is dict:
        for item in value.values():
            _walk(item, found, depth + 1)
    else:
        found.append(value)


# What the kernel runs after the notebook, in one request that lasts until the checks are done: it
# connects to the grader's socket, says the run's secret, then answers requests one by one.
_HELPER_HEAD = '''
def _ragcourse_serve(path, secret, _ns=globals()):
    import builtins, io, pickle, socket, struct
    class _Remote:
        """One of the grader's objects (a model, a call counter, an index view): its methods run in the grader."""
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
            raise AttributeError(f"what you were handed is the grader's, read-only here (setting {attr!r})")
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
'''

_HELPER_TAIL = '''
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

KERNEL_HELPER = _HELPER_HEAD + textwrap.indent(inspect.getsource(_walk), "    ") + _HELPER_TAIL

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


class RemoteFunction:
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
        lent = (RemoteFunction,) + LENT_TYPES()
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
        if isinstance(obj, RemoteFunction):
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
            if not isinstance(attr, str) or attr.startswith("_") or attr in WITHHELD:
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
