"""Attention on plain arrays (nothing traced): one chunk of queries against all keys, by mechanism.

The Euclidean hardmax ranks ``2 q.k - |k|^2`` and lets exact arithmetic decide
where rounding could; the linear normalization divides by the row sums in one
pass, streaming the keys when a few queries face many; the softmaxes reuse the
buffers of :mod:`kmt_ref.kernels.softmax`.
"""

import numpy as np

from ..attention import SCORES
from ..geometry import exact_nearest, score_rounding_bound
from .softmax import euclidean_softmax_weights, softmax_inplace

__all__ = ["plain_chunk", "linear_over_keys", "is_identity", "STREAM_ELEMENTS"]

#: Scores held at once by the plain-array paths when a query has many keys: a chunk of
#: 8 MB stays in the outer cache (measured 1.5-2x faster than ``CHUNK_ELEMENTS`` for the
#: all-attention layer's point-to-point blocks, with the same numbers).
STREAM_ELEMENTS = 2**20


def _euclidean_hardmax(queries, keys, values):
    """Mean of the values of each query's nearest keys (sum over the arg-max set / its size).

    ``values=None`` stands for the identity (the result is then the weights).

    Scores ``2 k.q - |k|^2`` are laid out keys by queries, so that the maximum
    and the count over keys are element-wise operations between rows.
    """
    St = np.matmul(2.0 * keys, np.swapaxes(queries, -1, -2))  # (..., r, m); doubling is exact
    St -= np.sum(keys * keys, axis=-1)[..., :, None]
    top = np.max(St, axis=-2)
    best = St == top[..., None, :]
    if St.shape[-2] > 1:
        # Where a query's two best keys are closer than the scores' rounding, exact arithmetic decides
        # (as nearest_center does for Lloyd's algorithm): rounding never picks the arg-max set. The
        # runner-up is the best score left once the best ones are masked (a tie at the top is close
        # anyway): two reductions between rows, where a partition along the key axis is strided.
        tied = np.sum(best, axis=-2) > 1
        np.putmask(St, best, -np.inf)  # St is this chunk's own array, not needed after this
        batch = St.shape[:-2]
        q = np.broadcast_to(queries, batch + queries.shape[-2:])
        k = np.broadcast_to(keys, batch + keys.shape[-2:])
        close = tied | (top - np.max(St, axis=-2) <= score_rounding_bound(q, k))
        for index in zip(*np.nonzero(close), strict=True):
            task = index[:-1]
            best[task + (slice(None), index[-1])] = exact_nearest(q[index], k[task])
    count = np.sum(best, axis=-2)[..., :, None]  # (..., m, 1)
    members = np.swapaxes(best, -1, -2).astype(float)
    return (members if values is None else np.matmul(members, values)) / count


def _check_nonnegative(scores):
    if np.any(scores < 0):
        raise ValueError("linear attention needs non-negative scores; got a negative score")


def _linear(scores, values):
    """Non-negative scores over their row sums (an all-zero row: uniform), times the values."""
    _check_nonnegative(scores)
    total = np.sum(scores, axis=-1, keepdims=True)
    if np.all(total > 0):
        scores /= total  # in place: the scores are this chunk's own array
    else:
        scores = np.where(total > 0, scores / np.where(total > 0, total, 1.0), 1.0 / scores.shape[-1])
    return np.matmul(scores, values)


def linear_over_keys(queries, keys, values, score):
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
            out[i] = linear_over_keys(q[i], k[i], v[i], score)
        return out
    step = max(1, STREAM_ELEMENTS // queries.shape[0])
    # Identity queries (the centers' ids reading the points' assignments in CAC): each dot score is a
    # key's coordinate, so the k x n x k product is a transpose (the same numbers).
    ids = score == "dot" and is_identity(queries)
    num, total = 0.0, 0.0
    for b in range(0, keys.shape[0], step):
        s = np.ascontiguousarray(keys[b : b + step].T) if ids else SCORES[score](queries, keys[b : b + step])
        _check_nonnegative(s)
        num = num + np.matmul(s, values[b : b + step])
        total = total + np.sum(s, axis=-1, keepdims=True)
    if np.all(total > 0):
        return num / total
    # An all-zero row attends uniformly.
    return np.where(total > 0, num / np.where(total > 0, total, 1.0), np.mean(values, axis=-2, keepdims=True))


def is_identity(values):
    """Whether ``values`` is one identity matrix (the ids I_k that CAX reads): ``W @ I = W`` exactly."""
    return values.ndim == 2 and values.shape[0] == values.shape[1] and np.array_equal(values, np.eye(len(values)))


def plain_chunk(q, keys, values, block, norm, extra, identity):
    """One chunk of queries against all keys, plain arrays."""
    if block.score == "euclidean" and block.normalizer == "hardmax":
        return _euclidean_hardmax(q, keys, None if identity else values)
    if block.score == "euclidean" and block.normalizer == "softmax" and not block.params:
        weights = euclidean_softmax_weights(q, keys, block.gamma)
        return weights if identity else np.matmul(weights, values)
    if block.score == "dot" and block.normalizer == "softmax" and not block.params:
        S = np.matmul(q, np.swapaxes(keys, -1, -2))  # gamma * scores, then softmax, in one buffer
        S *= block.gamma
        weights = softmax_inplace(S)
        return weights if identity else np.matmul(weights, values)
    s = SCORES[block.score](q, keys)
    if norm.uses_gamma:
        s = block.gamma * s
    if block.normalizer == "linear":
        return _linear(s, values)
    if norm.average is not None:
        return norm.average(s, values)
    return np.matmul(norm.fn(s, **extra), values)
