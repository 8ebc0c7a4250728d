"""Figures for the trimmed, robust and k-medoids pages."""

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["plot_outlier_experiment", "plot_medoid_law"]


def plot_outlier_experiment(result):
    """Two panels: the first task's centers near the inliers, and every task's errors.

    Parameters
    ----------
    result : dict
        The output of :func:`kmt_ref.programs.outliers.outlier_experiment`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    ex, errors = result["example"], result["errors"]
    X, means, out = ex["X"], ex["means"], ex["is_outlier"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.8), layout="constrained")
    left.scatter(*X[~out, :2].T, s=6, c="0.75", label="inliers")
    left.scatter(*means[:, :2].T, marker="*", s=220, c="k", label="true means")
    markers = ["o", "s", "^", "D", "v", "P"]
    for i, (name, C) in enumerate(ex["centers"].items()):
        left.scatter(*C[:, :2].T, marker=markers[i % len(markers)], s=60, facecolors="none", edgecolors=f"C{i}",
                     linewidths=1.5, label=name)
    left.set_xlim(-0.25, 1.25)
    left.set_ylim(-0.25, 1.25)
    left.set_title(f"first task ({int(out.sum())} outliers, all outside this window)")
    # Below the panels, not over the points.
    fig.legend(*left.get_legend_handles_labels(), fontsize=9, loc="outside lower center", ncol=3)
    names = list(errors)
    right.boxplot([errors[n] for n in names], orientation="horizontal")
    right.set_yticks(np.arange(1, len(names) + 1), names, fontsize=9)
    right.set_xscale("log")
    right.set_xlabel("RMS distance of the centers to the true means")
    right.set_title(f"{len(next(iter(errors.values())))} tasks")
    return fig


def plot_medoid_law(X, centers, law, ax=None):
    """Points sized and coloured by the probability of becoming the next medoid.

    Parameters
    ----------
    X : ndarray, shape (n, 2)
    centers : ndarray, shape (k, 2)
        Current medoids.
    law : ndarray, shape (k, n)
        From :func:`kmt_ref.variants.kmedoids.medoid_law`.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = (plt.subplots(figsize=(5, 4.5)) if ax is None else (ax.figure, ax))
    p = law.max(axis=0)  # each point is a candidate of exactly one medoid
    sc = ax.scatter(*X[:, :2].T, s=10 + 300 * p / p.max(), c=p, cmap="viridis")
    ax.scatter(*np.asarray(centers)[:, :2].T, marker="x", s=120, c="r", label="current medoids")
    fig.colorbar(sc, ax=ax, label="probability of becoming the next medoid")
    ax.set_aspect("equal")
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.01), borderaxespad=0)  # above: not over points
    fig.tight_layout()
    return fig
