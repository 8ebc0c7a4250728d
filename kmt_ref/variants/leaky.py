"""Leaky soft k-means: the release mechanism the trained layer points to, and the transformer that runs it.

Classical algorithm, stiffness ``beta > 0`` and sharpness ``eta > 0`` (code: ``sharpness``)::

    R_ij  = softmax_j(-beta ||x_i - c_j||^2)     responsibilities, (n, k)
    W_ji  = softmax_i(eta R_ij)                  each center's weights over ALL the points, (k, n)
    c_j  <- sum_i W_ji x_i

Soft k-means divides by the responsibilities' sum; here every point keeps
the weight ``exp(0) = 1`` against ``exp(eta)`` for a point the center owns
fully. A center that owns a whole cluster of ``m`` points gives the other
``n - m`` points the share ``(n - m) / (n - m + m e^eta)`` (small at the
fitted ``eta``); a center that shares its cluster with another (``R`` about
1/2 on each) gives them far more and is *released* toward the mean of all
the points, from where the next assignment lets it take a cluster no center
covers. Lloyd's algorithm keeps both centers in the shared cluster. The
trained layer, too, moves centers that share a cluster farther than Lloyd's
step and those that own one as far (the book, "A closed form for the layer's gain"); it
does not send them toward the mean of all the points.

Mechanism changed: in the soft k-means transformer (the validated Theorem
2.1 layer at ``gamma = beta``), CAC's linear attention over the dot scores
``R_ij`` becomes a softmax at ``gamma = eta``. Weights: Equation 5,
unchanged::

    block  score      normalizer          Wq   Wk   Wv
    CAX    euclidean  softmax(gamma=beta) P_x  P_x  P_y
    SAX    -          identity            P_x  P_x  -P_y
    CAC    dot        softmax(gamma=eta)  P_y  P_y  P_x
    SAC    -          identity            P_y  P_y  -P_x

Proposition. For every ``beta, eta > 0``, data ``X``, centers ``C_0`` and
``T``, the transformer's centers after ``T`` layers are the ``T``-th iterate
above. Proof: the soft k-means proof (:mod:`kmt_ref.variants.soft`) up to
CAC, which now sees the dot scores ``e_j . R_i = R_ij`` of center ``j``'s
query against every point's key, multiplies them by ``eta`` and normalizes
them with a softmax over the points: the weights ``W_ji``; the values
``P_x p_i = [x_i | 0]`` write ``sum_i W_ji x_i`` and SAC's ``[-c_j | 0]``
removes the old center. QED. No cluster is ever empty (every weight is
positive), so no empty-cluster rule is needed, and nothing divides by a
responsibility sum.
"""

from dataclasses import replace

import autograd.numpy as anp
import numpy as np

from .._validation import check_positive, check_problem
from ..attention import softmax
from ..layer import KMeansTransformer
from ..trajectory import iterate
from .registry import Variant, register_variant, validated_mechanisms
from .soft import responsibilities, soft_kmeans_transformer, soft_rounding_tol

__all__ = ["leaky_step", "leaky_kmeans", "leaky_kmeans_transformer"]


def leaky_step(X, C, beta, sharpness):
    """One leaky soft k-means step for a task or a batch (trusted kernel: inputs already checked).

    Written in ``autograd.numpy``, so the same step is differentiated when
    ``beta`` and ``sharpness`` are fitted (:mod:`kmt_ref.learning.closed_form`).

    Parameters
    ----------
    X : ndarray, shape (..., n, d)
    C : ndarray, shape (..., k, d)
    beta, sharpness : float

    Returns
    -------
    centers : ndarray, shape (..., k, d)
    R : ndarray, shape (..., n, k)
        The responsibilities against ``C``.
    """
    R = responsibilities(X, C, beta)
    W = softmax(sharpness * anp.swapaxes(R, -1, -2))  # (..., k, n): each center over every point
    return anp.matmul(W, X), R


def leaky_kmeans(X, init, n_iter, beta, sharpness):
    """Leaky soft k-means with stiffness ``beta`` and sharpness ``eta``, exactly ``n_iter`` iterations.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Points as rows.
    init : array_like, shape (k, d)
        Initial centers, ``k <= n``.
    n_iter : int
        Number of iterations, ``>= 0``.
    beta : float
        Stiffness of the responsibilities, positive and finite.
    sharpness : float
        Sharpness of each center's softmax over the points, positive and finite.

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d); ``labels`` (n_iter, n), the arg-max
        of each responsibility row; ``assignments`` (n_iter, n, k), the
        responsibilities against ``centers[t]``.
    """
    X, C, n_iter = check_problem(X, init, n_iter, "n_iter")
    beta = check_positive(beta, "beta")
    sharpness = check_positive(sharpness, "sharpness")

    def step(C, t):
        new, R = leaky_step(X, C, beta, sharpness)
        return new, np.argmax(R, axis=1), R

    return iterate(step, X, C, n_iter, keep_assignments=True)


def leaky_kmeans_transformer(d, k, beta, sharpness):
    """The k-means transformer whose every layer is one leaky soft k-means step.

    The soft k-means transformer (:func:`~kmt_ref.variants.soft.soft_kmeans_transformer`)
    with CAC's linear attention replaced by a softmax at ``gamma = eta = sharpness`` (see
    the module docstring for the proof).

    Parameters
    ----------
    d, k : int
        Data dimension and number of centers.
    beta, sharpness : float
        Positive and finite.

    Returns
    -------
    KMeansTransformer
        Token layout ``[x | y]`` of width ``d + k``.
    """
    beta = check_positive(beta, "beta")
    sharpness = check_positive(sharpness, "sharpness")
    base = soft_kmeans_transformer(d, k, beta)
    cac = base.blocks["CAC"]
    blocks = dict(base.blocks, CAC=replace(cac, normalizer="softmax", gamma=sharpness))
    return KMeansTransformer(base.layout, blocks, name=f"leaky soft k-means (beta={beta:g}, sharpness={sharpness:g})",
                             translation_invariant=True)


#: The stiffness at which the registry checks the variant (about the trained layer's own, see the book).
CHECKED_BETA = 4.0


def _classical(X, init, n_iter, sharpness):
    return leaky_kmeans(X, init, n_iter, CHECKED_BETA, sharpness)


def _transformer(d, k, sharpness):
    return leaky_kmeans_transformer(d, k, CHECKED_BETA, sharpness)


def _tolerance(X, sharpness):
    # A responsibility's rounding (soft k-means's allowance at beta) is multiplied by eta in CAC's exponent.
    return soft_rounding_tol(X, CHECKED_BETA) * (1.0 + sharpness)


register_variant(Variant(
    name=f"leaky soft k-means (beta={CHECKED_BETA:g})", classical=_classical, transformer=_transformer,
    parameter="sharpness", values=(4.0, 6.0, 50.0), tolerance=_tolerance, assumes_unique_nearest=False,
    mechanisms=lambda d, sharpness: validated_mechanisms(
        CAX={"score": "euclidean", "normalizer": "softmax", "gamma": CHECKED_BETA},
        CAC={"score": "dot", "normalizer": "softmax", "gamma": sharpness}),
    change="soft k-means with CAC's linear attention made a softmax at gamma = sharpness (eta)",
))
