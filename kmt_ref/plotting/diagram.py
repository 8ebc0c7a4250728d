"""A picture of one layer, and an animation of the transformer running Lloyd's algorithm."""

import re

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import animation
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from ..layer import BLOCK_NAMES

__all__ = ["plot_layer_diagram", "animate_layers", "offline_html"]

#: The player's button icons as inline SVG paths (12 x 12): its icon font is a CDN stylesheet,
#: and media-control characters are missing from common fonts (they would show as empty boxes).
_BUTTONS = {
    "fa-minus": ("slower", "M1 5h10v2H1z"),
    "fa-plus": ("faster", "M1 5h10v2H1zM5 1h2v10H5z"),
    "fa-fast-backward": ("first frame", "M0 1h2v10H0zM7 1L2 6l5 5zM12 1L7 6l5 5z"),
    "fa-step-backward": ("previous frame", "M1 1h2v10H1zM11 1L4 6l7 5z"),
    "fa-play fa-flip-horizontal": ("play backwards", "M10 1L2 6l8 5z"),
    "fa-pause": ("pause", "M2 1h3v10H2zM7 1h3v10H7z"),
    "fa-play": ("play", "M2 1l8 5-8 5z"),
    "fa-step-forward": ("next frame", "M1 1l7 5-7 5zM9 1h2v10H9z"),
    "fa-fast-forward": ("last frame", "M0 1l5 5-5 5zM5 1l5 5-5 5zM10 1h2v10h-2z"),
}


def _icon(name):
    label, path = _BUTTONS[name]
    return (f'<svg width="12" height="12" viewBox="0 0 12 12" role="img" aria-label="{label}">'
            f'<path fill="currentColor" d="{path}"/></svg>')


#: What each block reads, as drawn: (queries, keys and values, what it writes).
_READS = {
    "CAX": ("P_t", "Q_t", "the new\nassignment"),
    "SAX": ("P_t", "P_t", "minus the old\nassignment"),
    "CAC": ("Q_t", "P_t+1 (new)", "the new\ncenter"),
    "SAC": ("Q_t", "Q_t", "minus the old\ncenter"),
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
    # 9 inches wide with 8.5 pt text: at the book's column width (about 760 px) no letter is under 9 px.
    fig = Figure(figsize=(9, 4.4))
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
    boxes = {"CAX": (1.9, 2.85), "SAX": (4.4, 2.85), "CAC": (6.75, 1.95), "SAC": (9.25, 1.95)}
    for name in BLOCK_NAMES:
        x, y = boxes[name]
        queries, keys, writes = _READS[name]
        _box(ax, x, y, 2.3, 1.3, f"{name}\nqueries: {queries}\nkeys, values: {keys}\nadds: {writes}",
             colors[name], fontsize=8.5)
    reads = [((0.9, y_p), (1.3, 3.5)), ((0.6, y_q), (1.2, 2.2)),  # CAX: old P; old Q
             ((3.6, y_p), (4.0, 3.5)),  # SAX: old P
             ((6.2, y_p), (6.5, 2.6)),  # CAC: the NEW points (after the "+")
             ((5.9, y_q), (6.2, 1.3)), ((8.4, y_q), (8.8, 1.3))]  # CAC, SAC: old Q
    for start, end in reads:
        _arrow(ax, start, end, color="0.45", ls="--")
    for name, (x, y) in boxes.items():
        target = plus["P" if name in ("CAX", "SAX") else "Q"]
        start = (x + 0.6, y + 0.65) if name in ("CAX", "SAX") else (x + 0.6, y - 0.65)
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


#: Paper cannot play: a printed page shows the last frame instead of the player.
PRINT_LAST_FRAME = (
    "<style>.kmt-last-frame { display: none; }"
    " @media print { .animation { display: none !important; }"
    " .kmt-last-frame { display: block; max-width: 100%; margin: 0 auto; } }</style>"
)


def offline_html(anim):
    """The animation as a self-contained HTML player (``to_jshtml`` without its CDN stylesheet); printed,
    its last frame."""
    html = re.sub(r"<link[^>]*font-awesome[^>]*>", "", anim.to_jshtml())
    html = re.sub(r'<i class="fa ([^"]+)"></i>', lambda m: _icon(m.group(1)), html)
    last = re.findall(r'frames\[\d+\] = "(data:image/[^"]+)"', html)[-1].replace("\\\n", "")
    html += f'{PRINT_LAST_FRAME}<img class="kmt-last-frame" src="{last}" alt="the last frame of the animation">'
    if re.search(r"(src|href)=[\"']?(https?:)?//", html):
        raise RuntimeError("the animation's HTML still links to the network")
    return html
