"""Lloyd's algorithm, the objective and k-means++ against independent references."""

import numpy as np
import pytest
from scipy import stats
from scipy.cluster.vq import kmeans2

from kmt_ref import kmeans_objective, kmeans_plusplus, lloyd


@pytest.mark.parametrize("seed,n,d,k", [(0, 300, 2, 5), (1, 500, 8, 10), (2, 200, 1, 3), (3, 1000, 16, 16)])
def test_lloyd_equals_scipy_kmeans2_for_every_iteration_count(mixture, seed, n, d, k):
    X, init = mixture(seed, n, d, k)
    traj = lloyd(X, init, 10, empty_cluster="keep")
    for T in range(1, 11):
        # kmeans2 keeps an empty cluster's center in place, hence empty_cluster="keep".
        centers, labels = kmeans2(X, init, iter=T, minit="matrix", missing="warn")
        np.testing.assert_allclose(traj.centers[T], centers, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(traj.labels[T - 1], labels)


def test_lloyd_hand_computed_toy_case():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [10.0, 10.0], [11.0, 10.0]])
    init = np.array([[0.0, 0.0], [10.0, 10.0]])
    traj = lloyd(X, init, 2)
    # Iteration 1: first three points to center 0, last two to center 1.
    np.testing.assert_array_equal(traj.labels[0], [0, 0, 0, 1, 1])
    np.testing.assert_allclose(traj.centers[1], [[1 / 3, 1 / 3], [10.5, 10.0]], atol=1e-15)
    # Iteration 2 changes nothing: a fixed point.
    np.testing.assert_allclose(traj.centers[2], traj.centers[1], atol=0)
    # Objective by hand: 2*(1/9+1/9) + (1/9 + 4/9) + (4/9 + 1/9) + 0.25 + 0.25
    expected = (1 / 9 + 1 / 9) + (4 / 9 + 1 / 9) + (1 / 9 + 4 / 9) + 0.25 + 0.25
    assert kmeans_objective(X, traj.centers[1]) == pytest.approx(expected, rel=1e-14)


def test_lloyd_trajectory_shapes_and_initial_centers(mixture):
    X, init = mixture(0, 50, 3, 4)
    traj = lloyd(X, init, 7)
    assert traj.centers.shape == (8, 4, 3) and traj.labels.shape == (7, 50)
    np.testing.assert_array_equal(traj.centers[0], init)
    assert traj.assignments is None and traj.n_iter == 7
    assert lloyd(X, init, 0).centers.shape == (1, 4, 3)


def test_lloyd_ties_go_to_the_lowest_index():
    X = np.array([[0.0], [2.0], [1.0]])  # x = 1 is equidistant from 0 and 2
    traj = lloyd(X, np.array([[0.0], [2.0]]), 1)
    np.testing.assert_array_equal(traj.labels[0], [0, 1, 0])
    np.testing.assert_allclose(traj.centers[1], [[0.5], [2.0]])


def _empty_cluster_case():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    init = np.array([[1.5], [100.0]])  # nobody is near center 1
    return X, init


@pytest.mark.parametrize(
    "policy,expected", [("global_mean", 1.5), ("keep", 100.0)]
)
def test_lloyd_empty_cluster_policies_give_finite_documented_centers(policy, expected):
    X, init = _empty_cluster_case()
    traj = lloyd(X, init, 1, empty_cluster=policy)
    assert traj.centers[1, 1, 0] == expected
    assert np.all(np.isfinite(traj.centers))


def test_lloyd_empty_cluster_raise_names_the_cluster():
    X, init = _empty_cluster_case()
    with pytest.raises(ValueError, match="cluster 1 is empty at iteration 0"):
        lloyd(X, init, 1, empty_cluster="raise")


def test_lloyd_does_not_modify_its_inputs(mixture):
    X, init = mixture(0, 40, 2, 3)
    X_copy, init_copy = X.copy(), init.copy()
    lloyd(X, init, 5)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(init, init_copy)


def test_lloyd_accepts_integer_and_float32_input_as_float64():
    X = np.array([[0, 0], [1, 0], [10, 10]], dtype=np.int64)
    init = np.array([[0, 0], [10, 10]], dtype=np.float32)
    traj = lloyd(X, init, 1)
    assert traj.centers.dtype == np.float64
    np.testing.assert_allclose(traj.centers[1], [[0.5, 0.0], [10.0, 10.0]])


def test_kmeans_objective_equals_brute_force_sum(mixture):
    X, init = mixture(4, 100, 3, 5)
    brute = sum(min(np.sum((x - c) ** 2) for c in init) for x in X)
    assert kmeans_objective(X, init) == pytest.approx(brute, rel=1e-12)


def test_lloyd_objective_never_increases(mixture):
    X, init = mixture(5, 500, 4, 8)
    obj = lloyd(X, init, 15).objectives(X)
    assert np.all(np.diff(obj) <= 1e-12 * obj[0])


def test_kmeans_plusplus_returns_rows_of_X_and_is_reproducible(mixture):
    X, _ = mixture(0, 100, 2, 5)
    C1 = kmeans_plusplus(X, 5, np.random.default_rng(3))
    C2 = kmeans_plusplus(X, 5, np.random.default_rng(3))
    np.testing.assert_array_equal(C1, C2)
    for c in C1:
        assert np.any(np.all(X == c, axis=1))


def test_kmeans_plusplus_second_center_follows_the_d2_law():
    # Four points on a line; the first center is drawn uniformly, then the
    # second with probability proportional to the squared distance to it.
    X = np.array([[0.0], [1.0], [3.0], [7.0]])
    rng = np.random.default_rng(12345)
    n_draws = 4000
    counts = np.zeros((4, 4))
    for _ in range(n_draws):
        C = kmeans_plusplus(X, 2, rng)
        i = int(np.flatnonzero(X[:, 0] == C[0, 0])[0])
        j = int(np.flatnonzero(X[:, 0] == C[1, 0])[0])
        counts[i, j] += 1
    d2 = (X - X.T) ** 2
    expected = 0.25 * d2 / d2.sum(axis=1, keepdims=True) * n_draws
    mask = expected > 0
    chi2 = np.sum((counts[mask] - expected[mask]) ** 2 / expected[mask])
    # 12 cells, constrained to sum to n_draws: 11 degrees of freedom, level 0.001.
    assert chi2 < stats.chi2.ppf(0.999, df=mask.sum() - 1)
    assert np.all(counts[~mask] == 0)  # a point never follows itself


def test_kmeans_plusplus_with_duplicates_only_falls_back_to_uniform():
    X = np.ones((5, 2))
    C = kmeans_plusplus(X, 3, np.random.default_rng(0))
    np.testing.assert_array_equal(C, np.ones((3, 2)))


def test_nearest_center_and_assigned_distances_match_scipy_cdist():
    from scipy.spatial.distance import cdist

    from kmt_ref.geometry import nearest_center
    from kmt_ref.objective import assigned_squared_distances

    rng = np.random.default_rng(7)
    X, C = rng.normal(size=(500, 3)) * 10, rng.normal(size=(6, 3)) * 10
    D2 = cdist(X, C, "sqeuclidean")  # (n, k), an independent computation
    labels = nearest_center(X, C)
    assert np.array_equal(labels, np.argmin(D2, axis=1))
    assert np.allclose(assigned_squared_distances(X, C, labels), D2.min(axis=1), rtol=1e-12)


def test_iterate_records_every_iterate_of_a_step_and_nothing_else():
    from kmt_ref import iterate

    X = np.arange(12.0).reshape(6, 2)
    calls = []

    def halve(C, t):
        calls.append(t)
        return C / 2, np.full(X.shape[0], t % 3), np.full((X.shape[0], C.shape[0]), float(t))

    traj = iterate(halve, X, np.ones((3, 2)), 4, keep_assignments=True)
    assert calls == [0, 1, 2, 3]
    np.testing.assert_array_equal(traj.centers[:, 0, 0], [1, 0.5, 0.25, 0.125, 0.0625])
    np.testing.assert_array_equal(traj.labels, np.repeat(np.arange(4) % 3, 6).reshape(4, 6))
    assert traj.assignments.shape == (4, 6, 3) and traj.assignments[3, 0, 0] == 3
    empty = iterate(halve, X[None], np.ones((1, 3, 2)), 0)
    assert empty.centers.shape == (1, 1, 3, 2) and empty.labels.shape == (0, 1, 6) and empty.assignments is None
    with pytest.raises(ValueError, match="n_iter"):
        iterate(halve, X, np.ones((3, 2)), -1)
    with pytest.raises(ValueError, match="step must be callable"):
        iterate(None, X, np.ones((3, 2)), 1)


def test_iterate_objectives_is_the_objective_of_each_iterate_for_a_task_and_a_batch():
    from kmt_ref.objective import iterate_objectives

    rng = np.random.default_rng(3)
    X, C = rng.standard_normal((2, 40, 3)), rng.standard_normal((5, 2, 4, 3))  # 5 iterates of 2 tasks
    batch = iterate_objectives(X, C)
    assert batch.shape == (5, 2)
    for b in range(2):
        one = iterate_objectives(X[b], C[:, b])
        assert one.shape == (5,)
        assert np.array_equal(one, [kmeans_objective(X[b], C[t, b]) for t in range(5)])
        assert np.array_equal(one, batch[:, b])


def test_the_closest_distinct_pair_is_two_points_even_when_their_distance_underflows():
    from kmt_ref.geometry import closest_distinct_pair

    # 1e-200 apart: the squared distance is 0.0 in float64, yet the points differ; the tree may then list
    # the other point before the point itself.
    for X in ([[0.0], [1e-200], [5.0]], [[1e-200], [0.0], [5.0]], [[0.0, 0.0], [1e-170, 0.0], [5.0, 1.0]]):
        assert closest_distinct_pair(np.array(X)) == (0, 1, 0.0)
    assert closest_distinct_pair(np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 1.0], [0.0, 0.0]])) == (0, 1, 1.0)
    assert closest_distinct_pair(np.array([[2.0], [2.0]])) is None
