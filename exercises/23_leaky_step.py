"""Exercise 23 (medium) - chapter "A closed form for the layer's gain: leaky soft k-means".

Check your answer: ``python -m kmt_ref.exercises check 23``
"""

import numpy as np


def leaky_step(X, C, beta, sharpness):
    """One step of leaky soft k-means on one task.

    ``R_ij = softmax_j(-beta ||x_i - c_j||^2)`` (the responsibilities), then
    each center is a softmax-weighted mean of ALL the points:
    ``W_ji = softmax_i(sharpness * R_ij)`` and ``c_j <- sum_i W_ji x_i``.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    C : ndarray, shape (k, d)
    beta, sharpness : float
        Positive.

    Returns
    -------
    ndarray, shape (k, d)
        The new centers.

    Hint: both softmaxes need their row maximum subtracted before ``np.exp``
    (``beta`` times a squared distance can be large). The second softmax runs
    over the points (axis 0 of ``R``), not over the centers.
    """
    raise NotImplementedError("exercise 23: write leaky_step")
