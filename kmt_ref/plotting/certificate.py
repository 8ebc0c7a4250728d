"""Figures of the chapter "How large must gamma be?" (certificate and gamma sweep)."""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["sweep_heatmaps", "gap_collapse", "bound_vs_measured", "paper_sweep_heatmaps"]

#: Gaps below this are drawn as this (float64 agreement).
_FLOOR = 1e-16
#: The gamma the paper verifies at.
_PAPER_GAMMA = 1e4


def _settings(result):
    """Rows of the heatmaps: (d, k, n) in grid order; panels: scales."""
    grid = result["grid"]
    return [(d, k, n) for d in grid["ds"] for k in grid["ks"] for n in grid["ns"]], grid["scales"]


def _median_over_seeds(result, key, d, k, n, scale):
    values = [t[key] for t in result["tasks"] if (t["d"], t["k"], t["n"], t["scale"]) == (d, k, n, scale)]
    return np.median(np.array(values, dtype=float), axis=0)


def sweep_heatmaps(result):
    """Measured log-objective gap over gamma x (d, k, n), one panel per data scale.

    Color: log10 of the median (over seeds) of the largest gap over the layers.
    Overlay: the certificate's smallest gamma for a gap of ``tol`` (white
    circle, median over seeds), the closed-form rule (white cross), and the
    smallest grid gamma from which the measured gap stays below ``tol``
    (black bar). The dashed line is the paper's gamma = 1e4.

    Parameters
    ----------
    result : dict
        From :func:`kmt_ref.programs.sweep.run_sweep` or :func:`kmt_ref.programs.sweep.load_sweep`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    settings, scales = _settings(result)
    grid = result["grid"]
    lg = np.log10(grid["gammas"])
    step = lg[1] - lg[0] if len(lg) > 1 else 1.0
    tol = grid["tol"]
    fig, axes = plt.subplots(1, len(scales), figsize=(4.2 * len(scales), 0.32 * len(settings) + 1.8),
                             sharey=True, squeeze=False)
    for ax, scale in zip(axes[0], scales, strict=True):
        gaps = np.array([_median_over_seeds(result, "gap", d, k, n, scale) for d, k, n in settings])
        image = ax.imshow(np.log10(np.maximum(gaps, _FLOOR)), aspect="auto", cmap="viridis", vmin=-16, vmax=1,
                          extent=(lg[0] - step / 2, lg[-1] + step / 2, len(settings) - 0.5, -0.5))
        for row, (d, k, n) in enumerate(settings):
            cert = _median_over_seeds(result, "certified_gamma", d, k, n, scale)
            rule = _median_over_seeds(result, "rule_gamma", d, k, n, scale)
            if np.isfinite(cert):
                ax.plot(np.log10(cert), row, "o", mfc="none", mec="white", ms=6)
            if np.isfinite(rule):
                ax.plot(np.log10(rule), row, "x", color="white", ms=5)
            below = gaps[row] <= tol
            stays = np.flatnonzero([below[i:].all() for i in range(len(below))])
            if stays.size:
                ax.plot(lg[stays[0]] - step / 2, row, "|", color="black", ms=10, mew=2)
        ax.axvline(np.log10(_PAPER_GAMMA), color="white", ls="--", lw=0.8)
        ax.set_xlim(lg[0] - step / 2, lg[-1] + step / 2)
        ax.set_title(f"data scale {scale:g}")
        ax.set_xlabel("log10 gamma")
    axes[0, 0].set_yticks(range(len(settings)))
    axes[0, 0].set_yticklabels([f"d={d} k={k} n={n}" for d, k, n in settings], fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), label="log10 max log-objective gap", shrink=0.9)
    fig.suptitle(f"transformer vs Lloyd; o certified gap <= {tol:g}, x closed-form rule, | measured",
                 fontsize=10)
    return fig


def gap_collapse(result):
    """Measured gap and certified gap against ``gamma * margin`` for every task.

    ``margin`` is the task's smallest Lloyd margin along the trajectory: once
    gamma is measured in units of 1 / margin, all settings fall on one band.

    Returns
    -------
    matplotlib.figure.Figure
    """
    gammas = np.array(result["grid"]["gammas"])
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, task in enumerate(result["tasks"]):
        x = gammas * task["margin"]
        ax.loglog(x, np.maximum(task["gap"], _FLOOR), color="C0", alpha=0.35, lw=0.8,
                  label="measured" if i == 0 else None)
        cert = np.array(task["certified_gap"])
        ok = np.isfinite(cert)
        ax.loglog(x[ok], np.maximum(cert[ok], _FLOOR), color="C3", alpha=0.35, lw=0.8,
                  label="certified bound" if i == 0 else None)
    ax.axhline(result["grid"]["tol"], color="k", ls=":", lw=0.8)
    ax.set_xlabel("gamma x smallest Lloyd margin")
    ax.set_ylabel("max log-objective gap")
    ax.legend()
    return fig


def bound_vs_measured(gammas, measured, bound):
    """Certified and measured center deviation of one task against gamma.

    Parameters
    ----------
    gammas : array_like, shape (g,)
    measured, bound : array_like, shape (g,)
        Largest absolute center difference over the layers, measured and certified.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(gammas, np.maximum(measured, _FLOOR), "o-", label="measured max |C~ - C|")
    ax.loglog(gammas, np.maximum(bound, _FLOOR), "s--", label="certificate bound")
    ax.set_xlabel("gamma")
    ax.set_ylabel("largest center deviation")
    ax.legend()
    return fig


def paper_sweep_heatmaps(panels, gamma):
    """The paper's four heatmaps for one gamma: ours (left column) and the authors' (right column).

    Each panel is the mean, over the cells both sweeps ran, of the log
    objective after 10 layers minus Lloyd's, on the paper's colour range 0 to 3.

    Parameters
    ----------
    panels : list
        ``[(rows_axis, cols_axis, row values, column values, ours, theirs), ...]``, one per heatmap
        (``kmt_ref.programs.paper_sweep.heatmaps``).
    gamma : float
        For the title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    names = {"k": "clusters k", "d": "dimensions d", "n": "points n", "scale": "scale"}
    # Two columns, one row per heatmap: narrow enough that its 8 pt labels stay readable in the book.
    fig = Figure(figsize=(8.0, 3.0 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 2, squeeze=False)
    image = None
    for row, (rows_axis, cols_axis, rv, cv, ours, theirs) in enumerate(panels):
        for col, (who, values) in enumerate((("ours", ours), ("authors", theirs))):
            ax = axes[row, col]
            image = ax.imshow(values, origin="lower", aspect="auto", cmap="viridis", vmin=0, vmax=3)
            ax.set_xticks(range(len(cv)), [f"{v:g}" for v in cv], fontsize=8, rotation=90 if cols_axis == "n" else 0)
            ax.set_yticks(range(len(rv)), [f"{v:g}" for v in rv], fontsize=8)
            ax.set_xlabel(names[cols_axis], fontsize=9)
            ax.set_ylabel(names[rows_axis], fontsize=9)
            ax.set_title(f"{who}: {names[rows_axis]} x {names[cols_axis]}", fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.6, label="mean log-objective difference (transformer - Lloyd)")
    fig.suptitle(f"gamma = {gamma:g}")
    return fig
