"""Exercise 14 (medium) - chapter "Robust k-means from sparsemax attention".

Check your answer: ``python -m kmt_ref.exercises check 14``
"""

import numpy as np


def sparsemax(scores):
    """Sparsemax (Martins & Astudillo, 2016), row-wise over the last axis.

    The Euclidean projection of a score row ``z`` onto the probability
    simplex: ``argmin_p ||p - z||^2`` subject to ``p >= 0``, ``sum p = 1``.
    Unlike softmax it gives exact zeros; the robust k-means variant uses it in
    the CAC block.

    Parameters
    ----------
    scores : ndarray, shape (..., r)

    Returns
    -------
    ndarray, same shape
        ``p = max(z - tau, 0)`` with the threshold ``tau`` of each row chosen so
        that ``sum p = 1``.

    Hint: sort each row in decreasing order, ``z_(1) >= z_(2) >= ...``; the
    support size is the largest ``s`` with ``1 + s z_(s) > z_(1) + ... + z_(s)``,
    and then ``tau = (z_(1) + ... + z_(s) - 1) / s``.
    """
    raise NotImplementedError("exercise 14: write sparsemax")
