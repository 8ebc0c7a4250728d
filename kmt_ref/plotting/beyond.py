"""Figures of the chapter "Beyond the paper": one layer at every k, real data sets, the layer taken apart."""

import numpy as np
from matplotlib import rcParams
from matplotlib.figure import Figure

__all__ = ["plot_gap_by_k", "plot_real_data", "plot_ablations"]


def plot_gap_by_k(per_k, models):
    """Final log objective minus Lloyd's, per k: median over seeds (marker) and min-max (bar).

    Parameters
    ----------
    per_k : dict
        The ``per_k`` entry of the any-k results: ``{"k=5": row, ...}``, each
        row holding ``lloyd_final`` and ``<model>_final`` (one value per seed,
        ``None`` where a run diverged).
    models : dict
        ``{model key: label}``, e.g. ``{"tied": "tied, trained at k = 10"}``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = Figure(figsize=(5.5, 3.6), layout="constrained")
    ax = fig.subplots()
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    ks = np.array([int(key.split("=")[1]) for key in per_k])
    width = 0.8 / len(models)
    for i, (key, label) in enumerate(models.items()):
        gaps = [np.array([np.nan if m is None else m - ll
                          for m, ll in zip(row[f"{key}_final"], row["lloyd_final"], strict=True)])
                for row in per_k.values()]
        x = np.arange(len(ks)) + (i - (len(models) - 1) / 2) * width
        med = np.array([np.nanmedian(g) for g in gaps])
        lo, hi = np.array([np.nanmin(g) for g in gaps]), np.array([np.nanmax(g) for g in gaps])
        ax.errorbar(x, med, yerr=[med - lo, hi - med], fmt="o", color=colors[i % len(colors)], label=label,
                    capsize=3)
    ax.axhline(0, color="k", linewidth=0.8)
    ax.set_xticks(np.arange(len(ks)), [f"k = {k}" for k in ks])
    ax.set_ylabel("log objective minus Lloyd's\n(below 0: better than Lloyd)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return fig


def plot_real_data(per_dataset, models):
    """Per data set: final log objective minus Lloyd's (left) and adjusted Rand index (right), medians over seeds.

    Parameters
    ----------
    per_dataset : dict
        The ``per_dataset`` entry of the real-data results.
    models : dict
        ``{model key: label}``; a data set without a model's entry is skipped for it.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = Figure(figsize=(8.0, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    names = list(per_dataset)
    keys = {"lloyd": "Lloyd", **models}
    width = 0.8 / len(keys)
    for i, (key, label) in enumerate(keys.items()):
        x = np.arange(len(names)) + (i - (len(keys) - 1) / 2) * width
        rows = [per_dataset[n].get(key) for n in names]
        ari = [np.nan if r is None else r["ari"] for r in rows]
        right.bar(x, ari, width, color=colors[i % len(colors)], label=label)
        if key != "lloyd":
            gap = [np.nan if r is None else r["log_objective"] - per_dataset[n]["lloyd"]["log_objective"]
                   for n, r in zip(names, rows, strict=True)]
            left.bar(x, gap, width, color=colors[i % len(colors)], label=label)
    left.axhline(0, color="k", linewidth=0.8)
    left.set_ylabel("log objective minus Lloyd's")
    right.set_ylabel("adjusted Rand index with the classes")
    for ax in (left, right):
        ax.set_xticks(np.arange(len(names)), [n.replace("_", " ") for n in names], fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    right.legend(fontsize=7)
    return fig


def plot_ablations(result):
    """What each ablation costs, as a multiple of the layer's gain over Lloyd: per seed (dots) and median (bar).

    Parameters
    ----------
    result : dict
        A dissection result: ``ablations`` (names in order) and ``per_seed``, each seed's ``final`` mean log
        objective of ``Lloyd``, ``learned`` and every ablation.

    Returns
    -------
    matplotlib.figure.Figure
        One row per ablation, grouped by block; the x axis is linear within 1 of zero and logarithmic
        beyond; the line at 1 marks a change that costs the whole gain (the layer then ties with Lloyd).
    """
    names = list(result["ablations"])
    share = np.array([[(p["final"][name] - p["final"]["learned"]) / (p["final"]["Lloyd"] - p["final"]["learned"])
                       for p in result["per_seed"]] for name in names])  # (ablations, seeds)
    blocks = list(dict.fromkeys(name.split(": ")[0] for name in names))
    colors = rcParams["axes.prop_cycle"].by_key()["color"]
    fig = Figure(figsize=(6.2, 0.26 * len(names) + 1.0), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(names))[::-1]
    for row, name, values in zip(y, names, share, strict=True):
        color = colors[blocks.index(name.split(": ")[0]) % len(colors)]
        ax.barh(row, np.median(values), color=color, alpha=0.35, height=0.7)
        ax.plot(values, np.full(len(values), row), "o", color=color, markersize=2.5)
    ax.axvline(0, color="k", linewidth=0.8)
    ax.axvline(1, color="k", linewidth=0.8, linestyle="--")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yticks(y, names, fontsize=8.5)
    ax.set_ylim(-0.7, len(names) - 0.3)
    ax.set_xlabel("cost as a multiple of the layer's gain over Lloyd\n(1: the layer then ties with Lloyd)")
    ax.grid(alpha=0.3, axis="x")
    return fig
