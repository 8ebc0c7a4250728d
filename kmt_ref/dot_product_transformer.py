"""Theorem 2.2: Lloyd's algorithm with dot-product attention and a relu^2 FFN.

No block computes a distance: every score is a plain dot product
``gamma (Wq z_a) . (Wk z_b)``. What makes this possible is a token that
carries its own squared norm. Tokens have the layout ``[x | y | s | 1]``
(width ``D = d + k + 2``)::

    point i    p_i = [x_i | y_i | ||x_i||^2 | 1]     y_0 = 0
    center j   q_j = [c_j | e_j | ||c_j||^2 | 1]

Write ``P_x, P_y, P_s`` for the projectors on the blocks ``x``, ``y``, ``s``
(``s`` is the layout block ``"sqnorm"``) and ``E_s1`` for the matrix with a
single 1 in row ``s``, column ``1`` (it copies the constant into the ``s``
slot). The weights (column convention, ``W z``)::

    block  Wq             Wk          Wv            what it does at gamma = inf
    CAX    2 P_x + E_s1   P_x - P_s   P_y           point i adds e_a(i), its nearest center's id
    SAX    2 P_x + E_s1   P_x - P_s   -P_y          point i subtracts its old y_i
    CAC    P_y            P_y         P_x           center j becomes the mean of its members
    SAC    P_y            P_y         -(P_x + P_s)  center j subtracts its old c_j AND old ||c_j||^2
    FFN    h = relu(W1 q)^2 with W1 = [P_x-rows: +I_d ; -I_d] (2d hidden units, b1 = 0);
           update = W2 h with W2 = 1s in row s (b2 = 0): writes sum_l relu(c_l)^2 + relu(-c_l)^2

Proof sketch (full proof in the book, chapter "Dot-product attention and the
FFN (Theorem 2.2)", book/dot_product.md).
Invariant before layer t+1: ``P = [X | Y_t | s(X) | 1]`` and
``Q = [C_t | I_k | s(C_t) | 1]`` with ``C_t`` the t-th Lloyd iterate and
``s(.)`` the row-wise squared norms.

* CAX: query ``[2 x_i | 0 | 1 | 0]``, key ``[c_j | 0 | -||c_j||^2 | 0]``, score
  ``gamma (2 x_i.c_j - ||c_j||^2) = gamma (||x_i||^2 - ||x_i - c_j||^2)``. The
  term ``||x_i||^2`` is the same for every key of query i, and a softmax is
  unchanged by adding a constant to a row: this softmax IS the Euclidean one
  of Theorem 2.1, at every gamma. Hardmax picks the nearest center and the
  value ``P_y q_j = e_j`` writes its id.
* SAX: the same score between points, ``gamma (||x_i||^2 - ||x_i - x_l||^2)``,
  is maximal exactly where ``x_l = x_i``; equal points carry equal ``y``, so
  the average of ``-P_y p_l`` is ``-y_i`` (duplicates are harmless, as in
  Theorem 2.1). Points' ``s`` and ``1`` are never written (values are ``P_y``
  blocks), so ``s(X)`` stays exact: ``P = [X | Y_{t+1} | s(X) | 1]``.
* CAC: score ``gamma e_j . y_i`` is 1 for the members of cluster j and 0 for
  the others; hardmax averages ``P_x p_i = x_i`` over the members (over all
  points, i.e. the global mean, if there is none -- Lloyd's ``"global_mean"``).
* SAC: score ``gamma e_j . e_j'`` is 1 only for ``j' = j`` (ids are distinct),
  so it subtracts ``[c_j | 0 | ||c_j||^2 | 0]``: after CAC + SAC + residual,
  ``Q = [C_{t+1} | I_k | 0 | 1]`` -- the stale squared norm is cleared.
* FFN: ``relu(z)^2 + relu(-z)^2 = z^2`` for every real z, so the 2d hidden
  units sum to ``||c_j||^2``, which ``W2`` writes into the cleared ``s`` slot:
  ``Q = [C_{t+1} | I_k | s(C_{t+1}) | 1]``. QED.

Why the center norm must be kept current: CAX compares centers through
``2 x.c_j - s_j``; the ``-||x||^2`` that turns this into ``-||x - c_j||^2``
cancels only because ``s_j = ||c_j||^2`` *of the current* ``c_j``. A stale
``s_j`` shifts center j's score by ``||c_j||^2 - s_j``, a different amount
for every center, and moves the Voronoi boundaries. Attention cannot compute
the norm (its outputs are convex combinations of linear maps of tokens), so
a nonlinearity is needed: the FFN. Points' norms never change.

Why SAC clears ``s`` and the FFN only *writes* it: overwriting needs the
update ``||c||^2 - s``, whose term ``-s`` is linear. Sums of ``relu(.)^2``
units are piecewise quadratic; a linear term only arises from a difference
of squares such as ``((s + 1)^2 - (s - 1)^2) / 4``, which loses about
``eps * s^2 / 4`` to cancellation (``5e-4`` at ``s = 4e6``, data at offset 1e3)
and would move Voronoi boundaries. SAC already subtracts the old center
token, so letting it also subtract the old ``s`` costs one non-zero and is
exact. The FFN therefore maps ``[c | e | 0 | 1]`` to ``[c | e | ||c||^2 | 1]``.

Finite gamma (softmax), block by block, with the configuration
``"all-attention"`` (all four blocks are dot-product softmax attention):

* CAX is the Euclidean softmax (above): it needs ``gamma * (second-nearest
  minus nearest squared distance) >> 1``, exactly as in Theorem 2.1.
* SAX is the Euclidean SAX softmax: it needs ``gamma * (smallest squared
  distance between distinct points with different y) >> 1`` -- hopeless for
  10,000 points in the unit square at practical gamma.
* CAC and SAC compare ids with gap 1 (half the Euclidean gap 2), so they
  need ``exp(-gamma) * n`` negligible (gamma of a few tens). But the dot
  CAC is *one-sided*: a point with ``y_ij`` above the others' gets weight
  ``exp(gamma (y_ij - max))``-times more. Where SAX leaves ``y_ij > 1``, those
  points take over the mean; the Euclidean CAC score ``-||e_j - y_i||^2``
  penalizes both directions. So the all-attention dot model needs a larger gamma
  than the all-attention Euclidean one: on 1,000 points of the Figure 3 kind it
  still fails at ``gamma = 1e6`` and agrees from ``1e7`` (pinned by a test);
  on the 10,000 points of either Figure 3 draw it fails at every gamma of
  ``verify``.

The configuration ``"validated"`` (default, as for Theorem 2.1) keeps the
same matrices but uses identity attention in the reset blocks SAX and SAC
(an exact reset) and linear attention on the dot scores ``y_ij`` in CAC --
the mechanisms the paper's authors used for their numerical check. Its only
softmax is CAX, which equals the Euclidean one, so it agrees with
``lloyd_transformer(..., config="validated")`` to rounding at every gamma.
On the NumPy draw ``figure3_data(seed=0)`` it agrees with Lloyd to 1e-3 in
log objective at every layer from ``gamma = 2e3`` on (checked up to 1e7) and
not at 1e3; on the authors' draw ``figure3_data()`` its gap is 6.6e-3 at
``gamma = 1e4`` and first falls below 1e-3 at 1e5 (both pinned by the tests).

Ties and empty clusters behave as in Theorem 2.1 with the same configuration
(tested on exact ties): a point equidistant from two centers gets
``y = (1/2, 1/2)``; the all-attention hardmax CAC then averages the points with the
*largest* ``y_ij`` (the one-hot members if any), the validated linear CAC
counts the point half in each cluster. An empty cluster's center moves to the
mean of all points.

Floating point: the Euclidean score of a point against itself is exactly 0;
the dot score ``2 x.x - ||x||^2`` is ``||x||^2`` up to a few ulps. Two points
closer than about ``sqrt(eps) ||x||`` may therefore swap places in SAX, which
is harmless when they carry the same ``y`` and wrong when they do not (the
reset then subtracts the other's assignment): every run of the all-attention
model at ``gamma = inf`` checks the closest distinct points first and warns
when they are within :func:`dot_self_attention_resolution`; likewise CAX can disagree with
exact arithmetic only for a point whose nearest and second-nearest squared
distances differ by at most ``4 (d + 1) eps max_j ||c_j||^2`` (tested on
points placed within ulps of bisectors). Unlike Theorem 2.1's hardmax, which
decides such near ties in exact arithmetic (as :func:`~kmt_ref.lloyd` does),
this one cannot: its tokens carry ``||c_j||^2`` as the float the FFN wrote,
and the exact decision depends on the bits that rounding lost. Recomputing
the norm outside the layer would no longer run the construction, so
``run(warn=True)`` names such points instead, at every layer
(:func:`nearest_beyond_rounding`).
"""

import numpy as np

from ._validation import check_data, check_dims, check_positive
from .feedforward import FeedForward
from .geometry import _score_bound
from .layer import KMeansTransformer
from .lloyd_transformer import (
    assemble_blocks,
    finite_gamma_assumption,
    lloyd_transformer,
    resolve_config,
    unique_nearest,
)
from .products import fixed_order_scores
from .tokens import TokenLayout

__all__ = [
    "CONFIGS",
    "LAYOUT_BLOCKS",
    "dot_product_lloyd_transformer",
    "dot_product_weights",
    "dot_self_attention_resolution",
    "nearest_beyond_rounding",
    "norm_writing_ffn",
    "parameter_counts",
]

#: Token layout of Theorem 2.2, in order the point (or center), the assignment
#: (or id), the squared norm and a constant 1.
LAYOUT_BLOCKS = ("x", "y", "sqnorm", "one")

#: Block mechanisms (score, normalizer) of each configuration; ``"attention"``
#: stands for softmax at finite gamma and hardmax at gamma = inf.
CONFIGS = {
    "all-attention": {
        "CAX": ("dot", "attention"),
        "SAX": ("dot", "attention"),
        "CAC": ("dot", "attention"),
        "SAC": ("dot", "attention"),
    },
    "validated": {
        "CAX": ("dot", "attention"),
        "SAX": ("dot", "identity"),
        "CAC": ("dot", "linear"),
        "SAC": ("dot", "identity"),
    },
}


def dot_product_weights(layout):
    """The attention matrices ``{block: (Wq, Wk, Wv)}`` of Theorem 2.2.

    Parameters
    ----------
    layout : TokenLayout
        With the blocks ``("x", "y", "sqnorm", "one")``.

    Returns
    -------
    dict of str to tuple of ndarray, each of shape (D, D)
    """
    P_x, P_y, P_s = (layout.projector(b) for b in ("x", "y", "sqnorm"))
    E_s1 = layout.block_map("sqnorm", "one")  # query: put 1 where keys hold -s
    # Score (2 P_x z + E_s1 z) . (P_x z' - P_s z') = 2 x.x' - ||x'||^2.
    Wq_x, Wk_x = 2.0 * P_x + E_s1, P_x - P_s
    return {
        "CAX": (Wq_x, Wk_x, P_y),
        "SAX": (Wq_x, Wk_x, -P_y),
        "CAC": (P_y, P_y, P_x),
        "SAC": (P_y, P_y, -(P_x + P_s)),
    }


def norm_writing_ffn(layout):
    """The relu^2 FFN that writes ``||c||^2`` into the ``sqnorm`` slot.

    Hidden unit ``l`` (``0 <= l < d``) computes ``relu(c_l)^2``, unit ``d + l``
    computes ``relu(-c_l)^2``; their sum over all ``2d`` units is ``||c||^2``.

    Parameters
    ----------
    layout : TokenLayout
        With the blocks ``"x"`` and ``"sqnorm"``.

    Returns
    -------
    FeedForward
        ``W1`` (2d, D), ``b1 = 0`` (2d,), ``W2`` (D, 2d), ``b2 = 0`` (D,).
    """
    d, D = layout.d, layout.width
    read_x = layout.reader("x")  # (d, D)
    W1 = np.vstack([read_x, -read_x])  # units c_l and -c_l
    W2 = np.outer(layout.reader("sqnorm")[0], np.ones(2 * d))  # every unit adds into the sqnorm slot
    return FeedForward(W1, np.zeros(2 * d), W2, np.zeros(D), activation="relu2")


def dot_product_lloyd_transformer(d, k, gamma=np.inf, config="validated"):
    """The Theorem 2.2 k-means transformer: dot-product attention + relu^2 FFN.

    Parameters
    ----------
    d : int
        Data dimension.
    k : int
        Number of centers.
    gamma : float
        Inverse temperature of the softmax blocks; ``numpy.inf`` means exact
        averaging hardmax (not a large number).
    config : {"validated", "all-attention"}
        ``"all-attention"``: all four blocks are dot-product attention (the
        paper says that standard dot-product attention runs Lloyd with these
        tokens and the FFN; which normalizer each block of its construction
        uses is not in the sources this project has, so no configuration
        here is called the paper's). ``"validated"`` (default, as for
        :func:`lloyd_transformer`):
        identity attention in the reset blocks SAX and SAC and linear
        attention in CAC, with the same matrices. Both equal Lloyd exactly
        at ``gamma = inf``; at finite gamma see the module docstring.

    Returns
    -------
    KMeansTransformer
        Token layout ``[x | y | sqnorm | one]`` of width ``d + k + 2``;
        ``weights["FFN"]`` holds ``W1, b1, W2, b2``.
    """
    d, k = check_dims(d, k)
    gamma = check_positive(gamma, "gamma", allow_inf=True)
    config = resolve_config(config, CONFIGS)
    layout = TokenLayout(d, k, LAYOUT_BLOCKS)
    blocks = assemble_blocks(dot_product_weights(layout), CONFIGS[config], gamma)
    return KMeansTransformer(
        layout,
        blocks,
        ffn=norm_writing_ffn(layout),
        name=f"Theorem 2.2 ({config}, gamma={gamma:g})",
        translation_invariant=True,  # each softmax is a Euclidean one (module docstring)
        follows_lloyd=True,
        resolution=_resolution if blocks["SAX"].normalizer == "hardmax" else None,
        assumption=nearest_beyond_rounding if np.isinf(gamma) else finite_gamma_assumption(CONFIGS[config], gamma),
    )


def nearest_beyond_rounding(X, C):
    """What Theorem 2.2 at ``gamma = inf`` assumes, as ``assumption(X, C) -> str or None`` for
    :class:`~kmt_ref.layer.KMeansTransformer` (``run(warn=True)`` checks it at every layer): no point is tied
    (:func:`~kmt_ref.lloyd_transformer.unique_nearest`), and none is so near a tie that its dot-product CAX
    may rank its centers otherwise than exact arithmetic.

    CAX ranks ``2 x.c_j - s_j`` with ``s_j`` the ``||c_j||^2`` the FFN wrote, a float: each score rounds by
    up to ``(d + 2) eps (|c|^2 + 2 |x| |c|)`` and ``s_j`` by as much again, so two centers whose squared
    distances from ``x`` differ by less than twice the bound of
    :func:`~kmt_ref.geometry.nearest_center`'s rounding may be ranked either way. Such a point is named:
    the construction cannot decide it exactly, because the bits that would decide it were rounded away
    when the norm was written (the module docstring says why recomputing it would not run the construction).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        The points as the run measures them (after its shift).
    C : ndarray, shape (k, d)
        A layer's input centers, in the same coordinates.

    Returns
    -------
    str or None
    """
    tied = unique_nearest(X, C)
    if tied is not None or C.shape[0] < 2:
        return tied
    d, eps = X.shape[1], np.finfo(float).eps
    norms = np.sqrt(np.sum(X * X, axis=1))
    band = 2.0 * _score_bound(d, np.sqrt(np.max(np.sum(C * C, axis=1))), norms)
    D = -fixed_order_scores("euclidean", X, C)  # direct form: each squared distance to (d + 2) eps of itself
    order = np.argsort(D, axis=1, kind="stable")[:, :2]
    first, second = np.take_along_axis(D, order, axis=1).T
    near = np.flatnonzero(second - first <= band + 2.0 * (d + 2) * eps * (first + second))
    if near.size == 0:
        return None
    i = int(near[0])
    j, l = (int(c) for c in order[i])
    return (f"point {i}'s squared distances to centers {j} and {l} differ by {second[i] - first[i]:.3g}, within "
            f"{band[i]:.3g}, the rounding of the dot-product scores (the FFN writes ||c||^2 as a float), so CAX may "
            f"give it to either ({near.size} point{'s' if near.size > 1 else ''} that near a tie: "
            f"{', '.join(map(str, near[:10].tolist()))}{', ...' if near.size > 10 else ''})")


def dot_self_attention_resolution(X):
    """The squared distance below which the dot-product hardmax SAX cannot tell two distinct points apart.

    Its score of point l for point i is ``2 x_i.x_l - s_l`` with ``s_l`` the
    rounded ``||x_l||^2``: exactly ``||x_i||^2 - ||x_i - x_l||^2``, maximal at
    ``l = i``. Each rounded score is within ``(4 d + 3) eps R^2`` of that
    (``R`` the largest ``||x||``: ``d + 1`` products and the rounded norm),
    so two scores whose exact values differ by ``||x_i - x_l||^2`` are
    ranked right once that exceeds twice the bound; this returns
    ``8 (d + 2) eps R^2``, a little more.

    Parameters
    ----------
    X : array_like, shape (n, d)
        The points as the run measures them (after its shift).

    Returns
    -------
    float
    """
    return _resolution(check_data(X))


def _resolution(X):
    """:func:`dot_self_attention_resolution` of ``X`` a run has validated (no copy per run)."""
    d = X.shape[-1]
    return 8.0 * (d + 2) * np.finfo(float).eps * float(np.max(np.einsum("ij,ij->i", X, X)))


def _sizes(model):
    """(number of parameters, number of non-zeros) over all matrices and biases."""
    arrays = [W for mats in model.weights.values() for W in mats.values()]
    return int(sum(W.size for W in arrays)), model.nonzero_count()


def parameter_counts(d, k):
    """Parameters and non-zeros of Theorem 2.1 and Theorem 2.2, counted from the models.

    Parameters
    ----------
    d, k : int

    Returns
    -------
    dict
        ``{"Theorem 2.1": {"parameters": int, "nonzeros": int},
        "Theorem 2.2": {...}}``. Parameters are all entries of the attention
        matrices (12 of size D x D) plus, for Theorem 2.2, the FFN's ``W1``,
        ``b1``, ``W2``, ``b2``. Closed forms: Theorem 2.1 has ``12 (d + k)^2``
        parameters and ``6 (d + k)`` non-zeros; Theorem 2.2 has
        ``12 D^2 + 4 d D + 2 d + D`` parameters with ``D = d + k + 2`` and
        ``10 d + 6 k + 5`` non-zeros. Both are ``O(d + k)``, below the input
        size ``O(d (n + k))``.
    """
    d, k = check_dims(d, k)
    out = {}
    for label, model in (
        ("Theorem 2.1", lloyd_transformer(d, k)),
        ("Theorem 2.2", dot_product_lloyd_transformer(d, k)),
    ):
        parameters, nonzeros = _sizes(model)
        out[label] = {"parameters": parameters, "nonzeros": nonzeros}
    return out
