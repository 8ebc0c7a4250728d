"""Which maps of a learned layer act alike on every cluster id: the tied form found, or measured.

A tied model (:class:`~kmt_ref.learning.model.ModelConfig` with ``tied=True``) writes each matrix as
``[[A, v 1^T], [1 u^T, lambda I + nu 1 1^T]]`` over the ``(x, y)`` blocks. :func:`tie` finds those pieces of a
model whose maps already have that form (or the nearest tied model), and :func:`id_structure` measures how far
each map of a trained untied layer is from it.
"""

import dataclasses

import numpy as np

from .._validation import check_bool
from ..layer import BLOCK_NAMES
from .model import WEIGHT_NAMES, _untie, unflatten

__all__ = ["tie", "id_structure", "SYMMETRIC_SCALARS", "symmetric_scalars"]


def tie(theta, config, nearest=False):
    """The tied parameters of a ``[x | y]`` model whose maps already act alike on every id.

    Parameters
    ----------
    theta : ndarray, shape (config.n_params,)
        Parameters of an untied model (``config.tied`` False, tokens ``"d+k"``).
    config : ModelConfig
    nearest : bool
        Instead of requiring the tied form, return the nearest tied model in
        the least-squares sense, matrix by matrix: ``A`` kept, ``v`` the mean
        column and ``u`` the mean row of the mixed blocks, ``lambda + nu`` the
        mean diagonal and ``nu`` the mean off-diagonal entry of the id block.

    Returns
    -------
    phi : ndarray, shape (tied.n_params,)
    tied : ModelConfig
        ``config`` with ``tied=True``; ``unflatten(phi, tied)`` gives back
        the matrices of ``theta`` exactly (unless ``nearest``), up to the score
        factor (``Wq``, ``Wk``, ``bq``, ``bk`` are rescaled from ``1/sqrt(d + k)``
        to ``1/sqrt(d)``).

    Raises
    ------
    ValueError
        If some matrix is not of the tied form and ``nearest`` is False (naming
        the block and weight).
    """
    if config.k_free or config.tokens != "d+k":
        raise ValueError(f"tie needs an untied 'd+k' model; got config={config}")
    nearest = check_bool(nearest, "nearest")
    tied = dataclasses.replace(config, tied=True)
    d, k, s = config.d, config.k, np.sqrt(config.gamma / tied.gamma)
    off = ~np.eye(k, dtype=bool)
    pieces = []
    for bname, params in unflatten(np.asarray(theta, dtype=np.float64), config).items():
        for wname in WEIGHT_NAMES:
            M = params[wname] * (s if wname in ("Wq", "Wk", "bq", "bk") else 1.0)
            if wname.startswith("W"):
                Y = M[d:, d:]
                if nearest:
                    nu = float(np.mean(Y[off])) if k > 1 else 0.0
                    lam = float(np.mean(np.diag(Y))) - nu
                    piece = np.concatenate([M[:d, :d].ravel(), M[d:, :d].mean(axis=0), M[:d, d:].mean(axis=1),
                                            [lam, nu]])
                else:
                    nu = Y[1, 0] if k > 1 else 0.0
                    piece = np.concatenate([M[:d, :d].ravel(), M[d, :d], M[:d, d], [Y[0, 0] - nu, nu]])
            else:
                piece = np.concatenate([M[:d], [np.mean(M[d:]) if nearest else M[d]]])
            if not nearest and not np.array_equal(_untie(piece, d, k), M):
                raise ValueError(f"{bname}.{wname} does not act alike on every cluster id: not of the tied form")
            pieces.append(piece)
    return np.concatenate(pieces), tied


def id_structure(theta, config):
    """How far each map of an untied ``[x | y]`` model is from acting alike on every id.

    Returns
    -------
    dict
        ``{"CAX.Wq": fraction, ...}``: the share of the squared norm of the
        matrix's id-touching entries (every entry outside the ``(x, x)``
        block) that the nearest tied matrix (``tie(..., nearest=True)``)
        keeps; 1 for a tied matrix (and for one without such entries).
    """
    phi, tied = tie(theta, config, nearest=True)
    d = config.d
    ours, near = unflatten(np.asarray(theta, dtype=np.float64), config), unflatten(phi, tied)
    s = np.sqrt(config.gamma / tied.gamma)
    out = {}
    for bname in BLOCK_NAMES:
        for wname in ("Wq", "Wk", "Wv"):
            M = ours[bname][wname] * (s if wname != "Wv" else 1.0)
            mask = np.ones(M.shape, dtype=bool)
            mask[:d, :d] = False
            total = float(np.sum(M[mask] ** 2))
            lost = float(np.sum((M - near[bname][wname])[mask] ** 2))
            out[f"{bname}.{wname}"] = 1.0 if total == 0 else 1.0 - lost / total
    return out


#: The scalars of a symmetric model's map, in their order inside its piece of ``theta`` (a matrix's three, then
#: its bias's one).
SYMMETRIC_SCALARS = ("alpha", "lambda", "nu", "kappa")


def symmetric_scalars(theta, config):
    """A symmetric model's 48 numbers by name: ``{block: {"q" | "k" | "v": {"alpha", "lambda", "nu", "kappa"}}}``.
    Map ``q`` of a block is ``x - 1/2 -> alpha (x - 1/2)`` on the coordinates and ``y -> lambda y + nu (1^T y) 1 +
    kappa 1`` on the ids (:class:`~kmt_ref.learning.model.ModelConfig`)."""
    if not config.symmetric:
        raise ValueError(f"symmetric_scalars reads a symmetric model; got config={config}")
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (config.n_params,):
        raise ValueError(f"theta must have shape ({config.n_params},) for {config}; got theta.shape={theta.shape}")
    out, start = {}, 0
    for bname in BLOCK_NAMES:
        block = theta[start : start + 12]
        start += 12
        out[bname] = {m: dict(zip(SYMMETRIC_SCALARS, [*map(float, block[3 * i : 3 * i + 3]), float(block[9 + i])],
                                  strict=True))
                      for i, m in enumerate("qkv")}
    return out
