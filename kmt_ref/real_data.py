"""Four small real data sets, their preprocessing, and agreement with known classes.

The data files (``kmt_ref/data/real``, provenance and licence in the
``README.md`` beside them) are the copies that scikit-learn ships of four UCI
Machine Learning Repository data sets; nothing is downloaded.

==================  =====  ==  =====
name                n      d   k
==================  =====  ==  =====
``iris``            150    4   3
``wine``            178    13  3
``breast_cancer``   569    30  2
``digits``          1797   64  10
==================  =====  ==  =====

``k`` is the number of known classes. The constructions run on the data
scaled to ``[0, 1]`` per coordinate (:func:`minmax_scale`); the learned layer,
trained at ``d = 32``, needs the data brought to its width
(:func:`to_width`). :func:`adjusted_rand_index` compares a clustering with
the classes; :func:`separation_ratio` says how far apart the classes are
and :func:`spread_classes` moves them apart (a diagnostic: it uses the
classes).
"""

import gzip
import os

import numpy as np

from ._validation import check_choice, check_data, check_int, check_positive

__all__ = ["DATASETS", "load_dataset", "minmax_scale", "to_width", "adjusted_rand_index", "separation_ratio",
           "spread_classes"]

_DIR = os.path.join(os.path.dirname(__file__), "data", "real")

#: ``{name: file}`` of the shipped data sets (first line ``n,d,class names...``; then rows ``x..., class``).
DATASETS = {
    "iris": "iris.csv",
    "wine": "wine_data.csv",
    "breast_cancer": "breast_cancer.csv",
    "digits": "digits.csv.gz",
}


def load_dataset(name):
    """The points and classes of a shipped data set.

    Returns
    -------
    X : ndarray, shape (n, d)
    labels : ndarray of int, shape (n,)
        Class of each point, ``0 .. k - 1``.
    """
    check_choice(name, "name", DATASETS)
    path = os.path.join(_DIR, DATASETS[name])
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    rows = [line for line in lines if line.strip()]
    # scikit-learn's header is "n,d,class names..."; the digits file has none (its first line is data).
    has_header = not all(v.strip().replace(".", "", 1).isdigit() for v in rows[0].split(","))
    table = np.array([[float(v) for v in row.split(",")] for row in rows[has_header:]])
    n, d = (int(v) for v in rows[0].split(",")[:2]) if has_header else (table.shape[0], table.shape[1] - 1)
    if table.shape != (n, d + 1):
        raise ValueError(f"{path} holds a {table.shape} table; its header says {n} rows of {d} + 1")
    return table[:, :d], table[:, d].astype(int)


def minmax_scale(X):
    """Every coordinate mapped affinely onto ``[0, 1]`` (a constant coordinate becomes 0).

    Parameters
    ----------
    X : array_like, shape (n, d)

    Returns
    -------
    ndarray, shape (n, d)
    """
    X = check_data(X)
    lo, span = X.min(axis=0), np.ptp(X, axis=0)
    return (X - lo) / np.where(span > 0, span, 1.0)


def to_width(X, d):
    """The data brought to ``d`` coordinates for a layer trained at that width.

    Scaled to ``[0, 1]``; with more than ``d`` coordinates, projected on its
    first ``d`` principal axes and scaled to ``[0, 1]`` again; with fewer,
    padded with zero coordinates (which change no distance).

    Parameters
    ----------
    X : array_like, shape (n, d_X)
    d : int

    Returns
    -------
    ndarray, shape (n, d)
    """
    d = check_int(d, "d", low=1)
    X = minmax_scale(X)
    n, d_X = X.shape
    if d_X > d:
        centered = X - X.mean(axis=0)
        _, _, Vt = np.linalg.svd(centered, full_matrices=False)
        return minmax_scale(centered @ Vt[:d].T)
    return np.hstack([X, np.zeros((n, d - d_X))])


def _pairs(counts):
    return np.sum(counts * (counts - 1)) / 2.0


def adjusted_rand_index(labels_true, labels_pred):
    """Adjusted Rand index of two clusterings of the same points (Hubert and Arabie, 1985).

    ``(sum_ij C(n_ij, 2) - E) / ((sum_i C(a_i, 2) + sum_j C(b_j, 2)) / 2 - E)``
    with ``n_ij`` the contingency table, ``a, b`` its margins and
    ``E = sum_i C(a_i, 2) sum_j C(b_j, 2) / C(n, 2)``: 1 for identical
    partitions (up to relabelling), about 0 for independent ones. When both
    partitions are trivial in the same way (all one cluster, or all
    singletons) the ratio is 0/0 and the index is 1.

    Parameters
    ----------
    labels_true, labels_pred : array_like, shape (n,)
        Any hashable labels; ``n >= 2``.

    Returns
    -------
    float
    """
    a, b = np.asarray(labels_true), np.asarray(labels_pred)
    if a.ndim != 1 or b.shape != a.shape or a.size < 2:
        raise ValueError(f"labels_true and labels_pred must be 1-D of the same length >= 2; "
                         f"got shapes {a.shape} and {b.shape}")
    ia, ib = np.unique(a, return_inverse=True)[1], np.unique(b, return_inverse=True)[1]
    # The non-zero cells of the contingency table only (at most n of them): a dense n_a x n_b table
    # would take 1 GB for 8,000 singleton labels.
    _, table = np.unique(ia.astype(np.int64) * (int(ib.max()) + 1) + ib, return_counts=True)
    sum_ij = _pairs(table)
    sum_a, sum_b = _pairs(np.bincount(ia)), _pairs(np.bincount(ib))
    expected = sum_a * sum_b / (a.size * (a.size - 1) / 2.0)
    top = (sum_a + sum_b) / 2.0
    if top == expected:
        return 1.0
    return float((sum_ij - expected) / (top - expected))


def _class_means(X, labels):
    classes, index = np.unique(labels, return_inverse=True)
    counts = np.bincount(index)
    means = np.zeros((classes.size, X.shape[1]))
    np.add.at(means, index, X)
    return means / counts[:, None], index


def separation_ratio(X, labels):
    """How far apart the classes are, relative to their spread.

    The mean over pairs of classes of ``||m_a - m_b||^2``, divided by twice
    the mean squared distance of a point to its class mean (the expected
    squared distance between two points of one class). The real-data
    experiment reports it for tasks like the learned layer's training tasks
    (``training_separation``: 8.7 in the committed results); below 1 the
    classes overlap.

    Parameters
    ----------
    X : array_like, shape (n, d)
    labels : array_like, shape (n,)
        At least two classes.

    Returns
    -------
    float
    """
    X = check_data(X)
    labels = np.asarray(labels)
    if labels.shape != (X.shape[0],) or np.unique(labels).size < 2:
        raise ValueError(f"labels must have shape ({X.shape[0]},) and two classes or more; got {labels.shape}")
    means, index = _class_means(X, labels)
    within = np.mean(np.sum((X - means[index]) ** 2, axis=1))
    i, j = np.triu_indices(means.shape[0], 1)
    return float(np.mean(np.sum((means[i] - means[j]) ** 2, axis=1)) / (2.0 * within))


def spread_classes(X, labels, factor):
    """The data with every class mean moved ``factor`` times as far from the overall mean.

    Each point keeps its offset from its class mean, so the classes' shapes
    do not change and :func:`separation_ratio` grows by ``factor**2``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    labels : array_like, shape (n,)
    factor : float
        ``> 0``.

    Returns
    -------
    ndarray, shape (n, d)
    """
    X = check_data(X)
    factor = check_positive(factor, "factor")
    labels = np.asarray(labels)
    if labels.shape != (X.shape[0],):
        raise ValueError(f"labels must have shape ({X.shape[0]},); got labels.shape={labels.shape}")
    means, index = _class_means(X, labels)
    center = X.mean(axis=0)
    return X + (factor - 1.0) * (means[index] - center)
