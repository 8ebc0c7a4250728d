"""Lloyd's algorithm on a batch of tasks, vectorized over tasks.

The same iteration as :func:`kmt_ref.classical.lloyd` (nearest center with
ties to the lowest index, member means, an empty cluster moves to the global
mean of its task), written for arrays of shape (B, n, d) so that hundreds of
held-out tasks are evaluated without a Python loop over tasks.
"""

import numpy as np

from ..geometry import squared_distances

__all__ = ["lloyd_batch"]


def lloyd_batch(X, init, n_iter):
    """Lloyd iterates of every task.

    Parameters
    ----------
    X : ndarray, shape (B, n, d)
    init : ndarray, shape (B, k, d)
    n_iter : int

    Returns
    -------
    ndarray, shape (n_iter + 1, B, k, d)
    """
    X, C = np.asarray(X, dtype=float), np.asarray(init, dtype=float)
    k = C.shape[1]
    out = np.empty((n_iter + 1,) + C.shape)
    out[0] = C
    global_mean = X.mean(axis=1, keepdims=True)  # (B, 1, d)
    for t in range(n_iter):
        labels = np.argmin(squared_distances(X, C), axis=-1)  # (B, n)
        onehot = (labels[..., None] == np.arange(k)).astype(float)  # (B, n, k)
        counts = onehot.sum(axis=1)[..., None]  # (B, k, 1)
        sums = np.matmul(np.swapaxes(onehot, 1, 2), X)  # (B, k, d)
        C = np.where(counts > 0, sums / np.maximum(counts, 1.0), global_mean)
        out[t + 1] = C
    return out
