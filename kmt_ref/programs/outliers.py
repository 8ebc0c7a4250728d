"""The outlier experiment: trimmed and robust k-means against Lloyd on contaminated data.

Data: the paper's Gaussian mixture (:func:`kmt_ref.gaussian_mixture`, points
in ``[0, 1]^d``) plus a fraction of far outliers, placed uniformly in
direction at distance ``U[5, 10]`` from the middle of the cube. Every method
starts from the same centers (the first ``k`` inliers) and runs ``n_iter``
iterations; its *center error* is the root-mean-square distance between its
centers and the true means, matched one to one (Hungarian assignment).
"""

import numpy as np
from scipy.optimize import linear_sum_assignment

from .._validation import check_centers, check_fraction, check_int, check_n_steps, check_positive, check_rng
from ..classical import lloyd
from ..geometry import squared_distances
from ..tasks import gaussian_mixture
from ..variants.robust import robust_kmeans_transformer
from ..variants.trimmed import quantile_trimmed_kmeans, trimmed_kmeans, trimmed_kmeans_transformer

__all__ = ["contaminated_mixture", "center_error", "outlier_experiment"]


def contaminated_mixture(rng, n=500, d=2, k=4, outlier_fraction=0.08, scale=0.1):
    """A Gaussian mixture with far outliers.

    Parameters
    ----------
    rng : numpy.random.Generator
    n : int
        Total number of points, inliers and outliers.
    d, k : int
    outlier_fraction : float
        In ``[0, 1)``; ``round(outlier_fraction * n)`` points are outliers.
    scale : float
        Standard deviation of the mixture components (before min-max scaling).

    Returns
    -------
    X : ndarray, shape (n, d)
        Inliers first, then outliers.
    init : ndarray, shape (k, d)
        The first ``k`` inliers.
    means : ndarray, shape (k, d)
        True component means.
    is_outlier : ndarray of bool, shape (n,)
    """
    check_rng(rng)
    outlier_fraction = check_fraction(outlier_fraction, "outlier_fraction")
    n_out = int(round(outlier_fraction * check_int(n, "n", low=1)))
    X_in, init, means = gaussian_mixture(rng, n - n_out, d, k, scale)
    direction = rng.standard_normal((n_out, d))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    outliers = 0.5 + rng.uniform(5.0, 10.0, size=(n_out, 1)) * direction
    return np.vstack([X_in, outliers]), init, means, np.arange(n) >= n - n_out


def center_error(centers, means):
    """RMS distance between centers and means after a one-to-one matching.

    Parameters
    ----------
    centers : array_like, shape (k, d)
    means : array_like, shape (k, d)

    Returns
    -------
    float
    """
    M = check_centers(means, np.shape(centers)[-1], name="means")
    C = check_centers(centers, M.shape[1], name="centers", k=M.shape[0])
    D2 = squared_distances(C, M)
    rows, cols = linear_sum_assignment(D2)
    return float(np.sqrt(D2[rows, cols].mean()))


def outlier_experiment(rng, n=500, d=2, k=4, outlier_fraction=0.08, n_iter=20, threshold=10.0, a=0.01,
                       n_tasks=10):
    """Center error of Lloyd, trimmed (1997), the authors' quantile trim, gap-trimmed and robust k-means.

    The trimmed method trims ``alpha = outlier_fraction``; the authors'
    baseline (:func:`quantile_trimmed_kmeans`) trims each cluster at its
    0.95-quantile, whatever the contamination; the gap-trimmed
    and robust methods are run as transformers
    (:func:`trimmed_kmeans_transformer` with ``threshold``,
    :func:`robust_kmeans_transformer` with ``a``).

    Parameters
    ----------
    rng : numpy.random.Generator
    n, d, k, outlier_fraction :
        As in :func:`contaminated_mixture`.
    n_iter : int
    threshold : float
        Of the trimmed transformer.
    a : float
    n_tasks : int
        Number of independent data sets.

    Returns
    -------
    dict
        ``"errors"``: ``{method: ndarray (n_tasks,)}``; ``"example"``: the
        first task as ``{"X", "means", "is_outlier", "centers": {method: (k, d)}}``.
    """
    check_rng(rng)
    n_iter = check_n_steps(n_iter, "n_iter")
    n_tasks = check_int(n_tasks, "n_tasks", low=1)
    t, a = check_positive(threshold, "threshold"), check_positive(a, "a")
    gap_model, robust_model = trimmed_kmeans_transformer(d, k, t), robust_kmeans_transformer(d, k, a)
    methods = {
        "Lloyd": lambda X, init: lloyd(X, init, n_iter),
        f"trimmed (1997, alpha={outlier_fraction:g})": lambda X, init: trimmed_kmeans(X, init, n_iter,
                                                                                      outlier_fraction),
        "quantile-trimmed (authors' baseline, q=0.95)": lambda X, init: quantile_trimmed_kmeans(X, init, n_iter),
        f"gap-trimmed transformer (threshold={t:g})": lambda X, init: gap_model.run(X, init, n_iter),
        f"robust transformer (a={a:g})": lambda X, init: robust_model.run(X, init, n_iter),
    }
    errors = {name: np.empty(n_tasks) for name in methods}
    example = None
    for task in range(n_tasks):
        X, init, means, is_outlier = contaminated_mixture(rng, n, d, k, outlier_fraction)
        centers = {name: run(X, init).centers[-1] for name, run in methods.items()}
        for name, C in centers.items():
            errors[name][task] = center_error(C, means)
        if task == 0:
            example = {"X": X, "means": means, "is_outlier": is_outlier, "centers": centers}
    return {"errors": errors, "example": example}
