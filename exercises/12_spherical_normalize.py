"""Exercise 12 (medium) - chapter "Spherical k-means".

Check your answer: ``python -m kmt_ref.exercises check 12``
"""

import numpy as np


def spherical_normalize(Q, d, k):
    """Normalize the center tokens for spherical k-means, leaving the ids intact.

    Spherical k-means (Dhillon & Modha, 2001) keeps unit-norm centers: after
    the mean of the members is computed, it is divided by its norm. A
    per-token normalization like RMSNorm applied to the whole token
    ``[c_j | e_j]`` would also rescale the id ``e_j`` and break the next
    layer's CAC. Normalize only the ``x`` block.

    Parameters
    ----------
    Q : ndarray, shape (k, d + k)
        Center tokens ``[c_j | e_j]``.
    d, k : int

    Returns
    -------
    ndarray, shape (k, d + k)
        ``[c_j / ||c_j|| | e_j]``; a zero ``c_j`` stays zero (never NaN). Do
        not modify ``Q`` in place.

    Hint: ``np.linalg.norm(Q[:, :d], axis=1, keepdims=True)``. The check then
    applies one Theorem 2.1 layer to unit vectors followed by your function
    and compares with a spherical k-means step: on the sphere, the nearest
    center is the one of largest cosine.
    """
    raise NotImplementedError("exercise 12: write spherical_normalize")
