"""Attention on plain arrays (nothing traced): one chunk of queries against all keys, by mechanism.

The Euclidean hardmax finds each query's nearest keys as Lloyd's algorithm
finds nearest centers, exactly; a layer adds a hardmax whose values are the
ids as one-hot rows where they are 1, without making the weights, and a
softmax's live weights only where most are 0 (over a few keys, computed one
key per row). The linear normalization
divides by the row sums in one pass, streaming the keys when a few queries
face many; the softmaxes reuse the buffers of :mod:`kmt_ref.kernels.softmax`.
"""

import numpy as np

from ..attention import block_scores, check_linear_scores, linear_average
from ..geometry import ASSIGN_ELEMENTS, _nearest_center
from ..normalizers import mean_of_rows
from ..products import fixed_order_scores, rows_product
from .softmax import add_at, euclidean_scores, softmax_columns, softmax_inplace

__all__ = ["plain_chunk", "linear_over_keys", "is_identity", "euclidean_hardmax", "add_euclidean_hardmax",
           "add_members", "tie_shares", "hardmax_members", "dot_hardmax_members", "query_sizes", "max_members",
           "STREAM_ELEMENTS", "FEW_KEYS", "FEW_SOFTMAX_KEYS"]

#: Scores held at once by the plain-array paths when a query has many keys: a chunk of
#: 8 MB stays in the outer cache (measured 1.5-2x faster than ``CHUNK_ELEMENTS`` for the
#: all-attention layer's point-to-point blocks, with the same numbers).
STREAM_ELEMENTS = 2**20

#: Up to this many keys, :func:`hardmax_members` finds the arg-max sets with one key per row (measured 1.3-2.5x
#: faster at 4-16 keys, 1.2x at 32, slower at 64).
FEW_KEYS = 32

#: Up to this many keys, a softmax added into tokens is computed with one key per row
#: (:func:`~kmt_ref.kernels.softmax.softmax_columns`): measured per chunk 0.7-1.0x the time at 4-56 keys,
#: 0.9-1.15x at 64 and up to 1.5x at 100.
FEW_SOFTMAX_KEYS = 56


def _nearest_keys(queries, keys):
    """Each query's nearest key, as exact arithmetic decides, and the exact ties: :func:`nearest_center` on
    the queries as points and the keys as centers (broadcast to one batch shape)."""
    batch = np.broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
    q, k = (np.broadcast_to(a, batch + a.shape[-2:]) for a in (queries, keys))
    return _nearest_center(q, k, ties=True)


def euclidean_hardmax(queries, keys, values):
    """Mean of the values of each query's nearest keys (:func:`~kmt_ref.normalizers.mean_over` of the arg-max set).

    ``values=None`` stands for the identity (the result is then the weights).
    Ranking ``-||q - k||^2`` is finding the nearest key: the arg-max set is
    the one exact arithmetic gives (:func:`~kmt_ref.geometry.nearest_center`,
    which Lloyd's algorithm uses too), never one that rounding picked. A query
    with one nearest key copies its value row; a tie averages the tied rows.
    """
    labels, tied = _nearest_keys(queries, keys)
    if values is None:
        members = np.zeros(labels.shape + keys.shape[-2:-1])
        np.put_along_axis(members, labels[..., None], 1.0, axis=-1)
        for index, nearest in tied.items():
            members[index] = nearest / np.count_nonzero(nearest)
        return members
    values = np.broadcast_to(values, labels.shape[:-1] + values.shape[-2:])
    out = np.take_along_axis(values, labels[..., None], axis=-2)
    for index, nearest in tied.items():
        out[index] = mean_of_rows(values[index[:-1]], nearest)
    return out


def tie_shares(tied):
    """One task's exact ties (``{(point,): mask of its nearest keys}``, as ``nearest_center(..., ties=True)``
    gives them) as hardmax rows: ``{point: an equal share of each nearest key}``."""
    return {i: nearest / np.count_nonzero(nearest) for (i,), nearest in tied.items()}


def add_euclidean_hardmax(out, queries, keys):
    """``out += euclidean_hardmax(queries, keys, None)`` for one task (2-D arrays), adding at each query's
    nearest keys only (:func:`add_members`). No (m, r) weights are made."""
    labels, tied = _nearest_keys(queries, keys)
    return add_members(out, labels, tie_shares(tied))


def add_members(out, labels, shared):
    """``out += W`` for one task's hardmax weights ``W`` (m, r) given as :func:`hardmax_members` gives them:
    1 at ``labels[i]`` in every row but the ``shared`` ones, whose rows are added whole. The other weights
    are zeros, and adding a zero changes no number (only a ``-0`` would become ``+0``)."""
    alone = np.ones(len(labels), dtype=bool)
    for i, weights in shared.items():
        alone[i] = False
        out[i] += weights
    rows = np.flatnonzero(alone)
    add_at(out, rows, labels[rows], 1.0)
    return out


def max_members(t):
    """The arg-max set of every column of ``t`` (..., k, m), written over ``t`` as 1.0 and 0.0, with each
    column's first arg-max and the size of its set (k <= 53).

    For scores held one key per row (NumPy's reductions along a short row are slow, along many rows
    fast): the column maxima, one comparison, and one product with the rows ``2^(k-1), ..., 2, 1`` and
    ``1, ..., 1``. The first gives ``sum 2^(k-1-j)`` over the set, exact, whose highest bit is the
    first member; the second counts them. A column with a nan has no member: count 0 and first ``k``.
    """
    k = t.shape[-2]
    np.equal(t, np.max(t, axis=-2)[..., None, :], out=t, casting="unsafe")
    found = np.matmul(np.stack([2.0 ** np.arange(k - 1, -1, -1), np.ones(k)]), t)  # float64: exact to k = 53
    return k - np.frexp(found[..., 0, :])[1], found[..., 1, :]


def hardmax_members(scores):
    """The hardmax of one task's scores (m, r) as its members: each row's first arg-max ``labels`` (m,) and
    ``{row: its weights (r,)}`` for every row with more than one maximum (the mean over them) or a nan
    (nan weights, as ``0 / 0``): :func:`~kmt_ref.normalizers.hardmax_average`'s weights, without the zeros.

    Up to ``FEW_KEYS`` keys the scores are transposed, one key per row, for :func:`max_members`.
    """
    if scores.shape[-1] <= FEW_KEYS:
        mask = np.ascontiguousarray(scores.T)
        labels, count = max_members(mask)
        mask = mask.T
    else:
        labels = np.argmax(scores, axis=-1)
        mask = scores == np.take_along_axis(scores, labels[:, None], axis=-1)
        count = np.count_nonzero(mask, axis=-1)
    odd = np.flatnonzero(count != 1)
    with np.errstate(invalid="ignore"):
        return labels, {int(i): mask[i] / count[i] for i in odd}


def dot_hardmax_members(queries, keys, sizes=None):
    """:func:`hardmax_members` of the dot scores :func:`~kmt_ref.products.fixed_order_scores` gives, the
    same members, from BLAS's faster product where rounding cannot decide.

    A dot score of ``D`` terms summed in any order (BLAS's, with or without fused multiply-adds, or
    the fixed one) is within ``gamma_D sum_i |q_i k_i|`` of the exact one, ``gamma_D = D u / (1 - D u)``,
    and ``sum_i |q_i k_i| <= |q|_1 max |k|``. So where a query's best product score leads its runner-up
    by more than four such bounds, the fixed-order scores have the same unique arg-max; the other
    queries (and any with a non-finite score) are scored in the fixed order and decided by it. The
    bound used is ``4 (D + 2) eps |q|_1 max |k|``, twice what is needed, plus ``4 D`` of the smallest
    subnormal (a product that underflows errs by up to half of it). Chunks of queries stay in
    a core's cache. One task: ``queries`` (m, D), ``keys`` (r, D); ``sizes``: the queries' ``|q|_1``
    (m,), for a caller that ranks the same queries again and again (default: computed here).
    """
    m, r = queries.shape[0], keys.shape[0]
    D = queries.shape[-1]
    labels = np.empty(m, dtype=np.intp)
    shared = {}
    scale = 4.0 * (D + 2) * np.finfo(float).eps * (np.max(np.abs(keys)) if keys.size else 0.0)
    tiny = 4.0 * D * np.finfo(float).smallest_subnormal
    few = r <= FEW_KEYS
    index_count = np.stack([np.arange(r), np.ones(r)]).astype(np.float32) if few else None  # exact
    if sizes is None:
        sizes = query_sizes(queries)
    rows = max(1, ASSIGN_ELEMENTS // max(1, r))
    for a in range(0, m, rows):
        q = queries[a : a + rows]
        with np.errstate(invalid="ignore", over="ignore"):
            bound = sizes[a : a + rows] * scale + tiny
            if few:  # one key per row: the keys within the bound of the best, marked in float32, counted
                s = np.matmul(keys, q.T)
                top = np.max(s, axis=0)
                marks = np.empty(s.shape, dtype=np.float32)
                np.greater_equal(s, top - bound, out=marks, casting="unsafe")
                found = np.matmul(index_count, marks)
                best = found[0].astype(np.intp)
                decided = (found[1] == 1) & np.isfinite(top)
            else:
                s = np.matmul(q, keys.T)
                best = np.argmax(s, axis=-1)
                top = np.take_along_axis(s, best[:, None], axis=-1)[:, 0]
                np.put_along_axis(s, best[:, None], -np.inf, axis=-1)
                decided = top - np.max(s, axis=-1) > bound
        undecided = np.flatnonzero(~decided)
        labels[a : a + rows] = best
        if undecided.size:
            exact, odd = hardmax_members(fixed_order_scores("dot", q[undecided], keys))
            labels[a + undecided] = exact
            shared.update({int(a + undecided[i]): w for i, w in odd.items()})
    return labels, shared


def query_sizes(queries):
    """``|q|_1`` of every query (..., m): what :func:`dot_hardmax_members` bounds its rounding by (a
    product's rounding of it is within the bound's slack)."""
    m, D = queries.shape[-2:]
    sizes = np.empty(queries.shape[:-1])
    rows = max(1, ASSIGN_ELEMENTS // D)
    part = np.empty((min(rows, m), D))  # a chunk's |q| in cache, not a copy of all the queries
    with np.errstate(over="ignore"):
        for task in np.ndindex(queries.shape[:-2]):
            for a in range(0, m, rows):
                c = min(rows, m - a)
                np.abs(queries[task][a : a + c], out=part[:c])
                np.matmul(part[:c], np.ones(D), out=sizes[task][a : a + c])
    return sizes


def _linear(scores, values):
    """Non-negative scores over their row sums, times the values (an all-zero row: the values' mean,
    :func:`~kmt_ref.attention.linear_average`)."""
    return linear_average(scores, values)


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
    # Identity queries (the centers' ids reading the points' assignments in CAC): each dot score is a
    # key's coordinate, so the k x n x k product is a transpose, which the product reads as it lies;
    # its three passes (check, product, sum) over each chunk then run in a core's cache.
    ids = score == "dot" and is_identity(queries)
    step = max(1, (ASSIGN_ELEMENTS if ids else STREAM_ELEMENTS) // queries.shape[0])
    # Each chunk's scores get a last row of ones: the values' sum, in the same product as a row of a center
    # that holds the chunk's every point (attention.linear_average), for a row whose scores are all 0.
    num, total = 0.0, 0.0
    for b in range(0, keys.shape[0], step):
        part = keys[b : b + step]
        s = np.empty((queries.shape[0] + 1, part.shape[0]))
        s[:-1] = part.T if ids else fixed_order_scores(score, queries, part)
        s[-1] = 1.0
        check_linear_scores(s)
        num = num + rows_product(s, values[b : b + step])
        total = total + np.sum(s[:-1], axis=-1, keepdims=True)
    empty = total == 0
    if not np.any(empty):
        return num[:-1] / total
    return np.where(empty, num[-1:] / keys.shape[0], num[:-1] / np.where(empty, 1.0, total))


def is_identity(values):
    """Whether ``values`` is one identity matrix (the ids I_k that CAX reads): ``W @ I = W`` exactly."""
    return values.ndim == 2 and values.shape[0] == values.shape[1] and np.array_equal(values, np.eye(len(values)))


def plain_chunk(q, keys, values, block, norm, extra, identity, add_to=None):
    """One chunk of queries against all keys, plain arrays (the Euclidean hardmax is :func:`euclidean_hardmax`,
    which makes its own chunks). ``add_to``: add the output into it instead (and return it); a softmax
    with the ids as values then adds only its weights that are not 0."""
    if block.normalizer == "softmax" and not block.params and block.score in ("euclidean", "dot"):
        if identity and add_to is not None and add_to.ndim == keys.ndim == 2 and keys.shape[-2] <= FEW_SOFTMAX_KEYS:
            return softmax_columns(_scores_by_key(q, keys, block), add_to)
        if block.score == "euclidean":
            S = euclidean_scores(q, keys, block.gamma)
        else:
            S = np.matmul(q, np.swapaxes(keys, -1, -2))  # gamma * scores, then softmax, in one buffer
            S *= block.gamma
        if identity:
            return softmax_inplace(S, add_to)
        out = np.matmul(softmax_inplace(S), values)
    elif identity and add_to is not None and add_to.ndim == 2 and block.normalizer == "hardmax":
        return add_members(add_to, *(dot_hardmax_members(q, keys) if block.score == "dot"
                                     else hardmax_members(block_scores(block, q, keys))))
    else:
        out = _other_chunk(q, keys, values, block, norm, extra, identity)
    if add_to is None:
        return out
    add_to += out
    return add_to


def _scores_by_key(q, keys, block):
    """The softmax's scores of :func:`plain_chunk` transposed, one key per row (r, m): the same numbers.

    The product is taken as :func:`plain_chunk` takes it and then transposed: BLAS's product in the
    other order (``keys @ q.T``) rounds the last few queries of a chunk differently.
    """
    S = np.ascontiguousarray(np.matmul(q, keys.T).T)
    if block.score == "euclidean":
        S *= 2.0 * block.gamma
        S -= (block.gamma * np.sum(keys * keys, axis=-1))[:, None]
    else:
        S *= block.gamma
    return S


def _other_chunk(q, keys, values, block, norm, extra, identity):
    """:func:`plain_chunk` for the normalizers that have no fused path."""
    s = block_scores(block, q, keys)
    if norm.uses_gamma:
        s = block.gamma * s
    if block.normalizer == "linear":
        return _linear(s, values)
    if norm.average is not None:
        return norm.average(s, None if identity else values)
    return (rows_product if norm.fixed_order else np.matmul)(norm.fn(s, **extra), values)
