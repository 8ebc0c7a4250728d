"""Soft k-means (MacKay) and the transformer that runs it.

Classical algorithm (MacKay 2003, *Information Theory, Inference, and Learning
Algorithms*, ch. 20, "soft k-means, version 1"), stiffness ``beta > 0``::

    R_ij    = softmax_j(-beta ||x_i - c_j||^2)           responsibilities, (n, k)
    c_j    <- sum_i R_ij x_i / sum_i R_ij                 responsibility-weighted means

Mechanism changed: in the Theorem 2.1 layer, CAX's hardmax becomes a
softmax at the finite inverse temperature ``gamma = beta``, and CAC reads the
(now fractional) assignment block with linear attention. That is *exactly* the
``config="validated"`` layer of :func:`~kmt_ref.lloyd_transformer.lloyd_transformer`
at finite ``gamma`` (identity resets SAX/SAC, linear CAC, Euclidean softmax CAX),
so :func:`soft_kmeans_transformer` is that model, reused, not rebuilt: the
validated Theorem 2.1 model at ``gamma = beta`` *is* soft k-means with
stiffness ``beta``, and its distance from Lloyd at finite gamma is the distance
between soft and hard k-means. Weights: Equation 5, unchanged::

    block  score      normalizer         Wq   Wk   Wv
    CAX    euclidean  softmax(gamma=beta) P_x  P_x  P_y
    SAX    -          identity            P_x  P_x  -P_y
    CAC    dot        linear              P_y  P_y  P_x
    SAC    -          identity            P_y  P_y  -P_x

Proposition. For every ``beta > 0``, data ``X``, centers ``C_0`` and ``T``, the
transformer's centers after ``T`` layers are the ``T``-th soft k-means iterate,
and its assignment block after layer ``t`` holds the responsibilities
``R_{t-1}`` (no assumption on ties, distinct points or cluster sizes).

Proof sketch (full proof in the book, page "Soft k-means"). Invariant:
``P = [X | R_{t-1}]`` (``R_{-1} = 0``), ``Q = [C_t | I_k]``.
CAX: query ``P_x p_i = [x_i | 0]``, key ``P_x q_j = [c_j | 0]``, so the score is
``-beta ||x_i - c_j||^2`` and the softmax weights are ``R_ij``; the values
``P_y q_j = [0 | e_j]`` write ``[0 | R_i]``. SAX (identity, value ``-P_y``)
writes ``[0 | -y_i]``. With the residual, ``P = [X | R_t]``. CAC: query
``P_y q_j = [0 | e_j]``, key ``P_y p_i = [0 | R_i]``: dot score ``R_ij >= 0``;
linear attention divides by ``sum_i R_ij`` and averages the values
``P_x p_i = [x_i | 0]``: the weighted mean. SAC writes ``[-c_j | 0]``. So
``Q = [C_{t+1} | I_k]``. QED.

Empty clusters. ``sum_i R_ij > 0`` in exact arithmetic, but in floating point
a center far from every point can receive only underflowed (zero)
responsibilities. The rule, applied the same way on both sides: a cluster is
empty when its total responsibility is exactly ``0.0``; its center moves to the
mean of all points (linear attention gives a row of zero scores uniform
weights), the ``"global_mean"`` policy of :func:`~kmt_ref.classical.lloyd`. A
tiny positive total (``1e-30``, say) is not empty: the center moves to the
weighted mean. The transformer stores each responsibility unrounded because its
layer adds the identity reset before the write (``(y - y) + R``, see
:mod:`kmt_ref.layer`), so both sides see the same totals to rounding of the
squared distances. Never NaN. Responsibilities below the smallest normal
float (``exp(-708)``) keep no relative precision: a center weighted only by
such ones moves to a mean that the two sides round differently, which
``run(warn=True)`` reports (:func:`normal_responsibilities`).

Large beta. If every point has a unique nearest center with squared-distance
gap ``>= delta`` and no cluster is empty, each responsibility row is within
``(k - 1) exp(-beta delta)`` of the one-hot Lloyd assignment, so one soft step
tends to one Lloyd step as ``beta -> inf`` (``beta = inf`` itself is Lloyd:
use :func:`~kmt_ref.classical.lloyd`).
"""

import numpy as np

from .._validation import check_bool, check_positive, check_problem
from ..attention import softmax
from ..classical import _lloyd
from ..geometry import CHUNK_ELEMENTS, center_distances
from ..layer import KMeansTransformer
from ..lloyd_transformer import lloyd_transformer
from ..running import MAX_KEPT_BYTES
from ..trajectory import iterate
from .registry import EXACT_TOL, Variant, register_variant, validated_mechanisms

__all__ = ["soft_kmeans", "soft_kmeans_transformer", "responsibilities", "distance_to_lloyd", "normal_responsibilities"]


def responsibilities(X, C, beta):
    """``R_ij = softmax_j(-beta ||x_i - c_j||^2)``, shape (..., n, k), computed stably.

    Distances are measured from the first center (:func:`~kmt_ref.geometry.center_distances`), so
    their rounding is at the data's spread, not its distance from the origin; the softmax subtracts
    each row's maximum. ``X`` (..., n, d), ``C`` (..., k, d); plain or ``autograd`` arrays. Trusted
    helper: inputs already validated.
    """
    return softmax(-beta * center_distances(X, C))


def soft_kmeans(X, init, n_iter, beta, keep_assignments=True):
    """MacKay's soft k-means with stiffness ``beta``, exactly ``n_iter`` iterations.

    Each iteration computes the responsibilities
    ``R_ij = softmax_j(-beta ||x_i - c_j||^2)`` and moves every center to the
    responsibility-weighted mean ``sum_i R_ij x_i / sum_i R_ij``. A center
    whose total responsibility is exactly zero (every weight underflowed)
    moves to the mean of all points; any positive total, however small, gives
    the weighted mean (the rule the transformer realizes; see the module
    docstring).
    Reference: D. J. C. MacKay, *Information Theory, Inference, and Learning
    Algorithms* (2003), ch. 20.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Points as rows.
    init : array_like, shape (k, d)
        Initial centers, ``k <= n``.
    n_iter : int
        Number of iterations, ``>= 0``.
    beta : float
        Stiffness (inverse temperature), positive and finite.
    keep_assignments : bool
        Keep every iteration's responsibilities (``False``: ``assignments``
        is ``None``); they take ``8 n_iter n k`` bytes, and above
        ``MAX_KEPT_BYTES`` (2 GiB) keeping them is refused with a
        ``ValueError`` that says so. Each iteration computes them a chunk of
        points at a time, so without them the run holds O(chunk) of them.

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d); ``labels`` (n_iter, n), the arg-max
        of each responsibility row (lowest index at ties);
        ``assignments`` (n_iter, n, k), the responsibilities ``R`` computed
        against ``centers[t]``, or None.
    """
    X, C, n_iter = check_problem(X, init, n_iter, "n_iter")
    beta = check_positive(beta, "beta")
    keep = check_bool(keep_assignments, "keep_assignments")
    kept = 8 * n_iter * X.shape[0] * C.shape[0]
    if keep and kept > MAX_KEPT_BYTES:
        raise ValueError(f"keeping every iteration's responsibilities would take {kept / 2**30:.1f} GiB (8 n_iter n k "
                         f"bytes, more than {MAX_KEPT_BYTES / 2**30:g} GiB): pass keep_assignments=False, which "
                         "keeps the labels")
    return _soft_kmeans(X, C, n_iter, beta, keep)


def _soft_kmeans(X, C, n_iter, beta, keep=True):
    """Trusted kernel of :func:`soft_kmeans`: the responsibilities a chunk of ``CHUNK_ELEMENTS`` at a time
    (one chunk, the whole of them, up to that size)."""
    n, k = X.shape[0], C.shape[0]
    rows = max(1, CHUNK_ELEMENTS // k)

    def step(C, t):
        R_all = np.empty((n, k)) if keep else None
        labels = np.empty(n, dtype=np.intp)
        mass, weighted = 0.0, 0.0  # (k,) total responsibility of each center, (k, d) weighted sums
        for a in range(0, n, rows):
            R = responsibilities(X[a : a + rows], C, beta)
            mass = mass + R.sum(axis=0)
            weighted = weighted + R.T @ X[a : a + rows]
            labels[a : a + rows] = np.argmax(R, axis=1)
            if keep:
                R_all[a : a + rows] = R
        new = weighted / np.where(mass > 0, mass, 1.0)[:, None]
        new[mass == 0] = X.mean(axis=0)
        return (new, labels, R_all) if keep else (new, labels)

    return iterate(step, X, C, n_iter, keep_assignments=keep)


def soft_kmeans_transformer(d, k, beta):
    """The k-means transformer whose every layer is one soft k-means step.

    This is ``lloyd_transformer(d, k, gamma=beta, config="validated")``:
    Equation 5 weights, Euclidean softmax at ``gamma = beta`` in CAX, linear
    attention in CAC, identity resets. Compared with the exact (``gamma =
    inf``) Theorem 2.1 model, one mechanism changed: CAX's hardmax became a
    finite-temperature softmax.

    Proposition (exact equivalence, proof in the module docstring and the
    book): ``soft_kmeans_transformer(d, k, beta).run(X, init, T)`` has the
    centers of ``soft_kmeans(X, init, T, beta)`` and its ``assignments`` are
    the responsibilities, for every ``X``, ``init`` and ``T``.

    Parameters
    ----------
    d : int
        Data dimension.
    k : int
        Number of centers.
    beta : float
        Stiffness, positive and finite.

    Returns
    -------
    KMeansTransformer
        Token layout ``[x | y]`` of width ``d + k``.
    """
    beta = check_positive(beta, "beta")
    base = lloyd_transformer(d, k, gamma=beta, config="validated")
    return KMeansTransformer(base.layout, base.blocks, name=f"soft k-means (beta={beta:g})",
                             translation_invariant=True, assumption=normal_responsibilities(beta))


def normal_responsibilities(beta):
    """What the proposition's "to rounding" needs: every center's largest responsibility is 0 (an empty
    cluster) or a normal float.

    Responsibilities below the smallest normal float (about 2.2e-308) keep no relative precision (one
    at ``exp(-745)`` is the single smallest subnormal): a center weighted only by such ones moves to a
    mean that the two sides round differently.

    Parameters
    ----------
    beta : float
        The stiffness, positive and finite.

    Returns
    -------
    callable
        ``assumption(X, C) -> str or None`` for :class:`~kmt_ref.layer.KMeansTransformer`
        ``(assumption=...)``: ``X`` of shape (n, d) and ``C`` of shape (k, d); None where it holds, else a
        message naming the first cluster whose responsibilities are all subnormal.
    """
    beta = check_positive(beta, "beta")

    def assumption(X, C):
        top = np.max(responsibilities(X, C, beta), axis=-2)
        bad = np.flatnonzero((top > 0) & (top < np.finfo(float).tiny))
        if bad.size == 0:
            return None
        j = int(bad[0])
        return (f"cluster {j}'s responsibilities are all below the smallest normal float (the largest is "
                f"{top[j]:.3g}), where they keep no relative precision")

    return assumption


def distance_to_lloyd(X, init, n_iter, betas):
    """How far soft k-means is from Lloyd, for each stiffness.

    Parameters
    ----------
    X : array_like, shape (n, d)
    init : array_like, shape (k, d)
    n_iter : int
    betas : sequence of float
        Stiffness values, each positive and finite.

    Returns
    -------
    ndarray, shape (len(betas),)
        ``max |soft_kmeans(X, init, n_iter, beta).centers - lloyd(X, init, n_iter).centers|``
        over all iterates and coordinates.
    """
    X, C, n_iter = check_problem(X, init, n_iter, "n_iter")
    betas = [check_positive(b, f"betas[{i}]") for i, b in enumerate(betas)]
    ref = _lloyd(X, C, n_iter, "global_mean").centers
    return np.array([np.max(np.abs(_soft_kmeans(X, C, n_iter, b).centers - ref)) for b in betas])


def soft_rounding_tol(X, beta):
    """Tolerance of the soft k-means equality in float64.

    Both sides compute ``-beta ||x - c||^2`` by the expansion
    ``|x|^2 + |c|^2 - 2 x.c`` (on differently padded arrays, so with different
    rounding); its error is about ``eps * max |x|^2``, and ``beta`` multiplies
    it inside the exponential. A center moves by at most the data's span times
    the change of its weights. On data far from the origin (the offset-1e3
    rows) this, not the construction, dominates the deviation.
    """
    scale = float(np.max(np.sum(X * X, axis=1)))
    return EXACT_TOL + beta * np.finfo(float).eps * scale * float(np.ptp(X))


register_variant(Variant(
    name="soft k-means", classical=soft_kmeans, transformer=soft_kmeans_transformer,
    parameter="beta", values=(1.0, 1e2, 1e4), tolerance=soft_rounding_tol, assumes_unique_nearest=False,
    mechanisms=lambda d, beta: validated_mechanisms(CAX={"score": "euclidean", "normalizer": "softmax", "gamma": beta}),
    change="CAX: softmax at gamma = beta (the validated Theorem 2.1 layer at finite gamma); nothing else",
))
