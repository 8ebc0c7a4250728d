"""Attention as a family: a score, a row-wise normalizer, and values.

An attention block maps queries ``Zq`` of shape (m, D) and keys/values ``Zk``
of shape (r, D) with weights ``(Wq, Wk, Wv)`` to::

    normalize(gamma * score(Zq @ Wq.T, Zk @ Wk.T)) @ (Zk @ Wv.T)      # (m, D)

Weight matrices act on column vectors, as printed in the paper; code applies
them to row tokens as ``Z @ W.T``. Everything here is written with
``autograd.numpy`` so that one implementation serves both the hand-built
constructions and the learned model, and accepts leading batch axes
(``(..., m, D)``) for batches of tasks.

Scores (``gamma`` is applied by :func:`attend`; :mod:`kmt_ref.products`):
``"euclidean"``, ``-||Wq z_a - Wk z_b||^2``, and ``"dot"``, ``(Wq z_a) . (Wk z_b)``.

Normalizers (row-wise over keys; see :data:`NORMALIZERS`):

``"softmax"``
    finite-temperature softmax, stabilized by the row maximum.
``"hardmax"``
    the ``gamma -> inf`` limit: uniform weight on the arg-max set ("averaging
    hard attention"). ``gamma`` is irrelevant. With the Euclidean score the
    arg-max set is the set of nearest keys as exact arithmetic decides
    (:func:`~kmt_ref.normalizers.euclidean_hardmax_average`), in both engines; with the dot score
    it is the arg-max set of the float scores summed in one fixed order
    (:func:`~kmt_ref.products.fixed_order_scores`: the same on every CPU and in both engines;
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

The hardmax, and the sparse and random normalizers, are defined in
:mod:`kmt_ref.normalizers` (the latter used by the variants): ``"sparsemax"``,
``"normmax2"`` and ``"normmax_inf"`` (parameter ``threshold`` via
``Block.params``), ``"gumbel_max"`` and ``"gumbel_softmax"`` (parameter
``temperature``; both need ``rng``).

:func:`attend` here is the reference: the formula above, a dozen lines, every
weight computed. Models run ``kmt_ref.kernels.attend``, the same numbers
(a test runs every construction, variant and the learned model through both)
computed faster; :func:`kmt_ref.layer.transformer_layer` takes either.

Decisions do not depend on the CPU. What a normalizer decides (an arg-max, a
support) is taken on exact distances (the Euclidean hardmax) or on
:func:`~kmt_ref.products.fixed_order_scores`, never on a BLAS product's rounding, which depends on
the machine's kernel (the fast kernels take a dot-product hardmax's decision
from BLAS's product only where a bound on both sums' rounding shows it is the
fixed order's); and the weights times the values are
:func:`~kmt_ref.products.rows_product`, in which equal rows of weights give equal rows (two
centers that average the same points come out equal, so a tie that exact
arithmetic has stays a tie).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType

import autograd.numpy as anp
import numpy as np

from ._validation import check_bool, check_callable, check_choice, check_finite, check_name, check_rng
from .normalizers import (
    euclidean_hardmax_average,
    gumbel_max,
    gumbel_softmax,
    hardmax,
    hardmax_average,
    normmax2,
    normmax_inf,
    sparsemax,
)
from .products import SCORES, fixed_order_scores, rows_product

__all__ = [
    "Block",
    "Normalizer",
    "NORMALIZERS",
    "attend",
    "attention_weights",
    "project",
    "register_normalizer",
    "softmax_dropout",
    "softmax",
    "linear_normalize",
    "linear_average",
    "check_linear_scores",
    "block_scores",
]


def block_scores(block, queries, keys):
    """The scores a block's normalizer ranks, before ``gamma``: :func:`~kmt_ref.products.fixed_order_scores`
    for a normalizer that decides (``Normalizer.fixed_order``) on plain arrays, else ``SCORES[block.score]``."""
    if NORMALIZERS[block.normalizer].fixed_order and type(queries) is np.ndarray and type(keys) is np.ndarray:
        return fixed_order_scores(block.score, queries, keys)
    return SCORES[block.score](queries, keys)


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
        summed in one fixed order (:func:`~kmt_ref.products.fixed_order_scores`), so that it is the same on
        every CPU, in both engines and alike for equal queries, and multiplied by the values with
        :func:`~kmt_ref.products.rows_product` (equal rows of weights give equal rows). A softmax's weights
        move continuously: BLAS's scores and product.
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
