"""Lloyd's algorithm on a batch of tasks, vectorized over tasks.

The same iteration as :func:`kmt_ref.classical.lloyd` (nearest center with
ties to the lowest index, member means, an empty cluster moves to the global
mean of its task), written for arrays of shape (B, n, d) so that hundreds of
held-out tasks are evaluated without a Python loop over tasks.

``empty_cluster="random_point"`` is the authors' baseline rule instead: an
empty cluster's center becomes a data point of its task drawn uniformly.
"""

import numpy as np

from .._validation import check_choice, check_rng
from ..geometry import squared_distances

__all__ = ["lloyd_batch"]


#: Empty-cluster rules of :func:`lloyd_batch`.
BATCH_EMPTY_CLUSTER_RULES = ("global_mean", "random_point")


def lloyd_batch(X, init, n_iter, empty_cluster="global_mean", rng=None):
    """Lloyd iterates of every task.

    Parameters
    ----------
    X : ndarray, shape (B, n, d)
    init : ndarray, shape (B, k, d)
    n_iter : int
    empty_cluster : {"global_mean", "random_point"}
        An empty cluster's center moves to its task's mean, or to a data point
        of its task drawn from ``rng`` (the authors' rule).
    rng : numpy.random.Generator
        Needed for ``"random_point"``.

    Returns
    -------
    ndarray, shape (n_iter + 1, B, k, d)
    """
    check_choice(empty_cluster, "empty_cluster", BATCH_EMPTY_CLUSTER_RULES)
    if empty_cluster == "random_point":
        check_rng(rng, "rng", " for empty_cluster='random_point'")
    X, C = np.asarray(X, dtype=float), np.asarray(init, dtype=float)
    B, n = X.shape[:2]
    k = C.shape[1]
    out = np.empty((n_iter + 1,) + C.shape)
    out[0] = C
    global_mean = X.mean(axis=1, keepdims=True)  # (B, 1, d)
    for t in range(n_iter):
        labels = np.argmin(squared_distances(X, C), axis=-1)  # (B, n)
        onehot = (labels[..., None] == np.arange(k)).astype(float)  # (B, n, k)
        counts = onehot.sum(axis=1)[..., None]  # (B, k, 1)
        sums = np.matmul(np.swapaxes(onehot, 1, 2), X)  # (B, k, d)
        if empty_cluster == "random_point":
            fill = X[np.arange(B)[:, None], rng.integers(n, size=(B, k))]  # (B, k, d)
        else:
            fill = global_mean
        C = np.where(counts > 0, sums / np.maximum(counts, 1.0), fill)
        out[t + 1] = C
    return out
