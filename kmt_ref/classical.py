"""Classical k-means: the objective, k-means++ seeding and Lloyd's algorithm.

These are the references the transformers are checked against, written
plainly. ``lloyd`` is itself checked against ``scipy.cluster.vq.kmeans2``.
"""

import numpy as np
import scipy.sparse

from ._validation import check_choice, check_data, check_k, check_problem, check_rng
from .geometry import kmeans_objective, nearest_center
from .trajectory import Trajectory

__all__ = ["kmeans_objective", "kmeans_plusplus", "lloyd", "EMPTY_CLUSTER_POLICIES"]

#: What Lloyd's update does with a center that received no point.
#:
#: ``"global_mean"``
#:     The center moves to the mean of all points. This is what the k-means
#:     transformer does (an empty cluster's center token scores every point
#:     equally, so its attention is uniform), hence the default.
#: ``"keep"``
#:     The center stays where it was (``scipy.cluster.vq.kmeans2`` with
#:     ``missing="warn"``).
#: ``"raise"``
#:     ``ValueError`` naming the empty cluster and the iteration.
EMPTY_CLUSTER_POLICIES = ("global_mean", "keep", "raise")


def kmeans_plusplus(X, k, rng):
    """k-means++ seeding (Arthur & Vassilvitskii, 2007): D^2 sampling.

    The first center is a point drawn uniformly; each next center is a point
    drawn with probability proportional to its squared distance to the
    nearest center chosen so far. If every remaining point coincides with a
    chosen center (fewer than ``k`` distinct points), the draw is uniform.

    Parameters
    ----------
    X : array_like, shape (n, d)
    k : int
        Number of centers, ``1 <= k <= n``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (k, d)
        Rows of ``X``.
    """
    X = check_data(X)
    k = check_k(k, X.shape[0])
    check_rng(rng)
    n = X.shape[0]
    chosen = [int(rng.integers(n))]
    d2 = np.sum((X - X[chosen[0]]) ** 2, axis=1)
    for _ in range(1, k):
        total = d2.sum()
        p = d2 / total if total > 0 else np.full(n, 1.0 / n)
        idx = int(rng.choice(n, p=p))
        chosen.append(idx)
        d2 = np.minimum(d2, np.sum((X - X[idx]) ** 2, axis=1))
    return X[chosen].copy()


def lloyd(X, init, n_iter, empty_cluster="global_mean"):
    """Lloyd's algorithm for k-means, exactly ``n_iter`` iterations.

    Each iteration assigns every point to its nearest center (ties to the
    lowest index, as ``numpy.argmin``) and moves every center to the mean of
    its points. There is no early stop, so the result always has
    ``n_iter + 1`` iterates.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Points as rows.
    init : array_like, shape (k, d)
        Initial centers, ``k <= n``.
    n_iter : int
        Number of iterations, ``>= 0``.
    empty_cluster : {"global_mean", "keep", "raise"}
        Policy for a center that receives no point; see
        :data:`EMPTY_CLUSTER_POLICIES`. The default matches the k-means
        transformer.

    Returns
    -------
    Trajectory
        ``centers`` of shape (n_iter + 1, k, d), ``labels`` of shape
        (n_iter, n).

    Raises
    ------
    ValueError
        On invalid input, or on an empty cluster with ``empty_cluster="raise"``.
    """
    X, C, n_iter = check_problem(X, init, n_iter, "n_iter")
    check_choice(empty_cluster, "empty_cluster", EMPTY_CLUSTER_POLICIES)
    return _lloyd(X, C, n_iter, empty_cluster)


def _lloyd(X, C, n_iter, empty_cluster):
    """Trusted kernel of :func:`lloyd`: inputs already validated."""
    n, k = X.shape[0], C.shape[0]
    centers = np.empty((n_iter + 1,) + C.shape)
    labels = np.empty((n_iter, n), dtype=np.intp)
    centers[0] = C
    for t in range(n_iter):
        lab = nearest_center(X, centers[t])
        labels[t] = lab
        counts = np.bincount(lab, minlength=k)
        # (k, n) sparse membership matrix times X: the sum of each cluster's members.
        members = scipy.sparse.csr_matrix((np.ones(n), lab, np.arange(n + 1)), shape=(n, k)).T
        sums = members @ X  # (k, d)
        empty = counts == 0
        new = sums / np.maximum(counts, 1)[:, None]
        if empty.any():
            if empty_cluster == "raise":
                raise ValueError(
                    f"cluster {int(np.flatnonzero(empty)[0])} is empty at iteration {t} "
                    "(empty_cluster='raise')"
                )
            fill = X.mean(axis=0) if empty_cluster == "global_mean" else centers[t]
            new[empty] = fill if fill.ndim == 1 else fill[empty]
        centers[t + 1] = new
    return Trajectory(centers=centers, labels=labels)
