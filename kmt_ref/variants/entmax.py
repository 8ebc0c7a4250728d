"""Entmax k-means: each center is a 1.5-entmax-weighted mean of its members.

Classical rule (this project's, the walk-through of adding a variant): with
``r_i = ||x_i - c_j||^2`` the squared distance of member ``i`` of cluster ``j``
to its old center and ``S_j`` the members::

    c_j <- entmax15(-a r_S / sqrt(d))^T X_S

1.5-entmax (Peters, Niculae and Martins, 2019) lies between softmax and
sparsemax: ``entmax15(z) = [z/2 - tau]_+^2``, so weights fall off
quadratically with ``r`` and are exactly zero past a threshold, a smoother
version of :mod:`~kmt_ref.variants.robust`. An empty cluster uses all points
as its candidates.

Transformer: Theorem 2.1 with one block changed, CAC, which gets entmax-1.5
attention and query/key weights ``sqrt(2) P_y + sqrt(eps) P_x``,
``eps = a / sqrt(d)``: its score is ``-(2 ||e_j - y_i||^2 + eps ||c_j - x_i||^2)``.

Proposition (entmax k-means by entmax attention). Suppose that at every layer
nearest centers are unique and every non-empty cluster j has a member with
``eps ||x_i - c_j||^2 <= 1``. Then the T-layer transformer outputs exactly the
T-th iterate of ``entmax_kmeans(X, init, T, a)``.

Proof sketch. As for sparsemax (:mod:`~kmt_ref.variants.robust`), with
``w = z / 2`` the halved scores. In the CAC row of center j a member has
``w_i = -eps r_ij / 2`` and a non-member ``w_i = -2 - eps r_ij / 2 <= -2``. Let
``tau_S`` be the threshold of the members alone. The largest member weight is
at most 1, so ``(max_S w - tau_S)^2 <= 1`` and ``tau_S >= -eps min_S r / 2 - 1
>= -3/2`` by the assumption: every non-member has ``w_i < tau_S``, gets weight
0 and, adding nothing to ``sum (w - tau)_+^2``, leaves ``tau_S`` unchanged. The
row's entmax is the members' entmax padded with zeros, and the value
``P_x p_i = [x_i | 0]`` gives ``entmax15(-eps r_S)^T X_S``. An empty cluster's
row is all points shifted by the same 4, and entmax is shift-invariant. With
SAC and the residual, ``Q = [C_{t+1} | I_k]``. QED. (The separation 2 is what
the proof needs: with the sparsemax weights' 1, non-members would sit only
``1`` below the members in ``w``, less than the ``3/2`` the threshold may fall.)
"""

import numpy as np

from ..attention import Normalizer, register_normalizer
from ..normalizers import entmax15
from ._cac import sharpness_kmeans, sharpness_variant
from .registry import EXACT_TOL, Variant, register_variant, validated_mechanisms
from .robust import robust_rounding_tol

__all__ = ["entmax_kmeans", "entmax_kmeans_transformer"]

register_normalizer("entmax15", Normalizer(entmax15, fixed_order=True))

#: Weight of the id mismatch in the changed CAC score (see the proof).
SEPARATION = 2.0


def entmax_kmeans(X, init, n_iter, a=0.01):
    """Entmax-weighted k-means, exactly ``n_iter`` iterations.

    Each iteration assigns every point to its nearest center (lowest index at
    ties) and sets ``c_j = entmax15(-a r_S / sqrt(d))^T X_S`` over the members
    ``S`` of cluster j (all points if it is empty), ``r`` the squared
    distances to the old ``c_j``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
    n_iter : int
        ``>= 0``.
    a : float
        Sharpness, ``> 0``; small ``a`` approaches Lloyd (uniform weights).

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d), ``labels`` (n_iter, n).
    """
    return sharpness_kmeans(X, init, n_iter, a, entmax15)


def entmax_kmeans_transformer(d, k, a=0.01):
    """Theorem 2.1 with entmax-1.5 attention in CAC: :func:`entmax_kmeans`.

    Changed block: CAC only. Euclidean score, ``Wq = Wk = sqrt(2) P_y +
    sqrt(a / sqrt(d)) P_x``, ``Wv = P_x``, normalizer ``"entmax15"``,
    ``gamma = 1``; CAX hardmax, SAX and SAC identity.

    Parameters
    ----------
    d, k : int
    a : float
        ``> 0``, as in :func:`entmax_kmeans`.

    Returns
    -------
    KMeansTransformer
    """
    return sharpness_variant(d, k, a, "entmax15", SEPARATION, lambda a: f"entmax k-means (entmax-1.5, a={a:g})")


def entmax_rounding_tol(X, a):
    """Float64 allowance: the sparsemax variant's score error, doubled (``d p = 2 sqrt(p) d(w - tau)``, ``p <= 1``)."""
    return EXACT_TOL + 2.0 * (robust_rounding_tol(X, a) - EXACT_TOL)


register_variant(Variant(
    name="entmax-1.5 k-means", classical=entmax_kmeans, transformer=entmax_kmeans_transformer,
    parameter="a", values=(0.01, 1.0), tolerance=entmax_rounding_tol,
    mechanisms=lambda d, a: validated_mechanisms(CAC={"score": "euclidean", "normalizer": "entmax15", "gamma": 1.0,
                                                      "params": {}, "G": SEPARATION, "eps": a / np.sqrt(d)}),
    change="CAC: entmax-1.5 attention, Wq = Wk = sqrt(2) P_y + sqrt(a / sqrt(d)) P_x",
))
