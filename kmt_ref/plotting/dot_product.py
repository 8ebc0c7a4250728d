"""Plots of the Theorem 2.2 (dot-product) transformer at finite gamma.

Every function returns a ``matplotlib.figure.Figure`` built without pyplot.
"""

import numpy as np
from matplotlib.figure import Figure

from .._validation import check_positive_values

__all__ = ["plot_gamma_sweep"]


def plot_gamma_sweep(gammas, gaps, tol=1e-3, ax=None):
    """Largest log-objective gap to Lloyd against gamma, one line per model.

    Parameters
    ----------
    gammas : array_like, shape (g,)
        Finite, positive inverse temperatures (x axis, log scale).
    gaps : dict of str to array_like of shape (g,)
        ``{model label: max over layers of |log f(transformer) - log f(Lloyd)|}``.
        Zeros are drawn at the bottom of the axis (log scale).
    tol : float
        The agreement tolerance, drawn as a horizontal line.
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    gammas = check_positive_values(gammas, "gammas")
    if not isinstance(gaps, dict) or not gaps:
        raise ValueError(f"gaps must be a non-empty dict {{label: gaps}}; got gaps={gaps!r}")
    curves = {}
    for label, g in gaps.items():
        g = np.asarray(g, dtype=float)
        if g.shape != gammas.shape or np.any(g < 0):
            raise ValueError(
                f"gaps[{label!r}] must be non-negative with shape {gammas.shape}; got gaps[{label!r}]={g!r}"
            )
        curves[label] = g
    if ax is None:
        fig = Figure(figsize=(6.0, 3.6), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    floor = 1e-16  # exact agreement is drawn at machine precision
    for label, g in curves.items():
        ax.loglog(gammas, np.maximum(g, floor), marker="o", label=label)
    ax.axhline(tol, color="0.4", linestyle="--", linewidth=1, label=f"tolerance {tol:g}")
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel("max gap in log objective")
    ax.legend(fontsize=8)
    return fig
