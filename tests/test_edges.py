"""Correct at the numerical edges: far from the origin, huge and tiny values, bad types."""

import numpy as np
import pytest
from scipy.cluster.vq import kmeans2

import kmt_ref
from kmt_ref import dot_product_lloyd_transformer, kmeans_objective, lloyd, lloyd_transformer


def test_two_points_a_millionth_apart_at_one_million_keep_their_own_centers():
    X = np.array([[1000000.000512], [1000000.00095]])
    init = X.copy()
    assert lloyd(X, init, 1).labels.tolist() == [[0, 1]]
    assert kmeans_objective(X, init) == 0.0
    for model in (lloyd_transformer(1, 2), lloyd_transformer(1, 2, config="faithful"),
                  dot_product_lloyd_transformer(1, 2)):
        traj = model.run(X, init, 1)
        assert traj.labels.tolist() == [[0, 1]], model.name
        np.testing.assert_array_equal(traj.centers[-1], X)


@pytest.mark.parametrize("offset", [1e6, 1e7])
def test_a_shifted_mixture_clusters_as_the_unshifted_one(offset):
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(3), n=1000, d=2, k=5)
    ref = lloyd(X, init, 10)
    shifted = lloyd(X + offset, init + offset, 10)
    np.testing.assert_array_equal(shifted.labels, ref.labels)
    _, scipy_labels = kmeans2(X + offset, init + offset, iter=10, minit="matrix", missing="warn")
    np.testing.assert_array_equal(shifted.labels[-1], scipy_labels)
    for model in (lloyd_transformer(2, 5), dot_product_lloyd_transformer(2, 5)):
        traj = model.run(X + offset, init + offset, 10)
        np.testing.assert_array_equal(traj.labels, ref.labels)
        # Lloyd sums ~200 values near the offset per cluster: its means carry a few ulps of it.
        np.testing.assert_allclose(traj.centers, shifted.centers, rtol=0, atol=64 * np.spacing(offset))


def test_finite_gamma_far_from_the_origin_behaves_as_near_it():
    # gamma multiplies squared distances: at |x| = 1e6 the plain expansion's rounding
    # (about 1e-4) times gamma = 1e4 would be an error of order 1 in every score.
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(4), n=500, d=2, k=4)
    near = lloyd_transformer(2, 4, gamma=1e4).run(X, init, 5)
    far = lloyd_transformer(2, 4, gamma=1e4).run(X + 1e6, init + 1e6, 5)
    np.testing.assert_allclose(far.centers - 1e6, near.centers, atol=1e-9)


@pytest.mark.parametrize("fn", [
    lambda X, C: lloyd(X, C, 1),
    lambda X, C: lloyd_transformer(1, 2).run(X, C, 1),
    lambda X, C: kmt_ref.soft_kmeans(X, C, 1, 1.0),
    lambda X, C: kmt_ref.kmeans_plusplus(X, 2, np.random.default_rng(0)),
    lambda X, C: kmeans_objective(X, C),
])
def test_values_whose_squares_overflow_are_refused_up_front(fn):
    X = np.array([[0.0], [1e155], [3e155]])
    C = np.array([[0.0], [3e155]])
    with pytest.raises(ValueError, match=r"X.*1e\+150|rescale"):
        fn(X, C)


def test_points_closer_than_squares_can_tell_are_refused():
    with pytest.raises(ValueError, match="spread"):
        lloyd(np.array([[0.0], [1e-160]]), np.array([[0.0]]), 1)
    assert lloyd(np.zeros((3, 1)), np.zeros((1, 1)), 1).labels.tolist() == [[0, 0, 0]]  # identical is fine
