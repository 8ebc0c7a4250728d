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

``"euclidean"``
    ``-||Wq z_a - Wk z_b||^2``
``"dot"``
    ``(Wq z_a) . (Wk z_b)``

Normalizers (row-wise over keys; see :data:`NORMALIZERS`):

``"softmax"``
    finite-temperature softmax, stabilized by the row maximum.
``"hardmax"``
    the ``gamma -> inf`` limit: uniform weight on the arg-max set ("averaging
    hard attention"). ``gamma`` is irrelevant. With the Euclidean score the
    arg-max set is the set of nearest keys as exact arithmetic decides
    (:func:`euclidean_hardmax_average`), in both engines; with the dot score
    it is the arg-max set of the float scores summed in one fixed order
    (:func:`fixed_order_scores`: the same on every CPU and in both engines;
    no exact distance exists to decide by, since the Theorem 2.2 tokens carry
    rounded squared norms).
``"linear"``
    non-negative scores divided by their row sum. A row of zeros gets uniform
    weights (the limit of adding the same small positive number to every
    score), never 0/0.
``"identity"``
    each token attends to itself only (requires queries = keys); scores are
    not computed.
``"softmax_dropout"``
    softmax, then attention dropout (parameter ``p`` via ``Block.params``;
    needs ``rng``): the authors' evaluation.

Sparse and random normalizers (defined in :mod:`kmt_ref.normalizers`, used by
the variants): ``"sparsemax"``, ``"normmax2"`` and ``"normmax_inf"`` (parameter
``threshold`` via ``Block.params``), ``"gumbel_max"`` and ``"gumbel_softmax"``
(parameter ``temperature``; both need ``rng``).

:func:`attend` here is the reference: the formula above, a dozen lines, every
weight computed. Models run ``kmt_ref.kernels.attend``, the same numbers
(a test runs every construction, variant and the learned model through both)
computed faster; :func:`kmt_ref.layer.transformer_layer` takes either.

Decisions do not depend on the CPU. What a normalizer decides (an arg-max, a
support) is taken on exact distances (the Euclidean hardmax) or on
:func:`fixed_order_scores`, never on a BLAS product's rounding, which depends on
the machine's kernel (the fast kernels take a dot-product hardmax's decision
from BLAS's product only where a bound on both sums' rounding shows it is the
fixed order's); and the weights times the values are
:func:`rows_product`, in which equal rows of weights give equal rows (two
centers that average the same points come out equal, so a tie that exact
arithmetic has stays a tie).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType

import autograd.numpy as anp
import numpy as np

from ._validation import check_bool, check_callable, check_choice, check_finite, check_name, check_rng
from .geometry import exact_nearest, squared_distances
from .normalizers import gumbel_max, gumbel_softmax, normmax2, normmax_inf, sparsemax

__all__ = [
    "Block",
    "Normalizer",
    "NORMALIZERS",
    "SCORES",
    "attend",
    "attention_weights",
    "project",
    "register_normalizer",
    "softmax_dropout",
    "softmax",
    "hardmax",
    "hardmax_average",
    "euclidean_hardmax_average",
    "mean_over",
    "mean_of_rows",
    "linear_normalize",
    "linear_average",
    "check_linear_scores",
    "euclidean_scores",
    "dot_scores",
    "fixed_order_scores",
    "block_scores",
    "rows_product",
]


def euclidean_scores(A, B):
    """Negative squared distances ``-||a_i - b_j||^2``, shape (..., m, r)."""
    return -squared_distances(A, B)


def dot_scores(A, B):
    """Dot products ``a_i . b_j``, shape (..., m, r)."""
    return anp.matmul(A, anp.swapaxes(B, -1, -2))


SCORES = {"euclidean": euclidean_scores, "dot": dot_scores}

#: Most (query, key) scores :func:`fixed_order_scores` holds at once.
FIXED_ORDER_ELEMENTS = 2**20


def fixed_order_scores(score, A, B):
    """``SCORES[score](A, B)`` summed coordinate by coordinate, in one order, without BLAS: shape (..., m, r).

    A BLAS product sums a score's terms in an order that depends on the CPU's kernel and on where the
    row lies in the product, so the same query and key can score an ulp apart in two places, or on two
    machines. Here every score is ``((t_1 + t_2) + t_3) + ...`` with ``t_i = a_i b_i`` (``"dot"``) or
    ``-(a_i - b_i)^2`` (``"euclidean"``, the direct form), each term rounded on its own: equal queries and
    keys give equal scores, and the same scores on every CPU, in both engines and in any chunking. The
    normalizers whose weights are a decision (``Normalizer.fixed_order``) rank these.
    """
    A, B = np.asarray(A), np.asarray(B)
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    m, r = A.shape[-2], B.shape[-2]
    out = np.zeros(batch + (m, r), dtype=np.result_type(A, B, float))
    rows = max(1, FIXED_ORDER_ELEMENTS // max(1, r * int(np.prod(batch, dtype=int))))
    for a in range(0, m, rows):
        part, Ap = out[..., a : a + rows, :], A[..., a : a + rows, :]
        for i in range(A.shape[-1]):
            if score == "dot":
                part += Ap[..., :, None, i] * B[..., None, :, i]
            else:
                t = Ap[..., :, None, i] - B[..., None, :, i]
                part -= t * t
    return out


def block_scores(block, queries, keys):
    """The scores a block's normalizer ranks, before ``gamma``: :func:`fixed_order_scores` for a normalizer
    that decides (``Normalizer.fixed_order``) on plain arrays, else ``SCORES[block.score]``."""
    if NORMALIZERS[block.normalizer].fixed_order and type(queries) is np.ndarray and type(keys) is np.ndarray:
        return fixed_order_scores(block.score, queries, keys)
    return SCORES[block.score](queries, keys)


def _row_groups(W):
    """For a plain 2-D ``W``: ``(first, inverse)`` with ``W[first][inverse] == W`` and one entry of ``first`` for
    each distinct row, or None when every row is distinct.

    Rows are keyed by two exact functions of their entries, the bits of their sum (one reduction, the same
    for every row) and the place of their first non-zero entry, mixed into one number, then compared whole
    with their key's first row: rows that share a key but differ stay apart.
    """
    m, r = W.shape
    if m < 2 or r == 0:
        return None
    total = np.sum(W, axis=-1).astype(np.float64) + 0.0  # + 0.0: a sum of -0 is keyed as 0, its equal under ==
    lead = np.argmax(W != 0, axis=-1).astype(np.uint64)
    key = total.view(np.uint64) ^ (lead * np.uint64(0x9E3779B97F4A7C15))  # wraps; a shared key is checked
    _, lowest, group = np.unique(key, return_index=True, return_inverse=True)
    if len(lowest) == m:
        return None
    group = group.ravel()
    rep = lowest[group]
    if np.all(W == W[rep]):  # the usual case: rows that share a key are equal
        first = np.flatnonzero(rep == np.arange(m))
        return first, np.searchsorted(first, rep)
    first, inverse, seen = [], np.empty(m, dtype=np.intp), {}
    for i, g in enumerate(group):
        slots = seen.setdefault(g, [])
        inverse[i] = next((s for s in slots if np.array_equal(W[i], W[first[s]])), len(first))
        if inverse[i] == len(first):
            slots.append(len(first))
            first.append(i)
    return None if len(first) == m else (np.array(first), inverse)


def rows_product(W, V):
    """``W @ V`` (..., m, r) x (..., r, D'), with equal rows of ``W`` giving equal rows.

    A mean over the same weights does not depend on which row asks for it: two centers that average the
    same points with the same weights must come out equal, or a tie that exact arithmetic has would be
    undone by where BLAS's kernel rounds each row. Each distinct row's product is copied to its equals
    (plain arrays, a task at a time; where most rows repeat, only the distinct ones are multiplied);
    traced arrays are multiplied as they are.
    """
    if type(W) is not np.ndarray or type(V) is not np.ndarray:
        return anp.matmul(W, V)
    batch = np.broadcast_shapes(W.shape[:-2], V.shape[:-2])
    if batch:
        Wb, Vb = np.broadcast_to(W, batch + W.shape[-2:]), np.broadcast_to(V, batch + V.shape[-2:])
        out = np.empty(batch + (W.shape[-2], V.shape[-1]), dtype=np.result_type(W, V))
        for i in np.ndindex(*batch):
            out[i] = rows_product(Wb[i], Vb[i])
        return out
    groups = _row_groups(W)
    if groups is None:
        return np.matmul(W, V)
    first, inverse = groups
    if 2 * len(first) <= W.shape[0]:
        return np.matmul(W[first], V)[inverse]
    return np.matmul(W, V)[first][inverse]


def softmax(scores):
    """Row-wise softmax over the last axis, stable (the row max is subtracted)."""
    shifted = scores - anp.max(scores, axis=-1, keepdims=True)
    e = anp.exp(shifted)
    return e / anp.sum(e, axis=-1, keepdims=True)


def softmax_dropout(scores, p, rng):
    """:func:`softmax`, then attention dropout: each weight zeroed with probability ``p``, the others
    divided by ``1 - p`` (rows then sum to 1 only in expectation).

    The authors' model applies this (PyTorch's ``F.dropout`` on the attention
    weights, ``p = 0.01`` on every block) at evaluation as well as in training;
    :func:`kmt_ref.learning.model.run_steps` offers it for evaluation only.
    """
    weights = softmax(scores)
    keep = rng.random(np.shape(weights)) >= p
    return weights * keep / (1.0 - p)


def hardmax(scores):
    """Uniform weights over the arg-max set of each row (averaging hardmax).

    This is the limit of ``softmax(gamma * scores)`` as ``gamma -> inf``.
    Ties are exact float equality: tied keys share the weight equally.
    """
    scores = np.asarray(scores)
    mask = (scores == scores.max(axis=-1, keepdims=True)).astype(float)
    return mask / mask.sum(axis=-1, keepdims=True)


def hardmax_average(scores, values=None):
    """``hardmax(scores) @ values``, as the sum of the arg-max rows divided by their count.

    The same numbers as the weights times the values in exact arithmetic; in
    float64 the mean of m equal rows is then exactly that row (m copies of
    ``1/m`` need not sum to 1: seven duplicates would leave an assignment one
    ulp off one-hot, and the next hardmax, comparing exactly, would drop it).
    ``values=None`` stands for the identity: the result is then the weights.
    Only rows whose count is not 1 are divided (a tie; or nan scores, whose
    ``0 / 0`` is nan): dividing by 1 changes no number.
    """
    scores = np.asarray(scores)
    return mean_over(scores == scores.max(axis=-1, keepdims=True), values)


def euclidean_hardmax_average(queries, keys, values=None):
    """The Euclidean hardmax: the mean of ``values`` over each query's nearest keys, as exact arithmetic decides.

    The rule of both engines. The arg-max set of ``-||q - k||^2`` is the set
    of keys nearest to ``q`` in exact arithmetic on the float64 queries and
    keys (:func:`~kmt_ref.geometry.exact_nearest`, the decision Lloyd's
    algorithm makes), not the arg-max of rounded scores: two keys are tied
    only when they are exactly equidistant, and then share the weight
    equally. Here a query at a time; the fast kernels find the same sets in
    chunks (:func:`~kmt_ref.geometry.nearest_center`).

    Parameters
    ----------
    queries : ndarray, shape (..., m, D)
    keys : ndarray, shape (..., r, D)
    values : ndarray, shape (..., r, D'), optional
        ``None`` stands for the identity (the result is then the weights, (..., m, r)).

    Returns
    -------
    ndarray, shape (..., m, D')
    """
    queries, keys = _as_decided(queries, "queries"), _as_decided(keys, "keys")
    batch = np.broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
    Q, K = np.broadcast_to(queries, batch + queries.shape[-2:]), np.broadcast_to(keys, batch + keys.shape[-2:])
    mask = np.zeros(batch + (Q.shape[-2], K.shape[-2]), dtype=bool)
    for index in np.ndindex(*mask.shape[:-1]):
        mask[index] = exact_nearest(Q[index], K[index[:-1]])
    return mean_over(mask, values)


def _as_decided(Z, name):
    """Tokens a Euclidean hardmax decides on: float arrays as they are; an array of exact rationals (object
    dtype: :mod:`kmt_ref.symbolic` runs the layer on them) as the float64 numbers it equals, so that the
    same rule decides on the same numbers. ``ValueError`` if one entry has no float64 equal."""
    if Z.dtype != object:
        return Z
    F = Z.astype(float)
    if not all(f == z for f, z in zip(F.ravel(), Z.ravel(), strict=True)):
        raise ValueError(f"a Euclidean hardmax decides on float64 numbers; {name} holds a rational that is not one")
    return F


def mean_over(mask, values=None):
    """The mean of ``values`` (..., r, D') over each row's ``True`` entries of ``mask`` (..., m, r), shape
    (..., m, D') (:func:`hardmax_average`); ``values=None`` stands for the identity (the result is then the
    weights, (..., m, r)).

    A row with one entry is that value row, copied; a row with several is :func:`mean_of_rows`; a row with
    none (nan scores) is nan. No product: the same numbers on every CPU, and equal rows of ``mask`` give
    equal rows.
    """
    mask = np.asarray(mask, dtype=bool)
    count = np.count_nonzero(mask, axis=-1)
    if values is None:
        out = mask.astype(float)
        odd = count != 1
        if odd.any():
            with np.errstate(invalid="ignore"):
                out[odd] /= count[odd][:, None]
        return out
    values = np.broadcast_to(values, mask.shape[:-2] + np.shape(values)[-2:])
    out = np.take_along_axis(values, np.argmax(mask, axis=-1)[..., None], axis=-2)
    for index in zip(*np.nonzero(count != 1), strict=True):
        out[index] = mean_of_rows(values[index[:-1]], mask[index])
    return out


def mean_of_rows(values, chosen):
    """The mean of the rows of ``values`` (r, D') where ``chosen`` (r,) is True: their sum, in order, divided by
    their count (nan when none is chosen); one implementation for both engines."""
    rows = values[chosen]
    if rows.shape[0] == 0:
        return np.full(values.shape[-1], np.nan)
    return np.sum(rows, axis=0) / rows.shape[0]


def check_linear_scores(scores):
    """Refuse a negative score: linear attention weighs by the scores themselves (traced: by their value)."""
    if np.any(np.asarray(getattr(scores, "_value", scores)) < 0):
        raise ValueError("linear attention needs non-negative scores; got a negative score")


def linear_normalize(scores):
    """Divide non-negative scores by their row sum; an all-zero row is uniform.

    Raises
    ------
    ValueError
        If a score is negative (linear attention needs non-negative scores).
    """
    check_linear_scores(scores)
    total = anp.sum(scores, axis=-1, keepdims=True)
    width = scores.shape[-1]
    safe = anp.where(total > 0, total, 1.0)
    return anp.where(total > 0, scores / safe, 1.0 / width)


def linear_average(scores, values=None):
    """``linear_normalize(scores) @ values`` as the scores times the values over the row sums, a row of zero
    scores taking the values' mean: their sum, a row of ones times them in the same product (where a
    cluster that holds every point gets it too), over their count. So equal in exact arithmetic, equal in
    float: an empty cluster and a cluster of all the points come out the same (their tie is seen, as
    Lloyd's algorithm sees it), and points that sum to 0 exactly give 0, where ``1/r`` times each would
    leave a rounding. ``values=None`` stands for the identity (the weights). Traced arrays take the product
    of the weights."""
    if values is None:
        return linear_normalize(scores)
    if type(scores) is not np.ndarray or type(values) is not np.ndarray:
        return anp.matmul(linear_normalize(scores), values)
    check_linear_scores(scores)
    total = np.sum(scores, axis=-1, keepdims=True)
    empty = total == 0
    if not np.any(empty):
        return rows_product(scores, values) / total
    ones = np.ones(scores.shape[:-2] + (1, scores.shape[-1]))
    num = rows_product(np.concatenate([scores, ones], axis=-2), values)
    mean = num[..., -1:, :] / scores.shape[-1]
    return np.where(empty, mean, num[..., :-1, :] / np.where(empty, 1.0, total))


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
        computed more exactly (see :func:`hardmax_average`; ``values=None``
        stands for the identity, and the result is the weights); :func:`attend`
        uses it when given.
    fixed_order : bool
        Whether its weights are a decision (an arg-max, a support, a threshold, an empty row) taken on scores
        summed in one fixed order (:func:`fixed_order_scores`), so that it is the same on every CPU, in both
        engines and alike for equal queries, and multiplied by the values with :func:`rows_product` (equal
        rows of weights give equal rows). A softmax's weights move continuously: BLAS's scores and product.
    """

    fn: Callable | None
    uses_gamma: bool = True
    needs_rng: bool = False
    average: Callable | None = None
    fixed_order: bool = False

    def __post_init__(self):
        for name in ("fn", "average"):
            if getattr(self, name) is not None:
                check_callable(getattr(self, name), name)
        for name in ("uses_gamma", "needs_rng", "fixed_order"):
            check_bool(getattr(self, name), name)


#: Registry of normalizers by name (add one with :func:`register_normalizer`).
NORMALIZERS = {
    "softmax": Normalizer(softmax),
    "softmax_dropout": Normalizer(softmax_dropout, needs_rng=True),
    "hardmax": Normalizer(hardmax, uses_gamma=False, average=hardmax_average, fixed_order=True),
    "linear": Normalizer(linear_normalize, uses_gamma=False, fixed_order=True, average=linear_average),
    "identity": Normalizer(None, uses_gamma=False),
    "sparsemax": Normalizer(sparsemax, fixed_order=True),
    "normmax2": Normalizer(normmax2, fixed_order=True),
    "normmax_inf": Normalizer(normmax_inf, fixed_order=True),
    "gumbel_max": Normalizer(gumbel_max, needs_rng=True, fixed_order=True),
    "gumbel_softmax": Normalizer(gumbel_softmax, needs_rng=True),
}


def register_normalizer(name, normalizer):
    """Make ``normalizer`` available to blocks as ``Block(..., normalizer=name)``.

    The extension point for new attention mechanisms: a variant defines its
    row-wise normalizer (weights on the simplex) and registers it; the
    reference :func:`attend`, the kernels and the model machinery then work
    with it unchanged.

    Parameters
    ----------
    name : str
        New key of :data:`NORMALIZERS`.
    normalizer : Normalizer
    """
    check_name(name)
    if name in NORMALIZERS:
        raise ValueError(f"name={name!r} is already a normalizer; choose another name")
    if not isinstance(normalizer, Normalizer) or not callable(normalizer.fn):
        raise ValueError(f"normalizer must be a Normalizer with a callable fn; got normalizer={normalizer!r}")
    NORMALIZERS[name] = normalizer


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
        D = np.shape(self.Wq)[-1] if np.ndim(self.Wq) else 0
        for name in ("Wq", "Wk", "Wv", "bq", "bk", "bv"):
            W, want = getattr(self, name), (D, D) if name.startswith("W") else (D,)
            if (W is not None or name.startswith("W")) and np.shape(W) != want:
                raise ValueError(f"Block {name} must have shape {want} (D = Wq's columns); got {name}.shape="
                                 f"{np.shape(W)}")
        # Weights are values: copied and read-only, so no later edit (of this block, of another
        # block built from the same array) can change what a model computes.
        for name in ("Wq", "Wk", "Wv", "bq", "bk", "bv"):
            W = getattr(self, name)
            if isinstance(W, np.ndarray):
                check_finite(W, name)  # a nan weight would give nan tokens, silently
                W = W.copy()
                W.flags.writeable = False
                object.__setattr__(self, name, W)
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        check_choice(self.score, "score", SCORES)
        check_choice(self.normalizer, "normalizer", NORMALIZERS)
        norm = NORMALIZERS[self.normalizer]
        if norm.uses_gamma and not (0 < self.gamma < np.inf):
            raise ValueError(
                f"normalizer={self.normalizer!r} needs a finite gamma > 0; got gamma={self.gamma}"
            )


def project(Z, W, b=None):
    """``Z @ W.T + b``: tokens as rows, weights acting on columns."""
    out = anp.matmul(Z, anp.swapaxes(W, -1, -2))
    return out if b is None else out + b


def attention_weights(Zq, Zk, block, rng=None):
    """The block's attention weights ``normalize(gamma * score(queries, keys))``, shape (..., m, r).

    The identity normalizer gives the identity matrix (each token attends to
    itself). Same arguments as :func:`attend`.
    """
    norm = NORMALIZERS[block.normalizer]
    if block.normalizer == "identity":
        if Zq.shape[-2] != Zk.shape[-2]:
            raise ValueError("identity attention needs as many queries as keys; "
                             f"got m={Zq.shape[-2]}, r={Zk.shape[-2]}")
        return np.broadcast_to(np.eye(Zq.shape[-2]), Zq.shape[:-1] + (Zq.shape[-2],))
    if _exact_euclidean(block):
        return euclidean_hardmax_average(project(Zq, block.Wq, block.bq), project(Zk, block.Wk, block.bk))
    s = block_scores(block, project(Zq, block.Wq, block.bq), project(Zk, block.Wk, block.bk))
    extra = dict(block.params, **({"rng": rng} if norm.needs_rng else {}))
    return norm.fn(block.gamma * s if norm.uses_gamma else s, **extra)


def check_tokens(Zq, Zk, block):
    """Refuse a ``block`` that is no :class:`Block`, and tokens that are not (..., m, D) and (..., r, D) for its
    width ``D`` (shapes only: the tokens may be traced)."""
    if not isinstance(block, Block):
        raise ValueError(f"block must be a Block; got block={type(block).__name__}")
    D = np.shape(block.Wq)[1]
    for name, Z in (("Zq", Zq), ("Zk", Zk)):
        if np.ndim(Z) < 2 or np.shape(Z)[-1] != D:
            raise ValueError(f"{name} must be tokens of shape (..., m, {D}) for this block; got "
                             f"{name}.shape={np.shape(Z)}")


def attend(Zq, Zk, block, rng=None):
    """Apply one attention block: the reference implementation, the mathematics as written.

    ``attention_weights(Zq, Zk, block) @ (Zk @ Wv.T + bv)``; with a normalizer
    that has an ``average`` (hardmax), that exact average instead of the
    product. Every weight is computed, so this holds an (..., m, r) array:
    models run the same numbers through ``kmt_ref.kernels.attend``, which
    skips what the weights' structure makes zero and works in row chunks.

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
    check_tokens(Zq, Zk, block)
    norm = NORMALIZERS[block.normalizer]
    if norm.needs_rng:
        check_rng(rng, "rng", f" (normalizer={block.normalizer!r} draws random numbers)")
    values = project(Zk, block.Wv, block.bv)
    if block.normalizer == "identity":  # the identity weights times the values, without the (m, m) matrix
        if Zq.shape[-2] != Zk.shape[-2]:
            raise ValueError("identity attention needs as many queries as keys; "
                             f"got m={Zq.shape[-2]}, r={Zk.shape[-2]}")
        return values
    if _exact_euclidean(block):
        return euclidean_hardmax_average(project(Zq, block.Wq, block.bq), project(Zk, block.Wk, block.bk), values)
    if norm.average is not None:
        s = block_scores(block, project(Zq, block.Wq, block.bq), project(Zk, block.Wk, block.bk))
        return norm.average(s, values)
    product = rows_product if norm.fixed_order else anp.matmul
    return product(attention_weights(Zq, Zk, block, rng), values)


def _exact_euclidean(block):
    """Whether the block is a Euclidean hardmax, whose arg-max sets exact arithmetic decides."""
    return block.score == "euclidean" and block.normalizer == "hardmax"
