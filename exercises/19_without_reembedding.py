"""Exercise 19 (medium) - chapter "Learning a clustering layer".

Check your answer: ``python -m kmt_ref.exercises check 19``
"""

import numpy as np

from kmt_ref.layer import transformer_layer
from kmt_ref.learning.model import blocks_from_params


def without_reembedding(theta, X, init, config, n_steps):
    """Apply a trained layer ``n_steps`` times, feeding its output tokens back unchanged.

    The learned layer is trained for ONE step from fresh tokens ``[X | 0]``
    and ``[C | I_k]``. The evaluation rebuilds those tokens from the current
    centers before every step (re-embedding). Write the other loop: embed
    once, then apply ``transformer_layer`` to the tokens it returned, and read
    the centers after every step. The check shows what happens to them.

    Parameters
    ----------
    theta : ndarray
        Flat parameters of a trained model.
    X : ndarray, shape (B, n, d)
    init : ndarray, shape (B, k, d)
    config : kmt_ref.learning.ModelConfig
    n_steps : int

    Returns
    -------
    ndarray, shape (n_steps + 1, B, k, d)
        The centers (the ``x`` block of the center tokens) before and after
        every step; entries may overflow to inf or nan.

    Hint: ``config.layout.embed(X, init)`` gives ``P, Q``;
    ``blocks_from_params(theta, config)`` the blocks;
    ``config.layout.read(Q, "x")`` the centers. Wrap the loop in
    ``np.errstate(over="ignore", invalid="ignore")``.
    """
    raise NotImplementedError("exercise 19: write without_reembedding")
