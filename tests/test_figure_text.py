"""Figures are read in the book's column: no text smaller than a reader can read there.

A figure ``w`` inches wide is shown at most ``COLUMN_PX`` pixels wide (the
content column at a 1280 px window), so text of ``s`` points is about
``s * COLUMN_PX / (72 * w)`` pixels high. The figures that were reported at
about 5 px are checked here against ``MIN_TEXT_PX``.
"""

import json
import os

import matplotlib
import matplotlib.text
import numpy as np
import pytest

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
