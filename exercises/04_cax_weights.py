"""Exercise 04 (medium) - chapter "The k-means transformer (Theorem 2.1)".

Check your answer: ``python -m kmt_ref.exercises check 04``
"""

import numpy as np

from kmt_ref import TokenLayout


def cax_weights(d, k):
    """The Equation 5 weights of the CAX block (points read the centers).

    Tokens are rows of width ``D = d + k``: points ``p_i = [x_i | y_i]``,
    centers ``q_j = [c_j | e_j]``. The block computes, for point i,
    ``sum_j hardmax_j(-||Wq p_i - Wk q_j||^2) * Wv q_j``. After it, point i
    must have added ``[0 | e_a]`` where ``a`` is its nearest center -- also in
    later layers, when ``y_i`` is no longer zero.

    Parameters
    ----------
    d, k : int

    Returns
    -------
    Wq, Wk, Wv : ndarrays, shape (d + k, d + k)
        Matrices acting on column tokens (the code applies ``Z @ W.T``).

    Hint: ``TokenLayout(d, k).projector("x")`` is ``P_x = diag(I_d, 0_k)``,
    ``projector("y")`` is ``P_y = diag(0_d, I_k)``. Which coordinates should
    the score compare, and which coordinates of the center should be copied?
    """
    raise NotImplementedError("exercise 04: write cax_weights")
