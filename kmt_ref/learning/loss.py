"""The training loss: a smoothed upper bound of the k-means objective.

For a task with points ``x_i`` and centers ``c_j``, ``r_ij = ||x_i - c_j||^2``::

    loss(tau) = sum_i sum_j softmax_j(-r_ij / tau) r_ij

Each inner sum is a weighted average of ``r_i1, ..., r_ik`` and so is at least
``min_j r_ij``: the loss is >= the k-means objective ``sum_i min_j r_ij``,
and tends to it as ``tau -> 0`` (the weights concentrate on the nearest
center). Unlike the objective it is differentiable everywhere in the centers.
The batch loss is the mean over tasks (no division by ``n``, no log).
"""

import autograd.numpy as anp

from .._validation import check_batch, check_positive, float_type
from ..attention import softmax
from ..geometry import squared_distances

__all__ = ["smoothed_objective"]


def smoothed_objective(X, centers, tau):
    """Smoothed k-means objective of every task.

    Parameters
    ----------
    X : ndarray, shape (B, n, d)
    centers : ndarray, shape (B, k, d)
    tau : float
        Temperature, ``> 0``.

    Returns
    -------
    ndarray, shape (B,)
    """
    X = check_batch(X, centers, "centers").astype(float_type(centers), copy=False)  # float32 centers: float32 X
    tau = check_positive(tau, "tau")
    r = squared_distances(X, centers)  # (B, n, k)
    return anp.sum(softmax(-r / tau) * r, axis=(-2, -1))
