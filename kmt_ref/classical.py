"""Classical k-means: the objective, k-means++ seeding and Lloyd's algorithm.

These are the references the transformers are checked against, written
plainly. ``lloyd`` is itself checked against ``scipy.cluster.vq.kmeans2``,
and its labels are exact arithmetic's even where two centers are nearly tied
(:func:`~kmt_ref.geometry.nearest_center`), which SciPy's are not always.
"""

import numpy as np

from ._validation import check_choice, check_data, check_k, check_problem, check_rng
from .geometry import _nearest_center, cluster_sums, point_frame
from .objective import kmeans_objective
from .trajectory import Trajectory, iterate

__all__ = ["kmeans_objective", "kmeans_plusplus", "lloyd", "EMPTY_CLUSTER_POLICIES"]

#: What Lloyd's update does with a center that received no point.
#:
#: ``"global_mean"``
#:     The center moves to the mean of all points (of its task). This is what
#:     the k-means transformer does (an empty cluster's center token scores
#:     every point equally, so its attention is uniform), hence the default.
#: ``"keep"``
#:     The center stays where it was (``scipy.cluster.vq.kmeans2`` with
#:     ``missing="warn"``).
#: ``"raise"``
#:     ``ValueError`` naming the empty cluster and the iteration.
#: ``"random_point"``
#:     The center moves to a data point of its task drawn uniformly from
#:     ``rng``: the rule of the authors' Lloyd baseline. One index per task
#:     and cluster is drawn at every iteration, empty or not.
EMPTY_CLUSTER_POLICIES = ("global_mean", "keep", "raise", "random_point")


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


def lloyd(X, init, n_iter, empty_cluster="global_mean", rng=None):
    """Lloyd's algorithm for k-means, exactly ``n_iter`` iterations, on one task or a batch.

    Each iteration assigns every point to its nearest center (ties to the
    lowest index, as ``numpy.argmin``) and moves every center to the mean of
    its points. There is no early stop, so the result always has
    ``n_iter + 1`` iterates. A batch of tasks is one computation, and each
    task's numbers are those of running it alone.

    Parameters
    ----------
    X : array_like, shape (n, d) or (B, n, d)
        Points as rows (of each task).
    init : array_like, shape (k, d) or (B, k, d)
        Initial centers, ``k <= n``.
    n_iter : int
        Number of iterations, ``>= 0``.
    empty_cluster : {"global_mean", "keep", "raise", "random_point"}
        Policy for a center that receives no point; see
        :data:`EMPTY_CLUSTER_POLICIES`. The default matches the k-means
        transformer.
    rng : numpy.random.Generator, optional
        Needed for ``"random_point"``.

    Returns
    -------
    Trajectory
        ``centers`` of shape (n_iter + 1, k, d), ``labels`` of shape
        (n_iter, n); for a batch (n_iter + 1, B, k, d) and (n_iter, B, n).

    Raises
    ------
    ValueError
        On invalid input, or on an empty cluster with ``empty_cluster="raise"``.
    """
    X, C, n_iter = check_problem(X, init, n_iter, "n_iter", batch=True)
    check_choice(empty_cluster, "empty_cluster", EMPTY_CLUSTER_POLICIES)
    if empty_cluster == "random_point":
        check_rng(rng, "rng", " for empty_cluster='random_point'")
    return _lloyd(X, C, n_iter, empty_cluster, rng)


def _lloyd(X, C, n_iter, empty_cluster, rng=None):
    """Trusted kernel of :func:`lloyd`: inputs already validated; one task is a batch of one."""
    batched = X.ndim == 3
    if not batched:
        X, C = X[None], C[None]
    B, n, d = X.shape
    k = C.shape[1]
    points = X.reshape(B * n, d)
    offsets = (np.arange(B) * k)[:, None]  # cluster j of task b is cluster b * k + j of the batch
    frame = point_frame(X, C[:, :1])  # the points shifted once, not at every iteration

    def step(C, t):
        lab = _nearest_center(X, C, frame)
        sums, counts = cluster_sums(points, (lab + offsets).ravel(), B * k)
        counts = counts.reshape(B, k)
        new = sums.reshape(B, k, d) / np.maximum(counts, 1)[..., None]
        empty = counts == 0
        if empty_cluster == "random_point":
            drawn = X[np.arange(B)[:, None], rng.integers(n, size=(B, k))]  # (B, k, d)
        if empty.any():
            if empty_cluster == "raise":
                b, j = (int(i) for i in np.argwhere(empty)[0])
                task = f" of task {b}" if batched else ""
                raise ValueError(f"cluster {j}{task} is empty at iteration {t} (empty_cluster='raise')")
            if empty_cluster == "global_mean":
                fill = np.broadcast_to(X.mean(axis=1)[:, None], (B, k, d))
            else:
                fill = C if empty_cluster == "keep" else drawn
            new[empty] = fill[empty]
        return new, lab

    traj = iterate(step, X, C, n_iter)
    if batched:
        return traj
    return Trajectory(centers=traj.centers[:, 0], labels=traj.labels[:, 0])
