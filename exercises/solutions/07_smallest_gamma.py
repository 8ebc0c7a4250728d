"""Reference solution of exercise 07."""

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp


def smallest_gamma(X, centers, eps):
    """Largest over points of the gamma where the nearest-center weight reaches 1 - eps."""
    D2 = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
    gaps = D2 - D2.min(axis=1, keepdims=True)  # (n, k); 0 at the nearest center
    target = np.log1p(-eps)  # log(1 - eps)
    best = 0.0
    for g in gaps:
        others = np.sort(g)[1:]  # the nearest center's gap 0 dropped
        if others.size == 0:
            continue

        def log_weight_minus_target(gamma, others=others):
            # log weight on the nearest center = -log(1 + sum_j exp(-gamma g_j))
            return -np.logaddexp(0.0, logsumexp(-gamma * others)) - target

        low = np.log((1 - eps) / eps) / others[0] / 2.0  # the weight is below 1 - eps here...
        high = np.log(len(others) * (1 - eps) / eps) / others[0] * 2.0  # ...and above it here
        best = max(best, brentq(log_weight_minus_target, low, high, xtol=1e-14, rtol=1e-14))
    return best
