"""Exercise 07 (hard) - chapter "The k-means transformer (Theorem 2.1)".

Check your answer: ``python -m kmt_ref.exercises check 07``
"""

import numpy as np


def smallest_gamma(X, centers, eps):
    """The smallest gamma at which soft CAX is within ``eps`` of Lloyd's assignment.

    At finite gamma the CAX block uses ``softmax_j(-gamma ||x_i - c_j||^2)``
    instead of hardmax. Find the smallest ``gamma > 0`` such that EVERY point
    puts weight at least ``1 - eps`` on its nearest center. (Nearest centers
    are unique in the check's data.)

    Parameters
    ----------
    X : ndarray, shape (n, d)
    centers : ndarray, shape (k, d)
    eps : float
        In (0, 1).

    Returns
    -------
    float
        Accurate to a relative 1e-6 or better.

    Hint: with gaps ``g_ij = ||x_i - c_j||^2 - min_l ||x_i - c_l||^2``, point
    i's weight on its nearest center is ``1 / sum_j exp(-gamma g_ij)``, which
    increases with gamma. Solve ``weight_i(gamma) = 1 - eps`` for each point
    (``scipy.optimize.brentq``; for k = 2 there is a closed form) and take the
    largest solution. A quick lower bound to bracket the root:
    ``log((1 - eps) / eps) / (smallest gap of point i)``.
    """
    raise NotImplementedError("exercise 07: write smallest_gamma")
