"""Squared Euclidean distances, the one primitive every algorithm here shares.

Classical algorithms and the Euclidean attention score use this same function,
so the hard assignments of a transformer at ``gamma = inf`` and of Lloyd's
algorithm are computed from identical numbers.
"""

from fractions import Fraction
from typing import NamedTuple

import autograd.numpy as anp
import numpy as np
import scipy.sparse
from scipy.spatial import cKDTree

from ._validation import _as_float_array, check_batch, check_bool, check_centers, is_batch

__all__ = ["squared_distances", "center_distances", "nearest_center", "point_frame", "PointFrame", "exact_nearest",
           "closest_distinct_pair", "cluster_sums", "CHUNK_ELEMENTS", "ASSIGN_ELEMENTS", "NEAREST_ELEMENTS",
           "FEW_CENTERS"]

#: Largest number of (query, key) pairs held in memory at once by the chunked
#: routines (about 32 MB of float64).
CHUNK_ELEMENTS = 2**22
#: Scores per chunk of the kernels that reduce an assignment block a chunk of rows at a time (512 KB of
#: float64, within a core's cache, where passes over them run about twice as fast as from memory).
ASSIGN_ELEMENTS = 2**16
#: (point, center) scores per chunk of :func:`nearest_center` (2 MB of float64). A chunk costs a dozen NumPy calls
#: besides the passes over its scores, and with padded rows (``SCORE_PAD``) the passes stay fast in the shared
#: cache (measured at n = 1e6, k = 16 and 64, d = 2 and 16, 1.1-1.3x faster than chunks of ``ASSIGN_ELEMENTS``).
NEAREST_ELEMENTS = 2**18
#: Points of a chunk that :func:`nearest_center`, measuring from 0, may leave to exact arithmetic before it measures
#: the chunk again from the first center (a point far from 0 makes its scores' rounding large): about what
#: scoring a chunk again costs.
UNDECIDED = 8
#: Up to this many centers, :func:`nearest_center` scores them transposed, one center per row, and finds each
#: point's nearest by passes over the rows (measured at n = 1e5: 1.5-2x faster at k <= 32 and d <= 16, 1.1-1.5x
#: at k = 64, as fast at k = 128).
FEW_CENTERS = 64
#: Unused numbers after each row of a chunk's scores (rows of a power of two bytes, as k = 32, 64 or 128 centers
#: of 2^16 scores make, map to the same cache sets, and BLAS writes such scores about twice as slowly).
SCORE_PAD = 8


def squared_distances(A, B):
    """All pairwise squared distances ``||a_i - b_j||^2``.

    Uses the expansion ``|a|^2 + |b|^2 - 2 a.b`` (one matrix product, so it is
    fast), clipped at zero against rounding. Works on ``autograd`` arrays and on
    stacks of matrices (leading batch axes broadcast).

    Parameters
    ----------
    A : ndarray, shape (..., m, D)
    B : ndarray, shape (..., r, D)

    Returns
    -------
    ndarray, shape (..., m, r)
    """
    a2 = anp.sum(A * A, axis=-1)[..., :, None]  # (..., m, 1)
    b2 = anp.sum(B * B, axis=-1)[..., None, :]  # (..., 1, r)
    cross = anp.matmul(A, anp.swapaxes(B, -1, -2))  # (..., m, r)
    return anp.maximum(a2 + b2 - 2.0 * cross, 0.0)


def center_distances(X, C):
    """:func:`squared_distances` of points to centers, measured from the first center.

    The same numbers in exact arithmetic; in float64 the expansion's rounding
    is then at the scale of the data's spread, not of its distance from the
    origin (see :func:`nearest_center`). ``X`` (..., n, d) and ``C`` (..., k,
    d): each task of a stack is measured from its own first center; works on
    ``autograd`` arrays.
    """
    origin = C[..., :1, :]
    return squared_distances(X - origin, C - origin)


def _score_bound(d, c, x):
    """Per point, a bound on how far two rounded scores ``|c|^2 - 2 x.c`` can be from their exact difference.

    From the dimension ``d``, the largest center norm ``c`` (..., 1) and the
    point norms ``x`` (..., m), points and centers measured from the same
    reference. Each score is a sum of ``d + 1`` products and rounds by at
    most ``(d + 2) eps (|c|^2 + 2 |x| |c|)``; the bound is twice the largest
    over the centers, with a factor 2 to spare.
    """
    return 4.0 * (d + 2) * np.finfo(float).eps * (c * c + 2.0 * x * c)


def exact_nearest(x, C):
    """Which centers are nearest to the point ``x`` in exact arithmetic: a boolean mask of shape (k,).

    For the few points whose two best rounded scores are closer than their
    rounding: first the direct distances ``sum (x - c)^2`` (relative error at
    most ``(d + 2) eps``); where those cannot separate the best centers, the
    difference of two candidates' squared distances,
    ``(b - a).(2x - a - b)``, whose error is relative to its own terms (it
    decides between two centers that have nearly met, for which every point
    is nearly tied); and where that cannot either, exact rational arithmetic
    on the candidates. Centers that are the same point tie without any
    arithmetic. More than one ``True`` only at an exact tie.
    """
    C = _as_float_array("C", C, copy=False)
    if np.ndim(x) != 1 or np.shape(x)[0] != C.shape[1]:
        raise ValueError(f"exact_nearest needs a point x of shape (d,) = ({C.shape[1]},) like the centers' rows; "
                         f"got x.shape={np.shape(x)}")
    x = _as_float_array("x", np.reshape(x, (1, -1)), copy=False)[0]
    equal = np.all(C == x, axis=-1)
    if equal.any():  # distance exactly 0: the centers equal to x, and only they
        return equal
    direct = np.sum((x - C) ** 2, axis=-1)  # (k,)
    slack = 1.01 * (x.shape[-1] + 2) * np.finfo(float).eps
    candidates = np.flatnonzero(direct * (1.0 - slack) <= np.min(direct) * (1.0 + slack))
    mask = np.zeros(C.shape[0], dtype=bool)
    # Centers that are the same point (two that met) tie exactly: decide between distinct ones only.
    _, first, same = np.unique(C[candidates], axis=0, return_index=True, return_inverse=True)
    distinct = candidates[first]
    if distinct.size == 1:
        nearest = distinct
    else:
        winner = _pairwise_nearest(x, C, distinct)
        if winner is not None:
            nearest = [winner]
        else:
            xs = [Fraction(float(v)) for v in x]
            exact = [sum((a - Fraction(float(b))) ** 2 for a, b in zip(xs, C[j], strict=True)) for j in distinct]
            nearest = [j for j, e in zip(distinct, exact, strict=True) if e == min(exact)]
    chosen = np.isin(distinct, nearest)
    mask[candidates[chosen[same.ravel()]]] = True
    return mask


def _pairwise_nearest(x, C, candidates):
    """The candidate strictly nearest to ``x`` if the sign of every difference of squared distances it takes
    is certain, else None.

    ``|x - a|^2 - |x - b|^2 = (b - a).(2x - a - b)``; computed in floating point (one subtraction for each
    factor's term and a dot product of ``d`` terms) its error is at most ``(d + 4) eps sum |b - a|
    (2|x| + |a| + |b|)``; the bound used is twice that. The candidates are compared in turn, the nearer
    one kept: by transitivity the last one kept is nearer than all.
    """
    d, eps = x.shape[-1], np.finfo(float).eps
    winner = candidates[0]
    for j in candidates[1:]:
        a, b = C[winner], C[j]
        u = b - a
        diff = float(np.dot(u, (2.0 * x - a) - b))
        bound = 2.0 * (d + 4) * eps * float(np.dot(np.abs(u), 2.0 * np.abs(x) + np.abs(a) + np.abs(b)))
        if not abs(diff) > bound:  # an exact tie (diff 0) or too close to tell
            return None
        if diff > 0:
            winner = j
    return winner


def point_frame(X, origin):
    """The points measured from ``origin``, with their norms: what :func:`nearest_center` scores.

    An algorithm that labels the same points at every iteration (Lloyd's)
    makes its frame once, from a point inside the data (its first initial
    center), and passes it to every call: one pass over the points less per
    iteration.

    Parameters
    ----------
    X : ndarray, shape (..., n, d)
    origin : ndarray, shape (..., 1, d)

    Returns
    -------
    PointFrame
        ``origin``; ``points`` ``X - origin`` (..., n, d); ``norms`` their row norms (..., n); ``scored``
        the points with a coordinate 1 appended (..., n, d + 1), of which ``points`` is a view.
    """
    scored = np.empty(X.shape[:-1] + (X.shape[-1] + 1,), dtype=np.result_type(X, origin))
    points = np.subtract(X, origin, out=scored[..., :-1])
    scored[..., -1] = 1.0
    return PointFrame(origin, points, np.sqrt(np.einsum("...ij,...ij->...i", points, points)), scored)


class PointFrame(NamedTuple):
    """Points measured from an origin (:func:`point_frame`)."""

    #: The origin, shape (..., 1, d).
    origin: np.ndarray
    #: ``X - origin``, shape (..., n, d).
    points: np.ndarray
    #: The row norms of ``points``, shape (..., n).
    norms: np.ndarray
    #: ``[points | 1]``, shape (..., n, d + 1): one product with ``[-2 c | |c|^2]`` scores every center.
    scored: np.ndarray


def _best_two(s):
    """Per row of ``s`` (..., m, k): the index of the least entry (ties: the lowest index), its value, and
    the least of the others (equal to it at a tie). Overwrites ``s``."""
    best = np.argmin(s, axis=-1)
    lowest = np.take_along_axis(s, best[..., None], axis=-1)[..., 0]
    np.put_along_axis(s, best[..., None], np.inf, axis=-1)  # the runner-up: the least once the best is masked
    return best, lowest, s.min(axis=-1)


def _best_few(s, bound, index_count, marks=None):
    """Per column of ``s`` (..., k, m), given transposed, one center per row: the index of the least entry,
    whether another entry is within ``bound`` (..., m) of it (the index is then left to exact arithmetic), and
    the least entry.

    Three passes over contiguous rows (NumPy's reductions along a short last axis are slow): the least
    entry of each column, the entries at most ``1.25 bound`` above it (the margin covers the rounding of
    that sum: ``bound`` is at least 12 eps of the scores, so some points more are sent to exact arithmetic,
    none fewer), marked 1.0 and 0.0 in float32 (half the bytes of the scores, and exact), and one product
    with ``index_count`` (float32), the rows ``0, 1, ..., k - 1`` and ``1, ..., 1``: the index of the only
    one where there is one, and the count. ``marks``: where to write the marks (float32, the shape of ``s``).
    """
    least = np.min(s, axis=-2)
    threshold = least + 1.25 * bound
    marks = np.empty(s.shape, dtype=np.float32) if marks is None else marks
    np.less_equal(s, threshold[..., None, :], out=marks, casting="unsafe")
    found = np.matmul(index_count, marks)
    return found[..., 0, :].astype(np.intp), found[..., 1, :] > 1, least


def _scored_centers(C, origin):
    """What :func:`nearest_center` scores the centers by, measured from ``origin`` (None: from 0): their
    squared norms, the centers times -2 (exact: a power of two), the largest norm (the rounding bound's), and
    ``[-2 c | |c|^2]`` (a frame's points ``[x | 1]`` are scored by one product with it: the same ``d + 1``
    terms, summed in one place)."""
    Cs = C if origin is None else C - origin
    c2 = np.einsum("...ij,...ij->...i", Cs, Cs)
    Cm2 = -2.0 * Cs
    return c2, Cm2, np.sqrt(np.max(c2, axis=-1))[..., None], np.concatenate([Cm2, c2[..., None]], axis=-1)


def nearest_center(X, C, frame=None, *, ties=False):
    """Index of the nearest center of every point, as exact arithmetic decides; exact ties go to the lowest index.

    The arg-min uses ``|c'|^2 - 2 x'.c'`` with ``x' = x - o`` and
    ``c' = c - o`` for an origin ``o``: it differs from ``||x - c||^2`` by
    ``|x'|^2``, a constant per point, so it ranks the same, one pass less.
    Where a point's two best scores are closer than their rounding (a bound
    from their norms), the decision is remade by :func:`exact_nearest` on the
    given coordinates, so every label is the exact one: rounding never
    decides, whatever the origin. The origin sets how often that happens:
    measured from far away the expansion's rounding grows with the distance
    (at ``|x| = 1e6`` it loses everything below about 2e-4), from a point of
    the data it stays at the scale of the data's spread. So ``o`` is the
    ``frame``'s (a point inside the data, made once by an algorithm that
    labels the same points again and again); without a frame, each chunk of
    points is scored first from 0, the points as given (data that a model
    has already centred, at no cost), and where more than
    ``UNDECIDED`` of its points are left undecided, again from the first
    center.

    Parameters
    ----------
    X : ndarray, shape (n, d) or (B, n, d)
    C : ndarray, shape (k, d) or (B, k, d)
        One set of centers per task of a batch.
    frame : PointFrame, optional
        ``point_frame(X, o)`` for an origin ``o`` inside the data (default: 0, then the first center).
    ties : bool
        Also return the points with more than one nearest center.

    Returns
    -------
    labels : ndarray of int, shape (n,) or (B, n)
    tied : dict, only with ``ties=True``
        ``{index of the point in labels: boolean mask (k,) of its nearest centers}`` for every point at
        an exact tie (what the hardmax attention averages over).

    Raises
    ------
    ValueError
        For anything but real, finite, non-empty arrays of these shapes (entries up to ``MAX_ABS``), or a
        ``frame`` that is not a :class:`PointFrame` of ``X``.
    """
    if is_batch(X):
        X = check_batch(X, C, "C")  # the centers of each task too
        C = np.asarray(C, dtype=np.float64)
    else:
        X = _as_float_array("X", X, copy=False)  # check_data would copy the points
        C = check_centers(C, X.shape[1], "C")
    if frame is not None and not (isinstance(frame, PointFrame) and frame.points.shape == X.shape):
        raise ValueError(f"frame must be point_frame(X, origin) of this X; got frame={type(frame).__name__}")
    return _nearest_center(X, C, frame, ties=check_bool(ties, "ties"))


def _nearest_center(X, C, frame=None, *, ties=False):
    """Trusted kernel of :func:`nearest_center` (its arguments already valid): the library's own calls."""
    n, k, d = X.shape[-2], C.shape[-2], X.shape[-1]
    batch = X.shape[:-2]
    # Without a frame: first from 0 (the points as given, no shifted copy), and a chunk whose rounding leaves
    # more than UNDECIDED points to exact arithmetic (points far from 0) again from the first center.
    origins = (frame.origin,) if frame is not None else (None, C[..., :1, :])
    centers = [_scored_centers(C, o) for o in origins]
    few = k <= FEW_CENTERS
    index_count = np.stack([np.arange(k), np.ones(k)]).astype(np.float32) if few else None  # exact to k = 2^24
    rows = max(1, NEAREST_ELEMENTS // (k * max(1, int(np.prod(batch, dtype=int)))))
    labels = np.empty(batch + (n,), dtype=np.intp)
    tied = {}
    scores = np.empty(batch + ((k, rows + SCORE_PAD) if few else (min(rows, n), k + SCORE_PAD)))
    marks = np.empty(batch + (k, rows + 2 * SCORE_PAD), dtype=np.float32) if few else None
    # A frame's points keep their norms: their bounds in one pass, not one short pass per chunk.
    bounds = None if frame is None else _score_bound(d, centers[0][2], frame.norms)
    for start in range(0, n, rows):
        part = slice(start, start + rows)
        m = min(rows, n - start)
        for attempt, (origin, (c2, Cm2, cmax, scoring)) in enumerate(zip(origins, centers, strict=True)):
            if frame is not None:  # [x | 1] against [-2 c | |c|^2]: one product, no pass to add |c|^2
                points, Cm2 = frame.scored[..., part, :], scoring
            else:  # a chunk's points measured while in cache: the same numbers as a whole frame's
                points = X[..., part, :] if origin is None else X[..., part, :] - origin
                norms = np.sqrt(np.einsum("...ij,...ij->...i", points, points))
            bound = _score_bound(d, cmax, norms) if frame is None else bounds[..., part]
            if few:  # scores (..., k, rows)
                s = np.matmul(Cm2, np.swapaxes(points, -1, -2), out=scores[..., :m])
                if frame is None:
                    s += c2[..., :, None]
                best, close, best_scores = _best_few(s, bound, index_count, marks[..., :m])
            else:  # scores (..., rows, k)
                s = np.matmul(points, np.swapaxes(Cm2, -1, -2), out=scores[..., :m, :k])
                if frame is None:
                    s += c2[..., None, :]
                best, lowest, second = _best_two(s)
                close = second - lowest <= bound
                best_scores = lowest
            if attempt + 1 == len(origins) or np.count_nonzero(close) <= UNDECIDED:
                break
        _check_scored(X, C, best_scores, part)
        labels[..., part] = best
        for index in zip(*np.nonzero(close), strict=True):
            point = index[:-1] + (start + index[-1],)
            # the given coordinates: the shifts by the origin may themselves have rounded
            nearest = exact_nearest(X[point], C[index[:-1]])
            labels[point] = np.argmax(nearest)
            if ties and np.count_nonzero(nearest) > 1:
                tied[point] = nearest
    return (labels, tied) if ties else labels


def cluster_sums(points, cluster, n_clusters, columns=None, weights=None):
    """Each cluster's sum of its members' rows and their total weight: ``(sums (n_clusters, d), weights
    (n_clusters,))``.

    Point ``i`` (row ``i`` of ``points`` (n, d)) is a member of the clusters ``cluster[columns[i]:columns[i +
    1]]`` with ``weights`` there (default: of ``cluster[i]`` alone, weight 1, and integer counts). One
    sparse (n_clusters, n) membership matrix times the points: each sum adds its members in their order,
    so a cluster's sum does not depend on the other points (a task's sums are the same in a batch).
    """
    n = points.shape[0]
    if columns is None:
        columns = np.arange(n + 1)
    members = scipy.sparse.csc_matrix((np.ones(len(cluster)) if weights is None else weights, cluster, columns),
                                      shape=(n_clusters, n))
    return members @ points, np.bincount(cluster, weights, minlength=n_clusters)


def closest_distinct_pair(X):
    """The two distinct points of ``X`` (n, d) that are closest: ``(i, l, squared distance)``, or None when
    ``X`` holds fewer than two distinct points.

    Equal points are one point (a duplicate is at distance 0 from itself, and every construction treats
    equal tokens equally); among the distinct ones, the nearest neighbour of each by a k-d tree, O(n log n)
    time and O(n) memory (never the n x n distances). ``i < l`` are the first rows that hold the two points;
    the squared distance is summed from their differences (0.0 where it underflows: the points still
    differ). Trusted helper: ``X`` already validated.

    Parameters
    ----------
    X : ndarray, shape (n, d)

    Returns
    -------
    (int, int, float) or None
    """
    distinct, first = np.unique(X, axis=0, return_index=True)
    if len(distinct) < 2:
        return None
    # The tree measures the points scaled by a power of two (exact) to at most 1: its distances of points
    # near 1e200 would overflow, and it then names no neighbour at all.
    scale = np.ldexp(1.0, -int(np.frexp(np.max(np.abs(distinct)))[1]))
    scaled = distinct * scale
    _, found = cKDTree(scaled).query(scaled, k=2)
    # Each point's nearest other point: the tree lists the point itself first, unless their distance
    # underflows to 0 and it lists the other one first.
    own = np.arange(len(distinct))
    neighbour = np.where(found[:, 0] == own, found[:, 1], found[:, 0])
    diff = scaled - scaled[neighbour]
    a = int(np.argmin(np.einsum("ij,ij->i", diff, diff)))
    with np.errstate(over="ignore"):  # points 1e200 apart: the squared distance is inf, as it is
        diff = distinct[a] - distinct[neighbour[a]]
        sq = float(np.dot(diff, diff))
    i, l = sorted((int(first[a]), int(first[neighbour[a]])))
    return i, l, sq


def _check_scored(X, C, best_scores, part):
    """Refuse a chunk of points (rows ``part`` of ``X``) whose best score is not finite: a nan or inf
    coordinate of a point or a center, which no nearest center could be given for (one pass over the chunk's
    minima, not over the points: their sum, and only where that is not finite each of them)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(best_scores)) or np.all(np.isfinite(best_scores)):
            return
    index = tuple(np.argwhere(~np.isfinite(best_scores))[0])
    point = index[:-1] + (part.start + index[-1],)
    if not np.all(np.isfinite(C[index[:-1]])):
        task = f" in task {index[0]}" if index[:-1] else ""
        raise ValueError(f"C must be finite; got a non-finite center{task}")
    raise ValueError(f"X must be finite, within squares float64 can hold; got X[{', '.join(map(str, point))}]="
                     f"{X[point].tolist()}")
