"""Reference solution of exercise 24."""

import numpy as np


def farthest_first(X, k):
    """Each next center: the point whose squared distance to the nearest center so far is largest."""
    picks = [0]
    gap = np.sum((X - X[0]) ** 2, axis=1)
    for _ in range(1, k):
        picks.append(int(np.argmax(gap)))  # argmax: the first of equally far points
        gap = np.minimum(gap, np.sum((X - X[picks[-1]]) ** 2, axis=1))
    return X[picks]
