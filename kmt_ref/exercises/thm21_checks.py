"""Checks for the chapter "The k-means transformer (Theorem 2.1)".

Each check plugs the reader's weights into the library's attention
(:func:`kmt_ref.attend`) and compares what the block DOES with what the proof
of Theorem 2.1 says it must do, so any weights that work are accepted, not
only the printed ones.
"""

import numpy as np
from scipy.special import softmax

from ..attention import Block, attend
from ..classical import lloyd
from ..geometry import nearest_center, squared_distances
from ..lloyd_transformer import lloyd_transformer
from ..tasks import gaussian_mixture
from ..tokens import TokenLayout
from ._feedback import as_array, call, expect, expect_close, failed, inputs, symbolic_hint


def _weights(got, D, on):
    """Unpack a returned ``(Wq, Wk, Wv)`` triple, each (D, D)."""
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise failed(f"expected a tuple (Wq, Wk, Wv), got {type(got).__name__}", on)
    return [as_array(W, name, on, shape=(D, D)) for name, W in zip(("Wq", "Wk", "Wv"), got, strict=True)]


def _tokens(X, C, Y=None):
    """``P = [X | Y]`` (Y = 0 if not given) and ``Q = [C | I_k]``."""
    layout = TokenLayout(X.shape[1], C.shape[0])
    P, Q = layout.embed(X, C)
    if Y is not None:
        P[:, layout.slices["y"]] = Y
    return P, Q


def check_cax_weights(cax_weights):
    """Exercise 04: the CAX block writes the one-hot of the nearest center."""
    rng = np.random.default_rng(4)
    X, C, _ = gaussian_mixture(rng, n=12, d=2, k=3)
    labels = nearest_center(X, C)
    old_y = np.eye(3)[rng.integers(3, size=12)]  # what an earlier layer left behind
    for label, Y in (("first layer: y = 0", None), ("a later layer: y holds an old assignment", old_y)):
        on = f"  ({label}; d=2, k=3)\n" + inputs(X=X, C=C) + ("" if Y is None else "\n" + inputs(Y=Y))
        Wq, Wk, Wv = _weights(call(cax_weights, 2, 3, on=on), 5, on)
        P, Q = _tokens(X, C, Y)
        block = Block(Wq, Wk, Wv, score="euclidean", normalizer="hardmax")
        out = attend(P, Q, block)
        expected = np.hstack([np.zeros((12, 2)), np.eye(3)[labels]])
        expect_close(out, expected, "CAX output A(P, Q) = [0 | e_nearest] per point", on,
                     hint="score = -||Wq p_i - Wk q_j||^2 must be -||x_i - c_j||^2 up to a per-row "
                     "constant (so y must not enter it), and Wv must copy the center's id into "
                     "the y coordinates" + symbolic_hint("cax_score_feedback", block, TokenLayout(2, 3))
                     + symbolic_hint("cax_value_feedback", block, TokenLayout(2, 3)))
    return "CAX adds the one-hot of the nearest center, also when y is already non-zero"


def check_sax_reset(sax_reset):
    """Exercise 05: P + SAX(P) resets the assignment block, duplicates included."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 2))
    Y = np.eye(3)[rng.integers(3, size=6)]
    X_dup = np.vstack([X[:4], X[1], X[1]])  # points 1, 4 and 5 coincide
    Y_dup = Y.copy()
    Y_dup[4] = Y_dup[5] = Y_dup[1]
    Y_bad = Y_dup.copy()  # impossible in a real run: equal points with different y
    Y_bad[4] = np.roll(Y_bad[1], 1)
    bad_expected = np.zeros_like(Y_bad)  # distinct points: reset exactly; duplicates: y_i - their mean y
    bad_expected[[1, 4, 5]] = Y_bad[[1, 4, 5]] - Y_bad[[1, 4, 5]].mean(axis=0)
    cases = [
        ("distinct points", X, Y, np.zeros_like(Y), "the y block must become 0"),
        ("duplicates with equal y (as in every real run)", X_dup, Y_dup, np.zeros_like(Y),
         "equal points carry equal y, so averaging over them still subtracts y_i exactly"),
        ("duplicates with DIFFERENT y (never happens in a run; shows what attention does)",
         X_dup, Y_bad, bad_expected,
         "SAX subtracts the AVERAGE y over the points equal to x_i; if you zeroed the y block "
         "directly, use attend() with hardmax instead"),
    ]
    for label, X_, Y_, y_expected, hint in cases:
        on = f"  ({label})\n" + inputs(X=X_, Y=Y_)
        got = call(sax_reset, X_, Y_, on=on)
        got = as_array(got, "tokens after P + SAX(P)", on, shape=(6, 5))
        expect_close(got[:, :2], X_, "x block after the reset (must be untouched)", on, atol=1e-12)
        expect_close(got[:, 2:], y_expected, "y block after the reset", on, atol=1e-12, hint=hint)
    return "SAX resets y exactly, with duplicates, and averages y when duplicates disagree"


def check_cac_block(cac_block):
    """Exercise 06: the CAC block averages the members of each cluster."""
    rng = np.random.default_rng(6)
    X, C, _ = gaussian_mixture(rng, n=15, d=2, k=3)
    labels = nearest_center(X, C)
    far = np.vstack([C, [[50.0, 50.0]]])  # a fourth center nobody joins
    for label, C_, lab in (("Lloyd assignment", C, labels), ("cluster 3 is empty", far, labels)):
        k = C_.shape[0]
        Y = np.eye(k)[lab]
        on = f"  ({label}; d=2, k={k})\n" + inputs(X=X, Y=Y, C=C_)
        block = call(cac_block, 2, k, on=on)
        expect(isinstance(block, Block),
               f"expected a kmt_ref.Block, got {type(block).__name__}\n  on input:\n{on}")
        P, Q = _tokens(X, C_, Y)
        out = call(attend, Q, P, block, on=on)
        expected_means = lloyd(X, C_, 1).centers[1]  # empty cluster -> global mean
        expected = np.hstack([expected_means, np.zeros((k, k))])
        expect_close(out, expected, "CAC output A(Q, P) = [mean of members | 0] per center", on,
                     hint="center j must attend uniformly to the points with y_i = e_j (compare ids, "
                     "not positions) and read their x; an empty cluster sees all points equally"
                     + symbolic_hint("cac_feedback", block, TokenLayout(2, k)))
    return "CAC moves each center to the mean of its members (and an empty one to the global mean)"


def _nearest_weight(X, C, gamma):
    """Softmax weight each point puts on its nearest center, shape (n,)."""
    W = softmax(-gamma * squared_distances(X, C), axis=1)
    return W[np.arange(X.shape[0]), nearest_center(X, C)]


def check_smallest_gamma(smallest_gamma):
    """Exercise 07: the least gamma at which every point puts >= 1 - eps on its nearest center."""
    rng = np.random.default_rng(7)
    X1, C1, _ = gaussian_mixture(rng, n=40, d=2, k=4)
    cases = [
        ("k=2, one point, gap 1", np.array([[0.0]]), np.array([[0.0], [1.0]]), 1e-3),
        ("a mixture, n=40, k=4", X1, C1, 1e-3),
        ("same data, eps=1e-8", X1, C1, 1e-8),
    ]
    for label, X, C, eps in cases:
        on = f"  ({label})\n" + inputs(X=X, centers=C, eps=eps)
        got = as_array(call(smallest_gamma, X, C, eps, on=on), "gamma", on, shape=())
        g = float(got)
        expect(g > 0, f"gamma must be positive; got {g}\n  on input:\n{on}")
        above, below = _nearest_weight(X, C, g * (1 + 1e-6)), _nearest_weight(X, C, g * (1 - 1e-4))
        expect(above.min() >= 1 - eps * (1 + 1e-6),
               f"at gamma={g:.8g} point {int(np.argmin(above))} puts only {above.min():.10f} on its "
               f"nearest center (need >= 1 - eps = {1 - eps})\n  on input:\n{on}")
        expect(below.min() < 1 - eps,
               f"gamma={g:.8g} is not the smallest: at {g * (1 - 1e-4):.8g} every point already puts "
               f">= {below.min():.10f} >= 1 - eps on its nearest center\n  on input:\n{on}")
    X, C, eps = cases[1][1], cases[1][2], cases[1][3]
    g = float(call(smallest_gamma, X, C, eps, on=""))
    traj = lloyd_transformer(2, 4, gamma=g).run(X, C, 1)
    same = np.array_equal(traj.labels[0], lloyd(X, C, 1).labels[0])
    dev = np.abs(traj.centers[1] - lloyd(X, C, 1).centers[1]).max()
    return (f"smallest gamma correct on 3 inputs; at it the validated transformer assigns "
            f"{'exactly like' if same else 'NOT like'} Lloyd, centers within {dev:.1e}")
