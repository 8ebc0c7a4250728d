import numpy as np
from matplotlib.figure import Figure

from kmt_ref.learning.model import ModelConfig, init_params
from kmt_ref.plotting.learning import plot_log_objective, plot_training_history, plot_weights


def test_learning_plots_return_figures():
    summary = {"median": [3.0, 2.0, None], "min": [2.9, 1.9, None], "max": [3.1, 2.1, None]}
    assert isinstance(plot_log_objective({"a": summary}, paper={"a": 1.5}), Figure)
    history = {"val_step": np.array([0, 10]), "val_ratio": np.array([2.0, 1.5])}
    assert isinstance(plot_training_history({"run": history}), Figure)
    config = ModelConfig(2, 3)
    theta = init_params(config, np.random.default_rng(0))
    fig = plot_weights(theta, config, reference=theta)
    assert isinstance(fig, Figure) and len(fig.axes) == 16


def test_attention_map_plot_has_one_row_per_model():
    from kmt_ref.plotting.learning import plot_attention_maps

    maps = {"CAX": np.ones((4, 2)) / 2, "SAX": np.eye(4), "CAC": np.ones((2, 4)) / 4, "SAC": np.eye(2)}
    fig = plot_attention_maps({"a": maps, "b": maps}, order=np.array([3, 2, 1, 0]))
    assert isinstance(fig, Figure) and len(fig.axes) == 8
