import numpy as np
import pytest

from kmt_ref import kmeans_objective, lloyd
from kmt_ref.learning.loss import smoothed_objective
from kmt_ref.tasks import sample_tasks


def _tasks():
    rng = np.random.default_rng(0)
    X, init = sample_tasks(rng, 3, 60, 3, 4)
    return X, init + 0.05 * rng.standard_normal(init.shape)


def test_smoothed_loss_is_an_upper_bound_of_the_objective():
    X, C = _tasks()
    true = kmeans_objective(X, C)
    for tau in (10.0, 1.0, 0.1, 0.01):
        assert np.all(smoothed_objective(X, C, tau) >= true - 1e-12)
    assert np.all(smoothed_objective(X, C, 1.0) > true + 1e-3)


def test_smoothed_loss_tends_to_the_objective_as_tau_goes_to_zero():
    X, C = _tasks()
    true = kmeans_objective(X, C)
    gaps = [np.max(smoothed_objective(X, C, tau) - true) for tau in (1e-1, 1e-2, 1e-3, 1e-5)]
    assert all(a > b for a, b in zip(gaps, gaps[1:], strict=False))
    assert gaps[-1] < 1e-8 * true.max()


def test_the_objective_of_a_batch_is_each_task_s_objective_bit_for_bit():
    X, C = _tasks()
    np.testing.assert_array_equal(kmeans_objective(X, C), [kmeans_objective(x, c) for x, c in zip(X, C, strict=True)])


@pytest.mark.parametrize("tau", [0.0, -1.0, np.nan])
def test_nonpositive_tau_raises(tau):
    X, C = _tasks()
    with pytest.raises(ValueError, match="tau"):
        smoothed_objective(X, C, tau)


@pytest.mark.parametrize("empty_cluster", ["global_mean", "keep"])
def test_lloyd_on_a_batch_is_lloyd_on_each_task_bit_for_bit_including_empty_clusters(empty_cluster):
    X, init = _tasks()
    init[0, 1] = 50.0  # far away: its cluster is empty from the first step
    traj = lloyd(X, init, 5, empty_cluster=empty_cluster)
    assert traj.centers.shape == (6,) + init.shape and traj.labels.shape == (5,) + X.shape[:2]
    for t in range(X.shape[0]):
        alone = lloyd(X[t], init[t], 5, empty_cluster=empty_cluster)
        np.testing.assert_array_equal(traj.centers[:, t], alone.centers)
        np.testing.assert_array_equal(traj.labels[:, t], alone.labels)
    with pytest.raises(ValueError, match="cluster 1 of task 0 is empty at iteration 0"):
        lloyd(X, init, 5, empty_cluster="raise")


def test_lloyd_random_point_rule_moves_an_empty_center_onto_a_data_point():
    # Center 1 (at 100) gets no point: the authors' rule puts it on a data point of
    # its task; the other center is the ordinary member mean.
    X = np.array([[[0.0], [1.0], [2.0]], [[5.0], [6.0], [7.0]]])
    init = np.array([[[1.0], [100.0]], [[6.0], [100.0]]])
    out = lloyd(X, init, 1, empty_cluster="random_point", rng=np.random.default_rng(0)).centers
    np.testing.assert_allclose(out[1, :, 0, 0], [1.0, 6.0])
    for b in range(2):
        assert out[1, b, 1, 0] in X[b, :, 0]
    np.testing.assert_allclose(lloyd(X, init, 1).centers[1, :, 1, 0], [1.0, 6.0])  # global mean
    one = lloyd(X[1], init[1], 1, empty_cluster="random_point", rng=np.random.default_rng(0)).centers
    assert one[1, 1, 0] in X[1, :, 0]
    with pytest.raises(ValueError, match="rng"):
        lloyd(X, init, 1, empty_cluster="random_point")
    with pytest.raises(ValueError, match="empty_cluster"):
        lloyd(X, init, 1, empty_cluster="nearest")


def test_the_smoothed_loss_is_its_formula_on_a_task_computed_by_hand():
    # Points 0 and 2, centers 0 and 1, tau = 1/2: r = [[0, 1], [4, 1]], and each row's softmax of -r / tau
    # weighs its r: e^-2 / (1 + e^-2) for the first point, (4 e^-6 + 1) / (1 + e^-6) for the second.
    X, C = np.array([[[0.0], [2.0]]]), np.array([[[0.0], [1.0]]])
    by_hand = np.exp(-2) / (1 + np.exp(-2)) + (4 * np.exp(-6) + 1) / (1 + np.exp(-6))
    np.testing.assert_allclose(smoothed_objective(X, C, 0.5), [by_hand], rtol=1e-14)


def test_the_training_loss_is_the_smoothed_objective_at_the_run_s_temperature():
    # batch_loss: the mean over tasks of sum_i sum_j softmax_j(-r_ij / tau) r_ij of the layer's centers, at
    # config.tau exactly (written out here in NumPy, apart from the library's loss).
    from kmt_ref.learning.config import TrainConfig
    from kmt_ref.learning.model import forward, init_params
    from kmt_ref.learning.train import batch_loss

    config = TrainConfig(d=2, k=3, n=12, batch=2, tau=0.37)
    rng = np.random.default_rng(4)
    theta = init_params(config.model, rng)
    X, init = rng.random((2, 12, 2)), rng.random((2, 3, 2))
    C = forward(theta, X, init, config.model)
    r = ((X[:, :, None, :] - C[:, None, :, :]) ** 2).sum(-1)
    w = np.exp(-(r - r.min(-1, keepdims=True)) / 0.37)
    want = np.mean(np.sum(w / w.sum(-1, keepdims=True) * r, axis=(1, 2)))
    np.testing.assert_allclose(batch_loss(theta, X, init, config), want, rtol=1e-12)
