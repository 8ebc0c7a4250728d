"""Attention as a family: a score, a row-wise normalizer, and values.

An attention block maps queries ``Zq`` of shape (m, D) and keys/values ``Zk``
of shape (r, D) with weights ``(Wq, Wk, Wv)`` to::

    normalize(gamma * score(Zq @ Wq.T, Zk @ Wk.T)) @ (Zk @ Wv.T)      # (m, D)

Weight matrices act on column vectors, as printed in the paper; code applies
them to row tokens as ``Z @ W.T``. Everything here is written with
``autograd.numpy`` so that one implementation serves both the hand-built
constructions and the learned model, and accepts leading batch axes
(``(..., m, D)``) for batches of tasks.

Scores (``gamma`` is applied by :func:`attend`, not here):

``"euclidean"``  ``-||Wq z_a - Wk z_b||^2``
``"dot"``        ``(Wq z_a) . (Wk z_b)``

Normalizers (row-wise over keys; see :data:`NORMALIZERS`):

``"softmax"``   finite-temperature softmax, stabilized by the row maximum.
``"hardmax"``   the ``gamma -> inf`` limit: uniform weight on the arg-max set
                ("averaging hard attention"). ``gamma`` is irrelevant.
``"linear"``    non-negative scores divided by their row sum. A row of zeros
                gets uniform weights (the limit of adding the same small
                positive number to every score), never 0/0.
``"identity"``  each token attends to itself only (requires queries = keys);
                scores are not computed.

Sparse and random normalizers (defined in :mod:`kmt_ref.normalizers`, used by
the variants): ``"sparsemax"``, ``"normmax2"`` and ``"normmax_inf"`` (parameter
``t`` via ``Block.params``), ``"gumbel_max"`` and ``"gumbel_softmax"``
(parameter ``temperature``; both need ``rng``).

Euclidean softmax blocks (the finite-gamma constructions and the learned
model) run through :func:`euclidean_softmax_attention`, an ``autograd``
primitive with a hand-written vector-Jacobian product: its forward pass equals
the generic path up to rounding (tested), and its backward pass stores no
(m, r) intermediates (set ``FUSED_EUCLIDEAN_SOFTMAX = False`` to compare).
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp_argnums, primitive

from .geometry import CHUNK_ELEMENTS, squared_distances
from .normalizers import gumbel_max, gumbel_softmax, normmax2, normmax_inf, sparsemax

__all__ = [
    "Block",
    "Normalizer",
    "NORMALIZERS",
    "SCORES",
    "attend",
    "softmax",
    "hardmax",
    "hardmax_average",
    "linear_normalize",
    "euclidean_scores",
    "dot_scores",
    "euclidean_softmax_attention",
]


def euclidean_scores(A, B):
    """Negative squared distances ``-||a_i - b_j||^2``, shape (..., m, r)."""
    return -squared_distances(A, B)


def dot_scores(A, B):
    """Dot products ``a_i . b_j``, shape (..., m, r)."""
    return anp.matmul(A, anp.swapaxes(B, -1, -2))


SCORES = {"euclidean": euclidean_scores, "dot": dot_scores}


#: Route Euclidean softmax blocks through :func:`euclidean_softmax_attention`.
#: Switched off only to compare with autograd's differentiation of the generic
#: path (tests, ``python -m kmt_ref bench``).
FUSED_EUCLIDEAN_SOFTMAX = True


def _euclidean_softmax_weights(queries, keys, gamma):
    """``softmax_b(-gamma ||q_a - k_b||^2)`` with plain NumPy, shape (..., m, r).

    ``-||q_a||^2`` is the same for every key of row ``a``, so it cancels in
    the softmax: the scores used are ``gamma (2 q_a . k_b - ||k_b||^2)``,
    computed in place in one (..., m, r) buffer.
    """
    S = np.matmul(queries, np.swapaxes(keys, -1, -2))
    S *= 2.0 * gamma
    S -= gamma * np.sum(keys * keys, axis=-1)[..., None, :]
    S -= np.max(S, axis=-1, keepdims=True)
    np.exp(S, out=S)
    S /= np.sum(S, axis=-1, keepdims=True)
    return S


@primitive
def euclidean_softmax_attention(queries, keys, values, gamma):
    """Fused Euclidean softmax attention ``softmax(-gamma ||q_a - k_b||^2) @ values``.

    Parameters
    ----------
    queries : ndarray, shape (..., m, D)
        Projected queries ``Zq @ Wq.T (+ bq)``.
    keys : ndarray, shape (..., r, D)
        Projected keys, with the same leading axes as ``queries``.
    values : ndarray, shape (..., r, Dv)
    gamma : float
        Inverse temperature (not differentiated).

    Returns
    -------
    ndarray, shape (..., m, Dv)

    Notes
    -----
    With ``A`` the attention weights, ``G`` the output cotangent and
    ``S = gamma (2 q_a . k_b - |k_b|^2)`` the scores (``-gamma |q_a|^2`` dropped:
    it cancels in the softmax), the vector-Jacobian product is::

        dV = A^T G
        dS = A * (G V^T - rowsum(A * (G V^T)))        softmax Jacobian, row-wise
        dQ = 2 gamma dS K
        dK = 2 gamma (dS^T Q - colsum(dS) * K)

    ``A`` is recomputed in the backward pass instead of stored, so the
    backward pass holds one (..., m, r) array at a time, where autograd's
    generic differentiation of the unfused path would keep every intermediate
    (distances, shifted scores, exponentials, weights).
    """
    return np.matmul(_euclidean_softmax_weights(queries, keys, gamma), values)


def _esa_vjp(argnums, ans, args, kwargs):
    """VJP of :func:`euclidean_softmax_attention` for the requested arguments."""
    queries, keys, values, gamma = args

    def vjp(G):
        A = _euclidean_softmax_weights(queries, keys, gamma)
        out = {}
        if 2 in argnums:
            out[2] = np.matmul(np.swapaxes(A, -1, -2), G)
        if 0 in argnums or 1 in argnums:
            dS = np.matmul(G, np.swapaxes(values, -1, -2))  # dA, turned into dS in place
            dS -= np.sum(A * dS, axis=-1, keepdims=True)
            dS *= A
            if 0 in argnums:
                out[0] = 2.0 * gamma * np.matmul(dS, keys)
            if 1 in argnums:
                cols = np.sum(dS, axis=-2)[..., :, None]
                out[1] = 2.0 * gamma * (np.matmul(np.swapaxes(dS, -1, -2), queries) - cols * keys)
        if 3 in argnums:
            raise NotImplementedError("euclidean_softmax_attention is not differentiable in gamma")
        return tuple(out[i] for i in argnums)

    return vjp


defvjp_argnums(euclidean_softmax_attention, _esa_vjp)


def softmax(scores):
    """Row-wise softmax over the last axis, stable (the row max is subtracted)."""
    shifted = scores - anp.max(scores, axis=-1, keepdims=True)
    e = anp.exp(shifted)
    return e / anp.sum(e, axis=-1, keepdims=True)


def hardmax(scores):
    """Uniform weights over the arg-max set of each row (averaging hardmax).

    This is the limit of ``softmax(gamma * scores)`` as ``gamma -> inf``.
    Ties are exact float equality: tied keys share the weight equally.
    """
    scores = np.asarray(scores)
    mask = (scores == scores.max(axis=-1, keepdims=True)).astype(float)
    return mask / mask.sum(axis=-1, keepdims=True)


def hardmax_average(scores, values):
    """``hardmax(scores) @ values``, as the sum of the arg-max rows divided by their count.

    The same numbers as the weights times the values in exact arithmetic; in
    float64 the mean of m equal rows is then exactly that row (m copies of
    ``1/m`` need not sum to 1: seven duplicates would leave an assignment one
    ulp off one-hot, and the next hardmax, comparing exactly, would drop it).
    """
    scores = np.asarray(scores)
    mask = (scores == scores.max(axis=-1, keepdims=True)).astype(float)
    return np.matmul(mask, values) / mask.sum(axis=-1, keepdims=True)


def linear_normalize(scores):
    """Divide non-negative scores by their row sum; an all-zero row is uniform.

    Raises
    ------
    ValueError
        If a score is negative (linear attention needs non-negative scores).
    """
    if np.any(np.asarray(getattr(scores, "_value", scores)) < 0):
        raise ValueError("linear attention needs non-negative scores; got a negative score")
    total = anp.sum(scores, axis=-1, keepdims=True)
    width = scores.shape[-1]
    safe = anp.where(total > 0, total, 1.0)
    return anp.where(total > 0, scores / safe, 1.0 / width)


@dataclass(frozen=True)
class Normalizer:
    """A row-wise attention normalizer.

    Attributes
    ----------
    fn : callable
        ``fn(scores, **params)`` -> weights of the same shape, rows summing to 1.
    uses_gamma : bool
        Whether the scores are multiplied by ``gamma`` first. Normalizers that
        are invariant to a positive scale (hardmax) ignore ``gamma``.
    needs_rng : bool
        Whether ``fn`` draws random numbers (it then receives ``rng=``).
    average : callable, optional
        ``average(scores, values)``, the same as ``fn(scores) @ values``
        computed more exactly (see :func:`hardmax_average`); :func:`attend`
        uses it when given.
    """

    fn: Callable | None
    uses_gamma: bool = True
    needs_rng: bool = False
    average: Callable | None = None


#: Registry of normalizers by name. Variants add theirs here.
NORMALIZERS = {
    "softmax": Normalizer(softmax),
    "hardmax": Normalizer(hardmax, uses_gamma=False, average=hardmax_average),
    "linear": Normalizer(linear_normalize, uses_gamma=False),
    "identity": Normalizer(None, uses_gamma=False),
    "sparsemax": Normalizer(sparsemax),
    "normmax2": Normalizer(normmax2),
    "normmax_inf": Normalizer(normmax_inf),
    "gumbel_max": Normalizer(gumbel_max, needs_rng=True),
    "gumbel_softmax": Normalizer(gumbel_softmax, needs_rng=True),
}


@dataclass(frozen=True)
class Block:
    """One attention block: weights, score, normalizer and temperature.

    Attributes
    ----------
    Wq, Wk, Wv : ndarray, shape (D, D)
        Query, key and value matrices, acting on column tokens.
    score : {"euclidean", "dot"}
    normalizer : str
        A key of :data:`NORMALIZERS`.
    gamma : float
        Inverse temperature multiplying the scores (``softmax_coldness``);
        ``numpy.inf`` only with a scale-free normalizer such as hardmax.
    bq, bk, bv : ndarray of shape (D,), optional
        Biases (used by the learned model; the constructions have none).
    params : dict
        Extra keyword arguments for the normalizer.
    """

    Wq: np.ndarray
    Wk: np.ndarray
    Wv: np.ndarray
    score: str = "euclidean"
    normalizer: str = "softmax"
    gamma: float = 1.0
    bq: np.ndarray | None = None
    bk: np.ndarray | None = None
    bv: np.ndarray | None = None
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.score not in SCORES:
            raise ValueError(f"score must be one of {sorted(SCORES)}; got score={self.score!r}")
        if self.normalizer not in NORMALIZERS:
            raise ValueError(
                f"normalizer must be one of {sorted(NORMALIZERS)}; "
                f"got normalizer={self.normalizer!r}"
            )
        norm = NORMALIZERS[self.normalizer]
        if norm.uses_gamma and not (0 < self.gamma < np.inf):
            raise ValueError(
                f"normalizer={self.normalizer!r} needs a finite gamma > 0; got gamma={self.gamma}"
            )


def _as_index(mask):
    """Boolean mask -> ``None`` (all), a slice (one contiguous run) or indices."""
    idx = np.flatnonzero(mask)
    if len(idx) == len(mask):
        return None
    if len(idx) and idx[-1] - idx[0] + 1 == len(idx):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _support(W, b, plain=True):
    """Output coordinates a projection can make non-zero (``None``: all).

    For plain arrays: the non-zero rows of ``W`` (and of ``b``). The
    constructions' weights are block projectors, so most rows are zero and
    skipping them gives the same numbers with a fraction of the work. For
    ``autograd`` boxes (the learned model) every row counts.
    """
    if not plain or type(W) is not np.ndarray or not (b is None or type(b) is np.ndarray):
        return None
    rows = np.any(W != 0, axis=1)
    return _as_index(rows if b is None else rows | (b != 0))


def _project(Z, W, b, rows=None):
    """``Z @ W[rows].T + b[rows]``, reading only the columns ``W[rows]`` uses."""
    if rows is not None:
        W, b = W[rows], (None if b is None else b[rows])
    if type(W) is np.ndarray and type(Z) is np.ndarray:
        cols = _as_index(np.any(W != 0, axis=0))
        if cols is not None:
            Z, W = Z[..., cols], W[:, cols]
        # A block of +-I (every projector of the constructions) is a copy, not a product.
        if W.shape[0] == W.shape[1] and b is None:
            eye = np.eye(W.shape[0])
            if np.array_equal(W, eye):
                return Z
            if np.array_equal(W, -eye):
                return -Z
    out = anp.matmul(Z, anp.swapaxes(W, -1, -2))
    return out if b is None else out + b


def attend(Zq, Zk, block, rng=None):
    """Apply one attention block.

    Queries are processed in row chunks so that no more than about
    ``CHUNK_ELEMENTS`` scores exist at once: attention of n points to n points
    costs O(n^2) time but only O(n x chunk) memory.

    Parameters
    ----------
    Zq : ndarray, shape (..., m, D)
        Query tokens.
    Zk : ndarray, shape (..., r, D)
        Key/value tokens.
    block : Block
    rng : numpy.random.Generator, optional
        Needed by random normalizers (Gumbel).

    Returns
    -------
    ndarray, shape (..., m, D)
    """
    norm = NORMALIZERS[block.normalizer]
    D = Zk.shape[-1]
    plain = type(Zq) is np.ndarray and type(Zk) is np.ndarray
    value_rows = _support(block.Wv, block.bv, plain)
    values = _project(Zk, block.Wv, block.bv, value_rows)  # (..., r, |value_rows|)
    if block.normalizer == "identity":
        if Zq.shape[-2] != Zk.shape[-2]:
            raise ValueError(
                "identity attention needs as many queries as keys; "
                f"got m={Zq.shape[-2]}, r={Zk.shape[-2]}"
            )
        return _scatter(values, value_rows, D)
    if norm.needs_rng and not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"normalizer={block.normalizer!r} needs rng=numpy.random.Generator; got rng={rng!r}"
        )
    # Scores only depend on the coordinates where queries or keys can be non-zero.
    q_rows, k_rows = _support(block.Wq, block.bq, plain), _support(block.Wk, block.bk, plain)
    rows = None if q_rows is None or k_rows is None else _as_index(_mask(q_rows, D) | _mask(k_rows, D))
    queries = _project(Zq, block.Wq, block.bq, rows)  # (..., m, |rows|)
    keys = _project(Zk, block.Wk, block.bk, rows)  # (..., r, |rows|)
    score_fn = SCORES[block.score]
    extra = dict(block.params)
    if norm.needs_rng:
        extra["rng"] = rng
    # The fused primitive is the same computation with a cheaper backward pass.
    fused = (
        FUSED_EUCLIDEAN_SOFTMAX
        and block.score == "euclidean"
        and block.normalizer == "softmax"
        and not block.params
        and Zq.shape[:-2] == Zk.shape[:-2]
    )
    m, r = Zq.shape[-2], Zk.shape[-2]
    batch = int(np.prod(Zq.shape[:-2], dtype=int))
    chunk = max(1, CHUNK_ELEMENTS // max(1, r * batch))
    outputs = []
    for start in range(0, m, chunk):
        if fused:
            q = queries[..., start : start + chunk, :]
            outputs.append(euclidean_softmax_attention(q, keys, values, block.gamma))
            continue
        s = score_fn(queries[..., start : start + chunk, :], keys)  # (..., chunk, r)
        if norm.uses_gamma:
            s = block.gamma * s
        if norm.average is not None:
            outputs.append(norm.average(s, values))
            continue
        weights = norm.fn(s, **extra)
        outputs.append(anp.matmul(weights, values))
    out = outputs[0] if len(outputs) == 1 else anp.concatenate(outputs, axis=-2)
    return _scatter(out, value_rows, D)


def _mask(index, D):
    mask = np.zeros(D, dtype=bool)
    mask[index] = True
    return mask


def _scatter(out, rows, D):
    """Place the computed coordinates ``rows`` of the output into width ``D``."""
    if rows is None:
        return out
    full = np.zeros(out.shape[:-1] + (D,))
    full[..., rows] = out
    return full
