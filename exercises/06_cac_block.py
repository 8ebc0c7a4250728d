"""Exercise 06 (medium) - chapter "The k-means transformer (Theorem 2.1)".

Check your answer: ``python -m kmt_ref.exercises check 06``
"""

import numpy as np

from kmt_ref import Block, TokenLayout


def cac_block(d, k):
    """A CAC block: every center moves to the mean of its members.

    Centers ``q_j = [c_j | e_j]`` attend to the points ``p_i = [x_i | y_i]``,
    whose ``y_i`` is the one-hot of their cluster (written by CAX and SAX).
    ``attend(Q, P, block)`` must give, for center j, ``[mean of the x_i with
    y_i = e_j | 0]``. A cluster without members must get the mean of ALL
    points (the policy shared with ``kmt_ref.lloyd``).

    Parameters
    ----------
    d, k : int

    Returns
    -------
    kmt_ref.Block
        Weights ``(d + k, d + k)``, a score (``"euclidean"`` or ``"dot"``)
        and a normalizer from ``kmt_ref.NORMALIZERS``.

    Hint: the score should compare the center's id with the point's
    assignment, not positions; which normalizer averages uniformly over the
    best-scoring keys? (There is more than one right answer.)
    """
    raise NotImplementedError("exercise 06: write cac_block")
