"""The reader's code: its file loaded as a module, and its function run in a process of its own, so that
the code it runs cannot see or change the check.

The isolated checker (:mod:`kmt_ref.exercises.child`) starts one solver process per exercise: it loads
the reader's file and answers each request with the function's result as data (:mod:`._wire`). The check
holds a :class:`RemoteFunction` in place of the function; its expected values, its comparisons and the
library code it runs on a returned model stay in the checker's process, where the reader's code never
runs.
"""

import copy
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from . import _wire
from ._feedback import CheckFailedError, ReaderError, RemoteCall

__all__ = ["RemoteFunction", "load_function", "start", "serve"]


class RemoteFunction(RemoteCall):
    """Calls the reader's function in the solver process; ``grad(argnum)`` is autograd's gradient of it there."""

    def __init__(self, solver, op="call", argnum=0):
        self._solver, self._op, self._argnum = solver, op, argnum

    def grad(self, argnum):
        """The gradient in argument ``argnum``, computed by autograd in the reader's process."""
        return RemoteFunction(self._solver, "grad", argnum)

    def invoke(self, args):
        """``(result, modified)``: the result and the positions of the array arguments the function changed.

        Raises
        ------
        NotImplementedError
            The function still raises it.
        ReaderError
            It raised another exception.
        CheckFailedError
            It exited, ended its process, or returned something that is not data.
        """
        return self._solver.request(self._op, self._argnum, args)

    def __call__(self, *args):
        return self.invoke(args)[0]


class _Solver:
    """The process and its two pipes, seen from the checker."""

    def __init__(self, path, name):
        request_read, self._request = os.pipe()
        self._reply, reply_write = os.pipe()
        self._err = tempfile.TemporaryFile()
        cmd = [sys.executable, "-c", "import sys; from kmt_ref.exercises.solver import serve; "
               "serve(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))",
               str(path), name, str(request_read), str(reply_write)]
        self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=self._err, pass_fds=(request_read, reply_write))
        os.close(request_read)
        os.close(reply_write)
        try:
            reply = self._receive()
            if "load_error" in reply:
                raise CheckFailedError(str(reply["load_error"]))
        except CheckFailedError:
            self.close()  # a file that does not load: nothing of the process is left open
            raise

    def request(self, op, argnum, args):
        try:
            _wire.send(self._request, {"op": op, "argnum": argnum, "args": _wire.encode(list(args))})
        except BrokenPipeError:
            self._ended()
        reply = self._receive()
        if "value" in reply:
            try:
                value = _wire.decode(reply["value"])
            except _wire.BadMessageError as exc:
                raise CheckFailedError(f"your function's result could not be read: {exc}") from exc
            return value, [int(i) for i in reply.get("modified", []) if type(i) is int]
        if "raised" in reply:
            raised = reply["raised"]
            if raised.get("type") == "NotImplementedError":
                raise NotImplementedError
            raise ReaderError(str(raised.get("type")), str(raised.get("message")), str(raised.get("where", "")))
        if "exit" in reply:
            raise CheckFailedError(f"your code called sys.exit({reply['exit']}){reply.get('where', '')}")
        if "unsendable" in reply:
            raise CheckFailedError(
                f"your function returned {reply['unsendable']}, which the check cannot take: return numbers, "
                "strings, NumPy arrays of numbers, tuples, lists or dicts of them, or the library's own "
                "objects (TokenLayout, Block, FeedForward, KMeansTransformer)")
        raise CheckFailedError("the process running your code sent something that is not a result")

    def _receive(self):
        try:
            reply = _wire.receive(self._reply)
        except _wire.BadMessageError as exc:
            raise CheckFailedError(f"the process running your code sent {exc}, not a result") from exc
        if reply is None:
            self._ended()
        return reply

    def _ended(self):
        code = self.process.wait()
        self._err.seek(max(0, self._err.seek(0, os.SEEK_END) - 2**16))
        tail = (self._err.read().decode("utf-8", errors="replace").strip().splitlines() or ["(no output)"])[-1]
        raise CheckFailedError(f"the process ended (exit status {code}) while running your code - does your "
                               f"code exit or crash Python? last error output: {tail}")

    def close(self):
        for fd in (self._request, self._reply):
            os.close(fd)
        self.process.kill()
        self.process.wait()
        self._err.close()


def load_function(path, name):
    """Execute the file at ``path`` as a fresh module and return its ``name``.

    Raises
    ------
    CheckFailedError
        If the file is missing, cannot be executed, or has no such function.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckFailedError(f"file not found: {path}")
    module_name = f"_kmt_workbook_{path.stem}_{time.monotonic_ns()}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    # Registered while it executes so that dataclasses, pickling etc. in the
    # reader's file work; removed afterwards so the next run reloads the file.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a syntax error or a failing import in the reader's file
        raise CheckFailedError(f"could not load {path}: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.modules.pop(module_name, None)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise CheckFailedError(f"{path} must define a function {name}(...); it does not")
    return fn


def _where(exc, path):
    """The last line of the reader's file in the traceback of ``exc``, as text."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    if not frames:
        return ""
    f = frames[-1]
    return f" (at {path.name}, line {f.lineno}: {f.line})"


def start(path, name):
    """Start a solver for function ``name`` of the file at ``path``; returns ``(RemoteFunction, close)``.

    Raises
    ------
    CheckFailedError
        If the file does not load, has no such function, or its process ends while loading it.
    """
    solver = _Solver(Path(path).resolve(), name)
    return RemoteFunction(solver), solver.close


def _answer(fn, op, argnum, args, path):
    """The reply to one request: the result as data, or what went wrong."""
    kept = [copy.deepcopy(a) if isinstance(a, np.ndarray) else None for a in args]
    try:
        with np.errstate(all="ignore"):  # NaN and overflow are reported by the check, with the input
            if op == "grad":
                from autograd import grad

                result = grad(fn, argnum)(*args)
            else:
                result = fn(*args)
        value = _wire.encode(result)
    except _wire.UnsendableError as exc:
        return {"unsendable": str(exc)}
    except SystemExit as exc:
        return {"exit": repr(exc.code), "where": _where(exc, path)}
    except BaseException as exc:  # the reader's code may raise anything: the check reports it
        return {"raised": {"type": type(exc).__name__, "message": str(exc), "where": _where(exc, path)}}
    modified = [i for i, (a, k) in enumerate(zip(args, kept, strict=True))
                if k is not None and not np.array_equal(a, k, equal_nan=True)]
    return {"value": value, "modified": modified}


def serve(path, name, request_fd, reply_fd):
    """In the solver process: load ``name`` from ``path``, then answer requests until the checker closes."""
    path = Path(path)
    try:
        fn = load_function(path, name)
    except CheckFailedError as exc:
        _wire.send(reply_fd, {"load_error": str(exc)})
        return
    _wire.send(reply_fd, {"loaded": True})
    while (message := _wire.receive(request_fd)) is not None:
        reply = _answer(fn, message["op"], message["argnum"], _wire.decode(message["args"]), path)
        try:
            _wire.send(reply_fd, reply)
        except _wire.UnsendableError as exc:
            _wire.send(reply_fd, {"unsendable": str(exc)})
    os._exit(0)  # nothing the reader's code registered (atexit, threads) runs after the last answer
