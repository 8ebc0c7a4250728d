"""Exercise 09 (medium) - chapter "Dot-product attention and the FFN (Theorem 2.2)".

Check your answer: ``python -m kmt_ref.exercises check 09``
"""

import numpy as np

from kmt_ref import TokenLayout


def sqnorm_ffn(d, k):
    """An FFN with rectified quadratic activation that writes ``||c||^2``.

    After the center blocks of a layer, a center token is ``[c | e_j | 0 | 1]``
    (``layout = TokenLayout(d, k, ("x", "y", "sqnorm", "one"))``; the reset
    block has emptied the ``sqnorm`` coordinate, and ``c`` has moved). The FFN
    ``ffn(Q) = relu(Q @ W1.T) ** 2 @ W2.T`` is added with a residual:
    ``Q + ffn(Q)`` must be ``[c | e_j | ||c||^2 | 1]``, every other coordinate
    untouched.

    Parameters
    ----------
    d, k : int

    Returns
    -------
    W1 : ndarray, shape (h, d + k + 2)
        First layer (h hidden units, your choice).
    W2 : ndarray, shape (d + k + 2, h)
        Second layer.

    Hint: ``c_a^2 = relu(c_a)^2 + relu(-c_a)^2``.
    """
    raise NotImplementedError("exercise 09: write sqnorm_ffn")
