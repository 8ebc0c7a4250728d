"""Helpers that turn a wrong answer into a message a reader can act on.

A check calls the reader's function through :func:`call` and compares the
result with :func:`expect_close` / :func:`expect`. Every failure is a
:class:`CheckFailedError` whose message says what was expected, what was got and
on which input. ``NotImplementedError`` passes through untouched so that the
runner can say "not implemented yet" instead of reporting a crash.
"""

import copy
import os
import textwrap
import traceback

import numpy as np

__all__ = [
    "CheckFailedError", "ReaderError", "RemoteCall", "show", "indent", "inputs", "call", "gradient", "as_array",
    "failed", "expect", "expect_close",
]


class CheckFailedError(Exception):
    """The reader's answer is wrong; the message says how and on which input."""


class ReaderError(Exception):
    """The reader's function raised ``type_name``: ``message`` in its own process; ``where`` says where in the
    reader's file."""

    def __init__(self, type_name, message, where):
        super().__init__(f"{type_name}: {message}")
        self.type_name, self.message, self.where = type_name, message, where


class RemoteCall:
    """A reader's function that runs in another process (:class:`kmt_ref.exercises.solver.RemoteFunction`):
    ``invoke(args)`` returns ``(result, positions of the array arguments it changed)`` and raises
    :class:`ReaderError` for what the function raised; ``grad(argnum)`` is its gradient, computed there."""

    def invoke(self, args):
        raise NotImplementedError

    def grad(self, argnum):
        raise NotImplementedError


def show(value):
    """A compact, readable rendering of a value for a feedback message."""
    if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and value and
                                         all(isinstance(v, (int, float)) for v in value)):
        arr = np.asarray(value)
        text = np.array2string(arr, precision=4, suppress_small=True, threshold=100, edgeitems=3,
                               max_line_width=100)
        return text if arr.ndim <= 1 else f"shape {arr.shape}\n{text}"
    return repr(value)


def indent(text, width=4):
    """Indent every line of ``text`` (multi-line arrays stay aligned)."""
    return textwrap.indent(text, " " * width)


def inputs(**named):
    """Describe the inputs of a call: ``name = value`` lines, ready for a message."""
    lines = []
    for name, value in named.items():
        text = show(value)
        if "\n" in text:  # an array: name on its own line, rows aligned below
            lines.append(indent(f"{name} =") + "\n" + indent(text, 6))
        else:
            lines.append(indent(f"{name} = {text}"))
    return "\n".join(lines)


#: Added to the message when autograd's tracer (an ``ArrayBox``) meets code it cannot trace.
AUTOGRAD_HINT = (
    "\n  hint: autograd is differentiating your function, and its values are then ArrayBox objects: "
    "use `import autograd.numpy as np` instead of plain numpy (scipy and numpy functions do not "
    "know ArrayBox), build arrays with np.stack / np.where / arithmetic instead of writing into them "
    "(`out[i] = ...`), and do not convert traced values with float(), np.asarray or .astype")


def _in_readers_file(exc, fn):
    """Where in the reader's file the exception was raised (the last line of that file in its traceback), as
    text; empty when the reader's file is not in it or ``fn`` has no code of its own."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == code.co_filename]
    if not frames:
        return ""
    f = frames[-1]
    return f" (at {os.path.basename(f.filename)}, line {f.lineno}: {f.line})"


def call(fn, *args, on, traced=False):
    """Call the reader's ``fn`` on copies of ``args``; any exception becomes a failure.

    Parameters
    ----------
    fn : callable
    *args
        Arguments; each is deep-copied so a reader's in-place edit cannot
        leak into the check's own expected values.
    on : str
        Description of the input (from :func:`inputs`) for the message.
    traced : bool
        ``fn`` runs the reader's code under autograd: an error then most
        likely means code autograd cannot trace, and the message says how to fix it.
    """
    try:
        # NaN and overflow are reported by the comparison (with the input), not as warnings.
        if isinstance(fn, RemoteCall):  # the reader's process gets copies and says which it changed
            result, modified = fn.invoke(args)
        else:
            copies = [_copy(a) for a in args]
            with np.errstate(all="ignore"):
                result = fn(*copies)
            modified = [i for i, (original, seen) in enumerate(zip(args, copies, strict=True))
                        if isinstance(original, np.ndarray) and not np.array_equal(original, seen, equal_nan=True)]
    except (NotImplementedError, CheckFailedError):
        raise
    except Exception as exc:  # the reader's code may raise anything; report it with the input
        type_name, where = ((exc.type_name, exc.where) if isinstance(exc, ReaderError)
                            else (type(exc).__name__, _in_readers_file(exc, fn)))
        message = exc.message if isinstance(exc, ReaderError) else str(exc)
        traced_error = traced and type_name in ("TypeError", "ValueError")
        hint = AUTOGRAD_HINT if traced_error or "ArrayBox" in message else ""
        raise failed(f"your function raised {type_name}: {message}{where}{hint}", on) from exc
    if modified:
        raise failed(
            f"your function modified its argument #{modified[0] + 1} in place; return a new array "
            "instead (a caller's data must never change)", on)
    return result


def gradient(fn, argnum):
    """autograd's gradient of the reader's ``fn`` in argument ``argnum``, computed where ``fn`` runs."""
    from autograd import grad

    if isinstance(fn, RemoteCall):
        return fn.grad(argnum)
    return grad(fn, argnum)


def _copy(value):
    """A deep copy, or the value itself when it cannot be copied (a model holding read-only mappings)."""
    try:
        return copy.deepcopy(value)
    except TypeError:
        return value


def as_array(got, what, on, shape=None, hint=""):
    """Convert a returned value to a float array, checking its shape and finiteness."""
    try:
        arr = np.asarray(got, dtype=float)
    except (TypeError, ValueError) as exc:
        raise CheckFailedError(
            f"{what}: expected an array, got {type(got).__name__} ({exc})\n  on input:\n{on}"
        ) from exc
    if shape is not None and arr.shape != tuple(shape):
        raise failed(f"{what}: expected shape {tuple(shape)}, got shape {arr.shape}", on)
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        where = f" at index {bad}" if bad else ""
        raise CheckFailedError(
            f"{what}: expected finite numbers, got {arr[bad]}{where}\n  on input:\n{on}"
            + (f"\n  hint: {hint}" if hint else "")
        )
    return arr


def failed(message, on=""):
    """A :class:`CheckFailedError` with ``message`` and, if given, the input description."""
    return CheckFailedError(message + (f"\n  on input:\n{on}" if on else ""))


def expect(condition, message):
    """Fail with ``message`` unless ``condition`` holds."""
    if not condition:
        raise CheckFailedError(message)


def expect_close(got, expected, what, on, atol=1e-8, rtol=1e-6, hint=""):
    """Compare a returned array with the expected one, entry by entry.

    The message shows both arrays and the first entry that differs.
    """
    expected = np.asarray(expected, dtype=float)
    arr = as_array(got, what, on, shape=expected.shape)
    close = np.isclose(arr, expected, atol=atol, rtol=rtol)
    if not np.all(close):
        idx = tuple(int(i) for i in np.argwhere(~close)[0])
        where = f" at index {idx}" if idx else ""
        raise CheckFailedError(
            f"{what}: first difference{where}: expected {expected[idx]:.6g}, got {arr[idx]:.6g}\n"
            f"  expected:\n{indent(show(expected))}\n  got:\n{indent(show(arr))}\n  on input:\n{on}"
            + (f"\n  hint: {hint}" if hint else "")
        )
    return arr


def symbolic_hint(feedback, *args):
    """A hint line from one of :mod:`kmt_ref.symbolic_feedback`'s functions (``cax_score_feedback``,
    ``cax_value_feedback``, ``cac_feedback``, ``ffn_feedback``) on ``args``: what is wrong, proved for every
    input; empty when SymPy is not installed, when nothing is wrong there (the error is elsewhere) or when it
    cannot be said exactly."""
    try:
        from .. import symbolic_feedback
    except ImportError:
        return ""
    try:
        text = getattr(symbolic_feedback, feedback)(*args)
    except (ValueError, TypeError):  # a non-finite entry or a mechanism the algebra does not cover
        return ""
    return "" if text is None else f"\n  proved for every input (SymPy): {text}"
