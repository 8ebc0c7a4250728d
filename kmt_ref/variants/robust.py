"""Robust k-means: each center is a sparsemax-weighted mean of its members.

Classical rule (the authors' baseline in their public code): with
``r_i = ||x_i - c_j||^2`` the squared distance of member ``i`` of cluster
``j`` to its (old, nearest) center and ``S_j`` the members::

    c_j <- sparsemax(-a r_S / sqrt(d))^T X_S

Sparsemax (Martins & Astudillo, 2016) gives the members closest to ``c_j``
weights that fall off linearly with ``r`` and gives exactly zero weight to
member whose score ``-a r_i / sqrt(d)`` is at or below the threshold ``tau``: far points are
dropped, so outliers stop pulling the center. An empty cluster uses all
points as its candidates (this project's policy; the baseline leaves it
undefined).

Transformer (this project's weights; the
paper's exact formula is not available): Theorem 2.1 with one block changed,
CAC, which gets sparsemax attention and query/key weights
``P_y + sqrt(eps) P_x``, ``eps = a / sqrt(d)``. Its score is
``-(||e_j - y_i||^2 + eps ||c_j - x_i||^2)``.

Proposition (robust k-means by sparsemax attention). Suppose that at every
layer nearest centers are unique and every non-empty cluster j has a member
with ``eps ||x_i - c_j||^2 <= 1``. Then the T-layer transformer outputs
exactly the T-th iterate of ``robust_kmeans(X, init, T, a)``.

Proof sketch. Invariant ``P = [X | Y_t]``, ``Q = [C_t | I_k]`` as in Theorem
2.1; CAX, SAX, SAC are unchanged. In CAC the row of center j holds
``z_i = -eps r_ij`` for members and ``z_i = -2 - eps r_ij <= -2`` for
non-members. Let ``tau_S`` be the sparsemax threshold of the members alone.
Because the largest member weight is at most 1, ``tau_S >= max_S z - 1 =
-eps min_S r - 1 >= -2`` by the assumption, so every non-member has
``z_i <= tau_S``: it gets weight 0 and, since it adds nothing to the sum,
leaves ``tau_S`` unchanged. The row's sparsemax is therefore the members'
sparsemax padded with zeros, and the value ``P_x p_i = [x_i | 0]`` produces
``sparsemax(-eps r_S)^T X_S``. An empty cluster's row is all points shifted
by the same 2, and sparsemax is shift-invariant. With SAC and the residual,
``Q = [C_{t+1} | I_k]``. QED.

The assumption is mild: on data in ``[0, 1]^d``, ``eps r <= a sqrt(d)``,
which is below 1 for ``a = 0.01`` up to ``d = 10^4``.
"""

import numpy as np

from ..normalizers import sparsemax
from ._cac import sharpness_kmeans, sharpness_variant
from .registry import EXACT_TOL, Variant, register_variant, validated_mechanisms

__all__ = ["robust_kmeans", "robust_kmeans_transformer"]


def robust_kmeans(X, init, n_iter, a=0.01):
    """Sparsemax-weighted k-means, exactly ``n_iter`` iterations.

    Each iteration assigns every point to its nearest center (lowest index at
    ties) and sets ``c_j = sparsemax(-a r_S / sqrt(d))^T X_S`` over the members
    ``S`` of cluster j (all points if it is empty), ``r`` the squared
    distances to the old ``c_j``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
    n_iter : int
        ``>= 0``.
    a : float
        Sharpness, ``> 0``; small ``a`` approaches Lloyd (uniform weights),
        large ``a`` keeps only the member closest to the old center.

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d), ``labels`` (n_iter, n).
    """
    return sharpness_kmeans(X, init, n_iter, a, sparsemax)


def robust_kmeans_transformer(d, k, a=0.01):
    """Theorem 2.1 with sparsemax attention in CAC: :func:`robust_kmeans`.

    Changed block: CAC only. Euclidean score, ``Wq = Wk = P_y + sqrt(a /
    sqrt(d)) P_x`` (Theorem 2.1 has ``P_y``), ``Wv = P_x`` unchanged,
    normalizer ``"sparsemax"``, ``gamma = 1``. CAX is hardmax, SAX and SAC
    identity (the validated configuration of Theorem 2.1).

    Parameters
    ----------
    d, k : int
    a : float
        ``> 0``, as in :func:`robust_kmeans`.

    Returns
    -------
    KMeansTransformer
    """
    return sharpness_variant(d, k, a, "sparsemax", 1.0, lambda a: f"robust k-means (sparsemax, a={a:g})")


def robust_rounding_tol(X, a):
    """Worst-case float64 deviation of the robust transformer from :func:`robust_kmeans`.

    Both compute ``eps ||x - c||^2`` (``eps = a / sqrt(d)``) by the expansion
    ``|x|^2 + |c|^2 - 2 x.c``, with different rounding: each score is off by
    about ``4 u eps max |x|^2`` (``u`` the unit roundoff). Sparsemax moves the
    threshold by at most as much, so each of at most ``n`` weights is off by
    twice that, and the center by the weight errors times the data's span.
    Far from the origin (the offset-1e3 rows) this dominates.
    """
    u = np.finfo(float).eps / 2
    d = X.shape[1]
    score_err = 4 * u * (a / np.sqrt(d)) * float(np.max(np.sum(X * X, axis=1)))
    return EXACT_TOL + 2 * X.shape[0] * score_err * float(np.ptp(X))


register_variant(Variant(
    name="robust (sparsemax)", classical=robust_kmeans, transformer=robust_kmeans_transformer,
    parameter="a", values=(0.01, 1.0), tolerance=robust_rounding_tol,
    mechanisms=lambda d, a: validated_mechanisms(CAC={"score": "euclidean", "normalizer": "sparsemax", "gamma": 1.0,
                                                      "params": {}, "G": 1.0, "eps": a / np.sqrt(d)}),
    change="CAC: sparsemax attention, Wq = Wk = P_y + sqrt(a / sqrt(d)) P_x",
))
