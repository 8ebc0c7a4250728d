"""What a run of a :class:`~kmt_ref.layer.KMeansTransformer` does around its layers: the frame it measures
the data from (``choose_frame``), the labels it reads back from the tokens, and the centers shifted back
to the data's coordinates (``shift_back``).

None of this is the layer's mathematics (:func:`kmt_ref.layer.transformer_layer`): it is how a run keeps
float64 faithful to it (a shift that rounds nothing, a warning where rounding decides) and reports it.
"""

import numpy as np

from .geometry import ASSIGN_ELEMENTS, _nearest_center
from .kernels.plain import FEW_KEYS, max_members
from .trajectory import Trajectory

__all__ = []  # helpers of KMeansTransformer.run, not an interface of their own


def choose_frame(model, X, C):
    """``(X - origin, origin)``: for a translation-invariant model, the data measured from the coordinate-wise
    lower median of ``X`` (a data value: integer data stay integers, exact ties stay exact) in every
    coordinate where that shift is exact (elsewhere 0), so that it moves no decision; else ``(X, None)``.

    Sterbenz: ``x - o`` is exact for ``o/2 <= x <= 2o``. Where some value (of ``X`` or of the centers ``C``)
    is outside, the coordinate reaches zero and needs no shift for precision. ``X`` is the run's validated
    copy, moved in place.
    """
    if not model.translation_invariant:
        return X, None
    origin, lo, hi = _column_stats(X)
    lo = np.minimum(lo, np.min(C, axis=-2))
    hi = np.maximum(hi, np.max(C, axis=-2))
    exact = np.where(origin > 0, (lo >= origin / 2) & (hi <= 2 * origin), (hi <= origin / 2) & (lo >= 2 * origin))
    origin = np.where(exact, origin, 0.0)[..., None, :]
    X -= origin
    return X, origin


def shift_back(moved, C, origin):
    """The trajectory in the data's coordinates: the run's centers plus ``origin``, the first centers ``C``
    exactly as given (``origin`` None: no frame was chosen, ``moved`` is in the data's coordinates)."""
    if origin is None:
        return moved
    centers = moved.centers + origin
    centers[0] = C
    return Trajectory(centers=centers, labels=moved.labels, assignments=moved.assignments)


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
