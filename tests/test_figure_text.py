"""Figures are read in the book's column: no text smaller than a reader can read there.

A figure ``w`` inches wide is shown at most ``COLUMN_PX`` pixels wide (the
content column at a 1280 px window), so text of ``s`` points is about
``s * COLUMN_PX / (72 * w)`` pixels high. The figures that were reported at
about 5 px are checked here against ``MIN_TEXT_PX``.
"""

import json
import os

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
import matplotlib  # noqa: E402
import matplotlib.collections  # noqa: E402
import matplotlib.text  # noqa: E402

matplotlib.use("Agg")

#: Width of the book's content column at a 1280 px window, in CSS pixels (measured: 760 to 800).
COLUMN_PX = 760
#: The smallest text height, in pixels, a figure may show at that width.
MIN_TEXT_PX = 9.0


def smallest_text_px(fig):
    """Pixel height of the smallest visible text of ``fig`` shown at the column width."""
    width_in = fig.get_figwidth()
    scale = min(1.0, COLUMN_PX / (width_in * fig.dpi)) * fig.dpi / 72  # pixels per point
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * scale


def test_the_measure_catches_small_text():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 5), dpi=100)
    fig.text(0.5, 0.5, "tiny", fontsize=7)
    assert smallest_text_px(fig) == pytest.approx(7 * COLUMN_PX / (72 * 11))
    assert smallest_text_px(fig) < MIN_TEXT_PX


def test_the_layer_diagram_is_readable():
    from kmt_ref.plotting.diagram import plot_layer_diagram

    assert smallest_text_px(plot_layer_diagram()) >= MIN_TEXT_PX


def test_the_training_figures_are_readable():
    from kmt_ref.learning.protocols import RESULTS_DIR
    from kmt_ref.plotting.learning import plot_training_panels

    with open(os.path.join(RESULTS_DIR, "figures", "training-curves.json")) as f:
        panels = json.load(f)["panels"]
    assert smallest_text_px(plot_training_panels(panels)) >= MIN_TEXT_PX


def test_the_paper_sweep_heatmaps_are_readable():
    from kmt_ref.plotting.certificate import paper_sweep_heatmaps
    from kmt_ref.programs.paper_sweep import heatmaps, load_paper_sweep

    assert smallest_text_px(paper_sweep_heatmaps(heatmaps(load_paper_sweep(), 1.0), 1.0)) >= MIN_TEXT_PX


def test_the_outlier_figure_is_readable():
    from kmt_ref.plotting.variants import plot_outlier_experiment
    from kmt_ref.programs.outliers import outlier_experiment

    result = outlier_experiment(np.random.default_rng(0), n=100, n_iter=3, n_tasks=2)
    assert smallest_text_px(plot_outlier_experiment(result)) >= MIN_TEXT_PX


def test_the_weight_and_attention_grids_and_the_ablations_are_readable():
    from kmt_ref.learning import ModelConfig, init_params
    from kmt_ref.learning.protocols import committed
    from kmt_ref.plotting.beyond import plot_ablations
    from kmt_ref.plotting.learning import plot_attention_maps, plot_weights

    config = ModelConfig(d=3, k=2)
    theta = init_params(config, np.random.default_rng(0))
    assert smallest_text_px(plot_weights(theta, config, reference=theta)) >= MIN_TEXT_PX
    maps = {name: np.full(shape, 0.5) for name, shape in
            (("CAX", (4, 2)), ("SAX", (4, 4)), ("CAC", (2, 4)), ("SAC", (2, 2)))}
    assert smallest_text_px(plot_attention_maps({"a": maps, "b": maps})) >= MIN_TEXT_PX
    assert smallest_text_px(plot_ablations(committed("dissection", "paper"))) >= MIN_TEXT_PX


def _along(path):
    """Points every pixel or so along a drawn polyline (display coordinates), so a legend over a segment
    between two far vertices is seen."""
    path = path[np.isfinite(path).all(axis=1)]
    steps = [np.linspace(a, b, max(2, int(np.hypot(*(b - a))) + 1)) for a, b in zip(path[:-1], path[1:], strict=True)]
    return np.concatenate(steps) if steps else path


def data_under_legends(fig):
    """Data (markers, lines) of each axes that its legend's box covers, drawn, in display coordinates."""
    fig.canvas.draw()
    covered = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent()
        shown = [_along(xy) if line.get_linestyle() not in ("None", "none", "") else xy
                 for line in ax.get_lines() for xy in [ax.transData.transform(line.get_xydata())]]
        shown += [ax.transData.transform(c.get_offsets()) for c in ax.collections
                  if isinstance(c, matplotlib.collections.PathCollection)]  # scatter markers
        covered += [tuple(p) for xy in shown for p in xy if np.isfinite(p).all() and box.contains(*p)]
    return covered


def test_the_legend_check_sees_a_legend_over_data():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    ax.plot(np.linspace(0, 1, 50), np.full(50, 0.95), label="a line along the top")
    ax.legend(loc="upper right")
    assert data_under_legends(ax.figure)


def test_no_legend_covers_data():
    from kmt_ref.learning.protocols import committed
    from kmt_ref.plotting.learning import plot_log_objective
    from kmt_ref.plotting.variants import plot_medoid_law, plot_outlier_experiment
    from kmt_ref.programs.outliers import outlier_experiment
    from kmt_ref.variants.kmedoids import medoid_law

    per_T = committed("multi-step", "beyond")["per_n_layers"]
    multi = plot_log_objective({"Lloyd": per_T["T=1"]["lloyd"],
                                **{f"trained through {key[2:]}": row["learned"] for key, row in per_T.items()}})
    outliers = plot_outlier_experiment(outlier_experiment(np.random.default_rng(0), n=100, n_iter=3, n_tasks=2))
    X = np.random.default_rng(1).uniform(size=(200, 2))
    medoids = plot_medoid_law(X, X[:3], medoid_law(X, X[:3], 0.05))
    for name, fig in (("multi-step", multi), ("outliers", outliers), ("k-medoids", medoids)):
        assert not data_under_legends(fig), name
