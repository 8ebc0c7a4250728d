"""Fast attention: the reference attention's numbers with less work.

:func:`kmt_ref.attention.attend` says what a block computes in a dozen lines.
:func:`attend` here computes the same thing, behind the same signature, and is
what a :class:`~kmt_ref.layer.KMeansTransformer` runs. Equality of the two, for
every construction, variant and the learned model, is a test
(``tests/test_kernels.py``). What the speed comes from:

* **Structure, found once.** The constructions' weights are block projectors:
  most rows of ``Wq, Wk, Wv`` are zero and the rest are often ``+-I``.
  :func:`structure` finds, once per (frozen) block, which coordinates a score
  reads and a value writes; a ``+-I`` projection is then a view of the tokens,
  not a product, and the output is computed on the written coordinates only
  (:func:`attend_parts`, which the layer adds into its residual stream in
  place instead of adding zero-padded full-width outputs).
* **Row chunks.** At most ``CHUNK_ELEMENTS`` scores exist at once, so the
  all-attention layer's point-to-point attention costs O(n x chunk) memory; plain
  arrays use small chunks that stay in the processor's cache.
* **Euclidean hardmax** ranks ``2 q.k - |k|^2``: ``-|q|^2`` is the same for
  every key of a query and cannot change its arg-max set. Where a query's two
  best scores are closer than their rounding
  (:func:`~kmt_ref.geometry.score_rounding_bound`), exact arithmetic decides
  its arg-max set (:func:`~kmt_ref.geometry.exact_nearest`), as it does for
  :func:`~kmt_ref.lloyd`: the one place where this path is *more* exact than
  the reference, which ranks the rounded scores. The mean of the arg-max rows
  is their sum divided by their count (see
  :func:`~kmt_ref.attention.hardmax_average`).
* **Euclidean softmax** is an ``autograd`` primitive with a hand-written
  vector-Jacobian product (:func:`euclidean_softmax_attention`): it keeps no
  (m, r) intermediates for the backward pass, and ``exp`` is not evaluated
  where it underflows to 0 anyway. The projections of traced tokens are a
  primitive too (:func:`project`), so that a training step runs almost all
  of its work per task, on the threads; both give the gradient autograd
  gives for the operations written out, bit for bit.
* **Linear** normalization divides by the row sums in one pass.
* **A task at a time.** A layer on plain arrays (:func:`add_attention`) runs a
  batch ``(B, ...)`` task by task, so chunk sizes, and with them BLAS's
  rounding, do not depend on the batch: a task's numbers are those of running
  it alone. The Euclidean softmax primitive works a cache-sized chunk of tasks
  at a time.
* **Threads over tasks.** Given a :class:`~kmt_ref.pool.TaskPool`, the
  primitives split a traced batch's tasks across its threads (a model's run
  splits plain batches itself, through its :class:`~kmt_ref.engine.Engine`);
  every task's numbers are computed by the same calls as without threads, so
  results are bit-identical.
"""

from dataclasses import dataclass

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, defvjp_argnums, primitive

from ._validation import check_int, check_projection, check_rng
from .attention import NORMALIZERS, SCORES
from .geometry import CHUNK_ELEMENTS, exact_nearest, score_rounding_bound
from .pool import CACHE_ELEMENTS, TaskPool

__all__ = ["add_attention", "attend", "attend_parts", "is_plain", "structure", "euclidean_softmax_attention",
           "project"]

#: One thread: the pool of the kernels' callers that pass none.
SERIAL = TaskPool(1)

#: Scores held at once by the plain-array paths when a query has many keys: a chunk of
#: 8 MB stays in the outer cache (measured 1.5-2x faster than ``CHUNK_ELEMENTS`` for the
#: all-attention layer's point-to-point blocks, with the same numbers).
STREAM_ELEMENTS = 2**20

#: Below this, ``exp`` is exactly 0 in float64 (``exp(-745.14)`` is the last
#: value that rounds up to the smallest subnormal).
EXP_UNDERFLOW = -746.0

# ----------------------------------------------------------------- structure


def _as_index(mask):
    """Boolean mask -> ``None`` (all), a slice (one contiguous run) or indices."""
    idx = np.flatnonzero(mask)
    if len(idx) == len(mask):
        return None
    if len(idx) and idx[-1] - idx[0] + 1 == len(idx):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


@dataclass(frozen=True)
class Projection:
    """``Z @ W[rows].T + b[rows]`` reduced to what it touches.

    ``cols`` are the input coordinates ``W[rows]`` reads; ``sign`` is +1 or -1
    when ``W[rows][:, cols]`` is ``+-I`` (the projection is then a view of the
    tokens), else 0 and ``W`` is the reduced matrix.
    """

    W: np.ndarray
    b: np.ndarray | None
    cols: object
    sign: int

    def __call__(self, Z):
        if self.cols is not None:
            Z = Z[..., self.cols]
        if self.sign == 1:
            return Z
        if self.sign == -1:
            return -Z
        out = Z @ self.W.T
        return out if self.b is None else out + self.b


def _projection(W, b, rows):
    if rows is not None:
        W, b = W[rows], (None if b is None else b[rows])
    cols = _as_index(np.any(W != 0, axis=0))
    if cols is not None:
        W = W[:, cols]
    sign = 0
    if b is None and W.shape[0] == W.shape[1]:
        eye = np.eye(W.shape[0])
        sign = 1 if np.array_equal(W, eye) else -1 if np.array_equal(W, -eye) else 0
    return Projection(W, b, cols, sign)


@dataclass(frozen=True)
class Structure:
    """What one block's weights read and write (found once per block).

    ``value_rows``: the output coordinates the block can make non-zero
    (``None``: all); ``values``, ``queries``, ``keys``: the reduced projections.
    """

    value_rows: object
    values: Projection
    queries: Projection
    keys: Projection


def _rows(W, b):
    rows = np.any(W != 0, axis=1)
    return rows if b is None else rows | (b != 0)


def structure(block):
    """The :class:`Structure` of a block of plain arrays, cached on the (frozen) block."""
    cached = block.__dict__.get("_structure")
    if cached is None:
        value_rows = _as_index(_rows(block.Wv, block.bv))
        score_rows = _as_index(_rows(block.Wq, block.bq) | _rows(block.Wk, block.bk))
        cached = Structure(value_rows, _projection(block.Wv, block.bv, value_rows),
                           _projection(block.Wq, block.bq, score_rows), _projection(block.Wk, block.bk, score_rows))
        block.__dict__["_structure"] = cached  # the block's arrays are read-only: this cannot go stale
    return cached


# ------------------------------------------------------ euclidean softmax


def _row_max(S):
    """``S.max(axis=-1, keepdims=True)``; for short rows as a running maximum over columns.

    The same numbers (a maximum is exact), about three times faster for a
    few keys per query, where NumPy's reduction along a short axis is slow.
    """
    if S.shape[-1] > 32 or S.shape[-1] == 0:
        return np.max(S, axis=-1, keepdims=True)
    out = S[..., :1].copy()
    for j in range(1, S.shape[-1]):
        np.maximum(out, S[..., j : j + 1], out=out)
    return out


def _euclidean_softmax_weights(queries, keys, gamma):
    """``softmax_b(-gamma ||q_a - k_b||^2)`` with plain NumPy, shape (..., m, r).

    ``-||q_a||^2`` is the same for every key of row ``a``, so it cancels in
    the softmax: the scores used are ``gamma (2 q_a . k_b - ||k_b||^2)``,
    computed in place in one (..., m, r) buffer.
    """
    S = np.matmul(queries, np.swapaxes(keys, -1, -2))
    S *= 2.0 * gamma
    S -= gamma * np.sum(keys * keys, axis=-1)[..., None, :]
    return _softmax_inplace(S)


def _softmax_inplace(S):
    """Row-wise softmax of the scores ``S``, in ``S``: the operations of :func:`~kmt_ref.attention.softmax`.

    Shifted scores below :data:`EXP_UNDERFLOW` are set to a harmless value
    before ``exp`` and to 0 after (``exp`` is slow on arguments that
    underflow; the result is the same).
    """
    S -= _row_max(S)
    dead = S < EXP_UNDERFLOW
    if dead.any():
        # Multiplying by a 0/1 mask is several times faster than a masked copy; it turns a
        # score of -inf into nan, which the (rare) repair below sets to the 0 it should be.
        keep = 1.0 - dead
        S *= keep
        np.exp(S, out=S)
        S *= keep
        total = np.sum(S, axis=-1, keepdims=True)
        if np.isnan(total).any():
            np.copyto(S, 0.0, where=dead)
            total = np.sum(S, axis=-1, keepdims=True)
    else:
        np.exp(S, out=S)
        total = np.sum(S, axis=-1, keepdims=True)
    S /= total
    return S


def _esa_forward(queries, keys, values, gamma, rows):
    """The attention of each chunk of ``rows`` query rows."""
    m = queries.shape[-2]
    if m <= rows:
        return np.matmul(_euclidean_softmax_weights(queries, keys, gamma), values)
    out = np.empty(queries.shape[:-1] + values.shape[-1:])
    for a in range(0, m, rows):
        out[..., a : a + rows, :] = np.matmul(_euclidean_softmax_weights(queries[..., a : a + rows, :], keys, gamma),
                                              values)
    return out


def _esa_chunk_backward(queries, keys, values, G, gamma):
    """``(dQ, dK, dV)`` of one chunk of query rows (the formulas of :func:`euclidean_softmax_attention`)."""
    A = _euclidean_softmax_weights(queries, keys, gamma)
    dS = np.matmul(G, np.swapaxes(values, -1, -2))  # dA, turned into dS in place
    dS -= np.sum(A * dS, axis=-1, keepdims=True)
    dS *= A
    dQ = 2.0 * gamma * np.matmul(dS, keys)
    cols = np.sum(dS, axis=-2)[..., :, None]
    dK = 2.0 * gamma * (np.matmul(np.swapaxes(dS, -1, -2), queries) - cols * keys)
    return dQ, dK, np.matmul(np.swapaxes(A, -1, -2), G)


def _esa_backward(queries, keys, values, G, gamma, rows):
    """``(dQ, dK, dV)`` over all chunks of query rows.

    The chunks' ``dK`` and ``dV`` are summed last chunk first: the order in which
    ``autograd`` accumulated them when each chunk was a node of its own, kept so
    that gradients (and with them trained models) stay the same to the bit.
    """
    m = queries.shape[-2]
    if m <= rows:
        return _esa_chunk_backward(queries, keys, values, G, gamma)
    dQ, dK, dV = np.empty(queries.shape), None, None
    for a in reversed(range(0, m, rows)):
        gq, gk, gv = _esa_chunk_backward(queries[..., a : a + rows, :], keys, values, G[..., a : a + rows, :], gamma)
        dQ[..., a : a + rows, :] = gq
        dK, dV = (gk, gv) if dK is None else (dK + gk, dV + gv)
    return dQ, dK, dV


@primitive
def euclidean_softmax_attention(queries, keys, values, gamma, rows, pool=SERIAL):
    """Fused Euclidean softmax attention ``softmax(-gamma ||q_a - k_b||^2) @ values``.

    Parameters
    ----------
    queries : ndarray, shape (..., m, D)
        Projected queries ``Zq @ Wq.T (+ bq)``.
    keys : ndarray, shape (..., r, D)
        Projected keys, with the same leading axes as ``queries``.
    values : ndarray, shape (..., r, Dv)
    gamma : float
        Inverse temperature (not differentiated).
    rows : int
        Query rows attended at once (bounds the memory; not differentiated).
    pool : TaskPool
        Threads over the leading (task) axis (:class:`kmt_ref.pool.TaskPool`;
        results do not depend on it).

    Returns
    -------
    ndarray, shape (..., m, Dv)

    Notes
    -----
    With ``A`` the attention weights, ``G`` the output cotangent and
    ``S = gamma (2 q_a . k_b - |k_b|^2)`` the scores (``-gamma |q_a|^2`` dropped:
    it cancels in the softmax), the vector-Jacobian product is::

        dV = A^T G
        dS = A * (G V^T - rowsum(A * (G V^T)))        softmax Jacobian, row-wise
        dQ = 2 gamma dS K
        dK = 2 gamma (dS^T Q - colsum(dS) * K)

    ``A`` is recomputed in the backward pass instead of stored, so the
    backward pass holds one (..., rows, r) array at a time, where autograd's
    generic differentiation of the reference path would keep every
    intermediate (distances, shifted scores, exponentials, weights).
    """
    rows = check_int(rows, "rows", low=1)
    per_task = queries.shape[-2] * keys.shape[-2]
    return pool.over_tasks(lambda q, k, v: _esa_forward(q, k, v, gamma, rows), per_task, queries, keys, values)


def _esa_vjp(argnums, ans, args, kwargs):
    """VJP of :func:`euclidean_softmax_attention` for the requested arguments."""
    queries, keys, values, gamma, rows, *rest = args
    pool = rest[0] if rest else kwargs.get("pool", SERIAL)
    if any(i > 2 for i in argnums):
        raise NotImplementedError("euclidean_softmax_attention is not differentiable in gamma, rows or pool")

    def vjp(G):
        per_task = queries.shape[-2] * keys.shape[-2]
        grads = pool.over_tasks(lambda q, k, v, g: _esa_backward(q, k, v, g, gamma, rows), per_task,
                                queries, keys, values, G)
        return tuple(grads[i] for i in argnums)

    return vjp


defvjp_argnums(euclidean_softmax_attention, _esa_vjp)


def _sum_leading(x, ndim):
    """Sum the leading axes of ``x`` away down to ``ndim`` axes, one at a time, as ``autograd`` unbroadcasts."""
    while x.ndim > ndim:
        x = np.sum(x, axis=0)
    return x


@primitive
def project(Z, W, b, pool=SERIAL):
    """``Z @ W.T + b`` (``b`` may be None) for autograd, a cache-sized chunk of tasks at a time on the threads.

    Parameters
    ----------
    Z : ndarray, shape (..., m, D)
    W : ndarray, shape (D', D)
    b : ndarray, shape (D',), or None
    pool : TaskPool
        Threads over the leading (task) axis (results do not depend on it).

    Returns
    -------
    ndarray, shape (..., m, D')

    Notes
    -----
    The gradient is ``autograd``'s for the same expression, bit for bit:
    ``dZ = G W`` and the per-task products ``Z^T G`` are computed a chunk of
    tasks at a time (in parallel), then ``dW`` and ``db`` sum them over the
    tasks one task after the other, in autograd's order.
    """
    check_projection(Z, W, b)
    return pool.over_tasks(lambda z: _plain_project(z, W, b), Z.shape[-2] * W.shape[0], Z)


def _plain_project(Z, W, b):
    out = np.matmul(Z, np.swapaxes(W, -1, -2))
    return out if b is None else out + b


def _project_vjp(argnums, ans, args, kwargs):
    Z, W, b, *rest = args
    pool = rest[0] if rest else kwargs.get("pool", SERIAL)

    def parts(z, g):
        return tuple(np.matmul(g, W) if i == 0 else np.matmul(np.swapaxes(z, -1, -2), g) for i in argnums if i < 2)

    def vjp(G):
        per_task = pool.over_tasks(parts, G.shape[-2] * G.shape[-1], Z, G) if 0 in argnums or 1 in argnums else ()
        grads = dict(zip([i for i in argnums if i < 2], per_task, strict=True))
        if 1 in grads:
            grads[1] = np.swapaxes(_sum_leading(grads[1], 2), -1, -2)
        if 2 in argnums:
            grads[2] = _sum_leading(G, 1)
        return tuple(grads[i] for i in argnums)

    return vjp


defvjp_argnums(project, _project_vjp)


@primitive
def _query_rows(Z, start, stop):
    """``Z[..., start:stop, :]`` for autograd: its gradient is the cotangent added into zeros by slice.

    The same numbers as autograd's generic gradient of indexing (``0 + g``),
    which goes through ``numpy.add.at`` and costs about 8% of a training step.
    """
    return Z[..., start:stop, :]


def _query_rows_vjp(ans, Z, start, stop):
    def vjp(g):
        out = np.zeros(np.shape(Z))
        out[..., start:stop, :] += g
        return out

    return vjp


defvjp(_query_rows, _query_rows_vjp)


# ------------------------------------------------------ plain-array paths


def _euclidean_hardmax(queries, keys, values):
    """Mean of the values of each query's nearest keys (sum over the arg-max set / its size).

    ``values=None`` stands for the identity (the result is then the weights).

    Scores ``2 k.q - |k|^2`` are laid out keys by queries, so that the maximum
    and the count over keys are element-wise operations between rows.
    """
    St = np.matmul(2.0 * keys, np.swapaxes(queries, -1, -2))  # (..., r, m); doubling is exact
    St -= np.sum(keys * keys, axis=-1)[..., :, None]
    best = St == np.max(St, axis=-2, keepdims=True)
    if St.shape[-2] > 1:
        # Where a query's two best keys are closer than the scores' rounding, exact arithmetic decides
        # (as nearest_center does for Lloyd's algorithm): rounding never picks the arg-max set.
        two = -np.partition(-St, 1, axis=-2)
        batch = St.shape[:-2]
        q = np.broadcast_to(queries, batch + queries.shape[-2:])
        k = np.broadcast_to(keys, batch + keys.shape[-2:])
        close = two[..., 0, :] - two[..., 1, :] <= score_rounding_bound(q, k)
        for index in zip(*np.nonzero(close)):
            task = index[:-1]
            best[task + (slice(None), index[-1])] = exact_nearest(q[index], k[task])
    count = np.sum(best, axis=-2)[..., :, None]  # (..., m, 1)
    members = np.swapaxes(best, -1, -2).astype(float)
    return (members if values is None else np.matmul(members, values)) / count


def _linear(scores, values):
    """Non-negative scores over their row sums (an all-zero row: uniform), times the values."""
    if np.any(scores < 0):
        raise ValueError("linear attention needs non-negative scores; got a negative score")
    total = np.sum(scores, axis=-1, keepdims=True)
    if np.all(total > 0):
        scores /= total  # in place: the scores are this chunk's own array
    else:
        scores = np.where(total > 0, scores / np.where(total > 0, total, 1.0), 1.0 / scores.shape[-1])
    return np.matmul(scores, values)


def _linear_over_keys(queries, keys, values, score):
    """:func:`_linear` for few queries and many keys, the keys a chunk at a time.

    Each key and value is read once: ``sum_b s_ab v_b`` and ``sum_b s_ab``
    are accumulated over chunks of keys and divided at the end, instead of
    one pass over all keys per query row (at a million points a center block
    otherwise streams the points from memory once per center). The same
    weights as :func:`_linear`, summed in another order: equal to rounding.
    A batch is done a task at a time, so each task's sums are those of
    running it alone.
    """
    batch = np.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    if batch:
        q, k, v = (np.broadcast_to(a, batch + a.shape[-2:]) for a in (queries, keys, values))
        out = np.empty(batch + (q.shape[-2], v.shape[-1]))
        for i in np.ndindex(*batch):
            out[i] = _linear_over_keys(q[i], k[i], v[i], score)
        return out
    step = max(1, STREAM_ELEMENTS // queries.shape[0])
    num, total = 0.0, 0.0
    for b in range(0, keys.shape[0], step):
        s = SCORES[score](queries, keys[b : b + step])
        if np.any(s < 0):
            raise ValueError("linear attention needs non-negative scores; got a negative score")
        num = num + np.matmul(s, values[b : b + step])
        total = total + np.sum(s, axis=-1, keepdims=True)
    if np.all(total > 0):
        return num / total
    # An all-zero row attends uniformly.
    return np.where(total > 0, num / np.where(total > 0, total, 1.0), np.mean(values, axis=-2, keepdims=True))


def _is_identity(values):
    """Whether ``values`` is one identity matrix (the ids I_k that CAX reads): ``W @ I = W`` exactly."""
    return values.ndim == 2 and values.shape[0] == values.shape[1] and np.array_equal(values, np.eye(len(values)))


def _plain_chunk(q, keys, values, block, norm, extra, identity):
    """One chunk of queries against all keys, plain arrays."""
    if block.score == "euclidean" and block.normalizer == "hardmax":
        return _euclidean_hardmax(q, keys, None if identity else values)
    if block.score == "euclidean" and block.normalizer == "softmax" and not block.params:
        weights = _euclidean_softmax_weights(q, keys, block.gamma)
        return weights if identity else np.matmul(weights, values)
    if block.score == "dot" and block.normalizer == "softmax" and not block.params:
        S = np.matmul(q, np.swapaxes(keys, -1, -2))  # gamma * scores, then softmax, in one buffer
        S *= block.gamma
        weights = _softmax_inplace(S)
        return weights if identity else np.matmul(weights, values)
    s = SCORES[block.score](q, keys)
    if norm.uses_gamma:
        s = block.gamma * s
    if block.normalizer == "linear":
        return _linear(s, values)
    if norm.average is not None:
        return norm.average(s, values)
    return np.matmul(norm.fn(s, **extra), values)


def is_plain(*operands):
    """Whether tokens and blocks hold plain arrays only (nothing ``autograd`` is tracing)."""
    for x in operands:
        arrays = [getattr(x, f) for f in ("Wq", "Wk", "Wv", "bq", "bk", "bv")] if hasattr(x, "Wq") else [x]
        if any(a is not None and type(a) is not np.ndarray for a in arrays):
            return False
    return True


def attend_parts(Zq, Zk, block, rng=None, pool=SERIAL):
    """The block's output on the coordinates it writes: ``(out, rows)``.

    ``attend(Zq, Zk, block)[..., rows] == out`` and the other coordinates are
    0; ``rows`` is ``None`` when every coordinate may be written. Same
    arguments as :func:`attend`.
    """
    norm = NORMALIZERS[block.normalizer]
    if norm.needs_rng:
        check_rng(rng, "rng", f" (normalizer={block.normalizer!r} draws random numbers)")
    if block.normalizer == "identity" and Zq.shape[-2] != Zk.shape[-2]:
        raise ValueError(
            f"identity attention needs as many queries as keys; got m={Zq.shape[-2]}, r={Zk.shape[-2]}")
    plain = is_plain(Zq, Zk, block)
    fused = block.score == "euclidean" and block.normalizer == "softmax" and not block.params
    m, r = Zq.shape[-2], Zk.shape[-2]
    batch = int(np.prod(Zq.shape[:-2], dtype=int))
    # Query rows per chunk of the traced paths: at most CHUNK_ELEMENTS scores of the batch at once.
    chunk = max(1, CHUNK_ELEMENTS // max(1, r * batch))
    if plain:
        st = structure(block)
        rows, values = st.value_rows, st.values(Zk)
        if block.normalizer == "identity":
            return values, rows
        queries, keys = st.queries(Zq), st.keys(Zk)
    else:
        rows = None
        values = project(Zk, block.Wv, block.bv, pool)
        if block.normalizer == "identity":
            return values, rows
        queries, keys = project(Zq, block.Wq, block.bq, pool), project(Zk, block.Wk, block.bk, pool)
    extra = dict(block.params)
    if norm.needs_rng:
        extra["rng"] = rng
    if not plain and fused and Zq.shape[:-2] == Zk.shape[:-2]:
        return euclidean_softmax_attention(queries, keys, values, block.gamma, chunk, pool), rows
    if not plain:
        parts = []
        for a in range(0, m, chunk):
            s = SCORES[block.score](_query_rows(queries, a, a + chunk), keys)
            s = block.gamma * s if norm.uses_gamma else s
            parts.append(norm.average(s, values) if norm.average is not None
                         else anp.matmul(norm.fn(s, **extra), values))
        return (parts[0] if len(parts) == 1 else anp.concatenate(parts, axis=-2)), rows
    # Few keys per query: chunks that stay in a core's cache; many (a point-to-point block): chunks
    # of STREAM_ELEMENTS. Random normalizers draw per chunk: their chunks keep the committed size.
    if not norm.needs_rng:
        chunk = CACHE_ELEMENTS // max(1, r * batch)
        if chunk < 256:
            chunk = max(1, STREAM_ELEMENTS // max(1, r * batch))
    if block.normalizer == "linear" and m <= 256 and m * r > STREAM_ELEMENTS:
        # Few queries, so many keys that the query rows would each stream them: keys in chunks
        # (decided per task, so that a task's numbers do not depend on its batch).
        return _linear_over_keys(queries, keys, values, block.score), rows
    identity = _is_identity(values)
    if m <= chunk:
        return _plain_chunk(queries, keys, values, block, norm, extra, identity), rows
    out = np.empty(np.broadcast_shapes(queries.shape[:-2], values.shape[:-2]) + (m, values.shape[-1]))
    for a in range(0, m, chunk):
        out[..., a : a + chunk, :] = _plain_chunk(queries[..., a : a + chunk, :], keys, values, block, norm, extra,
                                                  identity)
    return out, rows


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
    if out.ndim > 2 and not NORMALIZERS[block.normalizer].needs_rng:
        # A batch a task at a time: chunk sizes (and so BLAS's rounding) do not depend on the
        # batch, so a task's numbers are those of running it alone; smaller chunks are faster too.
        Zq, Zk = (np.broadcast_to(Z, out.shape[:-2] + Z.shape[-2:]) for Z in (Zq, Zk))
        for i in np.ndindex(*out.shape[:-2]):
            add_attention(out[i], Zq[i], Zk[i], block)
        return out
    part, rows = attend_parts(Zq, Zk, block, rng)
    if rows is None:
        out += part
    else:
        out[..., rows] += part
    return out


def attend(Zq, Zk, block, rng=None, pool=SERIAL):
    """Apply one attention block: the numbers of :func:`kmt_ref.attention.attend` (same arguments, same
    result shape ``(..., m, D)``), faster.

    ``pool``: threads over a traced batch's tasks (:class:`kmt_ref.pool.TaskPool`; results do not depend on it).
    """
    out, rows = attend_parts(Zq, Zk, block, rng, pool)
    if rows is None:
        return out
    full = np.zeros(out.shape[:-1] + (Zk.shape[-1],))
    full[..., rows] = out
    return full

