"""The fast ``attend``: a block's output from its structure, on plain or traced arrays, in row chunks.

The top tier of the kernels: it picks, per block, the primitive of
:mod:`kmt_ref.kernels.softmax` (traced tokens), or a chunked plain-array path
of :mod:`kmt_ref.kernels.plain`, and computes the output on the coordinates
the block writes only (:func:`attend_parts`; :func:`add_attention` adds it
into a residual stream in place).
"""

import autograd.numpy as anp
import numpy as np

from .._validation import check_rng
from ..attention import NORMALIZERS, check_tokens
from ..geometry import CHUNK_ELEMENTS
from ..products import SCORES
from . import plain
from .pool import CACHE_ELEMENTS
from .softmax import SERIAL, euclidean_softmax_attention, project, query_rows
from .structure import structure

__all__ = ["add_attention", "adds_in_place", "attend", "attend_parts", "is_plain", "MIN_ROWS"]

#: Query rows a plain-array chunk holds at least when a query has at most this many keys: at 256 keys
#: (Euclidean softmax, n = 1e5, three layers), chunks of 256 rows ran 10-15% faster than the 4,096
#: that ``STREAM_ELEMENTS`` gives, and within noise of ``CACHE_ELEMENTS``' 128. (A block of more keys
#: keeps its chunks: chunks of another size round BLAS's products differently.)
MIN_ROWS = 256


def is_plain(*operands):
    """Whether tokens and blocks hold plain arrays only (nothing ``autograd`` is tracing)."""
    for x in operands:
        arrays = [getattr(x, f) for f in ("Wq", "Wk", "Wv", "bq", "bk", "bv")] if hasattr(x, "Wq") else [x]
        if any(a is not None and type(a) is not np.ndarray for a in arrays):
            return False
    return True


def attend_parts(Zq, Zk, block, rng=None, pool=SERIAL, add_to=None):
    """The block's output on the coordinates it writes: ``(out, rows)``.

    ``attend(Zq, Zk, block)[..., rows] == out`` and the other coordinates are
    0; ``rows`` is ``None`` when every coordinate may be written. Same
    arguments as :func:`attend`. ``add_to`` (plain arrays only): an array of
    ``out``'s shape; where the output is computed a chunk of queries at a
    time, each chunk is added into it while in cache, and ``out`` is
    ``None`` (the caller adds any other ``out`` itself).
    """
    norm = NORMALIZERS[block.normalizer]
    if norm.needs_rng:
        check_rng(rng, "rng", f" (normalizer={block.normalizer!r} draws random numbers)")
    if block.normalizer == "identity" and Zq.shape[-2] != Zk.shape[-2]:
        raise ValueError(
            f"identity attention needs as many queries as keys; got m={Zq.shape[-2]}, r={Zk.shape[-2]}")
    untraced = is_plain(Zq, Zk, block)
    fused = block.score == "euclidean" and block.normalizer == "softmax" and not block.params
    m, r = Zq.shape[-2], Zk.shape[-2]
    batch = int(np.prod(Zq.shape[:-2], dtype=int))
    # Query rows per chunk of the traced paths: at most CHUNK_ELEMENTS scores of the batch at once.
    chunk = max(1, CHUNK_ELEMENTS // max(1, r * batch))
    # Plain arrays: the projections the block's structure reduces to, on the coordinates it writes.
    st = structure(block) if untraced else None
    rows = st.value_rows if untraced else None
    values = st.values(Zk) if untraced else project(Zk, block.Wv, block.bv, pool)
    if block.normalizer == "identity":
        return values, rows
    if untraced:
        queries, keys = st.queries(Zq), st.keys(Zk)
    else:
        queries, keys = project(Zq, block.Wq, block.bq, pool), project(Zk, block.Wk, block.bk, pool)
    extra = dict(block.params)
    if norm.needs_rng:
        extra["rng"] = rng
    if not untraced and fused and Zq.shape[:-2] == Zk.shape[:-2]:
        return euclidean_softmax_attention(queries, keys, values, block.gamma, chunk, pool), rows
    if not untraced:
        parts = []
        for a in range(0, m, chunk):
            s = SCORES[block.score](query_rows(queries, a, a + chunk), keys)
            s = block.gamma * s if norm.uses_gamma else s
            parts.append(norm.average(s, values) if norm.average is not None
                         else anp.matmul(norm.fn(s, **extra), values))
        return (parts[0] if len(parts) == 1 else anp.concatenate(parts, axis=-2)), rows
    # Few keys per query: chunks that stay in a core's cache, of at least MIN_ROWS queries; many (a
    # point-to-point block): chunks of STREAM_ELEMENTS. Random normalizers draw per chunk: their chunks
    # keep the committed size.
    if not norm.needs_rng:
        width = max(1, r * batch)
        chunk = CACHE_ELEMENTS // width
        if chunk < MIN_ROWS:
            chunk = MIN_ROWS if width <= MIN_ROWS else max(1, plain.STREAM_ELEMENTS // width)
    if block.normalizer == "linear" and m <= 256 and m * r > plain.STREAM_ELEMENTS:
        # Few queries, so many keys that the query rows would each stream them: keys in chunks
        # (decided per task, so that a task's numbers do not depend on its batch).
        return plain.linear_over_keys(queries, keys, values, block.score), rows
    identity = plain.is_identity(values)
    if block.score == "euclidean" and block.normalizer == "hardmax":  # chunked by nearest_center itself
        return plain.euclidean_hardmax(queries, keys, None if identity else values), rows
    if add_to is not None:
        for a in range(0, m, chunk):
            plain.plain_chunk(queries[..., a : a + chunk, :], keys, values, block, norm, extra, identity,
                              add_to[..., a : a + chunk, :])
        return None, rows
    if m <= chunk:
        return plain.plain_chunk(queries, keys, values, block, norm, extra, identity), rows
    out = np.empty(np.broadcast_shapes(queries.shape[:-2], values.shape[:-2]) + (m, values.shape[-1]))
    for a in range(0, m, chunk):
        out[..., a : a + chunk, :] = plain.plain_chunk(queries[..., a : a + chunk, :], keys, values, block, norm,
                                                       extra, identity)
    return out, rows


def _mask(index, width):
    """The coordinates an index (None: all) selects, as a boolean mask of ``width``."""
    mask = np.zeros(width, dtype=bool)
    mask[slice(None) if index is None else index] = True
    return mask


def adds_in_place(first, second, width, first_reads_tokens, second_reads_tokens):
    """Whether a residual ``Z + first + second`` (queries ``Z``) may be added into ``Z`` itself, with a copy's numbers.

    Each block adds its output a chunk of query rows at a time, after reading those rows' queries. So a
    block whose keys are the tokens (``*_reads_tokens``) may not read, as keys or values, a coordinate it
    writes (a later chunk would see an earlier one's output), unless it is identity attention (computed
    whole, or element by element); and ``second`` may read no coordinate ``first`` writes. Plain blocks
    of ``width`` coordinates.
    """
    def reads(block, keys_too):
        st = structure(block)
        return _mask(st.queries.cols, width) | (_mask(st.keys.cols, width) | _mask(st.values.cols, width)
                                                 if keys_too else False)

    def writes(block):
        return _mask(structure(block).value_rows, width)

    for block, keys_too in ((first, first_reads_tokens), (second, second_reads_tokens)):
        if keys_too and block.normalizer != "identity" and np.any(reads(block, True) & writes(block)):
            return False
    return not np.any(reads(second, second_reads_tokens) & writes(first))


def add_attention(out, Zq, Zk, block, rng=None):
    """``out += attend(Zq, Zk, block, rng)`` in place, touching only the coordinates the block writes.

    ``out`` must be a plain array of the tokens' shape. A reset block (identity
    attention whose value is ``-I`` on the coordinates it writes) subtracts the
    tokens directly: ``x + (-y)`` and ``x - y`` are the same float.
    """
    if block.normalizer == "identity" and Zq.shape[-2] == Zk.shape[-2]:
        st = structure(block)
        if st.values.sign == -1 and isinstance(st.value_rows, slice) and st.values.cols is not None:
            target = out[..., st.value_rows]
            np.subtract(target, Zk[..., st.values.cols], out=target)
            return out
    if out.ndim == 2 and block.score == "euclidean" and block.normalizer == "hardmax" and Zq.ndim == Zk.ndim == 2:
        st = structure(block)
        if isinstance(st.value_rows, slice) and plain.is_identity(st.values(Zk)):
            # the nearest keys' ids (CAX writing assignments): one-hot rows added where they are 1
            plain.add_euclidean_hardmax(out[:, st.value_rows], st.queries(Zq), st.keys(Zk))
            return out
    if out.ndim > 2 and not NORMALIZERS[block.normalizer].needs_rng:
        # A batch a task at a time: chunk sizes (and so BLAS's rounding) do not depend on the
        # batch, so a task's numbers are those of running it alone; smaller chunks are faster too.
        Zq, Zk = (np.broadcast_to(Z, out.shape[:-2] + Z.shape[-2:]) for Z in (Zq, Zk))
        for i in np.ndindex(*out.shape[:-2]):
            add_attention(out[i], Zq[i], Zk[i], block)
        return out
    rows = structure(block).value_rows
    target = out if rows is None else out[..., rows] if isinstance(rows, slice) else None  # a view, or None
    part, rows = attend_parts(Zq, Zk, block, rng, add_to=target)
    if part is None:  # added a chunk at a time
        return out
    if rows is None:
        out += part
    else:
        out[..., rows] += part
    return out


def attend(Zq, Zk, block, rng=None, pool=SERIAL):
    """Apply one attention block: the numbers of :func:`kmt_ref.attention.attend` (same arguments, same
    result shape ``(..., m, D)``), faster.

    ``pool``: threads over a traced batch's tasks (:class:`kmt_ref.kernels.pool.TaskPool`; results do not depend on it).
    """
    check_tokens(Zq, Zk, block)
    out, rows = attend_parts(Zq, Zk, block, rng, pool)
    if rows is None:
        return out
    full = np.zeros(out.shape[:-1] + (Zk.shape[-1],))
    full[..., rows] = out
    return full
