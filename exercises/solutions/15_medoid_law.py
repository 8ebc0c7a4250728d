"""Reference solution of exercise 15."""

import numpy as np


def medoid_law(X, centers, temperature):
    """Softmax of ``-||x_i - c_j||^2 / temperature`` over the candidates of each center."""
    X, C = np.asarray(X, dtype=float), np.asarray(centers, dtype=float)
    D = ((X[None, :, :] - C[:, None, :]) ** 2).sum(axis=2)  # (k, n)
    labels = np.argmin(D, axis=0)
    law = np.zeros_like(D)
    for j in range(C.shape[0]):
        S = labels == j
        if not S.any():
            S = np.ones_like(S)
        z = -D[j, S] / temperature
        w = np.exp(z - z.max())
        law[j, S] = w / w.sum()
    return law
