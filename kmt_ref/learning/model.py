"""The learnable one-layer k-means transformer.

Four Euclidean softmax attention blocks (CAX, SAX, CAC, SAC), each with learned
``Wq, Wk, Wv`` of shape ``(D, D)`` and biases ``bq, bk, bv`` of shape ``(D,)``:
12 matrices and 12 biases, held in one flat parameter vector ``theta`` so that
``autograd`` and Adam see a single array. ``D`` is the token width: ``d + k``
with the paper's tokens ``[x | y]`` (``tokens="d+k"``) or ``d`` with the
ablation's bare points and centers (``tokens="d"``).

Scores are divided by ``sqrt(D)``, as in the authors' model (scaled
dot-product convention carried over to the Euclidean score); the hand-built
constructions omit that factor, so in :class:`~kmt_ref.attention.Block`
terms the learned model has ``gamma = 1 / sqrt(D)``.

**Tied ids** (``tied=True``, tokens ``[x | y]``): a model whose parameters do
not depend on ``k``, so one set runs at any number of clusters. Every map
acts the same on every cluster id: written ``W = [[A, v 1^T], [1 u^T,
lambda I + nu 1 1^T]]`` over the ``(x, y)`` blocks (``A`` of shape ``(d, d)``,
``u, v`` of shape ``(d,)``, scalars ``lambda, nu``) and biases ``[h | kappa 1]``, it
commutes with every permutation of the ids, and ``d^2 + 2d + 2`` numbers per
matrix, ``d + 1`` per bias, describe it at every ``k``. The Equation 5
matrices are projectors ``P_x``, ``+-P_y`` (``A = I`` or ``lambda = +-1``, the rest
0), so the construction is a member (:func:`~kmt_ref.learning.sharing.tie` of it succeeds; tested). The
score factor of a tied model is ``1 / sqrt(d)``, which does not depend on
``k`` either.

**Symmetric** (``symmetric=True``, tokens ``[x | y]``): a model with every
symmetry of the task law, by construction. The law draws its tasks in the unit
cube and treats ids, coordinates and each coordinate's two ends alike, so its
symmetries are the relabellings of the ids, the permutations of the coordinates
and the reflections ``x_l -> 1 - x_l`` of any of them. A map commutes with all
of these only if it is ``[[alpha I, 0], [0, lambda I + nu 1 1^T]]`` with the
bias ``[-alpha / 2 1 | kappa 1]``: in the coordinates ``x - 1/2`` a reflection
flips signs, so the ``x`` block must be odd (no bias, no map from or to the
ids) and commute with every signed permutation (no ``beta 1 1^T``). Four
scalars a map, 48 in all, at every ``d`` and ``k``. The Equation 5
construction is a member: its ``-P_x`` reset's bias ``+1/2`` cancels its
``P_x`` update's ``-1/2``, and the query and key biases cancel in every score.
The score factor is ``1 / sqrt(d)``, as when tied.

The forward pass *is* :func:`kmt_ref.layer.transformer_layer` with blocks
built from ``theta`` -- no second layer implementation -- batched over tasks
through the leading axis of the tokens. The authors' model also applies
attention dropout (p = 0.01); this reproduction has none.
"""

import dataclasses

import autograd.numpy as anp
import numpy as np

from .._validation import (
    check_batch,
    check_bool,
    check_choice,
    check_finite,
    check_fraction,
    check_instance,
    check_int,
    check_n_steps,
    check_rng,
    float_type,
)
from ..attention import Block
from ..layer import BLOCK_NAMES, KMeansTransformer, transformer_layer
from ..tokens import TokenLayout

__all__ = [
    "TOKENS",
    "WEIGHT_NAMES",
    "ModelConfig",
    "init_params",
    "unflatten",
    "blocks_from_params",
    "forward",
    "run_steps",
    "params_from_transformer",
    "to_transformer",
]

#: Token layouts of the learnable model.
TOKENS = {"d+k": ("x", "y"), "d": ("x",)}
#: Parameters of one block, in their order inside ``theta``.
WEIGHT_NAMES = ("Wq", "Wk", "Wv", "bq", "bk", "bv")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Shape of a learnable model.

    Attributes
    ----------
    d, k : int
        Data dimension and number of centers (fixed per trained model).
    tokens : {"d+k", "d"}
        Token layout: ``[x | y]`` (paper) or ``[x]`` (ablation).
    tied : bool
        Tie the maps of the id coordinates (tokens ``"d+k"`` only; see the
        module docstring): the parameters do not depend on ``k``.
    symmetric : bool
        Every symmetry of the task law (ids, coordinate permutations,
        reflections ``x_l -> 1 - x_l``; tokens ``"d+k"``, not with ``tied``;
        see the module docstring): four scalars a map.
    """

    d: int
    k: int
    tokens: str = "d+k"
    tied: bool = False
    symmetric: bool = False

    def __post_init__(self):
        for name in ("d", "k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {name}={value!r}")
        check_choice(self.tokens, "tokens", TOKENS)
        check_bool(self.tied, "tied")
        check_bool(self.symmetric, "symmetric")
        if self.symmetric and (self.tied or self.tokens != "d+k"):
            raise ValueError(f"symmetric=True is a form of its own of tokens 'd+k' (its ids are tied already); "
                             f"got tokens={self.tokens!r}, tied={self.tied}")
        if self.tied and self.tokens != "d+k":
            raise ValueError(f"tied=True ties the id block of tokens 'd+k'; got tokens={self.tokens!r} "
                             "(whose parameters do not depend on k anyway)")

    def at_k(self, k):
        """The same model run with ``k`` centers (only a tied, symmetric or ``[x]`` model has the same parameters)."""
        return dataclasses.replace(self, k=k)

    @property
    def layout(self):
        """The :class:`~kmt_ref.tokens.TokenLayout` of ``tokens`` at ``d`` and ``k``."""
        return TokenLayout(self.d, self.k, TOKENS[self.tokens])

    @property
    def width(self):
        """Token width ``D``."""
        return self.layout.width

    @property
    def gamma(self):
        """The score factor, ``1 / sqrt(D)`` as in the authors' model (``1 / sqrt(d)`` when tied or symmetric)."""
        return 1.0 / np.sqrt(self.d if self.k_free else self.width)

    @property
    def k_free(self):
        """Whether the parameters describe the model at every ``k`` (tied or symmetric)."""
        return self.tied or self.symmetric

    @property
    def n_params(self):
        """Length of the flat parameter vector ``theta``."""
        return len(BLOCK_NAMES) * sum(int(np.prod(s)) for s in _shapes(self).values())


def _shapes(config):
    """Shape of each parameter of one block; for a tied or symmetric model, the sizes of its flat pieces."""
    if config.symmetric:  # (alpha, lambda, nu) a matrix, kappa a bias
        return {w: (3,) if w.startswith("W") else (1,) for w in WEIGHT_NAMES}
    if config.tied:
        d = config.d
        return {w: (d * d + 2 * d + 2,) if w.startswith("W") else (d + 1,) for w in WEIGHT_NAMES}
    D = config.width
    return {"Wq": (D, D), "Wk": (D, D), "Wv": (D, D), "bq": (D,), "bk": (D,), "bv": (D,)}


def _untie(piece, d, k):
    """The full matrix ``[[A, v 1^T], [1 u^T, lambda I + nu 1 1^T]]`` or bias ``[h | kappa 1]`` of a tied piece."""
    ones = np.ones(k, piece.dtype)
    if piece.shape[0] == d + 1:
        return anp.concatenate([piece[:d], piece[d] * ones])
    A = anp.reshape(piece[: d * d], (d, d))
    u, v, lam, nu = piece[d * d : d * d + d], piece[d * d + d : d * d + 2 * d], piece[-2], piece[-1]
    top = anp.concatenate([A, anp.outer(v, ones)], axis=1)
    ids = lam * np.eye(k, dtype=piece.dtype) + nu * np.ones((k, k), piece.dtype)
    bottom = anp.concatenate([anp.outer(ones, u), ids], axis=1)
    return anp.concatenate([top, bottom], axis=0)


def _tied_of_symmetric(piece, matrix_piece, d):
    """The tied piece of a symmetric one: ``A = alpha I``, ``u = v = 0``; a bias's ``x`` part ``-alpha / 2`` from
    its matrix's piece ``(alpha, lambda, nu)``."""
    alpha = matrix_piece[0]
    if piece.shape[0] == 1:
        return anp.concatenate([-alpha / 2 * np.ones(d, piece.dtype), piece])
    return anp.concatenate([anp.reshape(alpha * np.eye(d, dtype=piece.dtype), (d * d,)), np.zeros(2 * d, piece.dtype),
                            piece[1:]])


def init_params(config, rng):
    """Random ``theta``: every entry from ``U(-1/sqrt(D), 1/sqrt(D))`` (PyTorch's default).

    A tied model draws its pieces from ``U(-1/sqrt(d), 1/sqrt(d))``, and a
    symmetric one its scalars: their initialization, too, does not depend on ``k``.

    Returns
    -------
    ndarray, shape (config.n_params,)
    """
    check_rng(rng)
    bound = 1.0 / np.sqrt(config.d if config.k_free else config.width)
    return rng.uniform(-bound, bound, size=config.n_params)


def unflatten(theta, config):
    """``{block: {"Wq", "Wk", "Wv", "bq", "bk", "bv": array}}``: the full ``(D, D)`` and ``(D,)`` arrays.

    Views of ``theta``; for a tied or symmetric model, the matrices its pieces describe at ``config.k``.
    """
    shapes = _shapes(config)
    if np.shape(theta) != (config.n_params,):
        raise ValueError(
            f"theta must have shape ({config.n_params},) for {config}; got theta.shape={np.shape(theta)}"
        )
    check_finite(theta, "theta")  # a model with a nan weight computes nan centers, silently
    out, start = {}, 0
    for bname in BLOCK_NAMES:
        out[bname], pieces = {}, {}
        for wname in WEIGHT_NAMES:
            size = int(np.prod(shapes[wname]))
            piece = anp.reshape(theta[start : start + size], shapes[wname])
            if config.symmetric:  # a bias follows its matrix in WEIGHT_NAMES: that piece is known
                pieces[wname] = piece
                piece = _tied_of_symmetric(piece, pieces["W" + wname[1]], config.d)
            out[bname][wname] = _untie(piece, config.d, config.k) if config.k_free else piece
            start += size
    return out


def blocks_from_params(theta, config, dropout=0.0):
    """The four :class:`~kmt_ref.attention.Block` objects of the model (Euclidean softmax).

    ``dropout > 0``: attention dropout with that probability on every block
    (normalizer ``"softmax_dropout"``; running the model then needs ``rng``).
    """
    params = unflatten(theta, config)
    mechanism = dict(normalizer="softmax_dropout", params={"p": dropout}) if dropout else dict(normalizer="softmax")
    return {
        b: Block(p["Wq"], p["Wk"], p["Wv"], score="euclidean", gamma=config.gamma,
                 bq=p["bq"], bk=p["bk"], bv=p["bv"], **mechanism)
        for b, p in params.items()
    }


def forward(theta, X, init, config, engine=None, n_layers=1, every_step=False):
    """The layer applied ``n_layers`` times to a batch of tasks, re-embedding between steps: the new centers.

    Parameters
    ----------
    theta : ndarray, shape (n_params,)
    X : ndarray, shape (B, n, d)
    init : ndarray, shape (B, k, d)
    config : ModelConfig
    engine : Engine, optional
        How the layer is computed (:class:`kmt_ref.engine.Engine`; default
        ``Engine()``: the fast kernels, whose Euclidean softmax has a
        hand-written gradient). :data:`kmt_ref.engine.REFERENCE` runs the
        reference attention, which autograd differentiates step by step: the
        same gradient, slower.
    n_layers : int
        Layer applications; before each after the first the center tokens
        are rebuilt from the current centers (as :func:`run_steps` does), by
        a linear map so that ``autograd`` can trace it (multi-step training).
    every_step : bool
        Return the centers after every application, not only the last.

    Returns
    -------
    ndarray, shape (B, k, d)
        The ``x`` block of the center tokens after the last layer; with
        ``every_step``, a list of ``n_layers`` such arrays.

    Notes
    -----
    The pass computes in ``theta``'s precision: float32 parameters (a
    float32 training step, :class:`~kmt_ref.learning.config.TrainConfig`)
    take ``X`` and ``init`` to float32 too, so every token, score and
    gradient of the pass is float32; anything else is float64.
    """
    X = check_batch(X, init)
    n_layers = check_int(n_layers, "n_layers", low=1)
    every_step = check_bool(every_step, "every_step")
    dtype = float_type(theta)
    X, init = X.astype(dtype, copy=False), np.asarray(init).astype(dtype, copy=False)
    layout, blocks = config.layout, blocks_from_params(theta, config)
    P0, Q = layout.embed(X, init)
    # The center tokens of zero centers: what re-embedding adds to the linear image of the centers.
    _, ids = layout.embed(X[..., :0, :], np.zeros(np.shape(init), dtype))
    steps = []
    for t in range(n_layers):
        _, Q = transformer_layer(P0, Q, blocks, engine=engine)
        steps.append(layout.read(Q, "x"))
        if t + 1 < n_layers:
            Q = steps[-1] @ layout.reader("x").astype(dtype) + ids
    return steps if every_step else steps[-1]


def run_steps(theta, X, init, config, n_layers, reembed=True, chunk=32, dropout=0.0, rng=None, engine=None):
    """Apply the trained layer ``n_layers`` times to a batch of tasks: the centers.

    :meth:`KMeansTransformer.run <kmt_ref.layer.KMeansTransformer.run>` of
    :func:`to_transformer`, ``chunk`` tasks at a time.

    Parameters
    ----------
    theta : ndarray, shape (n_params,)
    X : ndarray, shape (B, n, d)
    init : ndarray, shape (B, k, d)
    config : ModelConfig
    n_layers : int
    reembed : bool
        Rebuild the tokens from the current centers before every step
        (assignment block 0, ids ``I_k``), as the authors' evaluation code does; without
        it the tokens of the previous layer are fed back unchanged.
    chunk : int
        Tasks processed together (bounds memory at ``chunk * n * n``).
    dropout : float
        Attention dropout probability at evaluation, ``0 <= dropout < 1``
        (default 0, none). The authors' model keeps its training dropout,
        ``p = 0.01``, active when it is evaluated; this reproduces it.
    rng : numpy.random.Generator
        The dropout draws; required when ``dropout > 0``.
    engine : Engine, optional
        How the layers are computed (:class:`kmt_ref.engine.Engine`); results
        do not depend on it.

    Returns
    -------
    ndarray, shape (n_layers + 1, B, k, d)
        ``centers[0] = init``. Entries may be non-finite when the iteration
        diverges (``reembed=False``); callers report that rather than hide it.
    """
    X = check_batch(X, init)
    init = np.asarray(init, dtype=np.float64)
    n_layers = check_n_steps(n_layers, "n_layers")
    reembed = check_bool(reembed, "reembed")
    chunk = check_int(chunk, "chunk", low=1)
    dropout = check_fraction(dropout, "dropout")
    if dropout:
        check_rng(rng, "rng", " (dropout > 0 draws random numbers)")
    model = to_transformer(np.asarray(theta), config, dropout=dropout)
    centers = np.empty((n_layers + 1,) + init.shape)
    for lo in range(0, X.shape[0], chunk):
        sl = slice(lo, lo + chunk)
        centers[:, sl] = model.run(X[sl], init[sl], n_layers, rng=rng if dropout else None, reembed=reembed,
                                   keep_assignments=False, diverged="return", engine=engine).centers
    return centers


def params_from_transformer(model):
    """``theta`` and ``ModelConfig`` of a hand-built Euclidean softmax model.

    The learned model fixes ``gamma = 1/sqrt(D)``; a hand-built block with
    inverse temperature ``gamma_b`` is represented exactly by scaling its
    ``Wq`` and ``Wk`` by ``s = sqrt(gamma_b * sqrt(D))``, since
    ``||s Wq z - s Wk z'||^2 / sqrt(D) = gamma_b ||Wq z - Wk z'||^2``.

    Parameters
    ----------
    model : KMeansTransformer
        Every block Euclidean softmax (e.g. ``lloyd_transformer(d, k, gamma,
        config="all-attention")`` with finite ``gamma``), no FFN, token layout
        ``("x", "y")`` or ``("x",)``. The tied model's pieces:
        ``tie(*params_from_transformer(model))`` (:func:`~kmt_ref.learning.sharing.tie`).

    Returns
    -------
    theta : ndarray, shape (n_params,)
    config : ModelConfig
    """
    check_instance(model, "model", KMeansTransformer)
    tokens = {v: key for key, v in TOKENS.items()}.get(model.layout.blocks)
    if tokens is None or model.ffn is not None:
        raise ValueError(
            f"the learnable model has tokens {list(TOKENS.values())} and no FFN; "
            f"got layout={model.layout}, ffn={model.ffn!r}"
        )
    config = ModelConfig(model.d, model.k, tokens)
    D, parts = config.width, []
    for bname, block in model.blocks.items():
        if (block.score, block.normalizer) != ("euclidean", "softmax"):
            raise ValueError(
                f"only Euclidean softmax blocks are learnable; got {bname}: "
                f"score={block.score!r}, normalizer={block.normalizer!r}"
            )
        s = np.sqrt(block.gamma * np.sqrt(D))
        mats = {"Wq": s * block.Wq, "Wk": s * block.Wk, "Wv": block.Wv}
        for wname in ("bq", "bk", "bv"):
            b = getattr(block, wname)
            mats[wname] = np.zeros(D) if b is None else (s if wname != "bv" else 1.0) * b
        parts += [np.ravel(mats[w]) for w in WEIGHT_NAMES]
    return np.concatenate(parts), config


def to_transformer(theta, config, name="learned k-means transformer", dropout=0.0):
    """The model as a :class:`~kmt_ref.layer.KMeansTransformer` (for ``run``, ``weights``)."""
    return KMeansTransformer(config.layout, blocks_from_params(np.asarray(theta), config, dropout), name=name)
