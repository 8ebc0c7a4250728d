"""Exercise 03 (warm-up) - chapter "Attention as a soft nearest-neighbour lookup".

Check your answer: ``python -m kmt_ref.exercises check 03``
"""

import numpy as np


def averaging_hardmax(scores):
    """Averaging hard attention: the ``gamma -> inf`` limit of ``softmax(gamma * scores)``.

    Row-wise over the LAST axis: every entry equal to the row maximum gets
    weight ``1 / (number of such entries)``, every other entry 0. (Plain
    ``argmax`` one-hot is not the limit: two tied keys share the weight.)

    Parameters
    ----------
    scores : ndarray, shape (..., r)
        Any number of leading axes; entries may be ``-inf``.

    Returns
    -------
    ndarray, same shape as ``scores``
        Non-negative, every row sums to 1.

    Hint: compare with ``scores.max(axis=-1, keepdims=True)``.
    """
    raise NotImplementedError("exercise 03: write averaging_hardmax")
