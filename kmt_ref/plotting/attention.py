"""Plots of attention as a soft nearest-neighbour lookup (book chapter "Attention").

The maps are computed by the library's own attention block: grid points are
point tokens, the centers are center tokens, and a CAX-like block with value
matrix ``P_y`` writes each grid point's attention weights into its ``y``
block, so what is drawn is exactly what :func:`kmt_ref.attend` computes.
"""

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from .._validation import check_centers, check_positive_values
from ..attention import NORMALIZERS, Block, attend
from ..tokens import TokenLayout

__all__ = ["attention_weights_on_grid", "plot_attention_maps", "plot_temperature_sweep"]


def attention_weights_on_grid(centers, gamma, score="euclidean", extent=(0.0, 1.0, 0.0, 1.0), resolution=150):
    """Attention weights of every grid point (as a query) over the centers (keys).

    Parameters
    ----------
    centers : array_like, shape (k, 2)
    gamma : float
        Inverse temperature; ``numpy.inf`` for hardmax.
    score : {"euclidean", "dot"}
    extent : (xmin, xmax, ymin, ymax)
    resolution : int
        Grid points per axis.

    Returns
    -------
    ndarray, shape (resolution, resolution, k)
        ``weights[row, col]`` for the point ``(x[col], y[row])``.
    """
    C = check_centers(centers, 2, name="centers")
    resolution = int(resolution)
    if resolution < 2:
        raise ValueError(f"resolution must be >= 2; got resolution={resolution}")
    xmin, xmax, ymin, ymax = (float(v) for v in extent)
    if not (xmin < xmax and ymin < ymax):
        raise ValueError(f"extent must be (xmin, xmax, ymin, ymax) with min < max; got extent={extent}")
    k = C.shape[0]
    layout = TokenLayout(2, k, ("x", "y"))
    P_x, P_y = layout.projector("x"), layout.projector("y")
    normalizer = "hardmax" if np.isinf(gamma) else "softmax"
    block = Block(P_x, P_x, P_y, score=score, normalizer=normalizer, gamma=gamma)
    xs, ys = np.linspace(xmin, xmax, resolution), np.linspace(ymin, ymax, resolution)
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)
    P, Q = layout.embed(grid, C)
    weights = layout.read(attend(P, Q, block), "y")
    return weights.reshape(resolution, resolution, k)


def plot_attention_maps(centers, gammas, score="euclidean", extent=(0.0, 1.0, 0.0, 1.0), resolution=150):
    """One panel per ``gamma``: each location coloured by its attention-weighted center colour.

    At ``gamma = inf`` (hardmax) and Euclidean scores the panels show the
    Voronoi cells of the centers; at small ``gamma`` the colours blend.

    Parameters
    ----------
    centers : array_like, shape (k, 2)
    gammas : sequence of float
    score : {"euclidean", "dot"} or sequence of them (one per panel)
    extent, resolution :
        As in :func:`attention_weights_on_grid`.

    Returns
    -------
    Figure
    """
    C = check_centers(centers, 2, name="centers")
    gammas = list(gammas)
    if not gammas:
        raise ValueError("gammas must be a non-empty sequence; got gammas=[]")
    scores = [score] * len(gammas) if isinstance(score, str) else list(score)
    if len(scores) != len(gammas):
        raise ValueError(
            f"score must be one name or one per gamma; got {len(scores)} scores for {len(gammas)} gammas"
        )
    colours = np.array([to_rgb(f"C{j % 10}") for j in range(C.shape[0])])  # (k, 3)
    fig = Figure(figsize=(3.2 * len(gammas), 3.4), layout="constrained")
    axes = fig.subplots(1, len(gammas), squeeze=False)[0]
    for ax, gamma, sc in zip(axes, gammas, scores, strict=True):
        weights = attention_weights_on_grid(C, gamma, sc, extent, resolution)
        ax.imshow(weights @ colours, origin="lower", extent=extent, interpolation="nearest")
        ax.scatter(C[:, 0], C[:, 1], color="black", edgecolor="white", s=90, marker="X")
        ax.set_title(f"{sc}, gamma = {gamma:g}", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


def plot_temperature_sweep(scores, gammas):
    """Softmax weights of one row of scores as the inverse temperature grows.

    Parameters
    ----------
    scores : array_like, shape (r,)
        One query's scores over ``r`` keys.
    gammas : sequence of float
        Finite inverse temperatures; the hardmax weights are drawn for reference.

    Returns
    -------
    Figure
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or s.size < 2 or not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be a finite 1-D array of length >= 2; got scores.shape={s.shape}")
    gammas = check_positive_values(list(gammas), "gammas")
    softmax, hardmax = NORMALIZERS["softmax"].fn, NORMALIZERS["hardmax"].fn
    weights = softmax(gammas[:, None] * s[None, :])  # (len(gammas), r)
    fig = Figure(figsize=(5.5, 3.5), layout="constrained")
    ax = fig.add_subplot()
    styles = ["-", "--", ":", "-."]
    for b in range(s.size):
        ax.plot(gammas, weights[:, b], marker=".", linestyle=styles[b % len(styles)],
                label=f"key {b} (score {s[b]:g})")
    limit = hardmax(s)
    ax.scatter(np.full(s.size, gammas.max() * 1.6), limit, marker="D", color=[f"C{b}" for b in range(s.size)],
               label="hardmax")
    ax.set_xscale("log")
    ax.set_xlabel("inverse temperature gamma")
    ax.set_ylabel("attention weight")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig
