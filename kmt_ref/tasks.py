"""Random clustering tasks: the paper's Gaussian-mixture data.

A task: ``k`` mixture means drawn from ``U[0, 1]^d``; ``n`` points, each from
a component chosen uniformly, ``N(mean, scale^2 I)`` with ``scale = 0.1``;
every dimension min-max scaled to ``[0, 1]``; rows randomly permuted; initial
centers = the first ``k`` points.

:func:`figure3_data` also has the authors' own draw of their Figure 3 data,
made once with PyTorch (``kmt_ref/data/make_figure3.py``) and shipped as
``kmt_ref/data/figure3.npy``.
"""

import os

import numpy as np

from ._validation import check_int, check_k, check_positive, check_rng

__all__ = ["gaussian_mixture", "figure3_data", "FIGURE3_PAPER_LOG_OBJECTIVES"]

#: The log objectives after 0..10 layers that the paper's Figure 3 notebook
#: prints for its hand-built model at gamma = 1e4 on its draw (two decimals).
FIGURE3_PAPER_LOG_OBJECTIVES = (6.44, 5.78, 5.47, 4.96, 4.69, 4.61, 4.59, 4.59, 4.59, 4.59, 4.59)


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
    check_rng(rng)
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


#: Data shipped with the package (its provenance: ``kmt_ref/data/README.md``).
DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_FIGURE3_FILE = os.path.join(DATA_DIR, "figure3.npy")


def figure3_data(seed=None):
    """The Figure 3 setting: n = 10,000 points in the plane, k = 5.

    Parameters
    ----------
    seed : None or int
        ``None`` (default): the authors' own draw, the exact points of the
        paper's Figure 3 (float32 values as drawn by their notebook, seed 5487,
        here as float64). An integer: a NumPy draw of the same mixture from
        ``numpy.random.default_rng(seed)`` by :func:`gaussian_mixture` (each
        point's component drawn uniformly, so about, not exactly, 2,000 points
        per component).

    Returns
    -------
    X : ndarray, shape (10000, 2)
        Min-max scaled to ``[0, 1]`` per dimension, in random order.
    init : ndarray, shape (5, 2)
        The first five rows of ``X``, the paper's initial centers.
    """
    if seed is None:
        X = np.load(_FIGURE3_FILE).astype(np.float64)
    else:
        seed = check_int(seed, "seed", low=0)
        X, _, _ = gaussian_mixture(np.random.default_rng(seed), n=10_000, d=2, k=5)
    return X, X[:5].copy()
