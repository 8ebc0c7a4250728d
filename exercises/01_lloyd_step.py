"""Exercise 01 (warm-up) - chapter "k-means and Lloyd's algorithm".

Check your answer: ``python -m kmt_ref.exercises check 01``
"""

import numpy as np


def lloyd_step(X, centers):
    """One iteration of Lloyd's algorithm.

    Assign every point to its nearest center, then move every center to the
    mean of the points assigned to it.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Points as rows.
    centers : ndarray, shape (k, d)
        Current centers.

    Returns
    -------
    ndarray, shape (k, d)
        The new centers.

    Two details decide whether a transformer can reproduce your function
    exactly: a point at equal distance from two centers goes to the LOWEST
    index (as ``numpy.argmin``), and a center that receives no point moves to
    the mean of ALL points.

    Hint: ``D2 = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)`` is the
    (n, k) matrix of squared distances; ``np.argmin(D2, axis=1)`` the labels.
    """
    raise NotImplementedError("exercise 01: write lloyd_step")
