"""What crosses between the checker and the process that runs the reader's code: data, never objects.

The checker sends the reader's function its arguments and receives its result as JSON messages in
which arrays are raw bytes with a dtype and a shape. Decoding builds only plain values, NumPy arrays
of numbers, a PCG64 ``Generator`` and the library's own data objects (:class:`~kmt_ref.TokenLayout`,
:class:`~kmt_ref.Block`, :class:`~kmt_ref.feedforward.FeedForward`,
:class:`~kmt_ref.learning.model.ModelConfig`, :class:`~kmt_ref.KMeansTransformer`) through their
validating constructors: nothing the reader's process sends can run code in the checker, and a model it
returns runs the library's code, not the reader's.
"""

import base64
import dataclasses
import json
import os
import struct
from types import MappingProxyType

import numpy as np

from ..attention import Block
from ..feedforward import FeedForward
from ..layer import KMeansTransformer
from ..learning.model import ModelConfig
from ..tokens import TokenLayout

__all__ = ["UnsendableError", "BadMessageError", "encode", "decode", "send", "receive", "MAX_MESSAGE_BYTES"]

#: The largest message either side reads (a longer one is refused before it is read).
MAX_MESSAGE_BYTES = 256 * 2**20
#: Deeper nesting is refused (a result is a few arrays in a tuple, not a tree).
MAX_DEPTH = 16
_KIND = "~"
_DATACLASSES = {cls.__name__: cls for cls in (Block, FeedForward, ModelConfig)}
_HEADER = struct.Struct(">Q")


class UnsendableError(ValueError):
    """A value of a type that does not cross (the message names it)."""


class BadMessageError(ValueError):
    """A message that is not one this module writes."""


def encode(value, depth=0):
    """``value`` as JSON-ready data; :class:`UnsendableError` names the first part that is not data."""
    if depth > MAX_DEPTH:
        raise UnsendableError(f"values nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, str, float)) or type(value) is int:
        return value
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf":
            raise UnsendableError(f"an array of dtype {arr.dtype} (numbers only)")
        data = base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode("ascii")
        return {_KIND: "array" if isinstance(value, np.ndarray) else "scalar", "dtype": arr.dtype.str,
                "shape": list(arr.shape), "data": data}
    if type(value) in (list, tuple):
        return {_KIND: type(value).__name__, "items": [encode(v, depth + 1) for v in value]}
    if type(value) in (dict, MappingProxyType):  # a Block's params are a read-only mapping
        if not all(type(key) in (str, int) for key in value):
            raise UnsendableError("a dict whose keys are not all strings or integers")
        return {_KIND: "dict", "items": [[key, encode(v, depth + 1)] for key, v in value.items()]}
    if type(value) is np.random.Generator and type(value.bit_generator) is np.random.PCG64:
        return {_KIND: "generator", "state": encode(value.bit_generator.state, depth + 1)}
    if type(value) is TokenLayout:
        return {_KIND: "TokenLayout", "d": value.d, "k": value.k, "blocks": list(value.blocks)}
    if type(value) in _DATACLASSES.values():
        return {_KIND: type(value).__name__, "fields": {f.name: encode(getattr(value, f.name), depth + 1)
                                                        for f in dataclasses.fields(value) if f.init}}
    if type(value) is KMeansTransformer:
        if value.norm is not None:
            raise UnsendableError("a KMeansTransformer with a normalization (norm) between its layers")
        if value.ffn is not None and type(value.ffn) is not FeedForward:
            raise UnsendableError(f"a KMeansTransformer whose ffn is a {type(value.ffn).__name__}, not a FeedForward")
        # The model's checks (assumption, resolution) are functions: they stay behind.
        return {_KIND: "KMeansTransformer", "layout": encode(value.layout), "name": encode(value.name),
                "blocks": {b: encode(block, depth + 1) for b, block in value.blocks.items()},
                "ffn": encode(value.ffn, depth + 1), "translation_invariant": value.translation_invariant}
    module = type(value).__module__
    # The reader's file is loaded under a private module name (runner.load_function): name the class alone.
    where = "" if module == "builtins" or module.startswith("_kmt_workbook_") else f"{module}."
    raise UnsendableError(f"an object of type {where}{type(value).__qualname__}")


def decode(data, depth=0):
    """The value :func:`encode` made ``data`` from; :class:`BadMessageError` for anything else."""
    if depth > MAX_DEPTH + 2:
        raise BadMessageError("nested too deeply")
    if data is None or isinstance(data, (bool, str, float)) or type(data) is int:
        return data
    if type(data) is not dict or not isinstance(data.get(_KIND), str):
        raise BadMessageError(f"an untagged {type(data).__name__}")
    kind = data[_KIND]
    try:
        if kind in ("array", "scalar"):
            dtype = np.dtype(data["dtype"])
            shape = tuple(data["shape"])
            if dtype.kind not in "biuf" or not all(type(s) is int and s >= 0 for s in shape):
                raise BadMessageError(f"an array of dtype {dtype} and shape {shape}")
            raw = base64.b64decode(data["data"], validate=True)
            if len(raw) != dtype.itemsize * int(np.prod(shape, dtype=object)):
                raise BadMessageError(f"{len(raw)} bytes for an array of shape {shape} and dtype {dtype}")
            arr = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
            return arr if kind == "array" else arr[()]
        if kind in ("list", "tuple"):
            items = [decode(v, depth + 1) for v in _list(data["items"])]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            pairs = [_list(pair) for pair in _list(data["items"])]
            if not all(len(pair) == 2 and type(pair[0]) in (str, int) for pair in pairs):
                raise BadMessageError("a dict item that is not a (key, value) pair")
            return {key: decode(v, depth + 1) for key, v in pairs}
        if kind == "generator":
            state = decode(data["state"], depth + 1)
            if type(state) is not dict or state.get("bit_generator") != "PCG64":
                raise BadMessageError("a generator that is not a PCG64")
            rng = np.random.Generator(np.random.PCG64())
            rng.bit_generator.state = state
            return rng
        if kind == "TokenLayout":
            return TokenLayout(data["d"], data["k"], tuple(_list(data["blocks"])))
        if kind in _DATACLASSES:
            cls = _DATACLASSES[kind]
            fields = data["fields"]
            names = {f.name for f in dataclasses.fields(cls) if f.init}
            if type(fields) is not dict or not set(fields) <= names:
                raise BadMessageError(f"fields of a {kind} that it does not have")
            return cls(**{name: decode(v, depth + 1) for name, v in fields.items()})
        if kind == "KMeansTransformer":
            blocks = data["blocks"]
            if type(blocks) is not dict:
                raise BadMessageError("a KMeansTransformer without a mapping of blocks")
            ffn = decode(data["ffn"], depth + 1)
            if ffn is not None and type(ffn) is not FeedForward:
                raise BadMessageError("a KMeansTransformer whose ffn is not a FeedForward")
            return KMeansTransformer(decode(data["layout"], depth + 1),
                                     {b: decode(v, depth + 1) for b, v in blocks.items()}, ffn=ffn,
                                     name=decode(data["name"], depth + 1),
                                     translation_invariant=data["translation_invariant"])
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, BadMessageError):
            raise
        raise BadMessageError(f"a {kind} that does not build: {type(exc).__name__}: {exc}") from exc
    raise BadMessageError(f"a value of unknown kind {kind!r}")


def _list(value):
    if type(value) is not list:
        raise BadMessageError(f"a {type(value).__name__} where a list belongs")
    return value


def send(fd, message):
    """Write ``message`` (a JSON-ready dict) to the file descriptor ``fd``, length first."""
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_MESSAGE_BYTES:
        raise UnsendableError(f"a value of {len(body) / 2**20:.0f} MB (at most {MAX_MESSAGE_BYTES // 2**20} MB)")
    view = memoryview(_HEADER.pack(len(body)) + body)
    while view:
        view = view[os.write(fd, view):]


def receive(fd):
    """The next message from ``fd`` as a dict, or ``None`` at the end of the stream."""
    header = _read(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_MESSAGE_BYTES:
        raise BadMessageError(f"a message of {size} bytes (at most {MAX_MESSAGE_BYTES})")
    body = _read(fd, size)
    if body is None:
        raise BadMessageError("a message cut short")
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadMessageError(f"a message that is not JSON ({exc})") from exc
    if type(message) is not dict:
        raise BadMessageError("a message that is not a JSON object")
    return message


def _read(fd, size):
    """Exactly ``size`` bytes from ``fd``; ``None`` if the stream ends first."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 2**20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
