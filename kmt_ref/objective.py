"""The k-means objective ``sum_i min_j ||x_i - c_j||^2`` of centers, and of every iterate of a run.

Each point's nearest center is the one exact arithmetic decides (:func:`~kmt_ref.geometry.nearest_center`);
its squared distance is taken from the differences directly, so no expansion cancels.
"""

import numpy as np

from ._validation import check_batch, check_centers, check_data, is_batch
from .geometry import _nearest_center

__all__ = ["assigned_squared_distances", "kmeans_objective", "iterate_objectives"]


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
            out[ok] = np.sum(assigned_squared_distances(Xo, Co, _nearest_center(Xo, Co)), axis=-1)
        return out
    X = check_data(X)
    C = check_centers(centers, X.shape[1], name="centers")
    return float(np.sum(assigned_squared_distances(X, C, _nearest_center(X, C))))


def iterate_objectives(X, centers):
    """The objective of every iterate: ``kmeans_objective(X, centers[t])`` for each ``t``.

    Parameters
    ----------
    X : array_like, shape (n, d) or (B, n, d)
    centers : array_like, shape (T, k, d) or (T, B, k, d)

    Returns
    -------
    ndarray, shape (T,) or (T, B)
    """
    return np.stack([kmeans_objective(X, C) for C in centers])
