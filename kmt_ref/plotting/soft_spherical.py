"""Figures for the soft and spherical k-means pages."""

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["plot_distance_to_lloyd", "plot_spherical_clusters"]


def plot_distance_to_lloyd(betas, distances, ax=None):
    """Log-log plot of soft k-means' distance from Lloyd against the stiffness.

    Parameters
    ----------
    betas : array_like, shape (m,)
    distances : array_like, shape (m,)
        From :func:`kmt_ref.variants.soft.distance_to_lloyd`. Zeros (soft
        equals Lloyd to the last bit) are drawn at the bottom of the axis.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    betas, distances = np.asarray(betas, float), np.asarray(distances, float)
    fig, ax = (plt.subplots(figsize=(5, 3.5)) if ax is None else (ax.figure, ax))
    floor = np.finfo(float).eps
    ax.loglog(betas, np.maximum(distances, floor), "o-")
    ax.set_xlabel(r"stiffness $\beta$ (= $\gamma$ of CAX)")
    ax.set_ylabel("max |soft - Lloyd| over centers")
    ax.set_title("Soft k-means tends to Lloyd as beta grows")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_spherical_clusters(X, trajectory, ax=None):
    """Unit circle: normalized points by final label, and the path of every center.

    Parameters
    ----------
    X : array_like, shape (n, 2)
        Points (any length; they are drawn normalized).
    trajectory : Trajectory
        From :func:`kmt_ref.variants.spherical.spherical_kmeans` or the
        transformer, with ``d = 2`` and at least one iteration.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    X = np.asarray(X, float)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"plot_spherical_clusters draws d=2 data; got X.shape={X.shape}")
    Xh = X / np.linalg.norm(X, axis=1, keepdims=True)
    fig, ax = (plt.subplots(figsize=(4.5, 4.5)) if ax is None else (ax.figure, ax))
    theta = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(theta), np.sin(theta), color="0.8", lw=1)
    ax.scatter(Xh[:, 0], Xh[:, 1], c=trajectory.labels[-1], cmap="tab10", s=8, vmin=0, vmax=9)
    for j in range(trajectory.centers.shape[1]):
        path = trajectory.centers[:, j]
        ax.plot(path[:, 0], path[:, 1], "k.:", lw=0.8, ms=4)  # iterates; chords between them
        ax.plot(*path[-1], "k*", ms=12)
    ax.set_aspect("equal")
    ax.set_title("Spherical k-means: centers stay on the circle")
    fig.tight_layout()
    return fig
