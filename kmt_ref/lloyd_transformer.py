"""Theorem 2.1: a transformer whose every layer is one Lloyd iteration.

Weights (Equation 5 of the paper; ``P_x = diag(I_d, 0_k)``, ``P_y = diag(0_d, I_k)``)::

    block  Wq   Wk   Wv     what it does at gamma = inf
    CAX    P_x  P_x  P_y    point i adds e_{a(i)}, the one-hot of its nearest center
    SAX    P_x  P_x  -P_y   point i attends to itself and subtracts its old y_i
    CAC    P_y  P_y  P_x    center j averages the points whose y_i = e_j
    SAC    P_y  P_y  -P_x   center j subtracts its old c_j

Proof sketch (full proof in the book, chapter "The k-means transformer").
Invariant: before layer t+1, ``P = [X | Y_t]`` and ``Q = [C_t | I_k]`` with
``C_t`` the t-th Lloyd iterate (``Y_0 = 0``). Then

* CAX: the query of point i is ``[x_i | 0]``, the key of center j is
  ``[c_j | 0]``: the score is ``-gamma ||x_i - c_j||^2``, hardmax picks the
  nearest center ``a(i)`` and the value ``P_y q_j = [0 | e_j]`` writes ``e_{a(i)}``.
* SAX: scores ``-gamma ||x_i - x_l||^2`` are maximal (zero) exactly at the
  points equal to ``x_i``. Equal points always carry equal ``y`` (all layers
  act on a token only through ``x`` and ``y``, and equal tokens are treated
  equally), so the average of ``-P_y p_l`` over that set is ``[0 | -y_i]``:
  duplicates need no special care. After CAX + SAX + residual,
  ``P = [X | Y_{t+1}]`` with ``Y_{t+1}`` the one-hot Lloyd assignment.
* CAC (linear attention on dot-product scores): the score of point i for
  center j is ``e_j . y_i``, 1 for the members of cluster j and 0 for the
  others; divided by their sum, the weights are ``1 / N_j`` on the members,
  and the values ``P_x p_i = [x_i | 0]`` average to the new mean. (The
  all-attention configuration's Euclidean CAC scores ``-gamma ||e_j - y_i||^2``,
  0 for members and -2 otherwise: hardmax averages the same members.) SAC
  picks the center itself (ids are distinct) and subtracts ``[c_j | 0]``.
  With the residual, ``Q = [C_{t+1} | I_k]``. QED.

What the theorem assumes, and what this code does otherwise:

* **Ties** for the nearest center: hardmax splits CAX's weight, so ``y_i`` is
  fractional (e.g. ``(1/2, 1/2)``); ``labels`` report the lowest index (arg-max).
  In the all-attention configuration, Euclidean CAC then gives point i the
  score ``-||e_j - y_i||^2 < 0``, so a tied point joins no center that has a
  one-hot member. In the paper's and the validated configurations, linear CAC
  weights point i by ``y_ij``: it counts half in each of two tied clusters.
* **Empty clusters**: every point scores the same against center j, so its
  attention is uniform and the center moves to the mean of all points
  (``lloyd(..., empty_cluster="global_mean")``, the default, agrees).
* **Finite gamma** replaces hardmax by softmax. Each block needs its own
  scale: CAX needs ``gamma * (second-nearest minus nearest squared
  distance) >> 1`` for every point; CAC and SAC compare ids (gap 2, or 1 for
  a fractional y) and are exact in float64 once ``gamma >~ 400``; SAX needs
  ``gamma * (smallest squared distance between two distinct points) >> 1``,
  which for the 10,000 points of the Figure 3 data (that distance is 1.4e-9 on
  the authors' draw, ``figure3_data()``, and 1.6e-10 on the NumPy draw ``figure3_data(seed=0)``)
  means gamma of order 1e10 or more, far beyond the paper's 1e4: below it,
  softmax averages a point with its neighbours and the reset is wrong (the
  book measures where exactness returns).

Configurations (:data:`CONFIGS`; the matrices are Equation 5's in each, only
the mechanisms differ), each named by where it comes from:

* ``"paper"``: the paper's mechanisms where its summary states them
  (Euclidean attention in CAX, dot-product (linear) attention in the center
  update CAC; Euclidean attention in the point reset SAX, as the authors'
  follow-up restates it), and Euclidean attention on the ids in the center
  reset SAC, whose mechanism no source states: it is the authors' code's
  ``CModel(osa=False)``. At ``gamma = inf`` every choice of SAC resets the
  one-hot ids exactly, so the choice changes no number there.
* ``"all-attention"``: Euclidean attention in all four blocks, the center
  update included: the form of the authors' follow-up paper (its appendix),
  which says it differs from the paper's linear center update there.
* ``"validated"`` (default): the ``"paper"`` configuration with identity
  attention, an exact reset through the residual path, in SAX and SAC: the
  mechanisms of the authors' own numerical validation (their Figure 3
  notebook and parameter sweep). Its only softmax is CAX, so it is the one
  that follows Lloyd at ``gamma = 1e4`` on 10,000 points.

All three are exact at ``gamma = inf``. ``"faithful"``, the 0.8 name of
``"all-attention"``, still works with a FutureWarning.
"""

import warnings

import numpy as np

from ._validation import check_centers, check_choice, check_data, check_dims, check_positive
from .attention import Block, softmax
from .certificate import exactness_certificate
from .classical import lloyd
from .geometry import center_distances, closest_distinct_pair, nearest_center
from .layer import KMeansTransformer
from .tokens import TokenLayout

__all__ = ["CONFIGS", "LEAK_TOL", "CENTER_TOL", "lloyd_transformer", "equation5_weights", "assemble_blocks",
           "resolve_config", "finite_gamma_assumption", "unique_nearest"]

#: Block mechanisms (score, normalizer) of each configuration; ``"attention"``
#: stands for Euclidean softmax at finite gamma and hardmax at gamma = inf.
#: The matrices are Equation 5's in every configuration; only the mechanisms differ.
CONFIGS = {
    # The paper's stated mechanisms: Euclidean attention updates the assignments (and, as the
    # follow-up restates it, resets them), dot-product (linear) attention averages the assigned
    # points; the Euclidean center reset SAC is the authors' code's CModel(osa=False), no source states it.
    "paper": {
        "CAX": ("euclidean", "attention"),
        "SAX": ("euclidean", "attention"),
        "CAC": ("dot", "linear"),
        "SAC": ("euclidean", "attention"),
    },
    # The authors' follow-up ("Leaner Transformers Can Easily Learn to Cluster", appendix B):
    # Euclidean attention in all four blocks, the center update included.
    "all-attention": {
        "CAX": ("euclidean", "attention"),
        "SAX": ("euclidean", "attention"),
        "CAC": ("euclidean", "attention"),
        "SAC": ("euclidean", "attention"),
    },
    # The authors' numerical validation (their Figure 3 notebook and parameter sweep): the
    # "paper" configuration with identity attention, an exact reset, in SAX and SAC.
    "validated": {
        "CAX": ("euclidean", "attention"),
        "SAX": ("euclidean", "identity"),
        "CAC": ("dot", "linear"),
        "SAC": ("euclidean", "identity"),
    },
}

#: Configuration names of release 0.8, accepted with a FutureWarning until 0.10.
RENAMED_CONFIGS = {"faithful": "all-attention"}


def resolve_config(config, configs):
    """The configuration name ``config`` means: checked against ``configs``, old names warned and renamed."""
    if isinstance(config, str) and config in RENAMED_CONFIGS:
        new = RENAMED_CONFIGS[config]
        warnings.warn(f"config={config!r} is renamed config={new!r}; the old name goes in kmt_ref 0.10",
                      FutureWarning, stacklevel=3)
        config = new
    check_choice(config, "config", configs)
    return config


def equation5_weights(layout):
    """The Equation 5 matrices ``{block: (Wq, Wk, Wv)}`` for a token layout."""
    P_x, P_y = layout.projector("x"), layout.projector("y")
    return {
        "CAX": (P_x, P_x, P_y),
        "SAX": (P_x, P_x, -P_y),
        "CAC": (P_y, P_y, P_x),
        "SAC": (P_y, P_y, -P_x),
    }


def assemble_blocks(weights, mechanisms, gamma):
    """Blocks from weight triples and ``(score, normalizer)`` mechanisms.

    Parameters
    ----------
    weights : mapping of str to (Wq, Wk, Wv)
        Each matrix of shape (D, D).
    mechanisms : mapping of str to (str, str)
        A row of :data:`CONFIGS`; ``"attention"`` becomes hardmax at
        ``gamma = inf`` and softmax otherwise.
    gamma : float

    Returns
    -------
    dict of str to Block
    """
    blocks = {}
    for name, (score, normalizer) in mechanisms.items():
        if normalizer == "attention":
            normalizer = "hardmax" if np.isinf(gamma) else "softmax"
        blocks[name] = Block(*weights[name], score=score, normalizer=normalizer, gamma=gamma)
    return blocks


#: Weight a finite-gamma reset or center update may give to tokens it should not read before
#: ``run(warn=True)`` warns: a leak of ``w`` moves a center by about ``w`` times the data's spread.
LEAK_TOL = 1e-6
#: Distance from Lloyd's step, relative to the data's spread (largest coordinate range), that the exactness
#: certificate must guarantee for one finite-gamma layer before ``run(warn=True)`` warns.
CENTER_TOL = 1e-3


def unique_nearest(X, C):
    """What the constructions at ``gamma = inf`` assume, as ``assumption(X, C) -> str or None`` for
    :class:`~kmt_ref.layer.KMeansTransformer` (``run(warn=True)`` checks it at every layer): no point is
    exactly as near to two centers. At such a tie the hardmax gives the point to all of its nearest centers in
    equal shares, where Lloyd's algorithm gives it to the lowest index; Theorem 2.1 as the book states it
    assumes a unique nearest center.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    C : ndarray, shape (k, d)

    Returns
    -------
    str or None
        None where every point has one nearest center, else the first tied point and its centers.
    """
    X = check_data(X)
    _, tied = nearest_center(X, check_centers(C, X.shape[1], "C"), ties=True)
    if not tied:
        return None
    first = min(tied)  # an index into the labels, (i,) for one task
    j, *others = (int(c) for c in np.flatnonzero(tied[first]))
    i = int(np.ravel(first)[-1])
    return (f"point {i} is exactly as near to center {j} as to center{'s' if len(others) > 1 else ''} "
            f"{', '.join(map(str, others))} (a tie, which the construction's exactness assumes away; "
            f"{len(tied)} point{'s' if len(tied) > 1 else ''} tied): the hardmax shares such a point between "
            f"its nearest centers, Lloyd's algorithm gives it to center {j}")


def finite_gamma_assumption(mechanisms, gamma):
    """What a construction at finite ``gamma`` assumes, as ``assumption(X, C) -> str or None`` for
    :class:`~kmt_ref.layer.KMeansTransformer` (``run(warn=True)`` checks it at every layer).

    Every softmax block must be nearly hard on the data: the resets SAC and
    SAX and the Euclidean or dot center update CAC may give at most
    :data:`LEAK_TOL` of their weight to tokens that are not theirs (an id
    score's gap is 2 for Euclidean attention, 1 for dot-product attention;
    SAX's is the squared distance of the two closest distinct points); and
    one layer from the layer's own centers must stay within :data:`CENTER_TOL`
    of the data's spread of Lloyd's step. A linear CAC is bounded by the
    exactness certificate (:func:`~kmt_ref.certificate.exactness_certificate`;
    when it warns, ``gamma`` is below what :func:`~kmt_ref.certificate.min_gamma`
    says the data need); a softmax CAC weighs the soft assignments CAX leaves
    otherwise, so its step is computed from those assignments and compared.

    Parameters
    ----------
    mechanisms : mapping of str to (str, str)
        A row of :data:`CONFIGS` (or of the Theorem 2.2 configurations).
    gamma : float
        Finite, ``> 0``.

    Returns
    -------
    callable
        ``assumption(X, C)`` with ``X`` (n, d) and ``C`` (k, d): None where it holds, else what fails.
    """
    gamma = check_positive(gamma, "gamma")
    gaps = {"euclidean": 2.0, "dot": 1.0}

    def assumption(X, C):
        n, k = X.shape[0], C.shape[0]
        for block, others in (("SAC", k - 1), ("CAC", n - 1)):
            score, normalizer = mechanisms[block]
            if normalizer == "attention":
                u = others * np.exp(-gamma * gaps[score])
                if u / (1 + u) > LEAK_TOL:
                    return (f"the softmax {block} gives weight up to {u / (1 + u):.3g} to tokens that are not its own "
                            f"(its {score} id scores differ by {gaps[score]:g}; gamma = {gamma:g} is too small)")
        pair = closest_distinct_pair(X) if mechanisms["SAX"][1] == "attention" else None
        if pair is not None and np.exp(-gamma * pair[2]) > LEAK_TOL:
            i, l, sq = pair
            return (f"the softmax SAX gives point {i} weight up to {np.exp(-gamma * sq):.3g} on point {l} (squared "
                    f"distance {sq:.3g}; gamma = {gamma:g} is too small to tell them apart)")
        spread = float(np.max(np.ptp(X, axis=0)))
        if mechanisms["CAC"][1] == "attention":
            return _softmax_center_update(X, C, gamma, mechanisms["CAC"][0], CENTER_TOL * spread)
        bound = float(exactness_certificate(X, C, 1, gamma).bound[1])
        if bound > CENTER_TOL * spread:
            return (f"gamma = {gamma:g} is below what the exactness certificate needs for one layer from these "
                    f"centers to stay within {CENTER_TOL:g} of the data's spread of Lloyd's step (it bounds the "
                    f"distance by {bound:.3g}; kmt_ref.min_gamma says how large gamma must be)")
        return None

    return assumption


def _softmax_center_update(X, C, gamma, score, tol):
    """What a softmax CAC does to one layer from ``C``, against Lloyd's step; None within ``tol``, else a message.

    The exactness certificate bounds the linear CAC, which weighs every point by its soft assignment ``y_ij``;
    the softmax CAC weighs it by ``exp(gamma s(y_i, e_j))`` instead (``s = -||y_i - e_j||^2`` Euclidean,
    ``y_ij`` dot), which a slightly soft member loses fast: ``y_i = (0.005, 0.995)`` costs a factor
    ``exp(-gamma / 2e4)``, 0.6 at ``gamma = 1e4``. So the layer's center update is computed as exact
    arithmetic would (CAX's softmax of distances, then the CAC's weights; the resets taken as exact, their
    leaks are checked apart) and compared with the means of Lloyd's clusters (empty ones are not compared).
    """
    Y = softmax(-gamma * center_distances(X, C))
    S = 2.0 * Y - np.sum(Y * Y, axis=1, keepdims=True) - 1.0 if score == "euclidean" else Y
    W = softmax(gamma * S.T).T  # each center's weights over the points
    step = lloyd(X, C, 1)
    labels, lloyd_centers = step.labels[0], step.centers[1]
    counts = np.bincount(labels, minlength=C.shape[0])
    full = counts > 0
    moved = np.linalg.norm(W.T @ X - lloyd_centers, axis=1)
    moved[~full] = 0.0
    j = int(np.argmax(moved))
    if moved[j] <= tol:
        return None
    members = np.flatnonzero(labels == j)
    i = int(members[np.argmin(W[members, j])])
    return (f"the softmax CAC ({score} id scores) moves center {j} by {moved[j]:.3g} from Lloyd's step: it weighs "
            f"point {i}, assigned {Y[i, j]:.3g} to its center, {W[i, j] * counts[j]:.3g} times a member's due "
            f"(gamma = {gamma:g} is too small for these soft assignments)")


def lloyd_transformer(d, k, gamma=np.inf, config="validated"):
    """The Theorem 2.1 k-means transformer with the Equation 5 weights.

    Parameters
    ----------
    d : int
        Data dimension.
    k : int
        Number of centers.
    gamma : float
        Inverse temperature of the softmax blocks; ``numpy.inf`` means exact
        averaging hardmax (not a large number).
    config : {"validated", "paper", "all-attention"}
        ``"paper"``: the paper's stated mechanisms (Euclidean CAX and SAX,
        linear CAC) with a Euclidean SAC (the authors' code's choice; no
        source states SAC's mechanism). ``"all-attention"``: Euclidean attention in all four
        blocks (the authors' follow-up). ``"validated"`` (default): the
        ``"paper"`` configuration with identity attention in the reset blocks SAX
        and SAC, the mechanisms of the authors' numerical validation. All
        equal Lloyd exactly at ``gamma = inf``; at finite gamma only the
        validated one scales to many points (see the module docstring): at
        ``gamma = 1e4`` on the authors' Figure 3 draw (``figure3_data()``)
        it prints the log objectives the authors' notebook prints, to two decimals, its largest
        gap to Lloyd's being 6.6e-3. ``"faithful"`` (the old name of
        ``"all-attention"``) is accepted with a FutureWarning.

    Returns
    -------
    KMeansTransformer
        Token layout ``[x | y]`` of width ``d + k``.
    """
    d, k = check_dims(d, k)
    gamma = check_positive(gamma, "gamma", allow_inf=True)
    config = resolve_config(config, CONFIGS)
    layout = TokenLayout(d, k, ("x", "y"))
    blocks = assemble_blocks(equation5_weights(layout), CONFIGS[config], gamma)
    return KMeansTransformer(
        layout, blocks, name=f"Theorem 2.1 ({config}, gamma={gamma:g})", translation_invariant=True, follows_lloyd=True,
        assumption=unique_nearest if np.isinf(gamma) else finite_gamma_assumption(CONFIGS[config], gamma),
    )
