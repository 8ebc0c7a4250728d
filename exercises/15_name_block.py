"""Exercise 15 (medium) - chapter "What the trained model learned".

Check your answer: ``python -m kmt_ref.exercises check 15``
"""

import numpy as np

from kmt_ref import TokenLayout


def name_block(Wq, Wk, Wv, d, k):
    """Name the block a learned-looking weight triple belongs to.

    A trained model's weights are not the Equation 5 matrices, but they
    resemble them: scaled (gamma can hide in ``Wq`` and ``Wk``), a partial
    reset (``Wv ~ -0.8 P_x``), and noise everywhere. Equation 5 for tokens
    ``[x | y]``::

        CAX: (P_x, P_x,  P_y)     SAX: (P_x, P_x, -P_y)
        CAC: (P_y, P_y,  P_x)     SAC: (P_y, P_y, -P_x)

    Parameters
    ----------
    Wq, Wk, Wv : ndarrays, shape (d + k, d + k)
    d, k : int

    Returns
    -------
    {"CAX", "SAX", "CAC", "SAC"}

    Hint: the score depends on ``Wq.T @ Wk``: is its x-block or its y-block
    larger? Then look at ``Wv``: does it write x or y, with which sign (the
    trace of the block it writes)? Use block norms or traces, not single
    entries: the noise is comparable to an off-diagonal entry.
    """
    raise NotImplementedError("exercise 15: write name_block")
