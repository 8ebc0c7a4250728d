"""Exercise 02 (warm-up) - chapter "Attention as a soft nearest-neighbour lookup".

Check your answer: ``python -m kmt_ref.exercises check 02``
"""

import numpy as np


def euclidean_scores(Zq, Zk, gamma):
    """Euclidean attention scores.

    ``scores[a, b] = -gamma * ||Zq[a] - Zk[b]||^2``: large (close to 0) when
    query ``a`` is near key ``b``. With softmax, this is a soft
    nearest-neighbour lookup; with hardmax, an exact one.

    Parameters
    ----------
    Zq : ndarray, shape (m, D)
        Queries (already multiplied by Wq).
    Zk : ndarray, shape (r, D)
        Keys (already multiplied by Wk).
    gamma : float
        Inverse temperature, > 0.

    Returns
    -------
    ndarray, shape (m, r)

    Hint: broadcast ``Zq[:, None, :] - Zk[None, :, :]`` (shape (m, r, D)), or
    expand ``||q||^2 + ||k||^2 - 2 q.k`` to use one matrix product.
    """
    raise NotImplementedError("exercise 02: write euclidean_scores")
