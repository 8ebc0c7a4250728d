"""Plots of Lloyd's algorithm and the Theorem 2.1 transformer (Figure 3 of the paper).

Every function returns a ``matplotlib.figure.Figure`` built without pyplot, so
nothing is drawn twice in a notebook and tests need no display. Scatter plots
show the first two coordinates of the data.
"""

from fractions import Fraction

import numpy as np
from matplotlib.figure import Figure

from .._validation import check_data, check_instance
from ..layer import BLOCK_NAMES, KMeansTransformer
from ..trajectory import Trajectory

__all__ = [
    "plot_log_objectives",
    "plot_center_paths",
    "plot_assignments",
    "plot_figure3",
    "plot_weights",
    "plot_attention_by_hand",
    "fraction_text",
    "latex_matrix",
]

#: Largest number of points drawn in a scatter plot; more only slows drawing.
MAX_DRAWN_POINTS = 4000


def _check_2d(X):
    X = check_data(X)
    if X.shape[1] < 2:
        raise ValueError(f"scatter plots need d >= 2; got X.shape={X.shape}")
    return X


def _check_trajectories(trajectories):
    if not isinstance(trajectories, dict) or not trajectories:
        raise ValueError(
            f"trajectories must be a non-empty dict {{label: Trajectory}}; got trajectories={trajectories!r}"
        )
    for label, traj in trajectories.items():
        check_instance(traj, f"trajectories[{label!r}]", Trajectory)
    return trajectories


def _axes(ax, figsize):
    """A fresh figure with one axes, or the figure of the given axes."""
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        return fig, fig.add_subplot()
    return ax.figure, ax


def _drawn(X):
    """An evenly spaced subset of at most MAX_DRAWN_POINTS rows (deterministic)."""
    step = max(1, int(np.ceil(X.shape[0] / MAX_DRAWN_POINTS)))
    return X[::step]


def plot_log_objectives(X, trajectories, ax=None):
    """Log k-means objective after every iteration or layer.

    Parameters
    ----------
    X : array_like, shape (n, d)
    trajectories : dict of str to Trajectory
        One line per entry, e.g. ``{"Lloyd": ..., "transformer": ...}``.
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    X = check_data(X)
    trajectories = _check_trajectories(trajectories)
    fig, ax = _axes(ax, (5, 3.5))
    styles = [("o", "-", 7), ("x", "--", 9), ("s", ":", 5), ("^", "-.", 6)]
    for i, (label, traj) in enumerate(trajectories.items()):
        marker, line, size = styles[i % len(styles)]
        values = traj.log_objectives(X)
        ax.plot(np.arange(values.size), values, marker=marker, linestyle=line, markersize=size, label=label)
    ax.set_xlabel("iteration / layer t")
    ax.set_ylabel("log k-means objective")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def plot_center_paths(X, trajectories, ax=None):
    """The data (grey) and the path of every center over the iterations.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Only the first two coordinates are drawn.
    trajectories : dict of str to Trajectory
        A circle marks the initial centers, a star the final ones.
    ax : matplotlib Axes, optional

    Returns
    -------
    Figure
    """
    X = _check_2d(X)
    trajectories = _check_trajectories(trajectories)
    fig, ax = _axes(ax, (4.5, 4.5))
    shown = _drawn(X)
    ax.scatter(shown[:, 0], shown[:, 1], s=2, color="0.75", rasterized=True)
    lines = ["-", "--", ":", "-."]
    for i, (label, traj) in enumerate(trajectories.items()):
        paths = traj.centers[:, :, :2]  # (T+1, k, 2)
        for j in range(paths.shape[1]):
            ax.plot(paths[:, j, 0], paths[:, j, 1], linestyle=lines[i % len(lines)], color=f"C{i}",
                    marker=".", label=label if j == 0 else None)
        ax.scatter(paths[0, :, 0], paths[0, :, 1], marker="o", facecolor="none", edgecolor=f"C{i}", s=60)
        ax.scatter(paths[-1, :, 0], paths[-1, :, 1], marker="*", color=f"C{i}", s=120)
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="best")
    return fig


def plot_assignments(X, centers, labels, ax=None, title=None):
    """Points coloured by cluster, with the centers as black stars.

    Parameters
    ----------
    X : array_like, shape (n, d)
    centers : array_like, shape (k, d)
    labels : array_like of int, shape (n,)
        Values in ``0..k-1``.
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    Figure
    """
    X = _check_2d(X)
    centers = np.asarray(centers, dtype=float)
    labels = np.asarray(labels)
    if centers.ndim != 2 or centers.shape[1] != X.shape[1]:
        raise ValueError(f"centers must have shape (k, {X.shape[1]}); got centers.shape={centers.shape}")
    k = centers.shape[0]
    if labels.shape != (X.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers of shape ({X.shape[0]},); got labels.shape={labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise ValueError(f"labels must lie in 0..{k - 1}; got labels in {labels.min()}..{labels.max()}")
    fig, ax = _axes(ax, (4.5, 4.5))
    step = max(1, int(np.ceil(X.shape[0] / MAX_DRAWN_POINTS)))
    ax.scatter(X[::step, 0], X[::step, 1], c=[f"C{j % 10}" for j in labels[::step]], s=3, rasterized=True)
    ax.scatter(centers[:, 0], centers[:, 1], marker="*", color="black", s=160, edgecolor="white")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_aspect("equal", adjustable="datalim")
    if title:
        ax.set_title(title)
    return fig


def plot_figure3(X, reference, transformer, names=("Lloyd", "transformer")):
    """The three panels of the paper's Figure 3, for a transformer against Lloyd.

    Top: log objective per layer; bottom left: center trajectories; bottom
    right: the transformer's final assignments and centers.

    Parameters
    ----------
    X : array_like, shape (n, d)
    reference, transformer : Trajectory
        Lloyd's iterates and the transformer's, same number of steps.
    names : (str, str)
        Legend labels.

    Returns
    -------
    Figure
    """
    X = _check_2d(X)
    trajectories = _check_trajectories({names[0]: reference, names[1]: transformer})
    if reference.centers.shape != transformer.centers.shape:
        raise ValueError(
            "reference and transformer must have the same shape of centers; got "
            f"{reference.centers.shape} and {transformer.centers.shape}"
        )
    if transformer.n_iter < 1:
        raise ValueError(f"need at least one layer; got transformer.n_iter={transformer.n_iter}")
    # Objective on top, the two maps below: readable in a narrow book column.
    fig = Figure(figsize=(9, 8.5), layout="constrained")
    axes = fig.subplot_mosaic([["objective", "objective"], ["paths", "labels"]], height_ratios=[1, 1.4])
    plot_log_objectives(X, trajectories, ax=axes["objective"])
    plot_center_paths(X, trajectories, ax=axes["paths"])
    plot_assignments(X, transformer.centers[-1], transformer.labels[-1], ax=axes["labels"],
                     title=f"{names[1]}:\nassignments after layer {transformer.n_iter}")
    axes["objective"].set_title("log objective per layer")
    axes["paths"].set_title("center trajectories")
    return fig


def plot_weights(model, blocks=BLOCK_NAMES):
    """Heat maps of the weight matrices ``Wq, Wk, Wv`` of the given blocks.

    Rows are blocks, columns are the three matrices, drawn exactly as stored
    (acting on column tokens). Colours are symmetric around 0 (red positive,
    blue negative); token coordinate blocks are separated by grid lines.

    Parameters
    ----------
    model : KMeansTransformer
    blocks : sequence of str

    Returns
    -------
    Figure
    """
    check_instance(model, "model", KMeansTransformer)
    blocks = tuple(blocks)
    unknown = [b for b in blocks if b not in model.blocks]
    if not blocks or unknown:
        raise ValueError(f"blocks must be names from {tuple(model.blocks)}; got blocks={blocks}")
    weights = model.weights
    vmax = max(float(np.abs(weights[b][w]).max()) for b in blocks for w in ("Wq", "Wk", "Wv")) or 1.0
    fig = Figure(figsize=(7.5, 2.3 * len(blocks)), layout="constrained")
    axes = fig.subplots(len(blocks), 3, squeeze=False)
    edges = [s.stop - 0.5 for s in model.layout.slices.values()][:-1]
    image = None
    for r, b in enumerate(blocks):
        for c, w in enumerate(("Wq", "Wk", "Wv")):
            ax = axes[r, c]
            image = ax.imshow(weights[b][w], cmap="RdBu_r", vmin=-vmax, vmax=vmax)
            for e in edges:
                ax.axhline(e, color="0.5", linewidth=0.8)
                ax.axvline(e, color="0.5", linewidth=0.8)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{b}: {w}", fontsize=10)
    fig.colorbar(image, ax=axes, shrink=0.6)
    return fig


def fraction_text(v, max_denominator=1000):
    """A number as a short fraction (``"1/4"``, ``"-3"``, ``"0"``): how a reader checking by hand writes it."""
    f = Fraction(float(v)).limit_denominator(max_denominator)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def plot_attention_by_hand(weights, row_names, col_names):
    """The attention weights of the blocks of one layer, two to a row, each entry written in its cell.

    Every cell has the same size, so a block's panel is as large as its matrix (the four blocks of a layer:
    the point blocks CAX and SAX above, the center blocks CAC and SAC below).

    Parameters
    ----------
    weights : dict
        Block name -> its weights, shape (queries, keys), in :data:`~kmt_ref.layer.BLOCK_NAMES` order.
    row_names, col_names : dict
        Block name -> labels of its query rows and key columns.

    Returns
    -------
    Figure
    """
    if not isinstance(weights, dict) or not weights:
        raise ValueError(f"weights must be a non-empty dict of block name -> matrix; got {type(weights).__name__}")
    mats = {name: np.asarray(W, dtype=float) for name, W in weights.items()}
    names = list(mats)
    rows = [names[i : i + 2] for i in range(0, len(names), 2)]
    cell = 0.42  # inches
    widths = [max(mats[r[c]].shape[1] if c < len(r) else 0 for r in rows) for c in range(2)]
    heights = [max(mats[name].shape[0] for name in r) for r in rows]
    fig = Figure(figsize=(cell * (sum(widths) + 3), cell * (sum(heights) + 2.2 * len(rows))), layout="constrained")
    grid = fig.add_gridspec(len(rows), 2, width_ratios=widths, height_ratios=heights)
    for i, r in enumerate(rows):
        for j, name in enumerate(r):
            W, ax = mats[name], fig.add_subplot(grid[i, j])
            ax.imshow(W, cmap="Blues", vmin=0.0, vmax=1.0, aspect="equal")
            for (a, b), v in np.ndenumerate(W):
                ax.text(b, a, fraction_text(v), ha="center", va="center", fontsize=9,
                        color="white" if v > 0.6 else "black")
            ax.set_xticks(range(W.shape[1]), col_names[name], fontsize=9)
            ax.set_yticks(range(W.shape[0]), row_names[name], fontsize=9)
            ax.set_title(name, fontsize=10)
    return fig


def latex_matrix(W, digits=3):
    """A LaTeX ``pmatrix`` of a matrix, entries rounded to ``digits`` decimals.

    Integers are printed without decimals and zeros as ``0``, so the Equation 5
    matrices read as in the paper.

    Parameters
    ----------
    W : array_like, shape (r, c)
    digits : int

    Returns
    -------
    str
    """
    W = np.asarray(W, dtype=float)
    if W.ndim != 2:
        raise ValueError(f"W must be 2-D; got W.shape={W.shape}")

    def fmt(v):
        v = round(float(v), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
        return str(int(v)) if v == int(v) else f"{v:.{digits}f}".rstrip("0")

    rows = [" & ".join(fmt(v) for v in row) for row in W]
    return "\\begin{pmatrix}" + " \\\\ ".join(rows) + "\\end{pmatrix}"
