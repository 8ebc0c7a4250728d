"""Exercise 10 (medium) - chapter "How large must γ be?".

Check your answer: ``python -m kmt_ref.exercises check 10``
"""

import numpy as np


def softmax_gap_bound(scores, gamma):
    """The bound of the softmax-hardmax proposition, one number per row.

    For a score row ``s`` with maximal set ``M`` (the entries equal to the
    row maximum) and gap ``Delta = max s - max_{b not in M} s_b``, the book
    proves ``||softmax(gamma s) - hardmax(s)||_1 <= 2 (r - |M|) exp(-gamma Delta)``.
    It is the step the certificate of this chapter applies to every point.
    Write the right-hand side. (Then prove it: the softmax mass outside ``M``
    is at most ``(r - |M|) exp(-gamma Delta)``, and inside ``M`` softmax is
    uniform, like hardmax.)

    Parameters
    ----------
    scores : ndarray, shape (m, r)
    gamma : float
        Inverse temperature, ``> 0``.

    Returns
    -------
    ndarray, shape (m,)
        ``2 (r - |M|) exp(-gamma Delta)`` per row; ``0`` for a row whose
        entries are all equal (softmax is then hardmax).

    Hint: ``M`` is where ``s == s.max()``; the second-best score is the
    largest entry outside ``M`` (use ``np.where(in_M, -np.inf, s)``).
    """
    raise NotImplementedError("exercise 10: write softmax_gap_bound")
