"""Squared Euclidean distances, the one primitive every algorithm here shares.

Classical algorithms and the Euclidean attention score use this same function,
so the hard assignments of a transformer at ``gamma = inf`` and of Lloyd's
algorithm are computed from identical numbers.
"""

import autograd.numpy as anp
import numpy as np

from ._validation import check_batch, check_centers, check_data, is_batch

__all__ = ["squared_distances", "center_distances", "nearest_center", "assigned_squared_distances", "kmeans_objective",
           "CHUNK_ELEMENTS"]

#: Largest number of (query, key) pairs held in memory at once by the chunked
#: routines (about 32 MB of float64).
CHUNK_ELEMENTS = 2**22


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
    origin (see :func:`nearest_center`). For the classical algorithms (plain
    arrays of shape (n, d) and (k, d)).
    """
    origin = C[0]
    return squared_distances(X - origin, C - origin)


def nearest_center(X, C):
    """Index of the nearest center of every point; ties go to the lowest index.

    The arg-min uses ``|c'|^2 - 2 x'.c'`` with ``x' = x - c_0`` and
    ``c' = c - c_0``: it differs from ``||x - c||^2`` by ``|x'|^2``, a
    constant per point, so it ranks the same, one pass less. Measuring from
    the first center keeps the expansion's rounding at the scale of the
    data's spread, not of its distance from the origin (at ``|x| = 1e6`` the
    plain expansion loses everything below about 2e-4).

    Parameters
    ----------
    X : ndarray, shape (n, d) or (B, n, d)
    C : ndarray, shape (k, d) or (B, k, d)
        One set of centers per task of a batch.

    Returns
    -------
    labels : ndarray of int, shape (n,) or (B, n)
    """
    n, k = X.shape[-2], C.shape[-2]
    batch = X.shape[:-2]
    origin = C[..., :1, :]
    C = C - origin
    c2 = np.einsum("...ij,...ij->...i", C, C)[..., None, :]
    Ct = np.swapaxes(C, -1, -2)
    rows = max(1, CHUNK_ELEMENTS // (k * max(1, int(np.prod(batch, dtype=int)))))
    labels = np.empty(batch + (n,), dtype=np.intp)
    for start in range(0, n, rows):
        s = np.matmul(X[..., start : start + rows, :] - origin, Ct)  # (..., rows, k)
        s *= -2.0
        s += c2
        labels[..., start : start + rows] = np.argmin(s, axis=-1)
    return labels


def assigned_squared_distances(X, C, labels):
    """Squared distance of every point to its assigned center, ``||x_i - c_{labels[i]}||^2``.

    Computed from the differences directly (no expansion, so no cancellation).

    Parameters
    ----------
    X : ndarray, shape (n, d) or (B, n, d)
    C : ndarray, shape (k, d) or (B, k, d)
    labels : ndarray of int, shape (n,) or (B, n)
        Indices into the rows of ``C``, e.g. from :func:`nearest_center`.

    Returns
    -------
    ndarray, shape (n,) or (B, n)
    """
    diff = X - np.take_along_axis(C, labels[..., None], axis=-2)  # (..., n, d)
    return np.einsum("...ij,...ij->...i", diff, diff)


def kmeans_objective(X, centers):
    """The k-means objective ``sum_i min_j ||x_i - c_j||^2`` (a sum, not a mean).

    Parameters
    ----------
    X : array_like, shape (n, d) or (B, n, d)
    centers : array_like, shape (k, d) or (B, k, d)

    Returns
    -------
    float, or ndarray of shape (B,) for a batch of tasks
        For a batch, ``inf`` for a task whose centers are not finite (an
        evaluation reports a diverged iteration instead of refusing it); one
        task's centers must be finite.
    """
    if is_batch(X):
        X = check_batch(X, centers, "centers", finite_centers=False)
        C = np.asarray(centers, dtype=float)
        out = np.full(X.shape[0], np.inf)
        ok = np.all(np.isfinite(C), axis=(-2, -1))
        if np.any(ok):
            Xo, Co = X[ok], C[ok]
            out[ok] = np.sum(assigned_squared_distances(Xo, Co, nearest_center(Xo, Co)), axis=-1)
        return out
    X = check_data(X)
    C = check_centers(centers, X.shape[1], name="centers")
    return float(np.sum(assigned_squared_distances(X, C, nearest_center(X, C))))
