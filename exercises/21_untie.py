"""Exercise 21 (medium) - chapter "Beyond the paper".

Check your answer: ``python -m kmt_ref.exercises check 21``
"""

import numpy as np


def untie(A, u, v, lam, nu, k):
    """The full ``(d + k, d + k)`` matrix of a tied map at ``k`` clusters.

    A tied map acts the same on every cluster id: over the blocks ``(x, y)``
    of a token ``[x | y]`` it is ``[[A, v 1^T], [1 u^T, lam I_k + nu 1 1^T]]``
    (``1`` the all-ones vector of length ``k``). Its pieces do not depend on
    ``k``: the same ``A, u, v, lam, nu`` give the map at every k.

    Parameters
    ----------
    A : ndarray, shape (d, d)
    u, v : ndarray, shape (d,)
    lam, nu : float
    k : int

    Returns
    -------
    ndarray, shape (d + k, d + k)

    Hint: ``np.outer(v, np.ones(k))`` has every column equal to ``v``; build the
    four blocks and join them with ``np.block``.
    """
    raise NotImplementedError("exercise 21: write untie")
