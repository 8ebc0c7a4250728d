"""k-medoids, classical and randomized, and a transformer whose centers are data points.

* :func:`kmedoids` -- alternating (Voronoi-iteration) k-medoids with
  Euclidean dissimilarity (Park & Jun, 2009; Hastie, Tibshirani & Friedman,
  *Elements of Statistical Learning*, §14.3.10): assign every point to its
  nearest medoid, then make each medoid the member with the smallest sum of
  Euclidean distances to the other members (ties: lowest index). An empty
  cluster (possible only when two medoids coincide) keeps its medoid.
* :func:`randomized_kmedoids` -- the rule the transformer realizes: after the
  same assignment, the new medoid of cluster j is *sampled* among its members
  ``S_j`` with probability::

      P(c_j <- x_i) = exp(-||x_i - c_j||^2 / temperature) / sum_{l in S_j} exp(-||x_l - c_j||^2 / temperature)

  (all points are the candidates of an empty cluster). ``temperature -> 0``
  gives the deterministic rule *every medoid stays where it is* (the old
  medoid is a member at distance 0); ``temperature -> inf`` gives a uniformly
  random member.
* :func:`kmedoids_transformer` -- Theorem 2.1 with one block changed: CAC uses
  Gumbel-max attention (:func:`kmt_ref.normalizers.gumbel_max`) with
  query/key weights ``sqrt(G) P_y + P_x / sqrt(temperature)``. Its attention
  row is one-hot, so the new center is a row of X.

This construction is the project's own (the
paper's exact formula is not available).

Proposition (randomized k-medoids by Gumbel attention). Draw the CAC Gumbel
noise ``g`` (shape (k, n) per layer) from a Generator and let
:func:`randomized_kmedoids` draw its noise from a Generator in the same
state. Suppose nearest medoids are unique at every layer and no non-member's
noise exceeds a member's by ``2G`` (probability at most ``n k exp(-2G + 1)``
per layer -- zero in float64 at the default ``G = 1000``). Then the transformer
and :func:`randomized_kmedoids` pick the same medoids at every layer; so each
layer's medoid follows the law above, and the center is that row of X: the
layer adds the reset first, ``(c - c) + x = x`` exactly, in coordinates
measured from a data value ``o`` (as the classical rule measures from a
center), and reading the center back, ``(x - o) + o``, rounds at most once.

Proof sketch. Invariant ``P = [X | Y_t]``, ``Q = [C_t | I_k]``; CAX, SAX and
SAC are those of Theorem 2.1. In CAC, center j scores point i by
``-(G ||e_j - y_i||^2 + ||x_i - c_j||^2 / temperature)``: ``-r_ij / temperature``
for members, ``-2G - r_ij / temperature`` for non-members. Gumbel-max takes
``argmax_i (score_i + g_ji)``; under the noise assumption the argmax is a
member, the same one :func:`randomized_kmedoids` picks with the same ``g``.
By the Gumbel-max trick its law is the softmax of the member scores, the law
above. The value ``P_x p_i = [x_i | 0]`` and SAC's ``-[c_j | 0]`` leave
``Q = [x_{i_j} | I_k]``. QED.

Why not the classical medoid? In a Gumbel (or hard) attention block the
score of center j for point i depends on the tokens ``q_j`` and ``p_i`` only,
so the deterministic limit is an arg-max of a per-point function: adding a
point that does not win cannot change the winner. The medoid violates that:
for the members {0, 1, 2} the medoid is 1; add 10 and 11 and it becomes 2,
though neither 10 nor 11 wins. So no choice of the CAC weights makes one layer
compute the medoid update; the transformer realizes the randomized rule, and
its comparison with :func:`kmedoids` is empirical (book, chapter Variants).
"""

import numpy as np

from .._validation import check_centers, check_data, check_dims, check_positive, check_problem, check_rng
from ..geometry import CHUNK_ELEMENTS, center_distances, nearest_center, squared_distances
from ..layer import KMeansTransformer
from ..trajectory import iterate
from ._cac import cac_variant
from .registry import Variant, register_variant, validated_mechanisms

__all__ = ["kmedoids", "randomized_kmedoids", "kmedoids_transformer", "medoid_law", "medoid_indices"]


def medoid_indices(X, init):
    """Index in ``X`` of every row of ``init`` (the first equal row).

    Raises
    ------
    ValueError
        If a row of ``init`` is not a row of ``X``.
    """
    X = check_data(X)
    C = check_centers(init, X.shape[1])
    equal = np.all(X[None, :, :] == C[:, None, :], axis=2)  # (k, n); k is small
    missing = np.flatnonzero(~equal.any(axis=1))
    if missing.size:
        raise ValueError(
            f"init rows must be rows of X; init[{missing[0]}]={C[missing[0]].tolist()} is not"
        )
    return np.argmax(equal, axis=1)


def _check_inputs(X, init, n_iter):
    X, C, n_iter = check_problem(X, init, n_iter, "n_iter")
    medoid_indices(X, C)
    return X, C, n_iter


def _distance_sums(M):
    """``sum_l ||m_i - m_l||`` for every row of ``M`` (m, d), in row chunks.

    Measured from the first row: the expansion inside :func:`squared_distances`
    then rounds at the scale of the members' spread, not of their distance
    from the origin (at an offset of 1e8 it would lose everything below 1).
    """
    M = M - M[0]
    rows = max(1, CHUNK_ELEMENTS // M.shape[0])
    return np.concatenate([
        np.sqrt(squared_distances(M[s : s + rows], M)).sum(axis=1) for s in range(0, M.shape[0], rows)
    ])


def kmedoids(X, init, n_iter):
    """Alternating k-medoids (Voronoi iteration), exactly ``n_iter`` iterations.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
        Initial medoids: rows of ``X``.
    n_iter : int
        ``>= 0``.

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d), every one a row of ``X``;
        ``labels`` (n_iter, n), the nearest medoid (lowest index at ties).
    """
    X, C, n_iter = _check_inputs(X, init, n_iter)

    def step(C, t):
        labels, new = nearest_center(X, C), C.copy()
        for j in range(C.shape[0]):
            members = np.flatnonzero(labels == j)
            if members.size:
                # argmin returns the first minimum: the lowest index at ties.
                new[j] = X[members[np.argmin(_distance_sums(X[members]))]]
        return new, labels

    return iterate(step, X, C, n_iter)


def _candidates(labels, j):
    members = labels == j
    return members if members.any() else np.ones_like(members)


def medoid_law(X, centers, temperature):
    """The law of the next medoids given the current ones.

    Parameters
    ----------
    X : array_like, shape (n, d)
    centers : array_like, shape (k, d)
    temperature : float

    Returns
    -------
    ndarray, shape (k, n)
        Row j: the probability that ``x_i`` becomes medoid j (zero outside
        the candidates of j).
    """
    X = check_data(X)
    C = check_centers(centers, X.shape[1], name="centers")
    temperature = check_positive(temperature, "temperature")
    labels = nearest_center(X, C)
    logits = -center_distances(X, C).T / temperature  # (k, n), measured from the first center
    law = np.zeros_like(logits)
    for j in range(C.shape[0]):
        S = _candidates(labels, j)
        w = np.exp(logits[j, S] - logits[j, S].max())
        law[j, S] = w / w.sum()
    return law


def randomized_kmedoids(X, init, n_iter, temperature, rng):
    """Randomized k-medoids: the medoid of each cluster is sampled, ``n_iter`` iterations.

    Each iteration assigns every point to its nearest medoid and samples the
    new medoid j among the members with probability proportional to
    ``exp(-||x_i - c_j||^2 / temperature)`` (see :func:`medoid_law`), by the
    Gumbel-max trick with noise ``rng.gumbel(size=(k, n))`` -- one draw per
    iteration, the same draw the transformer makes.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
        Rows of ``X``.
    n_iter : int
    temperature : float
        ``> 0``.
    rng : numpy.random.Generator

    Returns
    -------
    Trajectory
    """
    X, C, n_iter = _check_inputs(X, init, n_iter)
    temperature = check_positive(temperature, "temperature")
    check_rng(rng)
    k, n = C.shape[0], X.shape[0]

    def step(C, t):
        labels = nearest_center(X, C)
        noisy = -center_distances(X, C).T / temperature + rng.gumbel(size=(k, n))
        for j in range(k):
            noisy[j, ~_candidates(labels, j)] = -np.inf
        return X[np.argmax(noisy, axis=1)], labels

    return iterate(step, X, C, n_iter)


class RandomKMeansTransformer(KMeansTransformer):
    """A :class:`KMeansTransformer` holding a default Generator for its random blocks."""

    def __init__(self, *args, rng=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.rng = rng

    def run(self, X, init, n_layers, rng=None, **options):
        """As :meth:`KMeansTransformer.run`; ``rng`` defaults to the model's Generator."""
        return super().run(X, init, n_layers, rng=self.rng if rng is None else rng, **options)


def kmedoids_transformer(d, k, temperature=1.0, rng=None, separation=1e3):
    """Theorem 2.1 with Gumbel-max attention in CAC: :func:`randomized_kmedoids`.

    Changed block: CAC only. Euclidean score with ``Wq = Wk = sqrt(G) P_y +
    P_x / sqrt(temperature)`` (Theorem 2.1 has ``P_y``), ``Wv = P_x``
    unchanged, normalizer ``"gumbel_max"``, ``gamma = 1``. CAX is hardmax, SAX
    and SAC identity (the validated configuration of Theorem 2.1).

    Parameters
    ----------
    d, k : int
    temperature : float
        ``> 0``; see :func:`medoid_law`.
    rng : numpy.random.Generator, optional
        Default Generator of :meth:`run` (a Generator passed to ``run`` wins).
    separation : float
        ``G``, the penalty of a non-member (see the module docstring).

    Returns
    -------
    RandomKMeansTransformer
    """
    d, k = check_dims(d, k)
    temperature = check_positive(temperature, "temperature")
    separation = check_positive(separation, "separation")
    if rng is not None:
        check_rng(rng)
    base = cac_variant(d, k, "gumbel_max", separation, 1.0 / temperature,
                       name=f"randomized k-medoids (Gumbel, temperature={temperature:g})")
    # Translation invariant: run measures from a data value, so the scores keep their precision far
    # from the origin, as the classical rule's do.
    return RandomKMeansTransformer(base.layout, dict(base.blocks), rng=rng, name=base.name,
                                   translation_invariant=True, assumption=base.assumption)


register_variant(Variant(
    name="k-medoids (Gumbel)", classical=randomized_kmedoids, transformer=kmedoids_transformer,
    parameter="temperature", values=(0.05,), needs_rng=True, init_in_data=True,
    mechanisms=lambda d, temperature: validated_mechanisms(
        CAC={"score": "euclidean", "normalizer": "gumbel_max", "gamma": 1.0, "params": {}, "G": 1e3,
             "eps": 1.0 / temperature}),
    # the medoid is copied exactly ((c - c) + x' = x', reset first) in coordinates measured from a
    # data value o; reading it back, x' + o, rounds once: the allowance scales with |X|
    tolerance=lambda X, temperature: 1e-12 * max(1.0, float(np.abs(X).max())),
    change="CAC: Gumbel-max attention over the members (a medoid drawn from its law), values read x",
))
