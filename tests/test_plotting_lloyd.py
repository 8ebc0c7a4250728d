"""The plots of the Theorem 2.1 chapter draw the numbers they are given."""

import numpy as np
import pytest

import kmt_ref

pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
from matplotlib.figure import Figure  # noqa: E402

from kmt_ref.plotting import lloyd as plots  # noqa: E402


@pytest.fixture(scope="module")
def runs():
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(0), n=300, d=2, k=3)
    reference = kmt_ref.lloyd(X, init, 4)
    transformer = kmt_ref.lloyd_transformer(2, 3, gamma=1e4).run(X, init, 4)
    return X, reference, transformer


def test_log_objective_plot_draws_each_trajectorys_log_objectives(runs):
    X, reference, transformer = runs
    fig = plots.plot_log_objectives(X, {"Lloyd": reference, "transformer": transformer})
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["Lloyd", "transformer"]
    assert np.allclose(lines[0].get_ydata(), reference.log_objectives(X))
    assert np.allclose(lines[1].get_ydata(), transformer.log_objectives(X))
    assert np.array_equal(lines[0].get_xdata(), np.arange(5))


def test_center_paths_plot_draws_one_path_per_center_through_every_iterate(runs):
    X, reference, _ = runs
    fig = plots.plot_center_paths(X, {"Lloyd": reference})
    paths = fig.axes[0].get_lines()
    assert len(paths) == 3
    for j, line in enumerate(paths):
        assert np.allclose(np.column_stack([line.get_xdata(), line.get_ydata()]), reference.centers[:, j])


def test_figure3_has_objective_paths_and_assignment_panels(runs):
    X, reference, transformer = runs
    fig = plots.plot_figure3(X, reference, transformer)
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 3
    assert "assignments after layer 4" in fig.axes[2].get_title()


def test_figure3_refuses_trajectories_of_different_lengths(runs):
    X, reference, transformer = runs
    shorter = kmt_ref.lloyd(X, reference.centers[0], 2)
    with pytest.raises(ValueError, match="same shape"):
        plots.plot_figure3(X, shorter, transformer)


def test_assignment_plot_refuses_labels_outside_the_centers(runs):
    X, reference, _ = runs
    bad = reference.labels[-1].copy()
    bad[0] = 3
    with pytest.raises(ValueError, match="labels must lie in 0..2"):
        plots.plot_assignments(X, reference.centers[-1], bad)


def test_scatter_plots_refuse_one_dimensional_data():
    X = np.arange(5.0)[:, None]
    with pytest.raises(ValueError, match="d >= 2"):
        plots.plot_center_paths(X, {"Lloyd": kmt_ref.lloyd(X, X[:2], 1)})


def test_plots_refuse_a_non_trajectory(runs):
    X, _, _ = runs
    with pytest.raises(ValueError, match="must be a Trajectory"):
        plots.plot_log_objectives(X, {"Lloyd": np.zeros((3, 2))})


def test_weight_plot_shows_every_matrix_of_the_model():
    model = kmt_ref.lloyd_transformer(2, 3)
    fig = plots.plot_weights(model)
    images = [ax.get_images()[0] for ax in fig.axes if ax.get_images()]
    assert len(images) == 12
    drawn = np.array([im.get_array() for im in images])
    expected = np.array([model.weights[b][w] for b in kmt_ref.BLOCK_NAMES for w in ("Wq", "Wk", "Wv")])
    assert np.array_equal(drawn, expected)


def test_weight_plot_refuses_unknown_blocks():
    with pytest.raises(ValueError, match="blocks must be names"):
        plots.plot_weights(kmt_ref.lloyd_transformer(2, 3), blocks=("CAX", "FFN"))


def test_latex_matrix_prints_integers_plainly_and_no_negative_zero():
    assert plots.latex_matrix([[1.0, -0.0], [0.25, -1.0]]) == (
        "\\begin{pmatrix}1 & 0 \\\\ 0.25 & -1\\end{pmatrix}"
    )


def test_latex_matrix_refuses_a_vector():
    with pytest.raises(ValueError, match="W must be 2-D"):
        plots.latex_matrix([1.0, 2.0])


def test_layer_diagram_and_offline_animation():
    import re

    import numpy as np
    from matplotlib.figure import Figure

    import kmt_ref
    from kmt_ref.plotting.diagram import animate_layers, offline_html, plot_layer_diagram

    assert isinstance(plot_layer_diagram(), Figure)
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(0), n=60, d=2, k=3)
    traj = kmt_ref.lloyd_transformer(2, 3).run(X, init, 2)
    html = offline_html(animate_layers(X, traj))
    frames = re.findall(r'frames\[\d+\] = "(data:image/png;base64,[^"]+)"', html)
    assert len(frames) == 3  # one frame per layer, and the start
    # Printed, the last frame in place of the player (the same picture, its line breaks joined).
    printed = re.search(r'<img class="kmt-last-frame" src="([^"]+)"', html).group(1)
    assert printed == frames[-1].replace("\\\n", "") != frames[0].replace("\\\n", "")
    assert "@media print" in html and html.count("data:image/png;base64") == 4
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", html)
    # Every button of the player carries a drawn icon: no icon font, no character a font may lack.
    assert "<i class" not in html and "fa-play" not in html
    assert html.count("<svg") == 9 and 'aria-label="play"' in html
