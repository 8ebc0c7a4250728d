"""Exercise 22 (warm-up) - chapter "Beyond the paper".

Check your answer: ``python -m kmt_ref.exercises check 22``
"""

import numpy as np


def adjusted_rand_index(labels_true, labels_pred):
    """The adjusted Rand index of two clusterings of the same points.

    With the contingency table ``n_ij`` (points in class i and cluster j),
    its row sums ``a_i``, column sums ``b_j`` and ``C(m, 2) = m (m - 1) / 2``:
    ``index = (sum_ij C(n_ij, 2) - E) / (M - E)``, where
    ``E = sum_i C(a_i, 2) * sum_j C(b_j, 2) / C(n, 2)`` and
    ``M = (sum_i C(a_i, 2) + sum_j C(b_j, 2)) / 2``. When ``M == E`` (both
    clusterings trivial in the same way) the index is 1.

    Parameters
    ----------
    labels_true, labels_pred : ndarray of int, shape (n,)

    Returns
    -------
    float

    Hint: ``np.unique(labels, return_inverse=True)`` numbers the labels
    0, 1, ...; ``np.add.at`` or ``np.bincount`` on ``i * n_clusters + j``
    fills the table.
    """
    raise NotImplementedError("exercise 22: write adjusted_rand_index")
