"""What a run of a :class:`~kmt_ref.layer.KMeansTransformer` does around its layers: the frame it measures
the data from, the check that its point self-attention can tell the points apart, and the labels it reads
back from the tokens.

None of this is the layer's mathematics (:func:`kmt_ref.layer.transformer_layer`): it is how a run keeps
float64 faithful to it (a shift that rounds nothing, a warning where rounding decides) and reports it.
"""

import warnings

import numpy as np

from .geometry import ASSIGN_ELEMENTS, _nearest_center, closest_distinct_pair
from .kernels.plain import FEW_KEYS, max_members

__all__ = []  # helpers of KMeansTransformer.run, not an interface of their own


def _column_stats(X, width=64):
    """The lower median, the minimum and the maximum of every coordinate of ``X`` (..., n, d), each (..., d).

    ``width`` columns at a time (a sorted copy of all of ``X`` would double the run's memory), each
    transposed into contiguous rows a cache-sized block at a time: one strided column at a time would
    read all of ``X`` once per column.
    """
    n = X.shape[-2]
    m = (n - 1) // 2
    rows = max(1, ASSIGN_ELEMENTS // width)
    stats = []
    for j in range(0, X.shape[-1], width):
        block = X[..., j : j + width]
        cols = np.empty(X.shape[:-2] + (block.shape[-1], n))
        for a in range(0, n, rows):
            cols[..., a : a + rows] = np.swapaxes(block[..., a : a + rows, :], -1, -2)
        low, high = np.min(cols, axis=-1), np.max(cols, axis=-1)
        cols.partition(m, axis=-1)
        stats.append((cols[..., m], low, high))
    return tuple(np.concatenate(parts, axis=-1) for parts in zip(*stats, strict=True))


def _nearest_of_finite(X, C):
    """The nearest center of every point of the tasks whose centers are finite, 0 for a task that diverged
    (a run with ``diverged="return"`` reports it instead of refusing it)."""
    finite = np.all(np.isfinite(C), axis=(-2, -1))
    if np.all(finite):
        return _nearest_center(X, C)
    labels = np.zeros(X.shape[:-1], dtype=np.intp)
    if X.ndim == 3 and np.any(finite):
        labels[finite] = _nearest_center(X[finite], C[finite])
    return labels


def _first_not_nearest(X, centers, labels):
    """The first ``(layer, task, point, label, nearest)`` where a run's label is not the nearest of the centers
    it returns, in the given coordinates ``X`` (..., n, d) (``centers`` (L + 1, ..., k, d), ``labels`` (L, ...,
    n)), or None. A task whose centers are not finite is skipped (it diverged, which the run reports)."""
    for t in range(labels.shape[0]):
        C = centers[t]
        finite = np.all(np.isfinite(C), axis=(-2, -1))
        nearest = _nearest_of_finite(X, C)
        wrong = (nearest != labels[t]) & finite[..., None]
        if np.any(wrong):
            index = tuple(int(a) for a in np.argwhere(wrong)[0])
            return (t, index[0] if len(index) == 2 else None, index[-1], int(labels[t][index]), int(nearest[index]))
    return None


def _labels(Y, ties=False):
    """The arg-max of every row of an assignment block ``Y`` (..., n, k) and whether all of it is finite;
    with ``ties``, also whether each row's largest entry is below 1 (..., n): for the rows a hardmax wrote
    into a reset block, exactly the rows it shared between tied keys (``1/m`` each), read at the arg-max
    without another pass over the block.

    A cache-sized chunk of rows at a time: NumPy's arg-max of a block of wider tokens is several times
    slower in one call; up to ``FEW_KEYS`` centers, a chunk transposed for ``max_members``.
    """
    labels = np.empty(Y.shape[:-1], dtype=np.intp)
    tied = np.zeros(Y.shape[:-1], dtype=bool) if ties else None
    finite = True
    rows = max(1, ASSIGN_ELEMENTS // Y.shape[-1])
    for a in range(0, Y.shape[-2], rows):
        part = Y[..., a : a + rows, :]
        if Y.shape[-1] > FEW_KEYS:
            labels[..., a : a + rows] = np.argmax(part, axis=-1)
            finite = finite and bool(np.isfinite(part).all())
            if ties:
                tied[..., a : a + rows] = _below_one(part, labels[..., a : a + rows])
            continue
        t = np.ascontiguousarray(np.swapaxes(part, -1, -2))  # one center per row
        finite = finite and bool(np.isfinite(np.min(t)) and np.isfinite(np.max(t)))
        first, count = max_members(t)
        labels[..., a : a + rows] = first
        if not finite:  # a row with a nan: its first nan, as np.argmax says
            nan = count == 0
            labels[..., a : a + rows][nan] = np.argmax(part[nan], axis=-1)
        if ties:
            tied[..., a : a + rows] = _below_one(part, labels[..., a : a + rows])
    return (labels, finite, tied) if ties else (labels, finite)


def _below_one(part, labels):
    """Whether each row's entry at ``labels`` is below 1 (a nan is not)."""
    return np.take_along_axis(part, labels[..., None], axis=-1)[..., 0] < 1.0


def _check_resolution(model, X, origin=0.0):
    """Warn when two distinct points of a task (``X`` as the run measures it, from ``origin``) are closer than
    ``model.resolution`` says its point self-attention can tell apart (no resolution: nothing to check)."""
    if model.resolution is None:
        return
    origin = np.broadcast_to(origin, X.shape[:-2] + (1, X.shape[-1]))
    tasks = [("", X, origin)] if X.ndim == 2 else [(f" of task {b}", X[b], origin[b]) for b in range(len(X))]
    for where, Xb, ob in tasks:
        pair, limit = closest_distinct_pair(Xb), model.resolution(Xb)
        if pair is not None and pair[2] < limit:
            i, l, sq = pair
            warnings.warn(f"{model.name}: the points {i} and {l}{where} ({(Xb[i] + ob[0]).tolist()} and "
                          f"{(Xb[l] + ob[0]).tolist()}) are distinct, but their squared distance {sq:.3g} is below "
                          f"{limit:.3g}, what the point self-attention (SAX) can resolve: where they are assigned to "
                          "different centers it resets each with the other's assignment, and the run need not equal "
                          "its classical algorithm", stacklevel=3)
            return
