"""Exercise 05 (medium) - chapter "The k-means transformer (Theorem 2.1)".

Check your answer: ``python -m kmt_ref.exercises check 05``
"""

import numpy as np

from kmt_ref import Block, TokenLayout, attend


def sax_reset(X, Y):
    """Prove by code that ``P + SAX(P)`` erases the old assignment block.

    Build the point tokens ``P = [X | Y]``, the SAX block of Equation 5
    (points attend to points, Euclidean score, ``normalizer="hardmax"``) and
    return ``P + attend(P, P, block)``. The proof of Theorem 2.1 says the
    result is ``[X | 0]``: each point's hardmax picks the points equal to it,
    and the value subtracts their ``y``.

    The check feeds distinct points, duplicated points with equal ``y``
    (as in any run of the transformer), and duplicated points with different
    ``y`` (impossible in a run) -- the last case shows what SAX really computes,
    so do not shortcut it by zeroing the ``y`` block.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    Y : ndarray, shape (n, k)
        The assignment block left by the previous layer.

    Returns
    -------
    ndarray, shape (n, d + k)
        The tokens after the residual update ``P + A(P, P)``.

    Hint: ``layout = TokenLayout(d, k)``; put Y into
    ``P[:, layout.slices["y"]]``; the weights are ``(P_x, P_x, -P_y)``.
    """
    raise NotImplementedError("exercise 05: write sax_reset")
