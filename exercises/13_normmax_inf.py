"""Exercise 13 (medium) - chapter "Trimmed k-means from norm-max attention".

Check your answer: ``python -m kmt_ref.exercises check 13``
"""

import numpy as np


def normmax_inf(scores, threshold):
    """inf-norm normmax, row-wise: ``argmax_{p in simplex} <p, z> - t max_i p_i``.

    The normalizer that turns the CAC block into a trimming rule. Write it
    from its definition: for a row ``z``, among the probability vectors ``p``,
    maximize the expected score minus ``t`` times the largest weight.

    Parameters
    ----------
    scores : ndarray, shape (m, r)
    threshold : float
        Regularization, ``> 0``.

    Returns
    -------
    ndarray, shape (m, r)
        Rows are probability vectors: ``1/s`` on ``s`` kept entries, 0 elsewhere.

    Hint: an optimal ``p`` is uniform on the top ``s`` scores for some ``s``
    (for fixed ``max p = 1/s`` the best is to fill the top ``s`` entries). So
    compare the values ``mean(top s scores) - t / s`` over ``s = 1 .. r`` and
    keep the best ``s``.
    """
    raise NotImplementedError("exercise 13: write normmax_inf")
