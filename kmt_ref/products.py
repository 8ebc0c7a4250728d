"""The two products of attention, the same on every CPU: a query's scores for the keys, and the weights
times the values.

Scores (``gamma`` is applied by :func:`~kmt_ref.attention.attend`): ``"euclidean"``, ``-||q - k||^2``, and
``"dot"``, ``q . k`` (``SCORES``). A normalizer that decides (an arg-max, a support) ranks
:func:`fixed_order_scores`, summed coordinate by coordinate in one order, never a BLAS product whose
rounding depends on the machine's kernel. The weights times the values are :func:`rows_product`, in which
equal rows of weights give equal rows (two centers that average the same points come out equal, so a tie
that exact arithmetic has stays a tie).
"""

import autograd.numpy as anp
import numpy as np

from .geometry import squared_distances

__all__ = ["SCORES", "euclidean_scores", "dot_scores", "fixed_order_scores", "rows_product"]


def euclidean_scores(A, B):
    """Negative squared distances ``-||a_i - b_j||^2``, shape (..., m, r)."""
    return -squared_distances(A, B)


def dot_scores(A, B):
    """Dot products ``a_i . b_j``, shape (..., m, r)."""
    return anp.matmul(A, anp.swapaxes(B, -1, -2))


SCORES = {"euclidean": euclidean_scores, "dot": dot_scores}


#: Most (query, key) scores :func:`fixed_order_scores` holds at once.
FIXED_ORDER_ELEMENTS = 2**20


def fixed_order_scores(score, A, B):
    """``SCORES[score](A, B)`` summed coordinate by coordinate, in one order, without BLAS: shape (..., m, r).

    A BLAS product sums a score's terms in an order that depends on the CPU's kernel and on where the
    row lies in the product, so the same query and key can score an ulp apart in two places, or on two
    machines. Here every score is ``((t_1 + t_2) + t_3) + ...`` with ``t_i = a_i b_i`` (``"dot"``) or
    ``-(a_i - b_i)^2`` (``"euclidean"``, the direct form), each term rounded on its own: equal queries and
    keys give equal scores, and the same scores on every CPU, in both engines and in any chunking. The
    normalizers whose weights are a decision (``Normalizer.fixed_order``) rank these.
    """
    A, B = np.asarray(A), np.asarray(B)
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    m, r = A.shape[-2], B.shape[-2]
    out = np.zeros(batch + (m, r), dtype=np.result_type(A, B, float))
    rows = max(1, FIXED_ORDER_ELEMENTS // max(1, r * int(np.prod(batch, dtype=int))))
    for a in range(0, m, rows):
        part, Ap = out[..., a : a + rows, :], A[..., a : a + rows, :]
        for i in range(A.shape[-1]):
            if score == "dot":
                part += Ap[..., :, None, i] * B[..., None, :, i]
            else:
                t = Ap[..., :, None, i] - B[..., None, :, i]
                part -= t * t
    return out


def _row_groups(W):
    """For a plain 2-D ``W``: ``(first, inverse)`` with ``W[first][inverse] == W`` and one entry of ``first`` for
    each distinct row, or None when every row is distinct.

    Rows are keyed by two exact functions of their entries, the bits of their sum (one reduction, the same
    for every row) and the place of their first non-zero entry, mixed into one number, then compared whole
    with their key's first row: rows that share a key but differ stay apart.
    """
    m, r = W.shape
    if m < 2 or r == 0:
        return None
    total = np.sum(W, axis=-1).astype(np.float64) + 0.0  # + 0.0: a sum of -0 is keyed as 0, its equal under ==
    lead = np.argmax(W != 0, axis=-1).astype(np.uint64)
    key = total.view(np.uint64) ^ (lead * np.uint64(0x9E3779B97F4A7C15))  # wraps; a shared key is checked
    _, lowest, group = np.unique(key, return_index=True, return_inverse=True)
    if len(lowest) == m:
        return None
    group = group.ravel()
    rep = lowest[group]
    if np.all(W == W[rep]):  # the usual case: rows that share a key are equal
        first = np.flatnonzero(rep == np.arange(m))
        return first, np.searchsorted(first, rep)
    first, inverse, seen = [], np.empty(m, dtype=np.intp), {}
    for i, g in enumerate(group):
        slots = seen.setdefault(g, [])
        inverse[i] = next((s for s in slots if np.array_equal(W[i], W[first[s]])), len(first))
        if inverse[i] == len(first):
            slots.append(len(first))
            first.append(i)
    return None if len(first) == m else (np.array(first), inverse)


def rows_product(W, V):
    """``W @ V`` (..., m, r) x (..., r, D'), with equal rows of ``W`` giving equal rows.

    A mean over the same weights does not depend on which row asks for it: two centers that average the
    same points with the same weights must come out equal, or a tie that exact arithmetic has would be
    undone by where BLAS's kernel rounds each row. Each distinct row's product is copied to its equals
    (plain arrays, a task at a time; where most rows repeat, only the distinct ones are multiplied);
    traced arrays are multiplied as they are.
    """
    if type(W) is not np.ndarray or type(V) is not np.ndarray:
        return anp.matmul(W, V)
    batch = np.broadcast_shapes(W.shape[:-2], V.shape[:-2])
    if batch:
        Wb, Vb = np.broadcast_to(W, batch + W.shape[-2:]), np.broadcast_to(V, batch + V.shape[-2:])
        out = np.empty(batch + (W.shape[-2], V.shape[-1]), dtype=np.result_type(W, V))
        for i in np.ndindex(*batch):
            out[i] = rows_product(Wb[i], Vb[i])
        return out
    groups = _row_groups(W)
    if groups is None:
        return np.matmul(W, V)
    first, inverse = groups
    if 2 * len(first) <= W.shape[0]:
        return np.matmul(W[first], V)[inverse]
    return np.matmul(W, V)[first][inverse]
