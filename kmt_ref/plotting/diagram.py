"""A picture of one layer, and an animation of the transformer running Lloyd's algorithm."""

import re

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import animation
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from ..layer import BLOCK_NAMES

__all__ = ["plot_layer_diagram", "animate_layers", "offline_html"]

#: matplotlib's player draws its buttons with Font Awesome, loaded from a CDN; these
#: characters replace the icons so that the page loads nothing from the network.
_BUTTONS = {"fa-minus": "&minus;", "fa-plus": "+", "fa-fast-backward": "&#x23EE;", "fa-step-backward": "&#x23F4;",
            "fa-play fa-flip-horizontal": "&#x25C0;", "fa-pause": "&#x23F8;", "fa-play": "&#x25B6;",
            "fa-step-forward": "&#x23F5;", "fa-fast-forward": "&#x23ED;"}

#: What each block reads, as drawn: (queries, keys and values, what it writes).
_READS = {
    "CAX": ("P_t", "Q_t", "the new assignment"),
    "SAX": ("P_t", "P_t", "minus the old assignment"),
    "CAC": ("Q_t", "P_t+1 (new)", "the new center"),
    "SAC": ("Q_t", "Q_t", "minus the old center"),
}


def _box(ax, x, y, w, h, text, color, fontsize=9):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02", fc=color, ec="k", lw=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, start, end, color="k", style="-|>", lw=1.2, ls="-"):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, color=color, lw=lw, ls=ls))


def plot_layer_diagram():
    """One layer of the k-means transformer: two residual streams and four attention blocks.

    The point tokens ``P = [X | Y]`` (top stream) and the center tokens
    ``Q = [C | I_k]`` (bottom stream) each flow through a residual path. CAX
    and SAX read the OLD points (and CAX the old centers) and add to the point
    stream; CAC and SAC read the old centers (and CAC the NEW points) and add
    to the center stream. The order is that of
    :func:`kmt_ref.layer.transformer_layer`. Dashed arrows: what a block reads
    (queries, keys and values); red arrows: what it adds.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = Figure(figsize=(11, 5.0))
    ax = fig.subplots()
    ax.set_xlim(0, 11)
    ax.set_ylim(-0.2, 5.0)
    ax.axis("off")
    y_p, y_q = 4.2, 0.6
    plus = {"P": (5.6, y_p), "Q": (10.0, y_q)}
    colors = {"CAX": "#cfe2f3", "SAX": "#d9ead3", "CAC": "#fce5cd", "SAC": "#ead1dc"}
    for (y, label_in, label_out) in ((y_p, "point tokens P_t = [X | Y_t]", "P_t+1"),
                                     (y_q, "center tokens Q_t = [C_t | I_k]", "Q_t+1")):
        _arrow(ax, (0.2, y), (10.8, y), lw=2.5)
        ax.text(0.2, y + 0.2, label_in, fontsize=10, ha="left")
        ax.text(10.8, y + 0.2, label_out, fontsize=10, ha="right")
    boxes = {"CAX": (1.9, 2.9), "SAX": (4.3, 2.9), "CAC": (6.9, 1.9), "SAC": (9.1, 1.9)}
    for name in BLOCK_NAMES:
        x, y = boxes[name]
        queries, keys, writes = _READS[name]
        _box(ax, x, y, 2.0, 1.0, f"{name}\nqueries: {queries}\nkeys, values: {keys}\nadds: {writes}",
             colors[name], fontsize=7)
    reads = [((0.9, y_p), (1.4, 3.4)), ((0.6, y_q), (1.2, 2.4)),  # CAX: old P; old Q
             ((3.6, y_p), (4.0, 3.4)),  # SAX: old P
             ((6.2, y_p), (6.6, 2.4)),  # CAC: the NEW points (after the "+")
             ((5.9, y_q), (6.3, 1.4)), ((8.4, y_q), (8.8, 1.4))]  # CAC, SAC: old Q
    for start, end in reads:
        _arrow(ax, start, end, color="0.45", ls="--")
    for name, (x, y) in boxes.items():
        target = plus["P" if name in ("CAX", "SAX") else "Q"]
        start = (x + 0.6, y + 0.5) if name in ("CAX", "SAX") else (x + 0.6, y - 0.5)
        _arrow(ax, start, target, color="C3")
    for x, y in plus.values():
        ax.add_patch(Circle((x, y), 0.17, fc="white", ec="C3", lw=1.5, zorder=3))
        ax.text(x, y, "+", ha="center", va="center", color="C3", fontsize=12, zorder=4)
    ax.text(5.5, 4.75, "P_t+1 = P_t + CAX(P_t, Q_t) + SAX(P_t, P_t)", ha="center", fontsize=10)
    ax.text(5.5, -0.05, "Q_t+1 = Q_t + CAC(Q_t, P_t+1) + SAC(Q_t, Q_t)", ha="center", fontsize=10)
    fig.set_layout_engine("tight")
    return fig


def animate_layers(X, trajectory, names=None, interval=700):
    """Animation of a run, one frame per layer: assignments (colours) and centers (stars, paths).

    Parameters
    ----------
    X : array_like, shape (n, 2)
    trajectory : Trajectory
        Of a transformer (its ``labels`` colour the points) or of Lloyd's algorithm.
    names : str, optional
        Title prefix.
    interval : int
        Milliseconds per frame.

    Returns
    -------
    matplotlib.animation.FuncAnimation
        Show it in a notebook with ``IPython.display.HTML(offline_html(anim))``:
        the frames and the player are embedded, nothing is loaded from the network.
    """
    X = np.asarray(X, dtype=float)
    centers, labels = trajectory.centers, trajectory.labels
    k = centers.shape[1]
    fig, ax = plt.subplots(figsize=(5.2, 5.2), dpi=80)
    colors = plt.get_cmap("tab10")(np.arange(k) % 10)
    points = ax.scatter(X[:, 0], X[:, 1], s=3, c=[colors[j] for j in labels[0]])
    stars = ax.scatter(centers[0, :, 0], centers[0, :, 1], marker="*", s=260, c=colors, edgecolors="k", zorder=3)
    paths = [ax.plot([], [], "k:", lw=1)[0] for _ in range(k)]
    ax.set_xlim(X[:, 0].min() - 0.05, X[:, 0].max() + 0.05)
    ax.set_ylim(X[:, 1].min() - 0.05, X[:, 1].max() + 0.05)
    ax.set_aspect("equal")
    title = ax.set_title("")

    def frame(t):
        points.set_color([colors[j] for j in labels[max(t - 1, 0)]])
        stars.set_offsets(centers[t])
        for j, line in enumerate(paths):
            line.set_data(centers[: t + 1, j, 0], centers[: t + 1, j, 1])
        title.set_text(f"{names + ': ' if names else ''}after {t} layer{'s' if t != 1 else ''}")
        return [points, stars, title, *paths]

    anim = animation.FuncAnimation(fig, frame, frames=centers.shape[0], interval=interval, blit=False)
    plt.close(fig)
    return anim


def offline_html(anim):
    """The animation as a self-contained HTML player (``to_jshtml`` without its CDN stylesheet)."""
    html = re.sub(r"<link[^>]*font-awesome[^>]*>", "", anim.to_jshtml())
    html = re.sub(r'<i class="fa ([^"]+)"></i>', lambda m: _BUTTONS.get(m.group(1), "?"), html)
    if re.search(r"(src|href)=[\"']?(https?:)?//", html):
        raise RuntimeError("the animation's HTML still links to the network")
    return html
