"""Reference solution of exercise 14."""

import numpy as np


def sparsemax(scores):
    """``max(z - tau, 0)`` row-wise, tau from the sorted cumulative sums."""
    z = np.asarray(scores, dtype=float)
    srt = -np.sort(-z, axis=-1)  # decreasing
    cums = np.cumsum(srt, axis=-1)
    s = np.arange(1, z.shape[-1] + 1)
    support = 1 + s * srt > cums  # true for s = 1 .. support size
    size = support.sum(axis=-1, keepdims=True)
    tau = (np.take_along_axis(cums, size - 1, axis=-1) - 1) / size
    return np.maximum(z - tau, 0.0)
