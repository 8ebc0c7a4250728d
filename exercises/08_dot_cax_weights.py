"""Exercise 08 (hard) - chapter "Dot-product attention and the FFN (Theorem 2.2)".

Check your answer: ``python -m kmt_ref.exercises check 08``
"""

import numpy as np

from kmt_ref import TokenLayout


def dot_cax_weights(d, k):
    """CAX weights for STANDARD dot-product attention that still find the nearest center.

    Tokens carry two extra coordinates: ``layout = TokenLayout(d, k, ("x",
    "y", "sqnorm", "one"))``, so a point is ``[x | y | ||x||^2 | 1]`` and a
    center ``[c | e_j | ||c||^2 | 1]`` (width ``D = d + k + 2``). The dot score
    ``(Wq p_i) . (Wk q_j)`` must equal ``2 x_i . c_j - ||c_j||^2``, which is
    ``||x_i||^2 - ||x_i - c_j||^2``: the Euclidean score plus a term that
    depends on the point only, so softmax and hardmax over the centers give
    exactly the Euclidean weights. The value writes the center's id, as in
    Equation 5.

    Parameters
    ----------
    d, k : int

    Returns
    -------
    Wq, Wk, Wv : ndarrays, shape (d + k + 2, d + k + 2)
        Acting on column tokens (applied as ``Z @ W.T``).

    Hint: ``layout.slices["sqnorm"]`` and ``layout.slices["one"]`` give the
    coordinates. A dot product pairs coordinate r of the query with coordinate
    r of the key: route the point's constant 1 and the center's ``-||c||^2``
    to the same coordinate.
    """
    raise NotImplementedError("exercise 08: write dot_cax_weights")
