"""Batches of random clustering tasks for training and evaluation.

One task: ``k`` mixture means drawn from ``U[0, 1]^d``; ``n`` points, each from
a component chosen with the mixture weights and drawn from the chosen mixture
*family* with that component's mean and ``scale``; every dimension
min-max scaled to ``[0, 1]``; rows randomly permuted; initial centers = the
first ``k`` points (or k-means++ seeding).

The families and options follow the authors' public task sampler
(``ctasks.py`` in their repository), each coordinate drawn independently from
the family with its component's location ``loc`` and scale ``s``:

* ``normal``: ``loc + s * z`` with ``z ~ N(0, 1)``;
* ``cauchy``, ``gumbel``, ``laplace``: ``loc + s * t`` with ``t`` standard
  Cauchy, standard Gumbel (of the maximum) or standard Laplace;
* ``lognormal``: ``exp(loc + s * z)``, the exponential of a normal with mean
  ``loc`` and standard deviation ``s`` (skewed and positive);
* ``equal_weights=False``: mixture weights ``U(0, 1)^k`` normalized to sum 1;
* ``isotropic=False``: scales ``scale * U(0, 1)``, independent per component
  and per coordinate.

Only the random streams differ from the authors' (NumPy here, PyTorch there):
the laws are the same.
"""

import numpy as np

from .._validation import check_bool, check_choice, check_k, check_positive, check_rng
from ..classical import kmeans_plusplus

__all__ = ["FAMILIES", "INITS", "sample_tasks", "initial_centers"]


def _location_scale(noise):
    def draw(rng, loc, s):
        return loc + s * getattr(rng, noise)(size=loc.shape)

    return draw


def _lognormal(rng, loc, s):
    return np.exp(loc + s * rng.standard_normal(size=loc.shape))


#: Mixture families: ``family -> draw(rng, loc, s)``, one draw per entry of ``loc``.
FAMILIES = {
    "normal": _location_scale("standard_normal"),
    "cauchy": _location_scale("standard_cauchy"),
    "gumbel": _location_scale("gumbel"),
    "laplace": _location_scale("laplace"),
    "lognormal": _lognormal,
}

#: Initial-center schemes.
INITS = ("first", "kmeans++")


def check_family(family):
    return check_choice(family, "family", FAMILIES)


def check_init(init):
    return check_choice(init, "init", INITS)


def sample_tasks(
    rng,
    n_tasks,
    n,
    d,
    k,
    family="normal",
    scale=0.1,
    equal_weights=True,
    isotropic=True,
    init="first",
):
    """Draw a batch of clustering tasks.

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness: the same generator state gives the same
        batch.
    n_tasks, n, d, k : int
        Tasks in the batch, points per task, dimension, components (``k <= n``).
    family : str
        Noise family, a key of :data:`FAMILIES`.
    scale : float
        Noise scale (standard deviation for ``normal``).
    equal_weights : bool
        Components chosen uniformly (True) or with weights ``U(0, 1)^k``
        normalized to sum 1.
    isotropic : bool
        One scale for every component and dimension (True) or
        ``scale * U(0, 1)`` per component and dimension.
    init : {"first", "kmeans++"}
        Initial centers: the first ``k`` (randomly permuted) points, or
        k-means++ seeding drawn from ``rng``.

    Returns
    -------
    X : ndarray, shape (n_tasks, n, d)
        Points, min-max scaled to ``[0, 1]`` per task and dimension.
    init : ndarray, shape (n_tasks, k, d)
        Initial centers.
    """
    check_rng(rng)
    n_tasks = check_k(n_tasks, None, name="n_tasks")
    n = check_k(n, None, name="n")
    d = check_k(d, None, name="d")
    k = check_k(k, n)
    check_family(family)
    scale = check_positive(scale, "scale")
    equal_weights = check_bool(equal_weights, "equal_weights")
    isotropic = check_bool(isotropic, "isotropic")
    check_init(init)
    B = n_tasks
    means = rng.uniform(0.0, 1.0, size=(B, k, d))
    if equal_weights:
        comp = rng.integers(k, size=(B, n))
    else:
        weights = rng.uniform(size=(B, k))
        cdf = np.cumsum(weights, axis=1) / weights.sum(axis=1, keepdims=True)
        u = rng.uniform(size=(B, n))
        # Inverse-CDF sampling, vectorized over tasks; min() guards cdf[-1] < 1 by rounding.
        comp = np.minimum((u[:, :, None] >= cdf[:, None, :]).sum(axis=2), k - 1)
    scales = np.full((B, k, 1), scale)
    if not isotropic:
        scales = scale * rng.uniform(size=(B, k, d))
    rows = np.arange(B)[:, None]
    X = FAMILIES[family](rng, means[rows, comp], np.broadcast_to(scales[rows, comp], (B, n, d)))
    lo, hi = X.min(axis=1, keepdims=True), X.max(axis=1, keepdims=True)
    X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    X = X[rows, np.argsort(rng.uniform(size=(B, n)), axis=1)]  # permute points, per task
    return X, initial_centers(X, k, init, rng)


def initial_centers(X, k, init="first", rng=None):
    """Initial centers of a batch of tasks.

    Parameters
    ----------
    X : ndarray, shape (n_tasks, n, d)
    k : int
    init : {"first", "kmeans++"}
    rng : numpy.random.Generator
        Needed for ``"kmeans++"``.

    Returns
    -------
    ndarray, shape (n_tasks, k, d)
    """
    check_init(init)
    X = np.asarray(X, dtype=float)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (n_tasks, n, d); got X.shape={X.shape}")
    k = check_k(k, X.shape[1])
    if init == "first":
        return X[:, :k].copy()
    check_rng(rng)
    return np.stack([kmeans_plusplus(Xt, k, rng) for Xt in X])
