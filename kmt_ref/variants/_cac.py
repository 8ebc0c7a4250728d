"""What the trimmed, robust and k-medoids variants share: a new CAC block.

All three keep CAX, SAX and SAC of Theorem 2.1 and change only CAC, the block
in which center ``j`` reads the points. Its query/key weights become::

    Wq = Wk = sqrt(G) P_y + sqrt(eps) P_x         (Theorem 2.1: P_y)

so the Euclidean score of center token ``[c_j | e_j]`` against point token
``[x_i | y_i]`` is::

    -(G ||e_j - y_i||^2 + eps ||c_j - x_i||^2)

A member of cluster j (``y_i = e_j``) scores ``-eps r_ij`` with
``r_ij = ||x_i - c_j||^2`` its squared distance to the OLD center; every
non-member is pushed down by the same ``2G``. The variant's normalizer then
decides which members the new center is made of. When cluster j is empty,
every point is pushed down by the same ``2G`` and the normalizer sees the
distances to ``c_j`` of all points: the classical references below use the
same candidate set.
"""

import numpy as np

from .._validation import check_dims, check_positive, check_problem
from ..attention import Block
from ..geometry import center_distances, nearest_center
from ..layer import KMeansTransformer
from ..lloyd_transformer import equation5_weights, lloyd_transformer, unique_nearest
from ..trajectory import iterate

__all__ = ["cac_variant", "candidate_update", "candidate_iterations", "sharpness_kmeans", "sharpness_variant"]


def members_within(distance_weight, bound, strict=False):
    """The assumption of the CAC propositions: every non-empty cluster has a member ``i`` with
    ``distance_weight * ||x_i - c_j||^2 <= bound`` (``< bound`` when ``strict``); for
    :class:`~kmt_ref.layer.KMeansTransformer` ``(assumption=...)``."""

    def assumption(X, C):
        labels = nearest_center(X, C)
        closest = np.full(C.shape[0], np.inf)
        np.minimum.at(closest, labels, distance_weight * center_distances(X, C)[np.arange(len(X)), labels])
        bad = np.flatnonzero(np.isfinite(closest) & ((closest >= bound) if strict else (closest > bound)))
        if bad.size == 0:
            return None
        j = int(bad[0])
        return (f"cluster {j} has no member with {distance_weight:g} ||x - c||^2 {'<' if strict else '<='} {bound:g} "
                f"(its closest has {closest[j]:.3g}), which the exactness proposition assumes")

    return assumption


def cac_variant(d, k, normalizer, separation, distance_weight, name, gamma=1.0, params=None, member_bound=None,
                strict=False):
    """The Theorem 2.1 transformer (validated configuration) with a new CAC block.

    Parameters
    ----------
    d, k : int
    normalizer : str
        A key of ``NORMALIZERS`` for the new CAC block.
    separation : float
        ``G``, the weight of the id mismatch ``||e_j - y_i||^2``.
    distance_weight : float
        ``eps``, the weight of ``||c_j - x_i||^2``.
    name : str
    gamma : float
        Inverse temperature of the CAC block.
    params : dict, optional
        Normalizer parameters (``threshold`` ...).
    member_bound, strict : float, bool
        The proposition's assumption (:func:`members_within`), checked by
        ``run(warn=True)``; ``None``: none stated.

    Returns
    -------
    KMeansTransformer
    """
    base = lloyd_transformer(d, k, np.inf, config="validated")
    layout = base.layout
    Wq5, Wk5, Wv5 = equation5_weights(layout)["CAC"]
    P_x = layout.projector("x")
    Wq = np.sqrt(separation) * Wq5 + np.sqrt(distance_weight) * P_x
    Wk = np.sqrt(separation) * Wk5 + np.sqrt(distance_weight) * P_x
    blocks = dict(base.blocks)
    blocks["CAC"] = Block(Wq, Wk, Wv5, score="euclidean", normalizer=normalizer, gamma=gamma,
                          params=dict(params or {}))
    # Scores are distances and ids; the centers are (weighted) means of members. CAX is Theorem 2.1's hardmax:
    # its tie rule is not the classical one, so each proposition assumes no tie too.
    members = None if member_bound is None else members_within(distance_weight, member_bound, strict)

    def assumption(X, C):
        return unique_nearest(X, C) or (None if members is None else members(X, C))

    return KMeansTransformer(layout, blocks, name=name, translation_invariant=True, assumption=assumption)


def candidate_update(X, C, weights_of):
    """One assignment + center update in which each center reweights its candidates.

    Candidates of center ``j`` are its members (nearest center ``j``, lowest
    index at ties), or all points when it has none.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    C : ndarray, shape (k, d)
    weights_of : callable
        ``weights_of(r)`` maps the squared distances ``r`` (m,) of the
        candidates to ``c_j`` to weights (m,) summing to 1.

    Returns
    -------
    new_C : ndarray, shape (k, d)
    labels : ndarray of int, shape (n,)
    """
    labels = nearest_center(X, C)
    D2 = center_distances(X, C)  # (n, k); k is small, so this is O(n) memory
    new_C = np.empty_like(C)
    for j in range(C.shape[0]):
        members = labels == j
        S = members if members.any() else np.ones_like(members)
        new_C[j] = weights_of(D2[S, j]) @ X[S]
    return new_C, labels


def candidate_iterations(X, C, n_iter, weights_of):
    """``n_iter`` rounds of :func:`candidate_update` from centers ``C``: the classical twin's trajectory.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    C : ndarray, shape (k, d)
    n_iter : int
    weights_of : callable
        As in :func:`candidate_update`.

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d), ``labels`` (n_iter, n).
    """
    return iterate(lambda C, t: candidate_update(X, C, weights_of), X, C, n_iter)


def sharpness_kmeans(X, init, n_iter, a, weights):
    """The classical side of a variant that weights cluster members by ``weights(-a r / sqrt(d))``.

    ``weights`` maps scores (..., r) to simplex weights (sparsemax, entmax-1.5);
    ``r`` are the members' squared distances to the old center. Validates the
    public arguments, so the robust and entmax variants need only name it.
    """
    X, C, n_iter = check_problem(X, init, n_iter, "n_iter")
    a = check_positive(a, "a")
    eps = a / np.sqrt(X.shape[1])
    return candidate_iterations(X, C, n_iter, lambda r: weights(-eps * r))


def sharpness_variant(d, k, a, normalizer, separation, name):
    """The transformer side: CAC with ``normalizer``, id weight ``separation``, distance weight ``a / sqrt(d)``."""
    d, k = check_dims(d, k)
    a = check_positive(a, "a")
    # Both propositions (sparsemax, entmax-1.5) assume a member with eps ||x - c||^2 <= 1.
    return cac_variant(d, k, normalizer, separation, a / np.sqrt(d), name=name(a), member_bound=1.0)
