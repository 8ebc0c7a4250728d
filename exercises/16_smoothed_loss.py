"""Exercise 16 (medium) - chapter "Learning a clustering layer".

Check your answer: ``python -m kmt_ref.exercises check 16``
"""

import autograd.numpy as np


def smoothed_loss(X, centers, tau):
    """The training loss of the paper's learned model: a smoothed k-means objective.

    For one task, ``sum_i sum_j softmax_j(-r_ij / tau) * r_ij`` with
    ``r_ij = ||x_i - c_j||^2`` (a sum over points, no division by n, no log).
    Each point pays a softmin-weighted average of its squared distances, so
    the loss is at least ``sum_i min_j r_ij``, the k-means objective, and
    tends to it as ``tau -> 0``. For a batch of tasks, return the mean of the
    per-task losses.

    Parameters
    ----------
    X : ndarray, shape (n, d) or (B, n, d)
    centers : ndarray, shape (k, d) or (B, k, d)
    tau : float
        Temperature, > 0 (the authors' protocol uses 0.1).

    Returns
    -------
    float (a 0-d value)

    Hint: write it with ``autograd.numpy`` (imported as ``np`` above) so that
    it can be differentiated, with broadcasting that works for both shapes
    (``X[..., :, None, :] - centers[..., None, :, :]``). Subtract the row
    maximum of ``-r / tau`` before ``exp``, or a tiny tau gives 0 / 0.
    """
    raise NotImplementedError("exercise 16: write smoothed_loss")
