"""Trimmed k-means, and the trimming rule that norm-max attention realizes.

Three classical algorithms and one transformer:

* :func:`trimmed_kmeans` -- Cuesta-Albertos, Gordaliza & Matrán (1997): at
  each iteration drop the ``floor(alpha n)`` points farthest from their
  nearest center and move each center to the mean of its kept points. The
  trim is global and its size is fixed.
* :func:`quantile_trimmed_kmeans` -- the authors' trimmed baseline (their
  code's ``trimmed_iters``): each cluster drops its members at or beyond the
  0.95-quantile of their squared distances to its center and moves to the
  mean of the rest. The trim is per cluster and its size is a fraction.
* :func:`gap_trimmed_kmeans` -- the rule the transformer computes exactly
  (this project's construction; the paper's
  formula is not available). Each center trims its own members: with
  ``r_i = ||x_i - c_j||^2`` for the members ``S_j`` of center j, member i is
  kept iff its *cumulative gap* is at most ``t``::

      sum_{l in S_j} [r_i - r_l]_+ <= t

  and ``c_j`` moves to the mean of the kept members (an empty cluster uses
  all points as its candidates). The trim is per cluster and its size adapts:
  a tight cluster tolerates a point at a given distance less than a loose one.
* :func:`trimmed_kmeans_transformer` -- Theorem 2.1 with one block changed:
  CAC uses inf-norm normmax attention (:func:`kmt_ref.normalizers.normmax_inf`,
  Santos et al. 2024) with query/key weights ``sqrt(G) P_y + P_x``.

Proposition (trimming by norm-max attention). Let ``G > 0`` and ``t > 0``,
and suppose that at every layer nearest centers are unique and every
non-empty cluster j has a member with ``||x_i - c_j||^2 < 2G - t``. Then the
T-layer transformer outputs exactly the T-th iterate of
``gap_trimmed_kmeans(X, init, T, t)``.

Proof sketch. Same invariant as Theorem 2.1: ``P = [X | Y_t]``,
``Q = [C_t | I_k]``. CAX, SAX and SAC are unchanged, so after CAX + SAX the
points carry the one-hot nearest-center assignment and SAC subtracts
``[c_j | 0]``. In CAC, center j scores point i by
``z_i = -(G ||e_j - y_i||^2 + r_ij)``: ``-r_ij`` for members, at most
``-2G - r_ij`` for the others. Inf-norm normmax on a row keeps the top ``s``
scores, ``s`` the largest with ``sum_{l<=s} (z_(l) - z_(s)) <= t``, each with
weight ``1/s`` (see :mod:`kmt_ref.normalizers`). Sorted by score, members come
first; their gaps are ``sum_l [r_i - r_l]_+`` -- the rule above. The first
non-member's gap is at least ``z_(1) - z_non >= 2G - min_i r_ij > t`` by the
assumption, so no non-member is kept, and the value ``P_x p_i = [x_i | 0]``
averages to the mean of the kept members. If cluster j is empty, all points
are shifted by the same ``2G`` (a shift changes no gap) and the rule runs on
all points, as in the classical function. With the residual,
``Q = [C_{t+1} | I_k]``. QED.

Why inf-norm and not 2-norm: the inf-norm solution is uniform on its support,
so the new center is a plain (trimmed) mean; the 2-norm solution weights the
kept members by ``r`` (a weighted mean), a different algorithm.

Relation to the 1997 rule: both keep the points closest to their centers,
but the 1997 rule trims a fixed number globally; no fixed ``t`` does that,
because the gap rule counts gaps within one cluster. The two coincide only in
special cases (one cluster and a ``t`` chosen for the data at hand); the
book's outlier experiment compares them on contaminated data.
"""

import numpy as np

from .._validation import (
    check_choice,
    check_dims,
    check_fraction,
    check_positive,
    check_problem,
)
from ..classical import EMPTY_CLUSTER_POLICIES, _lloyd
from ..geometry import nearest_center
from ..objective import assigned_squared_distances
from ..trajectory import iterate
from ._cac import cac_variant, candidate_iterations
from .registry import Variant, register_variant, validated_mechanisms

__all__ = ["trimmed_kmeans", "quantile_trimmed_kmeans", "gap_trimmed_kmeans", "gap_keep",
           "trimmed_kmeans_transformer"]


def trimmed_kmeans(X, init, n_iter, alpha, empty_cluster="global_mean"):
    """Trimmed k-means (Cuesta-Albertos, Gordaliza & Matrán, 1997), ``n_iter`` iterations.

    Each iteration: compute every point's squared distance to its nearest
    center, keep the ``n - floor(alpha n)`` closest (ties: lowest index),
    and move each center to the mean of its kept members (one Lloyd update on
    the kept points). No early stop.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
    n_iter : int
        ``>= 0``.
    alpha : float
        Trimmed fraction, in ``[0, 1)``; at least ``k`` points must be kept.
        ``alpha = 0`` is Lloyd's algorithm.
    empty_cluster : {"global_mean", "keep", "raise"}
        As in :func:`kmt_ref.lloyd`; ``"global_mean"`` is the mean of the kept points.

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d); ``labels`` (n_iter, n), the nearest
        center of every point (kept or not).
    """
    X, C, n_iter = check_problem(X, init, n_iter)
    alpha = check_fraction(alpha, "alpha")
    n, k = X.shape[0], C.shape[0]
    n_keep = n - int(np.floor(alpha * n))
    if n_keep < k:
        raise ValueError(
            f"alpha={alpha} trims {n - n_keep} of n={n} points and leaves {n_keep} < k={k}"
        )
    check_choice(empty_cluster, "empty_cluster", EMPTY_CLUSTER_POLICIES)
    return _trimmed_kmeans(X, C, n_iter, n_keep, empty_cluster)


def _trimmed_kmeans(X, C, n_iter, n_keep, empty_cluster):
    """Trusted kernel of :func:`trimmed_kmeans`."""

    def step(C, t):
        labels = nearest_center(X, C)
        r = assigned_squared_distances(X, C, labels)
        kept = np.sort(np.argsort(r, kind="stable")[:n_keep])
        return _lloyd(X[kept], C, 1, empty_cluster).centers[1], labels

    return iterate(step, X, C, n_iter)


def quantile_trimmed_kmeans(X, init, n_iter, quantile=0.95, empty_cluster="global_mean"):
    """Per-cluster quantile trimming, the authors' trimmed baseline, ``n_iter`` iterations.

    Each iteration assigns every point to its nearest center (lowest index at
    ties); for each non-empty cluster, the threshold is the ``quantile`` of its
    members' squared distances (linear interpolation, ``numpy.quantile``'s
    default) and the center moves to the mean of the members strictly below
    it. Two edge rules are this project's: if no member is strictly below
    (all members equidistant, e.g. a single member) all members are kept, and
    an empty cluster follows ``empty_cluster``; the authors' code replaces
    such a center by a random data point in both cases.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
    n_iter : int
        ``>= 0``.
    quantile : float
        In ``(0, 1)``; the authors use 0.95.
    empty_cluster : {"global_mean", "keep", "raise"}
        As in :func:`kmt_ref.lloyd`.

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d); ``labels`` (n_iter, n), the nearest
        center of every point (kept or not).
    """
    X, C, n_iter = check_problem(X, init, n_iter)
    quantile = check_fraction(quantile, "quantile")
    if quantile == 0.0:
        raise ValueError(f"quantile must be in (0, 1); got quantile={quantile}")
    check_choice(empty_cluster, "empty_cluster", EMPTY_CLUSTER_POLICIES)
    k = C.shape[0]

    def step(C, t):
        lab = nearest_center(X, C)
        r = assigned_squared_distances(X, C, lab)
        new = np.empty_like(C)
        empty = np.bincount(lab, minlength=k) == 0
        for j in np.flatnonzero(~empty):
            members = np.flatnonzero(lab == j)
            below = members[r[members] < np.quantile(r[members], quantile)]
            new[j] = X[below if below.size else members].mean(axis=0)
        if empty.any():
            if empty_cluster == "raise":
                raise ValueError(
                    f"cluster {int(np.flatnonzero(empty)[0])} is empty at iteration {t} (empty_cluster='raise')"
                )
            new[empty] = X.mean(axis=0) if empty_cluster == "global_mean" else C[empty]
        return new, lab

    return iterate(step, X, C, n_iter)


def gap_keep(r, threshold):
    """Which candidates the gap rule keeps: ``sum_l [r_i - r_l]_+ <= t``.

    Parameters
    ----------
    r : ndarray, shape (m,)
        Squared distances of the candidates to their center.
    threshold : float
        ``t``.

    Returns
    -------
    ndarray of bool, shape (m,)
    """
    # sorted ascending, the gap of the s-th point is s r_(s) - (r_(1) + ... + r_(s))
    rs = np.sort(r)
    gaps = np.arange(1, rs.size + 1) * rs - np.cumsum(rs)
    return r <= rs[np.sum(gaps <= threshold) - 1]


def gap_trimmed_kmeans(X, init, n_iter, threshold):
    """Per-cluster gap-trimmed k-means: the rule norm-max attention realizes.

    Each iteration assigns every point to its nearest center (lowest index at
    ties); center j keeps the members i with
    ``sum_{l in S_j} [r_i - r_l]_+ <= t`` (``r`` the squared distances to
    ``c_j``; all points are the candidates of an empty cluster) and moves to
    their mean. See the module docstring for the proposition.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
    n_iter : int
    threshold : float
        The trimming threshold ``t``, ``> 0``, in units of squared distance.

    Returns
    -------
    Trajectory
    """
    X, C, n_iter = check_problem(X, init, n_iter)
    t = check_positive(threshold, "threshold")

    def weights_of(r):
        keep = gap_keep(r, t)
        return keep / keep.sum()

    return candidate_iterations(X, C, n_iter, weights_of)


def trimmed_kmeans_transformer(d, k, threshold, separation=1e4):
    """Theorem 2.1 with inf-norm normmax attention in CAC: :func:`gap_trimmed_kmeans`.

    Changed block: CAC only. Euclidean score with ``Wq = Wk = sqrt(G) P_y +
    P_x`` (Theorem 2.1 has ``P_y``), ``Wv = P_x`` unchanged, normalizer
    ``"normmax_inf"`` with parameter ``threshold``, ``gamma = 1``. CAX is hardmax,
    SAX and SAC identity (the validated configuration of Theorem 2.1).

    Parameters
    ----------
    d, k : int
    threshold : float
        The trimming threshold ``t`` (``> 0``), as in :func:`gap_trimmed_kmeans`.
    separation : float
        ``G``: exactness needs every non-empty cluster to have a member within
        squared distance ``2G - t`` of its center.

    Returns
    -------
    KMeansTransformer
    """
    d, k = check_dims(d, k)
    t = check_positive(threshold, "threshold")
    separation = check_positive(separation, "separation")
    return cac_variant(d, k, "normmax_inf", separation, 1.0,
                       name=f"trimmed k-means (normmax, threshold={t:g})", params={"threshold": t},
                       member_bound=2 * separation - t, strict=True)


register_variant(Variant(
    name="trimmed (normmax)", classical=gap_trimmed_kmeans, transformer=trimmed_kmeans_transformer,
    parameter="threshold", values=(0.1, 1.0),
    mechanisms=lambda d, t: validated_mechanisms(CAC={"score": "euclidean", "normalizer": "normmax_inf", "gamma": 1.0,
                                                      "params": {"threshold": t}, "G": 1e4, "eps": 1.0}),
    change="CAC: inf-norm normmax attention with threshold t, ids separated by G = 1e4",
))
