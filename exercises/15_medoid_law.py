"""Exercise 15 (medium) - chapter "Randomized k-medoids from Gumbel attention".

Check your answer: ``python -m kmt_ref.exercises check 15``
"""

import numpy as np


def medoid_law(X, centers, temperature):
    """The law of the next medoids drawn by the Gumbel-max CAC block.

    Each center j draws its next medoid among its candidates ``S_j`` (the
    points whose nearest center is j, ties to the lowest index; every point
    if no point chooses j), point i with probability proportional to
    ``exp(-||x_i - c_j||^2 / temperature)``.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    centers : ndarray, shape (k, d)
    temperature : float
        ``> 0``.

    Returns
    -------
    ndarray, shape (k, n)
        Row j: the probability that ``x_i`` becomes medoid j (0 outside ``S_j``).

    Hint: the Gumbel-max trick: ``argmax_i (z_i + g_i)`` with ``g_i`` i.i.d.
    standard Gumbel picks ``i`` with probability ``softmax(z)_i``; here
    ``z_i = -||x_i - c_j||^2 / temperature`` on ``S_j`` and ``-inf`` off it.
    Subtract the row maximum before ``exp``.
    """
    raise NotImplementedError("exercise 15: write medoid_law")
