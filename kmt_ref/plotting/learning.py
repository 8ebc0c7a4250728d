"""Figures of the learning chapter: objective curves, training history, weights."""

import numpy as np
from matplotlib import rcParams
from matplotlib.figure import Figure

from ..layer import BLOCK_NAMES
from ..learning.model import unflatten

__all__ = ["plot_log_objective", "plot_training_curves", "plot_training_panels", "plot_weights",
           "plot_attention_maps"]


def _band(ax, summary, label, color, x=None):
    x = np.arange(len(summary["median"])) if x is None else x
    med = np.array([np.nan if v is None else v for v in summary["median"]], dtype=float)
    lo = np.array([np.nan if v is None else v for v in summary["min"]], dtype=float)
    hi = np.array([np.nan if v is None else v for v in summary["max"]], dtype=float)
    ax.plot(x, med, color=color, label=label, linewidth=1.5)
    ax.fill_between(x, lo, hi, color=color, alpha=0.2)


def plot_log_objective(curves, title="mean log k-means objective", paper=None):
    """Median (line) and min-max over seeds (band) of log-objective curves.

    Parameters
    ----------
    curves : dict
        ``{label: {"median": [...], "min": [...], "max": [...]}}`` (the
        summaries stored in the experiment JSON files); ``None`` entries
        (diverged) are left out of the line.
    paper : dict, optional
        ``{label: value}``: the paper's value after the last step, drawn as a
        marker at the right edge.

    Returns
    -------
    matplotlib.figure.Figure
    """
    entries = len(curves) + bool(paper)
    # The legend goes below the axes, two entries a row: curves fill the whole plot area.
    fig = Figure(figsize=(5.5, 3.6 + 0.22 * -(-entries // 2)), layout="constrained")
    ax = fig.subplots()
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    n_steps = 0
    for i, (label, summary) in enumerate(curves.items()):
        _band(ax, summary, label, colors[i % len(colors)])
        n_steps = max(n_steps, len(summary["median"]) - 1)
    for i, (label, value) in enumerate((paper or {}).items()):
        ax.plot([n_steps], [value], marker="<", color="k", linestyle="none",
                label="paper" if i == 0 else None)
        ax.annotate(label, (n_steps, value), xytext=(4, 0), textcoords="offset points", fontsize=8,
                    va="center")
    ax.set_xlabel("clustering steps (layer applications)")
    ax.set_ylabel("mean log objective")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    return fig


def plot_training_curves(histories, window=50):
    """Training loss and validation ratio over seeds: median (line), min-max (band).

    The paper's training figures (Figures 9 and 10) in the same form; one
    run is a list of one history (its band is then the line). The
    per-step training loss is averaged over windows of ``window`` steps first.

    Parameters
    ----------
    histories : dict
        ``{label: [history, ...]}``, one training history per seed (the
        ``history`` of :func:`kmt_ref.learning.train.load_result`), all of the
        same length.
    window : int
        Steps per training-loss average.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..learning.evaluate import summarize

    fig = Figure(figsize=(10, 3.6), layout="constrained")
    loss_ax, ratio_ax = fig.subplots(1, 2)
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, runs) in enumerate(histories.items()):
        color = colors[i % len(colors)]
        n_windows = len(runs[0]["train_loss"]) // window
        loss = [h["train_loss"][: n_windows * window].reshape(n_windows, window).mean(axis=1) for h in runs]
        steps = (np.arange(n_windows) + 1) * window
        _band(loss_ax, summarize(loss), f"{label} ({len(runs)} seeds)", color, x=steps)
        _band(ratio_ax, summarize([h["val_ratio"] for h in runs]), label, color, x=runs[0]["val_step"])
    ratio_ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="Lloyd (one step)")
    for ax, name in ((loss_ax, f"training loss (mean over {window} steps)"),
                     (ratio_ax, "validation objective / Lloyd")):
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig


def plot_training_panels(panels):
    """The paper's training figures from summaries: one row per panel, loss left, validation ratio right.

    Parameters
    ----------
    panels : dict
        ``{title: [row, ...]}`` as in the ``panels`` of the ``training-curves``
        experiment: each row has ``tokens``, ``k``, ``d``, ``tau``, and
        ``train_loss`` / ``val_ratio`` summaries (``median``, ``min``, ``max``
        over seeds) at ``train_loss_step`` / ``val_step``. Within a panel, the
        setting that varies picks the colour; tokens ``[x | y]`` are solid,
        ``[x]`` dashed; bands are min to max over seeds.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = Figure(figsize=(10, 3.1 * len(panels)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(panels), 2))
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    for (title, rows), (loss_ax, ratio_ax) in zip(panels.items(), axes, strict=True):
        varying = [p for p in ("tau", "k", "d") if len({r[p] for r in rows}) > 1]
        values = sorted({tuple(r[p] for p in varying) for r in rows})
        for r in rows:
            key = tuple(r[p] for p in varying)
            color = colors[values.index(key) % len(colors)]
            label = ", ".join(f"{p}={r[p]:g}" for p in varying) + f", [{'x | y' if r['tokens'] == 'd+k' else 'x'}]"
            style = "-" if r["tokens"] == "d+k" else "--"
            for ax, x, summary in ((loss_ax, r["train_loss_step"], r["train_loss"]),
                                   (ratio_ax, r["val_step"], r["val_ratio"])):
                ax.plot(x, summary["median"], color=color, linestyle=style, linewidth=1.2, label=label)
                ax.fill_between(x, summary["min"], summary["max"], color=color, alpha=0.12)
        ratio_ax.axhline(1.0, color="k", linewidth=0.8, linestyle=":")
        for ax, name in ((loss_ax, "training loss (window mean)"), (ratio_ax, "validation objective / Lloyd")):
            ax.set_yscale("log")
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("training step")
            ax.set_ylabel(name, fontsize=9)
            ax.grid(alpha=0.3)
        ratio_ax.legend(fontsize=9, ncol=2)
    return fig


def _block_edges(ax, d, width):
    """Mark the x | y split of a token-by-token matrix."""
    if d < width:
        ax.axhline(d - 0.5, color="k", linewidth=0.6)
        ax.axvline(d - 0.5, color="k", linewidth=0.6)
    ticks = [(d - 1) / 2] + ([(d + width - 1) / 2] if d < width else [])
    labels = ["x"] + (["y"] if d < width else [])
    ax.set_xticks(ticks, labels, fontsize=9)
    ax.set_yticks(ticks, labels, fontsize=9)
    ax.tick_params(length=0)


def plot_weights(theta, config, reference=None):
    """Heat maps of ``Wq^T Wk`` (what a score compares) and ``Wv`` (what a value writes).

    One row per matrix kind and model; the four blocks of a row share one
    colour scale, symmetric about 0 and shown by the row's colour bar, so
    the blocks can be compared with each other. Lines mark the ``x | y``
    split of the token coordinates.

    Parameters
    ----------
    theta : ndarray
        Learned parameters.
    config : ModelConfig
    reference : ndarray, optional
        Parameters of a hand-built model in the same format (e.g. from
        :func:`~kmt_ref.learning.model.params_from_transformer`), drawn as a
        second pair of rows for comparison (on its own scales).

    Returns
    -------
    matplotlib.figure.Figure
    """
    models = [("learned", theta)] + ([("construction", reference)] if reference is not None else [])
    fig = Figure(figsize=(9.5, 2.3 * 2 * len(models)), layout="constrained")
    axes = fig.subplots(2 * len(models), 4)
    for m, (label, th) in enumerate(models):
        params = unflatten(np.asarray(th), config)
        for j, (kind, matrix) in enumerate((("$W_q^T W_k$", lambda p: p["Wq"].T @ p["Wk"]),
                                            ("$W_v$", lambda p: p["Wv"]))):
            mats = [matrix(params[b]) for b in BLOCK_NAMES]
            lim = max(float(np.max(np.abs(M))) for M in mats) or 1.0
            row = axes[2 * m + j]
            for ax, b, M in zip(row, BLOCK_NAMES, mats, strict=True):
                image = ax.imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim)
                ax.set_title(f"{label} {b}: {kind}", fontsize=9)
                _block_edges(ax, config.d, config.width)
            fig.colorbar(image, ax=list(row), shrink=0.85, pad=0.01)
    return fig


#: Which tokens each block's queries (rows) and keys (columns) are.
_AXES = {"CAX": ("points", "centers"), "SAX": ("points", "points"),
         "CAC": ("centers", "points"), "SAC": ("centers", "centers")}


def plot_attention_maps(maps_by_model, order=None):
    """Attention weights of the four blocks, one row per model, on one colour scale [0, 1].

    Parameters
    ----------
    maps_by_model : dict
        ``{label: attention_maps(...)}``.
    order : ndarray of int, shape (n,), optional
        Order of the points (e.g. sorted by Lloyd label), applied to point
        axes so that clusters appear as blocks.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = Figure(figsize=(9.5, 2.5 * len(maps_by_model)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(maps_by_model), 4))
    for r, (label, maps) in enumerate(maps_by_model.items()):
        for c, name in enumerate(BLOCK_NAMES):
            A = np.asarray(maps[name])
            if order is not None:
                if name in ("CAX", "SAX"):
                    A = A[order]
                if name in ("SAX", "CAC"):
                    A = A[:, order]
            ax = axes[r, c]
            image = ax.imshow(A, aspect="auto", cmap="viridis", interpolation="nearest", vmin=0.0, vmax=1.0)
            ax.set_title(f"{label}: {name}", fontsize=9)
            queries, keys = _AXES[name]
            ax.set_ylabel(f"{queries} (queries)", fontsize=9)
            ax.set_xlabel(f"{keys} (keys)", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, pad=0.01, label="attention weight")
    return fig
