"""The Euclidean softmax attention and the projections as ``autograd`` primitives, with their gradients.

Their vector-Jacobian products are written by hand: they keep no (m, r)
intermediates for the backward pass, and they give the gradient ``autograd``
gives for the operations written out, bit for bit. Both work a cache-sized
chunk of tasks at a time, spread over a :class:`~kmt_ref.kernels.pool.TaskPool`'s
threads. The plain-array softmax (:func:`softmax_inplace`) is shared with
:mod:`kmt_ref.kernels.plain`.
"""

import numpy as np
from autograd.extend import defvjp, defvjp_argnums, primitive

from .._validation import check_int, check_projection
from .pool import TaskPool
from .structure import affine

__all__ = ["euclidean_softmax_attention", "project", "query_rows", "euclidean_scores", "euclidean_softmax_weights",
           "softmax_inplace", "softmax_columns", "column_sums", "add_at", "SERIAL"]

#: One thread: the pool of the kernels' callers that pass none.
SERIAL = TaskPool(1)

#: Below these, ``exp`` is exactly 0 (``exp(-745.14)`` is the last value that rounds up to the smallest
#: float64 subnormal, ``exp(-103.97)`` the float32 one).
EXP_UNDERFLOW = {np.dtype(np.float64): -746.0, np.dtype(np.float32): -104.0}


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


def column_sums(T):
    """``np.sum(T.T, axis=-1)`` bit for bit: NumPy's pairwise sum of each column, done a row of ``T`` at a time
    (long rows; NumPy's reduction along a short axis is slow).

    Parameters
    ----------
    T : ndarray, shape (r, m), ``r <= 128``

    Returns
    -------
    ndarray, shape (m,)

    Notes
    -----
    NumPy sums a row of ``r <= 128`` numbers into 8 running sums (terms ``j, j + 8, ...``), adds those as
    ``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))`` and then the last ``r % 8`` terms one by one
    (``r < 8``: one by one from 0), into a 0. Longer rows it splits in halves, which this does not do.
    """
    r = T.shape[0]
    if r > 128:
        raise ValueError(f"column_sums sums at most 128 rows; got T.shape={T.shape}")
    total = np.zeros(T.shape[1:], T.dtype)
    if r < 8:
        for row in T:
            total += row
        return total
    s = T[:8].copy()
    last = r - r % 8
    for a in range(8, last, 8):
        s += T[a : a + 8]
    total += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
    for row in T[last:]:
        total += row
    return total


def euclidean_scores(queries, keys, gamma):
    """``gamma (2 q_a . k_b - ||k_b||^2)``, shape (..., m, r): the Euclidean softmax's scores.

    ``-gamma ||q_a||^2`` is the same for every key of row ``a``, so it cancels
    in the softmax and is left out; computed in place in one buffer.
    """
    S = np.matmul(queries, np.swapaxes(keys, -1, -2))
    S *= 2.0 * gamma
    S -= gamma * np.sum(keys * keys, axis=-1)[..., None, :]
    return S


def euclidean_softmax_weights(queries, keys, gamma):
    """``softmax_b(-gamma ||q_a - k_b||^2)`` with plain NumPy, shape (..., m, r)."""
    return softmax_inplace(euclidean_scores(queries, keys, gamma))


def add_at(out, rows, cols, values):
    """``out[rows, cols] += values`` for distinct ``(row, col)`` pairs of a 2-D ``out`` (often a block of
    wider tokens), as one unbuffered add over the flat memory its rows span: NumPy's add at a 2-D fancy
    index is several times slower (measured 8x at 1e5 points). The same sums."""
    unit = out.itemsize
    step = out.strides[0] // unit
    if len(rows) == 0 or out.strides[1] != unit or out.strides[0] % unit or step < out.shape[1]:
        out[rows, cols] += values
        return out
    span = np.lib.stride_tricks.as_strided(out, shape=((out.shape[0] - 1) * step + out.shape[1],), strides=(unit,))
    np.add.at(span, rows * step + cols, values)
    return out


def softmax_inplace(S, add_to=None):
    """Row-wise softmax of the scores ``S``, in ``S``: the operations of :func:`~kmt_ref.attention.softmax`.

    ``S`` is an array the caller owns. Shifted scores below
    :data:`EXP_UNDERFLOW` have weight exactly 0 and do not go through ``exp``,
    which is slow on arguments that underflow (the result is the same: ``exp``
    rounds each element alone). When most are dead, only the live ones are
    computed (``exp`` costs as much on a masked zero as on a score); otherwise
    the dead ones are masked to 0 around it.

    ``add_to`` (an array of ``S``'s shape, any strides): ``add_to += softmax(S)``
    instead, adding only the weights that are not 0 where most are (adding a 0
    changes no number; only a ``-0`` would become ``+0``); returns ``add_to``.
    """
    return _softmax(S, add_to, by_key=False)


def softmax_columns(T, add_to):
    """``add_to += softmax_inplace(T.T)``, bit for bit, from the scores held one key per row.

    For a few keys per query, where NumPy's reductions along a row of ``S`` are slow and along the rows
    of its transpose fast: the column maxima, the passes of :func:`softmax_inplace`, and
    :func:`column_sums`.

    Parameters
    ----------
    T : ndarray, shape (r, m), ``r <= 128``
        The scores of ``m`` queries against ``r`` keys, transposed; overwritten.
    add_to : ndarray, shape (m, r)
        Any strides (a block of wider tokens).

    Returns
    -------
    ndarray
        ``add_to``.
    """
    return _softmax(T, add_to, by_key=True)


def _softmax(S, add_to, by_key):
    """:func:`softmax_inplace` (``by_key=False``: a query's scores in each row of ``S``) and
    :func:`softmax_columns` (``by_key=True``: in each column of the 2-D ``S``)."""
    S -= np.max(S, axis=0) if by_key else _row_max(S)
    dead = S < EXP_UNDERFLOW[S.dtype]
    count = np.count_nonzero(dead)
    if count > S.size * 3 // 4:
        live = np.flatnonzero(~dead)
        weights = np.exp(np.take(S, live))
        outer = live // S.shape[-1]
        inner = live - outer * S.shape[-1]
        queries, keys = (inner, outer) if by_key else (outer, inner)
        n_queries, r = S.shape[::-1] if by_key else (S.size // S.shape[-1], S.shape[-1])
        total = _sparse_totals(n_queries, r, queries, keys, weights)
        if total is not None:
            weights /= total[queries]
            if add_to is None:
                S.fill(0.0)
                np.put(S, live, weights)
                return S
            if S.ndim == 2:
                return add_at(add_to, queries, keys, weights)
            add_to[np.unravel_index(live, S.shape)] += weights
            return add_to
        S.fill(0.0)
        np.put(S, live, weights)
    elif count:
        # Multiplying by a 0/1 mask is several times faster than a masked copy; it turns a
        # score of -inf into nan, which the (rare) repair below sets to the 0 it should be.
        keep = np.subtract(1, dead, dtype=S.dtype)
        S *= keep
        np.exp(S, out=S)
        S *= keep
    else:
        np.exp(S, out=S)
    total = _totals(S, by_key)
    if count and np.isnan(total).any():
        np.copyto(S, 0.0, where=dead)
        total = _totals(S, by_key)
    S /= total
    if add_to is None:
        return S
    add_to += S.T if by_key else S
    return add_to


def _totals(S, by_key):
    """Each query's sum of weights, shaped to divide ``S`` by (:func:`_softmax`'s layouts)."""
    return column_sums(S) if by_key else np.sum(S, axis=-1, keepdims=True)


def _sparse_totals(n_rows, r, rows, cols, weights):
    """The sum of each of ``n_rows`` rows of ``r`` weights, as the sum over its whole row gives it, bit for
    bit, from its live ``weights`` only (at ``rows``, ``cols``; the others are 0); ``None`` where the rows are
    better summed in full.

    A row of one or two live weights sums them in any order to the same float (its zeros add nothing);
    a row of more is laid out in full and summed as the dense path sums it; when more than an eighth
    of the rows are such, ``None``. ``None`` too where a total is not finite (a score of +inf: the
    dense path then makes the whole row nan, as the reference does).
    """
    counts = np.bincount(rows, minlength=n_rows)
    total = np.bincount(rows, weights=weights, minlength=n_rows).astype(weights.dtype)
    many = counts > 2
    n_many = np.count_nonzero(many)
    if n_many > n_rows // 8:
        return None
    if n_many:
        crowded = many[rows]
        full = np.zeros((n_many, r), weights.dtype)
        full[(np.cumsum(many) - 1)[rows[crowded]], cols[crowded]] = weights[crowded]
        total[many] = np.sum(full, axis=-1)
    return total if np.isfinite(total).all() else None


def _esa_forward(queries, keys, values, gamma, rows):
    """The attention of each chunk of ``rows`` query rows."""
    m = queries.shape[-2]
    if m <= rows:
        return np.matmul(euclidean_softmax_weights(queries, keys, gamma), values)
    out = np.empty(queries.shape[:-1] + values.shape[-1:], np.result_type(queries, keys, values))
    for a in range(0, m, rows):
        out[..., a : a + rows, :] = np.matmul(euclidean_softmax_weights(queries[..., a : a + rows, :], keys, gamma),
                                              values)
    return out


def _esa_chunk_backward(queries, keys, values, G, gamma):
    """``(dQ, dK, dV)`` of one chunk of query rows (the formulas of :func:`euclidean_softmax_attention`)."""
    A = euclidean_softmax_weights(queries, keys, gamma)
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
    dQ, dK, dV = np.empty(queries.shape, np.result_type(queries, keys, values, G)), None, None
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
        Threads over the leading (task) axis (:class:`kmt_ref.kernels.pool.TaskPool`;
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
    gamma = float(gamma)  # a Python float keeps float32 operands float32 (a NumPy float64 would not)
    per_task = queries.shape[-2] * keys.shape[-2]
    return pool.over_tasks(lambda q, k, v: _esa_forward(q, k, v, gamma, rows), per_task, queries, keys, values)


def _esa_vjp(argnums, ans, args, kwargs):
    """VJP of :func:`euclidean_softmax_attention` for the requested arguments."""
    queries, keys, values, gamma, rows, *rest = args
    gamma, pool = float(gamma), rest[0] if rest else kwargs.get("pool", SERIAL)
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
    return pool.over_tasks(lambda z: affine(z, W, b), Z.shape[-2] * W.shape[0], Z)


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
def query_rows(Z, start, stop):
    """``Z[..., start:stop, :]`` for autograd: its gradient is the cotangent added into zeros by slice.

    The same numbers as autograd's generic gradient of indexing (``0 + g``),
    which goes through ``numpy.add.at`` and costs about 8% of a training step.
    """
    return Z[..., start:stop, :]


def _query_rows_vjp(ans, Z, start, stop):
    def vjp(g):
        out = np.zeros(np.shape(Z), np.result_type(Z, g))
        out[..., start:stop, :] += g
        return out

    return vjp


defvjp(query_rows, _query_rows_vjp)
