"""Exercise 24 (warm-up) - chapter "A closed form for the layer's gain: leaky soft k-means".

Check your answer: ``python -m kmt_ref.exercises check 24``
"""

import numpy as np


def farthest_first(X, k):
    """Initial centers spread out by farthest-first traversal, on one task.

    The first center is the first point ``X[0]``; each next center is the
    point farthest from the centers chosen so far (its squared distance to
    the nearest of them is largest). When several points are equally far,
    take the first of them.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    k : int
        Number of centers, ``1 <= k <= n``.

    Returns
    -------
    ndarray, shape (k, d)
        Rows of ``X``.

    Hint: keep, for every point, its squared distance to the nearest center
    so far, and lower it with ``np.minimum`` after each new center; no
    n x n matrix is needed.
    """
    raise NotImplementedError("exercise 24: write farthest_first")
