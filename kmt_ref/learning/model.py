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

The forward pass *is* :func:`kmt_ref.layer.transformer_layer` with blocks
built from ``theta`` -- no second layer implementation -- batched over tasks
through the leading axis of the tokens. The authors' model also applies
attention dropout (p = 0.01); this reproduction has none.
"""

from dataclasses import dataclass

import autograd.numpy as anp
import numpy as np

from .. import kernels
from .._validation import check_batch, check_bool, check_choice, check_int, check_n_steps, check_rng
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


@dataclass(frozen=True)
class ModelConfig:
    """Shape of a learnable model.

    Attributes
    ----------
    d, k : int
        Data dimension and number of centers (fixed per trained model).
    tokens : {"d+k", "d"}
        Token layout: ``[x | y]`` (paper) or ``[x]`` (ablation).
    """

    d: int
    k: int
    tokens: str = "d+k"

    def __post_init__(self):
        for name in ("d", "k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {name}={value!r}")
        check_choice(self.tokens, "tokens", TOKENS)

    @property
    def layout(self):
        return TokenLayout(self.d, self.k, TOKENS[self.tokens])

    @property
    def width(self):
        """Token width ``D``."""
        return self.layout.width

    @property
    def gamma(self):
        """The ``1 / sqrt(D)`` score factor of the authors' model."""
        return 1.0 / np.sqrt(self.width)

    @property
    def n_params(self):
        D = self.width
        return len(BLOCK_NAMES) * 3 * (D * D + D)


def _shapes(D):
    return {"Wq": (D, D), "Wk": (D, D), "Wv": (D, D), "bq": (D,), "bk": (D,), "bv": (D,)}


def init_params(config, rng):
    """Random ``theta``: every entry from ``U(-1/sqrt(D), 1/sqrt(D))`` (PyTorch's default).

    Returns
    -------
    ndarray, shape (config.n_params,)
    """
    check_rng(rng)
    bound = 1.0 / np.sqrt(config.width)
    return rng.uniform(-bound, bound, size=config.n_params)


def unflatten(theta, config):
    """``{block: {"Wq", "Wk", "Wv", "bq", "bk", "bv": array}}`` views of ``theta``."""
    shapes = _shapes(config.width)
    if np.shape(theta) != (config.n_params,):
        raise ValueError(
            f"theta must have shape ({config.n_params},) for {config}; got theta.shape={np.shape(theta)}"
        )
    out, start = {}, 0
    for bname in BLOCK_NAMES:
        out[bname] = {}
        for wname in WEIGHT_NAMES:
            size = int(np.prod(shapes[wname]))
            out[bname][wname] = anp.reshape(theta[start : start + size], shapes[wname])
            start += size
    return out


def blocks_from_params(theta, config):
    """The four :class:`~kmt_ref.attention.Block` objects of the model (Euclidean softmax)."""
    params = unflatten(theta, config)
    return {
        b: Block(
            p["Wq"], p["Wk"], p["Wv"], score="euclidean", normalizer="softmax",
            gamma=config.gamma, bq=p["bq"], bk=p["bk"], bv=p["bv"],
        )
        for b, p in params.items()
    }


def forward(theta, X, init, config, attend=kernels.attend):
    """One layer on a batch of tasks: the new centers.

    Parameters
    ----------
    theta : ndarray, shape (n_params,)
    X : ndarray, shape (B, n, d)
    init : ndarray, shape (B, k, d)
    config : ModelConfig
    attend : callable
        :func:`kmt_ref.kernels.attend` (default; its Euclidean softmax has a
        hand-written gradient) or the reference :func:`kmt_ref.attention.attend`
        (autograd differentiates it step by step: the same gradient, slower).

    Returns
    -------
    ndarray, shape (B, k, d)
        The ``x`` block of the center tokens after one layer.
    """
    X = check_batch(X, init)
    layout = config.layout
    P, Q = layout.embed(X, init)
    P, Q = transformer_layer(P, Q, blocks_from_params(theta, config), attend=attend)
    return layout.read(Q, "x")


def run_steps(theta, X, init, config, n_layers, reembed=True, chunk=32):
    """Apply the trained layer ``n_layers`` times to a batch of tasks.

    Parameters
    ----------
    theta : ndarray, shape (n_params,)
    X : ndarray, shape (B, n, d)
    init : ndarray, shape (B, k, d)
    config : ModelConfig
    n_layers : int
    reembed : bool
        Rebuild the tokens from the current centers before every step
        (assignment block 0, ids ``I_k``), as the paper evaluates; without
        it the tokens of the previous layer are fed back unchanged.
    chunk : int
        Tasks processed together (bounds memory at ``chunk * n * n``).

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
    layout, blocks = config.layout, blocks_from_params(np.asarray(theta), config)
    B = X.shape[0]
    centers = np.empty((n_layers + 1,) + init.shape)
    centers[0] = init
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, B, chunk):
            sl = slice(lo, lo + chunk)
            P, Q = layout.embed(X[sl], init[sl])
            for t in range(n_layers):
                if reembed and t > 0:
                    P, Q = layout.embed(X[sl], centers[t, sl])
                P, Q = transformer_layer(P, Q, blocks)
                centers[t + 1, sl] = layout.read(Q, "x")
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
        config="faithful")`` with finite ``gamma``), no FFN, token layout
        ``("x", "y")`` or ``("x",)``.

    Returns
    -------
    theta : ndarray, shape (n_params,)
    config : ModelConfig
    """
    if not isinstance(model, KMeansTransformer):
        raise ValueError(f"model must be a KMeansTransformer; got model={model!r}")
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


def to_transformer(theta, config, name="learned k-means transformer"):
    """The model as a :class:`~kmt_ref.layer.KMeansTransformer` (for ``run``, ``weights``)."""
    return KMeansTransformer(config.layout, blocks_from_params(np.asarray(theta), config), name=name)
