import numpy as np
import pytest

from kmt_ref.learning.model import ModelConfig, init_params

pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
from matplotlib.figure import Figure  # noqa: E402

from kmt_ref.plotting.learning import plot_log_objective, plot_weights  # noqa: E402


def test_learning_plots_return_figures():
    summary = {"median": [3.0, 2.0, None], "min": [2.9, 1.9, None], "max": [3.1, 2.1, None]}
    assert isinstance(plot_log_objective({"a": summary}, paper={"a": 1.5}), Figure)
    config = ModelConfig(2, 3)
    theta = init_params(config, np.random.default_rng(0))
    fig = plot_weights(theta, config, reference=theta)
    assert isinstance(fig, Figure) and len(fig.axes) == 16 + 4  # 4 rows of blocks, a colour bar each
    maps = [ax for ax in fig.axes if ax.get_images() and ax.get_label() != "<colorbar>"]
    assert len(maps) == 16
    for row in range(4):  # one colour scale per row, symmetric about 0
        limits = {maps[4 * row + c].get_images()[0].get_clim() for c in range(4)}
        assert len(limits) == 1 and next(iter(limits))[0] == -next(iter(limits))[1]


def test_attention_map_plot_has_one_row_per_model():
    from kmt_ref.plotting.learning import plot_attention_maps

    maps = {"CAX": np.ones((4, 2)) / 2, "SAX": np.eye(4), "CAC": np.ones((2, 4)) / 4, "SAC": np.eye(2)}
    fig = plot_attention_maps({"a": maps, "b": maps}, order=np.array([3, 2, 1, 0]))
    assert isinstance(fig, Figure) and len(fig.axes) == 8 + 1  # and one colour bar
    cax = fig.axes[1]
    assert cax.get_ylabel() == "points (queries)" and cax.get_xlabel() == "points (keys)"  # SAX
    assert all(ax.get_images()[0].get_clim() == (0.0, 1.0) for ax in fig.axes[:8])


def test_training_curves_plot_median_and_band_over_seeds():
    from kmt_ref.plotting.learning import plot_training_curves

    def history(offset):
        return {"train_loss": np.linspace(10, 1, 100) + offset, "val_step": np.arange(0, 100, 10),
                "val_ratio": np.linspace(3, 0.9, 10) + offset}

    fig = plot_training_curves({"a": [history(0.0), history(0.5)], "b": [history(1.0)]}, window=10)
    loss_ax, ratio_ax = fig.axes
    medians = [line.get_ydata() for line in loss_ax.get_lines()]
    np.testing.assert_allclose(medians[0], np.linspace(10, 1, 100).reshape(10, 10).mean(axis=1) + 0.25)
    assert len(ratio_ax.get_lines()) == 3  # two medians and Lloyd's line


def test_training_panels_plot_one_row_per_panel_and_a_line_per_setting():
    from kmt_ref.plotting.learning import plot_training_panels

    def row(tokens, tau, offset):
        summary = {"median": [3.0 + offset, 2.0], "min": [2.9, 1.9], "max": [3.1 + offset, 2.1]}
        return dict(tokens=tokens, k=6, d=4, tau=tau, train_loss_step=[50, 100], train_loss=summary,
                    val_step=[0, 50], val_ratio=summary)

    panels = {"a": [row("d+k", 1.0, 0), row("d", 1.0, 1), row("d+k", 0.1, 2)], "b": [row("d+k", 0.1, 0)]}
    fig = plot_training_panels(panels)
    assert isinstance(fig, Figure) and len(fig.axes) == 4
    assert len(fig.axes[1].get_lines()) == 3 + 1  # three settings and the Lloyd line
    labels = [line.get_label() for line in fig.axes[1].get_lines()[:3]]
    assert labels == ["tau=1, [x | y]", "tau=1, [x]", "tau=0.1, [x | y]"]


def test_beyond_figures_draw_one_series_per_model_and_a_zero_line():
    from kmt_ref.plotting.beyond import plot_gap_by_k, plot_real_data

    per_k = {f"k={k}": dict(lloyd_final=[1.0, 2.0], tied_final=[1.5, None], standard_final=[0.5, 1.5])
             for k in (5, 10)}
    fig = plot_gap_by_k(per_k, {"tied": "tied", "standard": "standard"})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k = 5", "k = 10"]
    assert len(ax.containers) == 2 and ax.get_legend() is not None
    row = dict(lloyd=dict(log_objective=1.0, ari=0.5), tied=dict(log_objective=1.4, ari=0.2))
    fig = plot_real_data({"iris": row, "digits": dict(row, standard=dict(log_objective=1.1, ari=0.4))},
                         {"tied": "tied", "standard": "standard"})
    left, right = fig.axes
    heights = [p.get_height() for p in left.patches]
    assert np.allclose(sorted(h for h in heights if np.isfinite(h)), [0.1, 0.4, 0.4])  # gaps to Lloyd
    assert len(right.patches) == 3 * 2  # Lloyd, tied, standard for both data sets (missing: NaN bar)


def test_the_ablation_figure_draws_each_ablation_s_median_share_and_every_seed():
    from kmt_ref.plotting.beyond import plot_ablations

    per_seed = [dict(final={"Lloyd": 2.0, "learned": 1.0, "CAX: removed": 4.0, "SAX: removed": 1.5}),
                dict(final={"Lloyd": 3.0, "learned": 2.0, "CAX: removed": 3.0, "SAX: removed": 2.0})]
    fig = plot_ablations(dict(ablations={"CAX: removed": {}, "SAX: removed": {}}, per_seed=per_seed))
    ax = fig.axes[0]
    labels = dict(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels()), strict=True))
    assert labels == {1: "CAX: removed", 0: "SAX: removed"}  # the first ablation on top
    assert sorted(p.get_width() for p in ax.patches) == [0.25, 2.0]  # medians of (0.5, 0) and (3, 1)
    assert sorted(x for line in ax.get_lines()[:2] for x in line.get_xdata()) == [0.0, 0.5, 1.0, 3.0]


def test_plotting_without_matplotlib_says_how_to_install_it():
    import subprocess
    import sys

    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "try:\n    import kmt_ref.plotting\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "pip install 'kmt-ref[plot]'" in out
