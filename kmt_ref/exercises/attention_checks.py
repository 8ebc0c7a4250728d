"""Checks for the chapter "Attention as a soft nearest-neighbour lookup"."""

import numpy as np

from ._feedback import as_array, call, expect, expect_close, inputs


def _loop_scores(Q, K, gamma):
    """The definition, one pair at a time (independent of any vectorized code)."""
    out = np.empty((Q.shape[0], K.shape[0]))
    for a in range(Q.shape[0]):
        for b in range(K.shape[0]):
            diff = Q[a] - K[b]
            out[a, b] = -gamma * float(diff @ diff)
    return out


def check_euclidean_scores(euclidean_scores):
    """Exercise 02: Euclidean attention scores against a double loop."""
    rng = np.random.default_rng(2)
    cases = [
        (np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[0.0, 0.0], [3.0, 4.0], [1.0, 0.0]]), 1.0),
        (rng.normal(size=(5, 4)), rng.normal(size=(7, 4)), 0.5),
        (rng.normal(size=(3, 6)) + 10.0, rng.normal(size=(2, 6)) + 10.0, 1e3),
    ]
    for Q, K, gamma in cases:
        on = inputs(Zq=Q, Zk=K, gamma=gamma)
        got = call(euclidean_scores, Q, K, gamma, on=on)
        expect_close(got, _loop_scores(Q, K, gamma), "scores", on, atol=1e-9 * max(1.0, gamma), rtol=1e-9,
                     hint="score[a, b] = -gamma * ||Zq[a] - Zk[b]||^2: one row per query, one column per key")
    return "scores match the definition -gamma ||q_a - k_b||^2 on 3 inputs (m != r, gamma = 0.5 ... 1e3)"


def check_averaging_hardmax(averaging_hardmax):
    """Exercise 03: averaging hardmax on hand-made rows, with ties and batch axes."""
    rng = np.random.default_rng(3)
    no_ties = rng.normal(size=(4, 5))
    one_hot = np.eye(5)[np.argmax(no_ties, axis=1)]
    ints = rng.integers(0, 3, size=(2, 3, 4)).astype(float)  # many ties, and a batch axis
    mask = ints == ints.max(axis=-1, keepdims=True)
    cases = [
        (np.array([[1.0, 3.0, 3.0, 0.0]]), np.array([[0.0, 0.5, 0.5, 0.0]]), "two tied maxima share"),
        (np.array([[2.0, 2.0, 2.0]]), np.full((1, 3), 1 / 3), "all tied: uniform"),
        (np.array([[-np.inf, -1.0], [-5.0, -7.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]),
         "scores are often negative (minus a squared distance)"),
        (no_ties, one_hot, "no ties: one-hot at the arg-max"),
        (ints, mask / mask.sum(axis=-1, keepdims=True), "leading batch axis, rows along the LAST axis"),
    ]
    on = "  (the same scores, and three times them)\n" + inputs(scores=no_ties)
    plain = as_array(call(averaging_hardmax, no_ties, on=on), "weights", on, shape=no_ties.shape)
    scaled = as_array(call(averaging_hardmax, 3.0 * no_ties, on=on), "weights", on, shape=no_ties.shape)
    expect_close(scaled, plain, "weights of 3 * scores against weights of scores", on, atol=1e-12,
                 hint="hardmax depends only on WHICH entries are largest, not on the size of the scores; "
                      "a softmax (or any normalizer that uses the scores' magnitude) changes when they are scaled")
    for scores, expected, label in cases:
        on = f"  ({label})\n" + inputs(scores=scores)
        got = call(averaging_hardmax, scores, on=on)
        got = as_array(got, "weights", on, shape=expected.shape)
        expect(np.allclose(got.sum(axis=-1), 1.0),
               f"every row of weights must sum to 1; row sums are {got.sum(axis=-1)}\n  on input:\n{on}")
        expect_close(got, expected, "weights", on, atol=1e-12,
                     hint="weight 1/|S| on each entry of the arg-max set S of the row, 0 elsewhere")
    return "uniform over the arg-max set on 5 inputs (ties, -inf, batch axes)"
