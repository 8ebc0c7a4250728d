"""Reference solution of exercise 01."""

import numpy as np


def lloyd_step(X, centers):
    """One Lloyd iteration; ties to the lowest index, empty cluster -> global mean."""
    D2 = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)  # (n, k)
    labels = np.argmin(D2, axis=1)
    new = np.empty_like(centers, dtype=float)
    for j in range(centers.shape[0]):
        members = X[labels == j]
        new[j] = members.mean(axis=0) if len(members) else X.mean(axis=0)
    return new
