"""Reference solution of exercise 09."""

import numpy as np

from kmt_ref import TokenLayout


def sqnorm_ffn(d, k):
    """2d hidden units: relu(c_a)^2 and relu(-c_a)^2, all summed into the sqnorm coordinate."""
    layout = TokenLayout(d, k, ("x", "y", "sqnorm", "one"))
    x = layout.slices["x"]
    W1 = np.zeros((2 * d, layout.width))
    W1[:d, x] = np.eye(d)
    W1[d:, x] = -np.eye(d)
    W2 = np.zeros((layout.width, 2 * d))
    W2[layout.slices["sqnorm"].start, :] = 1.0
    return W1, W2
