"""Attention maps of a one-layer model: what each block attends to on a task.

The learned layer is compared with the construction of Theorem 2.1 by the
attention weights of its four blocks on the same task (the weights matrices
themselves are compared in ``kmt_ref.programs.experiments.weight_summary``).
"""

import numpy as np

from ..attention import attention_weights
from ..layer import BLOCK_NAMES

__all__ = ["attention_maps"]


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
