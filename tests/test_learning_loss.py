import numpy as np
import pytest

from kmt_ref import lloyd
from kmt_ref.learning.baseline import lloyd_batch
from kmt_ref.learning.loss import kmeans_objectives, smoothed_objective
from kmt_ref.tasks import sample_tasks


def _tasks():
    rng = np.random.default_rng(0)
    X, init = sample_tasks(rng, 3, 60, 3, 4)
    return X, init + 0.05 * rng.standard_normal(init.shape)


def test_smoothed_loss_is_an_upper_bound_of_the_objective():
    X, C = _tasks()
    true = kmeans_objectives(X, C)
    for tau in (10.0, 1.0, 0.1, 0.01):
        assert np.all(smoothed_objective(X, C, tau) >= true - 1e-12)
    assert np.all(smoothed_objective(X, C, 1.0) > true + 1e-3)


def test_smoothed_loss_tends_to_the_objective_as_tau_goes_to_zero():
    X, C = _tasks()
    true = kmeans_objectives(X, C)
    gaps = [np.max(smoothed_objective(X, C, tau) - true) for tau in (1e-1, 1e-2, 1e-3, 1e-5)]
    assert all(a > b for a, b in zip(gaps, gaps[1:], strict=False))
    assert gaps[-1] < 1e-8 * true.max()


def test_objectives_match_the_classical_objective():
    from kmt_ref import kmeans_objective

    X, C = _tasks()
    np.testing.assert_allclose(kmeans_objectives(X, C), [kmeans_objective(x, c) for x, c in zip(X, C, strict=True)])


@pytest.mark.parametrize("tau", [0.0, -1.0, np.nan])
def test_nonpositive_tau_raises(tau):
    X, C = _tasks()
    with pytest.raises(ValueError, match="tau"):
        smoothed_objective(X, C, tau)


def test_batched_lloyd_equals_classical_lloyd_including_empty_clusters():
    X, init = _tasks()
    init[0, 1] = 50.0  # far away: its cluster is empty from the first step
    traj = lloyd_batch(X, init, 5)
    for t in range(X.shape[0]):
        np.testing.assert_allclose(traj[:, t], lloyd(X[t], init[t], 5).centers, atol=1e-12)


def test_lloyd_batch_random_point_rule_moves_an_empty_center_onto_a_data_point():
    # Center 1 (at 100) gets no point: the authors' rule puts it on a data point of
    # its task; the other center is the ordinary member mean.
    X = np.array([[[0.0], [1.0], [2.0]], [[5.0], [6.0], [7.0]]])
    init = np.array([[[1.0], [100.0]], [[6.0], [100.0]]])
    out = lloyd_batch(X, init, 1, empty_cluster="random_point", rng=np.random.default_rng(0))
    np.testing.assert_allclose(out[1, :, 0, 0], [1.0, 6.0])
    for b in range(2):
        assert out[1, b, 1, 0] in X[b, :, 0]
    np.testing.assert_allclose(lloyd_batch(X, init, 1)[1, :, 1, 0], [1.0, 6.0])  # global mean
    with pytest.raises(ValueError, match="rng"):
        lloyd_batch(X, init, 1, empty_cluster="random_point")
    with pytest.raises(ValueError, match="empty_cluster"):
        lloyd_batch(X, init, 1, empty_cluster="keep")
