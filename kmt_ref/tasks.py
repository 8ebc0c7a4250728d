"""Random clustering tasks: Gaussian-mixture data as the authors' task sampler draws it, one task or a batch.

A task: ``k`` mixture means drawn from ``U[0, 1]^d``; ``n`` points, each from
a component chosen with the mixture weights and drawn from the chosen mixture
*family* with that component's mean and ``scale`` (the authors' protocol: ``normal``,
uniform weights, ``scale = 0.1``); every dimension min-max scaled to
``[0, 1]``; rows randomly permuted; initial centers = the first ``k`` points
(or k-means++ seeding).

:func:`gaussian_mixture` draws one such task (and returns its means);
:func:`sample_tasks` draws a batch, with the families and options of the
authors' public task sampler (``ctasks.py`` in their repository), each
coordinate drawn independently from the family with its component's location
``loc`` and scale ``s``:

* ``normal``: ``loc + s * z`` with ``z ~ N(0, 1)``;
* ``cauchy``, ``gumbel``, ``laplace``: ``loc + s * t`` with ``t`` standard
  Cauchy, standard Gumbel (of the maximum) or standard Laplace;
* ``lognormal``: ``exp(loc + s * z)``, the exponential of a normal with mean
  ``loc`` and standard deviation ``s`` (skewed and positive);
* ``equal_weights=False``: mixture weights ``U(0, 1)^k`` normalized to sum 1;
* ``isotropic=False``: scales ``scale * U(0, 1)``, independent per component
  and per coordinate.

Only the random streams differ from the authors' (NumPy here, PyTorch there):
the laws are the same. Both functions draw with one sampler
(``_draw_mixture``); they differ only in how they draw the permutation
(``rng.permutation`` for one task, ``argsort`` of uniforms per task for a
batch), which each keeps so that every committed result stays reproducible.

:func:`figure3_data` also has the authors' own draw of their Figure 3 data,
made once with PyTorch (``kmt_ref/data/make_figure3.py``) and shipped as
``kmt_ref/data/figure3.npy``.
"""

import os

import numpy as np

from ._validation import check_bool, check_choice, check_int, check_k, check_positive, check_rng
from .classical import kmeans_plusplus

__all__ = ["FAMILIES", "INITS", "gaussian_mixture", "sample_tasks", "draw_tasks", "initial_centers", "figure3_data",
           "FIGURE3_PAPER_LOG_OBJECTIVES"]

#: The log objectives after 0..10 layers that the authors' Figure 3 notebook
#: prints for its hand-built model at gamma = 1e4 on its draw (two decimals).
FIGURE3_PAPER_LOG_OBJECTIVES = (6.44, 5.78, 5.47, 4.96, 4.69, 4.61, 4.59, 4.59, 4.59, 4.59, 4.59)


def _location_scale(noise):
    def draw(rng, loc, s):
        return loc + s * getattr(rng, noise)(size=loc.shape)

    return draw


def _lognormal(rng, loc, s):
    return np.exp(loc + s * rng.standard_normal(size=loc.shape))


#: Mixture families, ``family -> draw(rng, loc, s)``, one draw per entry of ``loc``.
FAMILIES = {
    "normal": _location_scale("standard_normal"),
    "cauchy": _location_scale("standard_cauchy"),
    "gumbel": _location_scale("gumbel"),
    "laplace": _location_scale("laplace"),
    "lognormal": _lognormal,
}

#: The initial-center schemes, in order the first ``k`` points of the (randomly
#: ordered) task, k-means++ seeding, farthest-first traversal from the first point (spread out), and the
#: first point with its ``k - 1`` nearest points (crowded together).
INITS = ("first", "kmeans++", "farthest-first", "crowded")


def check_family(family):
    return check_choice(family, "family", FAMILIES)


def check_init(init):
    return check_choice(init, "init", INITS)


def _draw_mixture(rng, n_tasks, n, d, k, family, scale, equal_weights, isotropic):
    """The sampler behind :func:`gaussian_mixture` and :func:`sample_tasks` (inputs already checked).

    Returns the points ``(n_tasks, n, d)``, min-max scaled per task and
    dimension and not yet permuted, and the component means ``(n_tasks, k,
    d)`` in the same scaled coordinates.
    """
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
    span = np.where(hi > lo, hi - lo, 1.0)
    return (X - lo) / span, (means - lo) / span


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
    d = check_int(d, "d", low=1)
    n = check_int(n, "n", low=1)
    k = check_k(k, n)
    scale = check_positive(scale, "scale")
    X, means = _draw_mixture(rng, 1, n, d, k, "normal", scale, True, True)
    X = X[0][rng.permutation(n)]
    return X, X[:k].copy(), means[0]


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
    init : {"first", "kmeans++", "farthest-first", "crowded"}
        Initial centers: the first ``k`` (randomly permuted) points,
        k-means++ seeding drawn from ``rng``, or the two deterministic
        schemes of :func:`initial_centers`.

    Returns
    -------
    X : ndarray, shape (n_tasks, n, d)
        Points, min-max scaled to ``[0, 1]`` per task and dimension.
    init : ndarray, shape (n_tasks, k, d)
        Initial centers.
    """
    check_rng(rng)
    n_tasks = check_int(n_tasks, "n_tasks", low=1)
    n = check_int(n, "n", low=1)
    d = check_int(d, "d", low=1)
    k = check_k(k, n)
    check_family(family)
    scale = check_positive(scale, "scale")
    equal_weights = check_bool(equal_weights, "equal_weights")
    isotropic = check_bool(isotropic, "isotropic")
    check_init(init)
    return draw_tasks(rng, n_tasks, n, d, k, family, scale, equal_weights, isotropic, init)


def draw_tasks(rng, n_tasks, n, d, k, family, scale, equal_weights, isotropic, init):
    """Trusted kernel of :func:`sample_tasks` (the same arguments, already checked; a training run draws
    a batch every step from a configuration validated once)."""
    X, _ = _draw_mixture(rng, n_tasks, n, d, k, family, scale, equal_weights, isotropic)
    X = X[np.arange(n_tasks)[:, None], np.argsort(rng.uniform(size=(n_tasks, n)), axis=1)]  # permute, per task
    return X, initial_centers(X, k, init, rng)


def initial_centers(X, k, init="first", rng=None):
    """Initial centers of a batch of tasks.

    Parameters
    ----------
    X : ndarray, shape (n_tasks, n, d)
    k : int
    init : {"first", "kmeans++", "farthest-first", "crowded"}
        ``"farthest-first"``: the first point, then each time the point
        farthest from the centers chosen so far (ties: the first such point);
        ``"crowded"``: the first point and its ``k - 1`` nearest points.
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
    rows = np.arange(len(X))[:, None]
    from_first = np.sum((X - X[:, :1]) ** 2, axis=2)  # (n_tasks, n)
    if init == "crowded":
        return X[rows, np.argsort(from_first, axis=1, kind="stable")[:, :k]]
    if init == "farthest-first":
        picks, gap = np.zeros((len(X), k), dtype=int), from_first
        for j in range(1, k):
            picks[:, j] = np.argmax(gap, axis=1)
            gap = np.minimum(gap, np.sum((X - X[rows, picks[:, j:j + 1]]) ** 2, axis=2))
        return X[rows, picks]
    check_rng(rng)
    return np.stack([kmeans_plusplus(Xt, k, rng) for Xt in X])


#: Data shipped with the package (its provenance: ``kmt_ref/data/README.md``).
#:
#: :meta hide-value:
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
