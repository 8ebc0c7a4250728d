"""Robust k-means: sparsemax-weighted centers, classical and by sparsemax attention."""

import numpy as np
import pytest

from kmt_ref import lloyd
from kmt_ref.tasks import gaussian_mixture
from kmt_ref.variants.robust import robust_kmeans, robust_kmeans_transformer

CASES = [(0, 200, 2, 3), (1, 400, 5, 6), (2, 300, 1, 4), (3, 150, 8, 10)]


@pytest.mark.parametrize("seed,n,d,k", CASES)
@pytest.mark.parametrize("a", [0.01, 1.0, 20.0])
def test_sparsemax_transformer_equals_robust_kmeans_on_random_data(seed, n, d, k, a):
    X, init, _ = gaussian_mixture(np.random.default_rng(seed), n, d, k)
    ref = robust_kmeans(X, init, 8, a)
    traj = robust_kmeans_transformer(d, k, a).run(X, init, 8)
    assert np.max(np.abs(traj.centers - ref.centers)) <= 1e-10
    assert np.array_equal(traj.labels, ref.labels)


def test_robust_kmeans_on_a_hand_computed_case():
    # One cluster, d = 1, r = (0, 1, 9). a = 1: sparsemax(0, -1, -9) = (1, 0, 0).
    # a = 1/4: sparsemax(0, -1/4, -9/4): tau = -5/8, weights (5/8, 3/8, 0).
    X = np.array([[0.0], [1.0], [3.0]])
    assert np.allclose(robust_kmeans(X, [[0.0]], 1, a=1.0).centers[1], [[0.0]])
    assert np.allclose(robust_kmeans(X, [[0.0]], 1, a=0.25).centers[1], [[3 / 8]])


def test_robust_kmeans_tends_to_lloyd_as_a_tends_to_zero():
    X, init, _ = gaussian_mixture(np.random.default_rng(4), 300, 3, 5)
    assert np.max(np.abs(robust_kmeans(X, init, 5, a=1e-9).centers - lloyd(X, init, 5).centers)) < 1e-6


def test_the_proposition_assumption_is_needed():
    # Center 0 at 0 has its only member at -10 (eps r = 100 > 1); the point 3
    # belongs to center 1 but is closer to center 0 than that member, so its
    # score -2 - 9 beats -100 and sparsemax attention picks it.
    X = np.array([[-10.0], [3.0]])
    init = np.array([[0.0], [3.5]])
    ref = robust_kmeans(X, init, 1, a=1.0)
    traj = robust_kmeans_transformer(1, 2, a=1.0).run(X, init, 1)
    assert np.allclose(ref.centers[1], [[-10.0], [3.0]])
    assert np.allclose(traj.centers[1], [[3.0], [3.0]])


def test_empty_cluster_uses_all_points_in_both_rule_and_transformer():
    X, init, _ = gaussian_mixture(np.random.default_rng(7), 100, 2, 3)
    init = np.vstack([init, [[3.0, 3.0]]])
    ref = robust_kmeans(X, init, 2, a=0.5)
    traj = robust_kmeans_transformer(2, 4, a=0.5).run(X, init, 2)
    assert np.max(np.abs(traj.centers - ref.centers)) <= 1e-10


def test_inputs_are_not_modified():
    X, init, _ = gaussian_mixture(np.random.default_rng(8), 50, 2, 3)
    X0, init0 = X.copy(), init.copy()
    robust_kmeans(X, init, 2)
    assert np.array_equal(X, X0) and np.array_equal(init, init0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: robust_kmeans(np.zeros((5, 2)), np.zeros((2, 2)), 1, a=0.0), "a=0.0"),
        (lambda: robust_kmeans(np.zeros((5, 2)), np.zeros((2, 2)), 1, a=np.inf), "a=inf"),
        (lambda: robust_kmeans(np.zeros((5, 2)), np.zeros((2, 3)), 1), "init"),
        (lambda: robust_kmeans(np.zeros((5, 2)), np.zeros((2, 2)), 1.5), "n_iter"),
        (lambda: robust_kmeans([[np.nan, 0.0]], np.zeros((1, 2)), 1), "X"),
        (lambda: robust_kmeans_transformer(2, 3, a=-1.0), "a="),
        (lambda: robust_kmeans_transformer(0, 3), "d"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
