"""Exercise 20 (warm-up) - chapter "Learning a clustering layer".

Check your answer: ``python -m kmt_ref.exercises check 20``
"""

import numpy as np


def assignment_basis(model):
    """Read the basis of the assignment channel from a model's weights.

    ``model`` is the Theorem 2.1 construction (all-attention, any gamma) with its
    assignment channel in another basis: CAX writes ``R a_i`` instead of the
    assignment ``a_i`` (its ``Wv`` is ``G Wv`` with ``G = diag(I_d, R)``) and
    CAC reads it back (its ``Wk`` is ``Wk G^{-1}``), for an unknown invertible
    ``k x k`` matrix ``R``. Every center it computes is the construction's
    (the book shows why). Find ``R``.

    Parameters
    ----------
    model : kmt_ref.KMeansTransformer

    Returns
    -------
    ndarray, shape (k, k)
        ``R``.

    Hint: in the construction, CAX's ``Wv`` is the projector ``P_y``; look at
    the block of ``model.weights["CAX"]["Wv"]`` that maps ``y`` coordinates to
    ``y`` coordinates (``model.layout.slices["y"]``).
    """
    raise NotImplementedError("exercise 20: write assignment_basis")
