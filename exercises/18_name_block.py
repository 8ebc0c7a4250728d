"""Exercise 18 (medium) - chapter "Learning a clustering layer".

Check your answer: ``python -m kmt_ref.exercises check 18``
"""

import numpy as np

from kmt_ref import TokenLayout


def name_block(Wq, Wk, Wv, d, k):
    """Name the block a disguised Equation 5 weight triple belongs to.

    The triples are Equation 5 weights disguised the way training disguises
    them: scaled (gamma can hide in ``Wq`` and ``Wk``), a partial reset
    (``Wv ~ -0.8 P_x``), and noise everywhere. (A trained model can also
    write the ``y`` coordinates in another basis - book chapter "Learning a
    clustering layer", section "The assignment channel has no fixed basis";
    this exercise keeps Equation 5's basis.) Equation 5 for tokens
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
    raise NotImplementedError("exercise 18: write name_block")
