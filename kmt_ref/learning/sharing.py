"""Which maps of a learned layer act alike on every cluster id: the tied form found, or measured.

A tied model (:class:`~kmt_ref.learning.model.ModelConfig` with ``tied=True``) writes each matrix as
``[[A, v 1^T], [1 u^T, lambda I + nu 1 1^T]]`` over the ``(x, y)`` blocks. :func:`tie` finds those pieces of a
model whose maps already have that form (or the nearest tied model), and :func:`id_structure` measures how far
each map of a trained untied layer is from it.
"""

import dataclasses

import numpy as np

from .._validation import check_batch, check_bool
from ..attention import softmax
from ..layer import BLOCK_NAMES
from .model import WEIGHT_NAMES, _untie, unflatten

__all__ = ["tie", "id_structure", "SYMMETRIC_SCALARS", "symmetric_scalars", "symmetric_step"]


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


def symmetric_step(theta, config, X, C):
    """One step of a symmetric layer written out in its scalars: the new centers ``(B, k, d)``.

    In the coordinates ``x~ = x - 1/2``, with ``g = 1 / sqrt(d)`` and each block's ``q, k, v`` scalars
    (:func:`symmetric_scalars`; the score of a query for a key is ``-g ||q - k||^2``, and a term that is the
    same for every key of a query drops out of its softmax):

    * CAX: point ``i`` weighs center ``j`` by ``w_ij = softmax_j(-g ||a_q x~_i - a_k c~_j||^2)`` (the ids of the
      centers score alike: every center has one) and moves by ``a_v sum_j w_ij c~_j``; its ids become
      ``l_v w_i`` plus a constant;
    * SAX: point ``i`` weighs point ``m`` by ``softmax_m(-g ||a_q x~_i - a_k x~_m||^2)`` and moves by ``a_v`` times
      their mean;
    * CAC: center ``j`` weighs point ``i`` by ``softmax_i(g (2 l_q l_k l_v w_ij - (l_k l_v)^2 ||w_i||^2 - ||a_q
      c~_j - a_k x~'_i||^2))`` (``l_v`` is CAX's) and moves by ``a_v`` times that mean of the moved points;
    * SAC: center ``j`` weighs center ``m`` by ``softmax_m(g (2 l_q l_k [j = m] - ||a_q c~_j - a_k c~_m||^2))``
      and moves by ``a_v`` times that mean of the old centers.

    Lloyd's step is the limit ``g -> inf`` of CAX and CAC, with CAC's ``a_v = 1`` and SAC's ``a_v = -1`` on
    itself alone. The centers are ``x~ + 1/2``; tested equal to
    :func:`~kmt_ref.learning.model.run_steps` to rounding.
    """
    X = check_batch(X, C)  # (B, n, d) and (B, k, d), finite: fresh float64 copies
    s = symmetric_scalars(theta, config)
    g = config.gamma
    Xc, Cc = np.asarray(X, dtype=np.float64) - 0.5, np.asarray(C, dtype=np.float64) - 0.5

    def sq(A, B):  # (B, m, r) squared distances, directly
        return np.sum((A[..., :, None, :] - B[..., None, :, :]) ** 2, axis=-1)

    cax, sax, cac, sac = (s[b] for b in ("CAX", "SAX", "CAC", "SAC"))
    w = softmax(-g * sq(cax["q"]["alpha"] * Xc, cax["k"]["alpha"] * Cc))
    u = softmax(-g * sq(sax["q"]["alpha"] * Xc, sax["k"]["alpha"] * Xc))
    moved = Xc + cax["v"]["alpha"] * w @ Cc + sax["v"]["alpha"] * u @ Xc
    lq, lk, lv = cac["q"]["lambda"], cac["k"]["lambda"], cax["v"]["lambda"]
    logits = g * (2 * lq * lk * lv * np.swapaxes(w, -1, -2) - (lk * lv) ** 2 * np.sum(w * w, axis=-1)[..., None, :]
                  - sq(cac["q"]["alpha"] * Cc, cac["k"]["alpha"] * moved))
    a = softmax(logits)
    k = Cc.shape[-2]
    b = softmax(g * (2 * sac["q"]["lambda"] * sac["k"]["lambda"] * np.eye(k)
                           - sq(sac["q"]["alpha"] * Cc, sac["k"]["alpha"] * Cc)))
    return Cc + cac["v"]["alpha"] * a @ moved + sac["v"]["alpha"] * b @ Cc + 0.5
