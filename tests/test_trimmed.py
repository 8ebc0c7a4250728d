"""Trimmed k-means: the 1997 rule, the gap rule, and the norm-max transformer."""

import numpy as np
import pytest

from kmt_ref import lloyd
from kmt_ref.geometry import nearest_center
from kmt_ref.objective import assigned_squared_distances
from kmt_ref.tasks import gaussian_mixture
from kmt_ref.variants.trimmed import (
    gap_keep,
    gap_trimmed_kmeans,
    trimmed_kmeans,
    trimmed_kmeans_transformer,
)

CASES = [(0, 200, 2, 3), (1, 400, 5, 6), (2, 300, 1, 4), (3, 150, 8, 10)]


@pytest.mark.parametrize("seed,n,d,k", CASES)
@pytest.mark.parametrize("t", [0.01, 0.3, 5.0])
def test_normmax_transformer_equals_gap_trimmed_kmeans_on_random_data(seed, n, d, k, t):
    X, init, _ = gaussian_mixture(np.random.default_rng(seed), n, d, k)
    ref = gap_trimmed_kmeans(X, init, 8, t)
    traj = trimmed_kmeans_transformer(d, k, t).run(X, init, 8)
    assert np.max(np.abs(traj.centers - ref.centers)) <= 1e-10
    assert np.array_equal(traj.labels, ref.labels)


def test_gap_keep_matches_its_definition_by_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(50):
        r = rng.exponential(size=rng.integers(1, 12))
        t = rng.uniform(0.01, 3.0)
        by_definition = np.array([np.sum(np.maximum(ri - r, 0.0)) <= t for ri in r])
        assert np.array_equal(gap_keep(r, t), by_definition)


def test_gap_keep_on_a_hand_computed_cluster():
    # gaps of 0, 1, 2, 10: 0, 1, 1 + 2 = 3, 10 + 9 + 8 = 27
    assert gap_keep(np.array([2.0, 0.0, 10.0, 1.0]), 3.0).tolist() == [True, True, False, True]


def test_trimmed_kmeans_on_a_hand_computed_case():
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0], [100.0]])
    traj = trimmed_kmeans(X, [[0.0], [10.0]], 2, alpha=1 / 7)  # floor(7/7) = 1 point trimmed: 100
    assert np.allclose(traj.centers[1:], [[1.0], [11.0]])
    assert np.allclose(lloyd(X, [[0.0], [10.0]], 1).centers[1], [[1.0], [33.25]])


def test_trimmed_kmeans_with_alpha_zero_is_lloyd():
    X, init, _ = gaussian_mixture(np.random.default_rng(4), 300, 3, 5)
    assert np.array_equal(trimmed_kmeans(X, init, 6, 0.0).centers, lloyd(X, init, 6).centers)


def test_trimmed_objective_never_increases():
    # The concentration-step property: the sum of the n - floor(alpha n)
    # smallest squared distances to the nearest center is non-increasing.
    rng = np.random.default_rng(5)
    X, init, _ = gaussian_mixture(rng, 400, 2, 5)
    X = np.vstack([X, rng.uniform(-5, 6, size=(30, 2))])
    alpha = 0.1
    n_keep = len(X) - int(np.floor(alpha * len(X)))
    traj = trimmed_kmeans(X, init, 10, alpha)
    objective = [np.sort(assigned_squared_distances(X, C, nearest_center(X, C)))[:n_keep].sum()
                 for C in traj.centers]
    assert np.all(np.diff(objective) <= 1e-12)


def test_the_separation_assumption_is_needed():
    # With 2G far below t + r the proposition's assumption fails: non-members
    # enter the normmax support and the transformer leaves the gap rule.
    X, init, _ = gaussian_mixture(np.random.default_rng(6), 200, 2, 4)
    ref = gap_trimmed_kmeans(X, init, 3, 1.0)
    traj = trimmed_kmeans_transformer(2, 4, 1.0, separation=1e-3).run(X, init, 3)
    assert np.max(np.abs(traj.centers - ref.centers)) > 1e-3


def test_empty_cluster_uses_all_points_in_both_rule_and_transformer():
    X, init, _ = gaussian_mixture(np.random.default_rng(7), 100, 2, 3)
    init = np.vstack([init, [[30.0, 30.0]]])  # no point is nearest to it
    ref = gap_trimmed_kmeans(X, init, 2, 0.5)
    traj = trimmed_kmeans_transformer(2, 4, 0.5).run(X, init, 2)
    assert np.max(np.abs(traj.centers - ref.centers)) <= 1e-10


def test_inputs_are_not_modified():
    X, init, _ = gaussian_mixture(np.random.default_rng(8), 50, 2, 3)
    X0, init0 = X.copy(), init.copy()
    trimmed_kmeans(X, init, 2, 0.1)
    gap_trimmed_kmeans(X, init, 2, 0.1)
    assert np.array_equal(X, X0) and np.array_equal(init, init0)


@pytest.mark.parametrize("alpha", [-0.1, 1.0, 1.5, np.nan, "0.1"])
def test_trimmed_kmeans_rejects_alpha_outside_0_1(alpha):
    with pytest.raises(ValueError, match="alpha"):
        trimmed_kmeans(np.zeros((10, 2)), np.zeros((2, 2)), 1, alpha)


def test_trimmed_kmeans_rejects_a_trim_leaving_fewer_than_k_points():
    X = np.arange(10.0).reshape(5, 2)
    trimmed_kmeans(X, X[:3], 1, 0.5)  # trims 2, keeps 3 = k: fine
    with pytest.raises(ValueError, match=r"alpha=0.7 trims 3 of n=5 points and leaves 2 < k=3"):
        trimmed_kmeans(X, X[:3], 1, 0.7)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: gap_trimmed_kmeans(np.zeros((5, 2)), np.zeros((2, 2)), 1, 0.0), "threshold="),
        (lambda: gap_trimmed_kmeans(np.zeros((5, 2)), np.zeros((2, 3)), 1, 1.0), "init"),
        (lambda: gap_trimmed_kmeans(np.zeros((5, 2)), np.zeros((2, 2)), -1, 1.0), "n_iter=-1"),
        (lambda: trimmed_kmeans(np.zeros((5, 2)), np.zeros((6, 2)), 1, 0.0), "k"),
        (lambda: trimmed_kmeans(np.zeros((5, 2)), np.zeros((2, 2)), 1, 0.0, "nan"), "empty_cluster"),
        (lambda: trimmed_kmeans_transformer(2, 3, threshold=-1.0), "threshold="),
        (lambda: trimmed_kmeans_transformer(2, 3, threshold=1.0, separation=0), "separation="),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_quantile_trimmed_kmeans_matches_a_hand_computed_iteration():
    # One cluster of 1-D points 0, 1, 2, 3, 10 around center 3.2: squared distances
    # 10.24, 4.84, 1.44, 0.04, 46.24; their 0.8-quantile (linear) is 10.24 + 0.2 * (46.24 - 10.24)
    # = 17.44, so the members strictly below it are 0, 1, 2, 3 and the new center is 1.5.
    from kmt_ref.variants.trimmed import quantile_trimmed_kmeans

    X = np.array([[0.0], [1.0], [2.0], [3.0], [10.0]])
    traj = quantile_trimmed_kmeans(X, [[3.2]], 1, quantile=0.8)
    assert traj.centers[1, 0, 0] == pytest.approx(1.5)


def test_quantile_trimmed_kmeans_trims_each_cluster_by_its_own_quantile():
    from kmt_ref.variants.trimmed import quantile_trimmed_kmeans

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0.0, 0.1, (200, 2)), rng.normal(5.0, 1.0, (200, 2))])
    init = np.array([[0.0, 0.0], [5.0, 5.0]])
    traj = quantile_trimmed_kmeans(X, init, 1)
    for j, members in enumerate((X[:200], X[200:])):
        r = np.sum((members - init[j]) ** 2, axis=1)
        keep = members[r < np.quantile(r, 0.95)]
        assert keep.shape[0] == 190  # 5% of each cluster, not 5% overall
        np.testing.assert_allclose(traj.centers[1, j], keep.mean(axis=0), rtol=0, atol=1e-14)


def test_quantile_trimmed_kmeans_edge_rules():
    from kmt_ref.variants.trimmed import quantile_trimmed_kmeans

    # Cluster 0 (0, 1, 2 around 1; r = 1, 0, 1, 0.95-quantile 1) keeps only the point 1;
    # the single member 9 of cluster 1 is kept; the empty cluster 2 takes the global mean 3.
    X = np.array([[0.0], [1.0], [2.0], [9.0]])
    traj = quantile_trimmed_kmeans(X, [[1.0], [9.0], [100.0]], 1)
    np.testing.assert_allclose(traj.centers[1, :, 0], [1.0, 9.0, 3.0])
    with pytest.raises(ValueError, match="quantile"):
        quantile_trimmed_kmeans(X, [[1.0]], 1, quantile=0.0)
    with pytest.raises(ValueError, match="quantile"):
        quantile_trimmed_kmeans(X, [[1.0]], 1, quantile=1.0)
    with pytest.raises(ValueError, match="empty"):
        quantile_trimmed_kmeans(X, [[1.0], [9.0], [100.0]], 1, empty_cluster="raise")
