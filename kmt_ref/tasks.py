"""Random clustering tasks: the paper's Gaussian-mixture data.

A task (DESIGN §6): ``k`` mixture means drawn from ``U[0, 1]^d``; ``n`` points,
each from a component chosen uniformly, ``N(mean, scale^2 I)`` with
``scale = 0.1``; every dimension min-max scaled to ``[0, 1]``; rows randomly
permuted; initial centers = the first ``k`` points.
"""

import numpy as np

from ._validation import check_k, check_positive

__all__ = ["gaussian_mixture", "figure3_data"]


def _check_rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator; got rng={rng!r}")


def gaussian_mixture(rng, n, d, k, scale=0.1):
    """One task: points, initial centers and true means.

    Parameters
    ----------
    rng : numpy.random.Generator
    n, d, k : int
        Points, dimension, components (``k <= n``).
    scale : float
        Standard deviation of every component.

    Returns
    -------
    X : ndarray, shape (n, d)
        Min-max scaled to ``[0, 1]`` per dimension, randomly permuted.
    init : ndarray, shape (k, d)
        The first ``k`` rows of ``X``.
    means : ndarray, shape (k, d)
        Component means, in the scaled coordinates.
    """
    _check_rng(rng)
    d = check_k(d, None, name="d")
    n = check_k(n, None, name="n")
    k = check_k(k, n)
    scale = check_positive(scale, "scale")
    means = rng.uniform(0.0, 1.0, size=(k, d))
    comp = rng.integers(k, size=n)
    X = means[comp] + scale * rng.standard_normal((n, d))
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    X = (X - lo) / span
    means = (means - lo) / span
    X = X[rng.permutation(n)]
    return X, X[:k].copy(), means


def figure3_data(seed=0):
    """The Figure 3 setting: n = 10,000, d = 2, k = 5 (``X, init``)."""
    X, init, _ = gaussian_mixture(np.random.default_rng(seed), n=10_000, d=2, k=5)
    return X, init
