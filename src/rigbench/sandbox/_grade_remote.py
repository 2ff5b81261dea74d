"""The project under grading in a process of its own: the tests talk to it through proxies.

Like `_grade_launch.py`, this is a script copied into the sandbox's read-only grader directory and
run with `python -I`; standard library only. The launcher (the test process, which holds the
result channel) starts `python -I remote.py SERVE FD ROOT`: that process imports the project's
packages and answers requests on a socket. In the test process, importing one of the project's
packages gives a proxy module; attributes, calls, items, iteration and arithmetic are requests.

What crosses the socket is plain data only: None, bool, int, float, str, bytes, and lists,
tuples, dicts and sets of them, each checked by exact type; anything else stays in the project's
process and is seen by the tests as a handle. A handle compares equal only to itself and has no
order, so an object whose `__eq__` always says True cannot pass an assert. Exceptions come back
as the nearest built-in exception class (a project exception class is mirrored as a subclass of
it). So no code of the project ever runs in the process that reports the tests' outcomes.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import json
import os
import socket
import struct
import sys
import types
from pathlib import Path, PurePath
from typing import Any

_MAX_BYTES = 16 * 1024 * 1024
_HEADER = struct.Struct("!I")


def _send(sock: socket.socket, msg: Any) -> None:
    data = json.dumps(msg, separators=(",", ":")).encode()
    if len(data) > _MAX_BYTES:
        raise ValueError(f"message of {len(data)} bytes is over the {_MAX_BYTES}-byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the project's process closed the connection (it exited or crashed)")
        buf += chunk
    return buf


def _recv(sock: socket.socket) -> Any:
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if n > _MAX_BYTES:
        raise ConnectionError(f"a message of {n} bytes from the project's process is over the limit")
    return json.loads(_recv_exact(sock, n))


def _builtin_exception(cls: type) -> str:
    for base in cls.__mro__:
        if getattr(builtins, base.__name__, None) is base and issubclass(base, Exception):
            return base.__name__
    return "Exception"


# --- the project's side ------------------------------------------------------------------------

def serve(sock: socket.socket, root: str) -> None:
    sys.path.insert(0, root)
    os.chdir(root)
    objects: dict[int, Any] = {}

    def enc(v: Any) -> Any:
        t = type(v)
        if v is None:
            return {"t": "none"}
        if t is bool:
            return {"t": "bool", "v": v}
        if t is int:
            return {"t": "int", "v": str(v)}
        if t is float:
            return {"t": "float", "v": repr(v)}
        if t is str:
            return {"t": "str", "v": v}
        if t is bytes:
            return {"t": "bytes", "v": v.hex()}
        if t in (list, tuple, set, frozenset):
            return {"t": t.__name__, "v": [enc(x) for x in v]}
        if t is dict:
            return {"t": "dict", "v": [[enc(k), enc(x)] for k, x in v.items()]}
        objects[id(v)] = v
        out = {"t": "h", "id": id(v), "repr": object.__repr__(v)[:200]}
        if isinstance(v, type) and issubclass(v, BaseException):
            out["exc"] = _builtin_exception(v)
            out["name"] = v.__name__
        return out

    def dec(x: Any) -> Any:
        t = x["t"]
        if t == "h":
            return objects[x["id"]]
        if t == "path":
            return Path(x["v"])
        return _decode_plain(x, dec)

    while True:
        try:
            msg = _recv(sock)
        except ConnectionError:
            return
        try:
            op = msg["op"]
            if op == "import":
                result: Any = importlib.import_module(msg["name"])
            else:
                obj = objects[msg["h"]]
                if op == "getattr":
                    result = getattr(obj, msg["name"])
                elif op == "setattr":
                    setattr(obj, msg["name"], dec(msg["v"]))
                    result = None
                elif op == "call":
                    result = obj(*[dec(a) for a in msg["args"]], **{k: dec(v) for k, v in msg["kwargs"].items()})
                elif op == "op":
                    args = [dec(a) for a in msg["args"]]
                    name = msg["name"]
                    special: dict[str, Any] = {"__str__": str, "__repr__": repr, "__bool__": bool, "__len__": len,
                                               "__iter__": iter, "__next__": next}
                    result = special[name](obj) if name in special else getattr(type(obj), name)(obj, *args)
                else:
                    raise ValueError(f"unknown request {op!r}")
            reply = {"ok": enc(result)}
        except BaseException as e:  # the project's exception, for the test to see
            exc = e if isinstance(e, Exception) else RuntimeError(f"{type(e).__name__} in the project: {e}")
            reply = {"err": {"cls": enc(type(exc)), "exc": _builtin_exception(type(exc)), "msg": str(exc)[:2000]}}
        _send(sock, reply)


def _decode_plain(x: Any, dec: Any) -> Any:
    t, v = x["t"], x.get("v")
    if t == "none":
        return None
    if t == "bool" and type(v) is bool:
        return v
    if t == "int" and type(v) is str:
        return int(v)
    if t == "float" and type(v) is str:
        return float(v)
    if t == "str" and type(v) is str:
        return v
    if t == "bytes" and type(v) is str:
        return bytes.fromhex(v)
    if t in ("list", "tuple", "set", "frozenset") and type(v) is list:
        items = [dec(i) for i in v]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[t](items)
    if t == "dict" and type(v) is list:
        return {dec(k): dec(i) for k, i in v}
    raise ValueError(f"not plain data: {str(x)[:100]}")


# --- the test process's side -------------------------------------------------------------------

class _Connection:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.exc_classes: dict[int, type] = {}
        self.dead: str | None = None

    def request(self, **msg: Any) -> Any:
        if self.dead:
            raise ConnectionError(self.dead)
        try:
            _send(self.sock, msg)
            reply = _recv(self.sock)
        except (OSError, ValueError) as e:
            self.dead = f"the project's process is gone: {e}"
            raise ConnectionError(self.dead) from None
        if not isinstance(reply, dict):
            raise ConnectionError("malformed reply from the project's process")
        if "err" in reply:
            err = reply["err"]
            cls = self._exception_class(err.get("cls", {}), str(err.get("exc")))
            raise cls(str(err.get("msg", "")))
        return self.decode(reply.get("ok"))

    def _exception_class(self, handle: Any, builtin: str) -> type:
        base = getattr(builtins, builtin, None)
        if not (isinstance(base, type) and issubclass(base, Exception)):
            base = Exception
        hid = handle.get("id") if isinstance(handle, dict) else None
        if not isinstance(hid, int):
            return base
        if hid not in self.exc_classes:
            name = str(handle.get("name") or base.__name__)
            self.exc_classes[hid] = base if name == base.__name__ else type(name, (base,), {"__module__": "project"})
        return self.exc_classes[hid]

    def decode(self, x: Any) -> Any:
        if not isinstance(x, dict) or "t" not in x:
            raise ConnectionError("malformed value from the project's process")
        if x["t"] == "h":
            if not isinstance(x.get("id"), int):
                raise ConnectionError("malformed handle from the project's process")
            if "exc" in x:
                return self._exception_class(x, str(x["exc"]))
            return _Remote(self, x["id"], str(x.get("repr", ""))[:200])
        return _decode_plain(x, self.decode)

    def encode(self, v: Any) -> Any:
        if isinstance(v, _Remote):
            return {"t": "h", "id": object.__getattribute__(v, "_rb_id")}
        if isinstance(v, PurePath):
            return {"t": "path", "v": str(v)}
        t = type(v)
        if v is None:
            return {"t": "none"}
        if t is bool:
            return {"t": "bool", "v": v}
        if t is int:
            return {"t": "int", "v": str(v)}
        if t is float:
            return {"t": "float", "v": repr(v)}
        if t is str:
            return {"t": "str", "v": v}
        if t is bytes:
            return {"t": "bytes", "v": v.hex()}
        if t in (list, tuple, set, frozenset):
            return {"t": t.__name__, "v": [self.encode(i) for i in v]}
        if t is dict:
            return {"t": "dict", "v": [[self.encode(k), self.encode(i)] for k, i in v.items()]}
        raise TypeError(f"only plain data can be passed to the project under grading, not {t.__name__}")


def _op(name: str) -> Any:
    def method(self: _Remote, *args: Any) -> Any:
        conn = object.__getattribute__(self, "_rb_conn")
        return conn.request(op="op", h=object.__getattribute__(self, "_rb_id"), name=name,
                            args=[conn.encode(a) for a in args])
    method.__name__ = name
    return method


class _Remote:
    """A handle on an object of the project's process."""

    __slots__ = ("_rb_conn", "_rb_id", "_rb_repr")

    def __init__(self, conn: _Connection, hid: int, text: str) -> None:
        object.__setattr__(self, "_rb_conn", conn)
        object.__setattr__(self, "_rb_id", hid)
        object.__setattr__(self, "_rb_repr", text)

    def __getattr__(self, name: str) -> Any:
        return object.__getattribute__(self, "_rb_conn").request(
            op="getattr", h=object.__getattribute__(self, "_rb_id"), name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        conn = object.__getattribute__(self, "_rb_conn")
        conn.request(op="setattr", h=object.__getattribute__(self, "_rb_id"), name=name, v=conn.encode(value))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        conn = object.__getattribute__(self, "_rb_conn")
        return conn.request(op="call", h=object.__getattribute__(self, "_rb_id"),
                            args=[conn.encode(a) for a in args], kwargs={k: conn.encode(v) for k, v in kwargs.items()})

    # Identity only: the project's own __eq__ never decides an assert.
    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        value = _op("__bool__")(self)
        if type(value) is not bool:
            raise TypeError("__bool__ of a project object did not return a bool")
        return value

    def __len__(self) -> int:
        value = _op("__len__")(self)
        if type(value) is not int:
            raise TypeError("__len__ of a project object did not return an int")
        return value

    def __str__(self) -> str:
        return str(_op("__str__")(self))

    def __repr__(self) -> str:
        return f"<project object {object.__getattribute__(self, '_rb_repr')}>"

    __iter__ = _op("__iter__")
    __next__ = _op("__next__")
    __getitem__ = _op("__getitem__")
    __setitem__ = _op("__setitem__")
    __delitem__ = _op("__delitem__")
    __contains__ = _op("__contains__")
    __add__, __radd__, __sub__, __rsub__ = _op("__add__"), _op("__radd__"), _op("__sub__"), _op("__rsub__")
    __mul__, __rmul__, __truediv__, __rtruediv__ = _op("__mul__"), _op("__rmul__"), _op("__truediv__"), _op("__rtruediv__")
    __floordiv__, __mod__, __neg__, __abs__ = _op("__floordiv__"), _op("__mod__"), _op("__neg__"), _op("__abs__")


class _RemoteModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name != "__all__":
            raise AttributeError(name)
        handle = self.__dict__["_rb_module"]
        return getattr(handle, name)


class _ProjectFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of the project's packages, answered with proxies of the project's process."""

    def __init__(self, conn: _Connection, packages: set[str]) -> None:
        self.conn, self.packages = conn, packages

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.split(".")[0] not in self.packages:
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        mod = _RemoteModule(spec.name)
        mod.__dict__["_rb_module"] = self.conn.request(op="import", name=spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def start(python: str, script: str, root: str, packages: set[str]) -> Any:
    """In the test process: start the project's process and route the packages' imports to it."""
    import subprocess

    mine, theirs = socket.socketpair()
    proc = subprocess.Popen([python, "-I", script, "SERVE", str(theirs.fileno()), root],
                            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, close_fds=True)
    theirs.close()
    sys.meta_path.insert(0, _ProjectFinder(_Connection(mine), packages))
    return proc


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "SERVE":
    serve(socket.socket(fileno=int(sys.argv[2])), sys.argv[3])
