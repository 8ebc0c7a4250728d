"""Attention maps of a one-layer model: what each block attends to on a task.

The learned layer is compared with the construction of Theorem 2.1 by the
attention weights of its four blocks on the same task (the weights matrices
themselves are compared by :func:`weight_summary`).
"""

import numpy as np

from ..attention import attention_weights
from ..layer import BLOCK_NAMES
from ..lloyd_transformer import equation5_weights
from .model import unflatten

__all__ = ["attention_maps", "weight_summary"]


def attention_maps(model, X, init):
    """Attention weights of the four blocks of one layer on one task.

    Parameters
    ----------
    model : KMeansTransformer
        Deterministic normalizers only (softmax, hardmax, linear, identity).
    X : ndarray, shape (n, d)
    init : ndarray, shape (k, d)

    Returns
    -------
    dict
        ``CAX`` (n, k) points over centers, ``SAX`` (n, n) points over
        points, ``CAC`` (k, n) centers over the *updated* points, ``SAC``
        (k, k) centers over centers -- the inputs each block sees in
        :func:`~kmt_ref.layer.transformer_layer`. Identity blocks give the
        identity matrix.
    """
    from ..layer import transformer_layer

    if model.needs_rng:
        raise ValueError("attention_maps needs deterministic normalizers; got a random one")
    P, Q = model.layout.embed(np.asarray(X, dtype=float), np.asarray(init, dtype=float))
    P_new, _ = transformer_layer(P, Q, model.blocks)
    inputs = {"CAX": (P, Q), "SAX": (P, P), "CAC": (Q, P_new), "SAC": (Q, Q)}
    out = {}
    for name in BLOCK_NAMES:
        Zq, Zk = inputs[name]
        block = model.blocks[name]
        out[name] = np.array(attention_weights(Zq, Zk, block))  # the reference attention's own weights
    return out


def weight_summary(theta, model_config):
    """Learned bilinear forms and values next to the Equation 5 construction.

    For each block: ``QK = Wq^T Wk`` (the form inside the Euclidean score's
    cross term) and ``Wv``, restricted to the data block (``x`` rows and
    columns). Reported: mean diagonal, mean absolute off-diagonal, and the same
    for the construction. A dict of floats.
    """
    params = unflatten(np.asarray(theta), model_config)
    layout = model_config.layout
    xs = layout.slices["x"]
    if "y" in layout.slices:
        built = equation5_weights(layout)
    else:
        built = None
    out = {}
    for b in BLOCK_NAMES:
        p = params[b]
        mats = {"QK": p["Wq"].T @ p["Wk"], "V": p["Wv"]}
        for name, M in mats.items():
            sub = M[xs, xs]
            off = sub - np.diag(np.diag(sub))
            entry = dict(diag_mean=float(np.mean(np.diag(sub))),
                         offdiag_abs_mean=float(np.mean(np.abs(off))))
            if built is not None:
                Wq, Wk, Wv = built[b]
                ref = (Wq.T @ Wk if name == "QK" else Wv)[xs, xs]
                entry["construction_diag_mean"] = float(np.mean(np.diag(ref)))
            out[f"{b}.{name}"] = entry
    return out
