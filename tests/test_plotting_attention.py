"""The attention maps of the book are computed by the library's attention block."""

import numpy as np
import pytest

from kmt_ref.attention import softmax
from kmt_ref.geometry import nearest_center, squared_distances

pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
from matplotlib.figure import Figure  # noqa: E402

import kmt_ref.plotting  # noqa: E402
from kmt_ref.plotting import attention as plots  # noqa: E402

CENTERS = np.array([[0.2, 0.2], [0.8, 0.3], [0.5, 0.8]])


def test_grid_weights_are_probabilities():
    w = plots.attention_weights_on_grid(CENTERS, 30.0, resolution=20)
    assert w.shape == (20, 20, 3)
    assert np.all(w >= 0) and np.allclose(w.sum(axis=-1), 1.0)


def test_grid_hardmax_weights_pick_the_nearest_center_away_from_ties():
    w = plots.attention_weights_on_grid(CENTERS, np.inf, resolution=41).reshape(-1, 3)
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 41), np.linspace(0, 1, 41)), axis=-1).reshape(-1, 2)
    D2 = np.sort(squared_distances(grid, CENTERS), axis=1)
    clear = D2[:, 1] - D2[:, 0] > 1e-12
    assert clear.mean() > 0.9
    assert np.all(w[clear].max(axis=1) == 1.0)
    assert np.array_equal(w[clear].argmax(axis=1), nearest_center(grid, CENTERS)[clear])


def test_grid_softmax_weights_are_a_gaussian_kernel_of_the_distance():
    w = plots.attention_weights_on_grid(CENTERS, 5.0, extent=(0, 1, 0, 1), resolution=3)
    point = np.array([0.5, 0.5])  # the middle of the 3 x 3 grid
    expected = softmax(-5.0 * np.sum((CENTERS - point) ** 2, axis=1))
    assert np.allclose(w[1, 1], expected)


def test_dot_product_maps_differ_from_euclidean_maps():
    eu = plots.attention_weights_on_grid(CENTERS, np.inf, "euclidean", resolution=30)
    dot = plots.attention_weights_on_grid(CENTERS, np.inf, "dot", resolution=30)
    assert not np.array_equal(eu, dot)


def test_attention_maps_have_one_panel_per_gamma():
    fig = plots.plot_attention_maps(CENTERS, [1.0, 10.0, np.inf], resolution=10)
    assert isinstance(fig, Figure) and len(fig.axes) == 3


def test_attention_maps_refuse_mismatched_scores():
    with pytest.raises(ValueError, match="one per gamma"):
        plots.plot_attention_maps(CENTERS, [1.0, 2.0], score=["dot"])


def test_grid_refuses_an_empty_extent():
    with pytest.raises(ValueError, match="extent"):
        plots.attention_weights_on_grid(CENTERS, 1.0, extent=(1, 0, 0, 1))


def test_temperature_sweep_draws_the_softmax_weights():
    scores = np.array([0.0, -0.5, -1.0])
    gammas = [1.0, 10.0]
    fig = plots.plot_temperature_sweep(scores, gammas)
    lines = fig.axes[0].get_lines()
    drawn = np.array([line.get_ydata() for line in lines[:3]]).T
    assert np.allclose(drawn, softmax(np.outer(gammas, scores)))


def test_temperature_sweep_refuses_non_positive_gamma():
    with pytest.raises(ValueError, match="gammas"):
        plots.plot_temperature_sweep([0.0, 1.0], [0.0, 1.0])


def test_importing_the_plotting_package_in_ipython_makes_figures_display_as_png():
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell",
                                           reason="needs IPython, of the test extra: pip install -e '.[test]'")
    InteractiveShell = interactiveshell.InteractiveShell
    shell = InteractiveShell.instance()
    try:
        kmt_ref.plotting._register_notebook_display()
        data, _ = shell.display_formatter.format(plots.plot_temperature_sweep([0.0, 1.0], [1.0]))
        assert data["image/png"][:4] == b"\x89PNG"
    finally:
        InteractiveShell.clear_instance()
