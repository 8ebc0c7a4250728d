"""Checks for the chapter "Dot-product attention and the FFN (Theorem 2.2)".

Tokens here have the layout ``[x | y | s | 1]`` (``s = ||x||^2``), built by
``TokenLayout(d, k, ("x", "y", "sqnorm", "one"))``.
"""

import numpy as np
from scipy.special import softmax

from ..attention import Block, attend
from ..geometry import nearest_center, squared_distances
from ..tasks import gaussian_mixture
from ..tokens import TokenLayout
from ._feedback import as_array, call, expect_close, failed, inputs, symbolic_hint

BLOCKS = ("x", "y", "sqnorm", "one")


def _triple(got, D, on):
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise failed(f"expected a tuple (Wq, Wk, Wv), got {type(got).__name__}", on)
    return [as_array(W, name, on, shape=(D, D)) for name, W in zip(("Wq", "Wk", "Wv"), got, strict=True)]


def check_dot_cax_weights(dot_cax_weights):
    """Exercise 08: dot-product CAX scores whose softmax equals the Euclidean one."""
    rng = np.random.default_rng(8)
    d, k, n = 3, 4, 10
    X, C, _ = gaussian_mixture(rng, n=n, d=d, k=k)
    X = X + 2.0  # away from the origin, so that a missing norm term shows
    C = C + 2.0
    layout = TokenLayout(d, k, BLOCKS)
    P, Q = layout.embed(X, C)
    P[:, layout.slices["y"]] = np.eye(k)[rng.integers(k, size=n)]  # a later layer's y
    on = f"  (d={d}, k={k}; tokens [x | y | s | 1], P's y block non-zero)\n" + inputs(X=X, C=C)
    Wq, Wk, Wv = _triple(call(dot_cax_weights, d, k, on=on), layout.width, on)
    for gamma in (1.0, 5.0):
        block = Block(Wq, Wk, Wv, score="dot", normalizer="softmax", gamma=gamma)
        got = attend(P, Q, block)
        weights = softmax(-gamma * squared_distances(X, C), axis=1)
        expected = np.zeros_like(P)
        expected[:, layout.slices["y"]] = weights
        expect_close(got, expected, f"dot-product CAX output at gamma={gamma:g}", on, atol=1e-9,
                     hint="the score (Wq p_i).(Wk q_j) must equal 2 x_i.c_j - ||c_j||^2 (plus anything "
                     "that depends on i only): take ||c_j||^2 from the center's s coordinate and pair "
                     "it with the point's constant 1" + symbolic_hint("cax_score_feedback", block, layout)
                     + symbolic_hint("cax_value_feedback", block, layout))
    got = attend(P, Q, Block(Wq, Wk, Wv, score="dot", normalizer="hardmax"))
    expected = np.zeros_like(P)
    expected[:, layout.slices["y"]] = np.eye(k)[nearest_center(X, C)]
    expect_close(got, expected, "dot-product CAX output with hardmax", on, atol=1e-12)
    return "dot-product CAX = Euclidean CAX (softmax at gamma = 1, 5 and hardmax)"


def check_sqnorm_ffn(sqnorm_ffn):
    """Exercise 09: a relu^2 FFN that writes ``||c||^2`` into the s coordinate."""
    rng = np.random.default_rng(9)
    d, k = 3, 2
    layout = TokenLayout(d, k, BLOCKS)
    C = rng.normal(size=(k, d)) * 3.0
    _, Q = layout.embed(np.zeros((1, d)), C)
    Q[:, layout.slices["sqnorm"]] = 0.0  # SAC has just reset s (and c moved)
    on = f"  (d={d}, k={k}; center tokens [c | e_j | 0 | 1])\n" + inputs(Q=Q)
    got = call(sqnorm_ffn, d, k, on=on)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise failed(f"expected a tuple (W1, W2), got {type(got).__name__}", on)
    W1 = as_array(got[0], "W1", on)
    if W1.ndim != 2 or W1.shape[1] != layout.width:
        raise failed(f"W1 must have shape (hidden, {layout.width}); got {W1.shape}", on)
    W2 = as_array(got[1], "W2", on, shape=(layout.width, W1.shape[0]))
    out = Q + np.maximum(Q @ W1.T, 0.0) ** 2 @ W2.T
    expected = Q.copy()
    expected[:, layout.slices["sqnorm"]] = np.sum(C * C, axis=1, keepdims=True)
    expect_close(out, expected, "Q + FFN(Q)", on, atol=1e-10,
                 hint="||c||^2 = sum_a relu(c_a)^2 + relu(-c_a)^2: 2d hidden units, all written to s; "
                 "every other coordinate must be left alone" + symbolic_hint("ffn_feedback", W1, W2, layout))
    return f"the FFN writes ||c||^2 with {W1.shape[0]} hidden units and leaves the rest intact"
