"""Spherical k-means (Dhillon & Modha 2001) and the transformer that runs it.

Classical algorithm (I. S. Dhillon and D. S. Modha, "Concept decompositions
for large sparse text data using clustering", *Machine Learning* 42, 2001):
normalize the points and the initial centers to unit length, then repeat::

    a(i)   = argmax_j  x_i . c_j                    largest cosine (ties: lowest j)
    c_j   <- m_j / ||m_j||,  m_j = mean of the x_i with a(i) = j

Mechanism changed (the project's own construction): the
``config="validated"`` Theorem 2.1 layer at ``gamma = inf`` (Equation 5
weights, hardmax CAX, identity resets, linear CAC) with

* a **per-token normalization** :class:`BlockRMSNorm` of the ``x``
  coordinates (the first ``d``) of *every* token, points and centers, applied
  to the embedded tokens and again at the very end of every layer (post-norm,
  :func:`~kmt_ref.layer.transformer_layer` ``norm=``). It is RMSNorm with gain
  ``1 / sqrt(d)`` (so it maps to unit length) restricted to those
  coordinates; the assignment/id coordinates (the last ``k``: ``Y`` for
  points, ``I_k`` for centers) pass through untouched, so CAC and SAC still
  see exact ids. At ``eps -> 0`` RMSNorm maps a zero block to zero, and so
  does this normalization.
* **dot-product** scores in CAX: the score of point i for center j is the
  cosine ``x_i . c_j``. On unit tokens ``-||x - c||^2 = 2 x.c - 2``, a shift by
  a constant that hardmax ignores, so Euclidean CAX would make the same choice:
  the normalization is the mechanism that matters, the dot product is how the
  paper phrases it (and reads the cosine directly).

Weights: Equation 5, unchanged; the normalization's gain is exposed as
``model.weights["NORM"]["gain"]``::

    block  score  normalizer  Wq   Wk   Wv
    CAX    dot    hardmax     P_x  P_x  P_y
    SAX    -      identity    P_x  P_x  -P_y
    CAC    dot    linear      P_y  P_y  P_x
    SAC    -      identity    P_y  P_y  -P_x
    NORM   x_i <- x_i / ||x_i|| on every token, y untouched

Proposition. For ``X`` and ``init`` without zero rows and every ``T``, if
every point has a unique largest cosine at every iteration, the transformer's
centers after ``T`` layers are the ``T``-th spherical k-means iterate (with
the policies below), ``centers[0]`` included.

Proof sketch (full proof in the book, page "Spherical k-means"). Invariant
before layer t+1: ``P = [Xh | Y_t]``, ``Q = [C_t | I_k]`` with ``Xh`` the
normalized points and ``C_t`` the t-th iterate (the embedding normalization
gives it for t = 0). CAX: score ``xh_i . c_j``, hardmax picks ``a(i)`` and
writes ``e_{a(i)}``; SAX removes the old ``y_i``; the normalization leaves
``[xh_i | e_{a(i)}]`` unchanged (``xh_i`` is unit, ``y`` untouched). CAC: dot
score ``e_j . e_{a(i)}`` is 1 for members and 0 otherwise, linear attention
averages the members' ``[xh_i | 0]``: ``[m_j | 0]``; SAC removes ``[c_j | 0]``.
So before the normalization ``Q = [m_j | e_j]``, and after it
``[m_j / ||m_j|| | e_j] = [c_{t+1, j} | e_j]``. QED.

Policies (the classical function and the transformer agree on both):

* **Empty cluster**: linear CAC gives uniform weights to a row of zero scores,
  so ``m_j`` is the mean of all normalized points and the center becomes its
  direction (``lloyd``'s ``"global_mean"`` policy, then normalized).
* **Zero member mean** (``m_j = 0``, e.g. members cancel out): the center
  becomes the zero vector (the ``eps -> 0`` limit of RMSNorm), whose cosine
  with every point is taken as 0. Never NaN. This cannot happen when ``k >=
  2`` and every member strictly prefers ``j``: summing
  ``x_i . (c_j - c_l) > 0`` over the members gives ``m_j . (c_j - c_l) > 0``.
  It needs ``k = 1``, ties, or an empty cluster whose data directions cancel.
  A mean that is 0 in exact arithmetic is rounding in float, and its direction
  then depends on the order of the sum: ``run(warn=True)`` names such a
  cluster (:func:`unique_largest_cosine`).

At a tie hardmax splits the assignment (fractional ``y``) while the classical
rule picks the lowest index, as for Theorem 2.1.
"""

from dataclasses import replace

import autograd.numpy as anp
import numpy as np

from .._validation import check_batch, check_centers, check_data, check_problem, is_batch
from ..layer import KMeansTransformer
from ..lloyd_transformer import lloyd_transformer
from ..products import fixed_order_scores
from ..tokens import TokenLayout
from ..trajectory import iterate
from .registry import Variant, register_variant, validated_mechanisms

__all__ = [
    "spherical_kmeans",
    "spherical_kmeans_transformer",
    "BlockRMSNorm",
    "normalize_rows",
    "unique_largest_cosine",
]


def _check_nonzero_rows(A, name):
    """Refuse a zero row (of any task of a batch): it has no direction to normalize."""
    zero = np.argwhere(~np.any(A != 0, axis=-1))
    if zero.size:
        i = tuple(int(j) for j in zero[0])
        where = ", ".join(str(j) for j in i)
        raise ValueError(
            f"{name}[{where}] must be nonzero to be normalized to unit length; "
            f"got {name}[{where}]={A[i].tolist() if A.shape[-1] <= 6 else 'all zeros'}"
        )


def _rescale_tiny_rows(A):
    """Rows whose squared entries would underflow, divided by their largest ``|entry|``.

    A positive factor changes no direction; ordinary rows are returned as
    they are (bit for bit), so only rows like ``[1e-200, 1e-200]``, whose
    squared norm underflows to 0, change. (Entries above ``1e150`` are
    refused by the input checks, so squares cannot overflow.)
    """
    amax = np.max(np.abs(A), axis=-1, keepdims=True)
    tiny = (amax > 0) & (amax < 1e-150)
    return np.where(tiny, A / np.where(tiny, amax, 1.0), A)


def normalize_rows(A):
    """Rows scaled to unit length; a zero row stays zero (never NaN).

    Rows with tiny entries are rescaled first, so their squared norm does
    not underflow.

    Parameters
    ----------
    A : ndarray, shape (m, d)

    Returns
    -------
    ndarray, shape (m, d)
    """
    A = _rescale_tiny_rows(np.asarray(A, dtype=float))
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    return np.where(norms > 0, A / np.where(norms > 0, norms, 1.0), 0.0)


def spherical_kmeans(X, init, n_iter):
    """Spherical k-means (Dhillon & Modha 2001), exactly ``n_iter`` iterations.

    ``X`` and ``init`` are normalized to unit rows first. Each iteration
    assigns every point to the center of largest cosine (ties to the lowest
    index) and moves every center to the normalized mean of its points. An
    empty cluster's center becomes the normalized mean of all points; a
    center whose members' mean is zero becomes the zero vector (cosine 0 with
    every point). See the module docstring for why the transformer does the
    same.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Points as rows, no zero row.
    init : array_like, shape (k, d)
        Initial centers, no zero row, ``k <= n``.
    n_iter : int
        Number of iterations, ``>= 0``.

    Returns
    -------
    Trajectory
        ``centers`` (n_iter + 1, k, d), unit rows (``centers[0]`` is the
        normalized ``init``); ``labels`` (n_iter, n).

    Raises
    ------
    ValueError
        On invalid input, including a zero row of ``X`` or ``init`` (named).
    """
    X, C, n_iter = check_problem(X, init, n_iter, "n_iter")
    _check_nonzero_rows(X, "X")
    _check_nonzero_rows(C, "init")
    return _spherical_kmeans(normalize_rows(X), normalize_rows(C), n_iter)


def _member_means(Xh, C):
    """One step's cluster means before their normalization: ``(means, labels, counts)``. Largest cosine, lowest
    index at ties, ranked as the transformer's hardmax ranks them; an empty cluster takes the mean of all
    points."""
    k = C.shape[0]
    lab = np.argmax(fixed_order_scores("dot", Xh, C), axis=1)
    counts = np.bincount(lab, minlength=k)
    sums = np.zeros((k, Xh.shape[1]))
    np.add.at(sums, lab, Xh)
    means = sums / np.maximum(counts, 1)[:, None]
    means[counts == 0] = Xh.mean(axis=0)
    return means, lab, counts


def _spherical_kmeans(Xh, C, n_iter):
    """Trusted kernel of :func:`spherical_kmeans`: unit rows already."""

    def step(C, t):
        means, lab, _ = _member_means(Xh, C)
        return normalize_rows(means), lab

    return iterate(step, Xh, C, n_iter)


class BlockRMSNorm:
    """RMSNorm on one named coordinate block of every token; the rest untouched.

    For a token ``z`` and the block ``b`` of width ``w``::

        z_b <- gain * z_b / rms(z_b),   rms(v) = sqrt(mean(v**2)),   gain = 1 / sqrt(w)

    so ``z_b`` becomes a unit vector; all other coordinates are copied. A zero
    block stays zero (the ``eps -> 0`` limit of ``v / sqrt(mean(v**2) + eps)``).
    Written with ``autograd.numpy``; accepts leading batch axes.

    Parameters
    ----------
    layout : TokenLayout
    block : str
        Name of the normalized block (``"x"`` for spherical k-means).
    """

    def __init__(self, layout, block="x"):
        if not isinstance(layout, TokenLayout) or block not in layout.slices:
            raise ValueError(f"block must name a block of layout={layout!r}; got block={block!r}")
        self.layout, self.block = layout, block
        s = layout.slices[block]
        self.gain = np.full(s.stop - s.start, 1.0 / np.sqrt(s.stop - s.start))

    @property
    def weights(self):
        """``{"gain": (w,)}``, the RMSNorm gain of the normalized block."""
        return {"gain": self.gain}

    def __repr__(self):
        return f"BlockRMSNorm(block={self.block!r}, width={self.gain.size})"

    def __call__(self, T):
        s = self.layout.slices[self.block]
        z = T[..., s]
        rms = anp.sqrt(anp.mean(z * z, axis=-1, keepdims=True))
        scaled = self.gain * z / anp.where(rms > 0, rms, 1.0)  # zero block -> zero
        return anp.concatenate([T[..., : s.start], scaled, T[..., s.stop :]], axis=-1)


def unique_largest_cosine(X, C):
    """The proposition's assumption, as ``assumption(X, C) -> str or None`` for
    :class:`~kmt_ref.layer.KMeansTransformer` (``run(warn=True)`` checks it at every layer): every point's
    largest cosine with the centers is unique, by more than the rounding of computing it. The model and
    :func:`spherical_kmeans` compute the cosines in different orders (a norm layer, then dot-product scores;
    normalized rows, then their products), so two cosines closer than ``4 (d + 4) eps`` may be ranked
    differently by the two, and an exact tie is given to all its centers by the hardmax but to the lowest
    index by the classical algorithm.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    C : ndarray, shape (k, d)

    Returns
    -------
    str or None
        None where it holds, else the first point whose two largest cosines are that close.
    """
    X = check_data(X)
    C = check_centers(C, X.shape[1], "C")
    if C.shape[0] < 2:
        return _cancelling_mean(X, C)
    S = normalize_rows(X) @ normalize_rows(C).T
    top = np.argsort(-S, axis=1, kind="stable")[:, :2]
    first, second = np.take_along_axis(S, top, axis=1).T
    tol = 4 * (X.shape[1] + 4) * np.finfo(float).eps
    close = np.flatnonzero(first - second <= tol)
    if close.size == 0:
        return _cancelling_mean(X, C)
    i = int(close[0])
    j, l = sorted(int(c) for c in top[i])
    return (f"point {i}'s largest cosines, with centers {j} and {l}, differ by {first[i] - second[i]:.1e}, within the "
            f"rounding of computing them ({tol:.1e}; {close.size} point{'s' if close.size > 1 else ''} so close): the "
            "proposition assumes one largest cosine, and the hardmax and spherical k-means may decide such a point "
            "differently")


def _cancelling_mean(X, C):
    """None, or what :func:`unique_largest_cosine` says of a cluster whose unit members (all points, for an
    empty one) have a mean within the rounding of 0: its direction, the new center, is then decided by how
    the sum was rounded (an exact 0 gives the zero vector), and the two orders of summing need not agree."""
    means, _, counts = _member_means(normalize_rows(X), normalize_rows(C))
    norms = np.sqrt(np.sum(means * means, axis=1))
    tol = 4 * (X.shape[0] + X.shape[1]) * np.finfo(float).eps  # a mean of unit vectors, summed in any order
    small = np.flatnonzero(norms <= tol)
    if small.size == 0:
        return None
    j = int(small[0])
    return (f"the directions of center {j}'s {'members' if counts[j] else 'points (its cluster is empty)'} cancel: "
            f"their mean has norm {norms[j]:.1e}, within the rounding of summing them ({tol:.1e}), so the new "
            "center's direction is decided by rounding (an exact 0 gives the zero vector), and the hardmax and "
            "spherical k-means, which sum in different orders, may point it differently")


class _SphericalTransformer(KMeansTransformer):
    """A :class:`KMeansTransformer` that also refuses zero rows (no direction)."""

    def run(self, X, init, n_layers, rng=None, **options):
        if is_batch(X):
            X = check_batch(X, init)
            init = np.asarray(init, dtype=np.float64)
        else:
            X = check_data(X)
            init = check_centers(init, X.shape[1])
        _check_nonzero_rows(X, "X")
        _check_nonzero_rows(init, "init")
        # Directions are all that matter: keep the normalization's squares in range.
        return super().run(_rescale_tiny_rows(X), _rescale_tiny_rows(init), n_layers, rng=rng, **options)

    run.__doc__ = KMeansTransformer.run.__doc__


def spherical_kmeans_transformer(d, k):
    """The k-means transformer whose every layer is one spherical k-means step.

    The validated Theorem 2.1 model at ``gamma = inf`` (Equation 5 weights,
    identity resets, linear CAC) with dot-product scores in CAX and the
    per-token normalization :class:`BlockRMSNorm` of the ``x`` coordinates,
    applied to every token after the embedding and after every layer; the
    ``y`` coordinates (assignments of points, ids of centers) are untouched.

    Proposition (exact equivalence; proof in the module docstring and the
    book): if every point has a unique largest cosine at every iteration,
    ``spherical_kmeans_transformer(d, k).run(X, init, T)`` has the centers of
    ``spherical_kmeans(X, init, T)``. The model normalizes ``X`` and ``init``
    itself, like the classical function.

    Parameters
    ----------
    d : int
        Data dimension.
    k : int
        Number of centers.

    Returns
    -------
    KMeansTransformer
        Token layout ``[x | y]`` of width ``d + k``, ``model.norm`` the
        normalization. Its ``run`` refuses zero rows of ``X`` or ``init``.
    """
    base = lloyd_transformer(d, k, gamma=np.inf, config="validated")
    blocks = dict(base.blocks)
    blocks["CAX"] = replace(blocks["CAX"], score="dot")  # hardmax over cosines
    return _SphericalTransformer(
        base.layout, blocks, name="spherical k-means", norm=BlockRMSNorm(base.layout, "x"),
        assumption=unique_largest_cosine,
    )


register_variant(Variant(
    name="spherical k-means", classical=spherical_kmeans, transformer=spherical_kmeans_transformer,
    parameter=None, values=(None,), centered=True, min_d=2, objective_points=normalize_rows,
    mechanisms=lambda d, _: validated_mechanisms(CAX={"score": "dot", "normalizer": "hardmax"}, norm="x"),
    change="a block RMS norm maps every token's x to unit length after each layer; CAX dot-product scores",
))
