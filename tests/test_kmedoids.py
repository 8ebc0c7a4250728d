"""k-medoids: the classical Voronoi iteration, its randomized form, and the Gumbel transformer."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import chisquare

from kmt_ref.layer import transformer_layer
from kmt_ref.tasks import gaussian_mixture
from kmt_ref.variants.kmedoids import (
    kmedoids,
    kmedoids_transformer,
    medoid_indices,
    medoid_law,
    randomized_kmedoids,
)


def test_kmedoids_on_a_hand_computed_case():
    # Clusters {0, 1, 2} and {10, 11, 15}; distance sums 3, 2, 3 and 6, 5, 9.
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [15.0]])
    traj = kmedoids(X, [[0.0], [10.0]], 2)
    assert traj.centers[1:].tolist() == [[[1.0], [11.0]], [[1.0], [11.0]]]
    assert traj.labels[0].tolist() == [0, 0, 0, 1, 1, 1]


def test_kmedoids_breaks_ties_to_the_lowest_index():
    X = np.array([[5.0], [3.0], [4.0], [6.0]])  # sums: 3, 5, 3, 5 -> index 0
    assert kmedoids(X, [[3.0]], 1).centers[1].tolist() == [[5.0]]


def test_kmedoids_medoid_minimizes_the_sum_of_distances_by_brute_force():
    X, _, _ = gaussian_mixture(np.random.default_rng(0), 120, 3, 4)
    init = X[[5, 50, 90, 110]]
    traj = kmedoids(X, init, 5)
    for t in range(5):
        for j in range(4):
            M = X[traj.labels[t] == j]
            costs = cdist(M, M).sum(axis=1)
            best = M[np.flatnonzero(np.isclose(costs, costs.min(), rtol=1e-12, atol=0))]
            assert any(np.array_equal(traj.centers[t + 1, j], b) for b in best)


def test_kmedoids_cost_never_increases_and_centers_are_rows_of_x():
    X, _, _ = gaussian_mixture(np.random.default_rng(1), 300, 2, 5)
    traj = kmedoids(X, X[[0, 1, 2, 3, 4]], 8)
    cost = [cdist(X, C).min(axis=1).sum() for C in traj.centers]
    assert np.all(np.diff(cost) <= 1e-9)
    for C in traj.centers:
        medoid_indices(X, C)  # raises if a center is not a row of X


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("temperature", [1e-3, 0.05, 1.0])
def test_gumbel_transformer_equals_randomized_kmedoids_with_the_same_generator(seed, temperature):
    X, init, _ = gaussian_mixture(np.random.default_rng(seed), 200, 2 + seed, 3 + seed)
    k, d = init.shape
    ref = randomized_kmedoids(X, init, 6, temperature, np.random.default_rng(100 + seed))
    traj = kmedoids_transformer(d, k, temperature).run(X, init, 6, rng=np.random.default_rng(100 + seed))
    assert np.max(np.abs(traj.centers - ref.centers)) <= 1e-12
    assert np.array_equal(traj.labels, ref.labels)


def test_transformer_centers_are_rows_of_x_up_to_one_rounding():
    X, init, _ = gaussian_mixture(np.random.default_rng(3), 150, 2, 4)
    traj = kmedoids_transformer(2, 4, 0.1, rng=np.random.default_rng(0)).run(X, init, 5)
    gaps = cdist(traj.centers.reshape(-1, 2), X).min(axis=1)
    assert np.max(gaps) <= 4 * np.finfo(float).eps


def test_medoid_law_matches_its_formula_on_a_small_case():
    X = np.array([[0.0], [1.0], [2.0], [10.0], [12.0]])
    law = medoid_law(X, [[1.0], [10.0]], temperature=2.0)
    w0 = np.exp(-np.array([1.0, 0.0, 1.0]) / 2.0)
    w1 = np.exp(-np.array([0.0, 4.0]) / 2.0)
    assert np.allclose(law, [[*(w0 / w0.sum()), 0, 0], [0, 0, 0, *(w1 / w1.sum())]])


def test_sampled_medoid_follows_the_stated_law_chi_square_at_level_0_001():
    rng = np.random.default_rng(11)
    X, init, _ = gaussian_mixture(rng, 24, 2, 2, scale=0.2)
    temperature, draws = 0.05, 4000
    model = kmedoids_transformer(2, 2, temperature)
    P, Q = model.layout.embed(X, init)
    # One layer on `draws` copies of the same task: batch axes run them at once.
    P, Q = np.broadcast_to(P, (draws,) + P.shape), np.broadcast_to(Q, (draws,) + Q.shape)
    _, Q = transformer_layer(P, Q, model.blocks, rng=np.random.default_rng(12))
    chosen = model.layout.read(Q, "x")  # (draws, 2, d)
    law = medoid_law(X, init, temperature)
    for j in range(2):
        index = np.argmin(((chosen[:, j, None, :] - X[None]) ** 2).sum(-1), axis=1)
        support = np.flatnonzero(law[j] > 0)
        assert set(index) <= set(support)
        counts = np.bincount(index, minlength=len(X))[support]
        expected = draws * law[j, support]
        # pool cells expected below 5 into one, as the chi-square test needs
        small = expected < 5
        counts = np.append(counts[~small], counts[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
        keep = expected > 0
        assert chisquare(counts[keep], expected[keep]).pvalue > 1e-3
        # and the test can fail: a uniform law over the members is rejected
        uniform = np.full(support.size, draws / support.size)
        raw = np.bincount(index, minlength=len(X))[support]
        assert chisquare(raw, uniform).pvalue < 1e-3


def test_zero_temperature_limit_keeps_every_medoid_in_place():
    X, init, _ = gaussian_mixture(np.random.default_rng(5), 200, 2, 4)
    traj = kmedoids_transformer(2, 4, 1e-12).run(X, init, 5, rng=np.random.default_rng(0))
    assert np.max(np.abs(traj.centers - init)) <= 1e-15
    law = medoid_law(X, init, 1e-12)
    assert np.allclose(law[np.arange(4), medoid_indices(X, init)], 1.0)


def test_model_rng_is_the_default_and_a_run_without_any_rng_fails():
    X, init, _ = gaussian_mixture(np.random.default_rng(6), 60, 2, 3)
    a = kmedoids_transformer(2, 3, 0.1, rng=np.random.default_rng(1)).run(X, init, 3)
    b = kmedoids_transformer(2, 3, 0.1).run(X, init, 3, rng=np.random.default_rng(1))
    assert np.array_equal(a.centers, b.centers)
    with pytest.raises(ValueError, match="rng"):
        kmedoids_transformer(2, 3, 0.1).run(X, init, 3)


def test_inputs_are_not_modified():
    X, init, _ = gaussian_mixture(np.random.default_rng(8), 50, 2, 3)
    X0, init0 = X.copy(), init.copy()
    kmedoids(X, init, 2)
    randomized_kmedoids(X, init, 2, 0.1, np.random.default_rng(0))
    assert np.array_equal(X, X0) and np.array_equal(init, init0)


X5 = np.arange(10.0).reshape(5, 2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: kmedoids(X5, X5[:2] + 0.5, 1), r"init rows must be rows of X; init\[0\]"),
        (lambda: kmedoids(X5, X5[:2, :1], 1), "init"),
        (lambda: kmedoids(X5, np.vstack([X5, X5[:1]]), 1), "k"),
        (lambda: kmedoids(X5, X5[:2], -2), "n_iter=-2"),
        (lambda: randomized_kmedoids(X5, X5[:2], 1, 0.0, np.random.default_rng(0)), "temperature=0.0"),
        (lambda: randomized_kmedoids(X5, X5[:2], 1, 1.0, 0), "rng"),
        (lambda: randomized_kmedoids(X5, X5[[0, 1]] * 2, 1, 1.0, np.random.default_rng(0)), "init rows"),
        (lambda: kmedoids_transformer(2, 2, temperature=-1.0), "temperature="),
        (lambda: kmedoids_transformer(2, 2, 1.0, rng="seed"), "rng"),
        (lambda: medoid_law(X5, X5[:2], np.inf), "temperature="),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_far_from_the_origin_k_medoids_measures_from_a_reference_point():
    # the reliability review's reproducer: at an offset of 1e8 the plain expansion loses everything below 1
    base = np.array([[0.0], [1.0], [2.5], [3.1], [4.0]])
    X = 1e8 + base
    ref = kmedoids(base, base[:1], 1).centers[-1]
    np.testing.assert_array_equal(kmedoids(X, X[:1], 1).centers[-1], ref + 1e8)
    assert ref[0, 0] == 2.5  # distance sum 6.1 (3.1 has 6.7); the kmedoids package agrees
    for temperature in (0.5, 8.0):
        # X itself rounds base + 1e8 to multiples of 1.5e-8; the law moves by about that, not by 0.1
        np.testing.assert_allclose(medoid_law(X, X[:1], temperature), medoid_law(base, base[:1], temperature),
                                   rtol=0, atol=1e-7)


def test_far_from_the_origin_the_gumbel_transformer_equals_its_twin():
    rng = np.random.default_rng(4)
    X, _, _ = gaussian_mixture(rng, n=200, d=2, k=4)
    for offset in (1e8, -3e5):
        Xo = X + offset
        init = Xo[:4]
        twin = randomized_kmedoids(Xo, init, 5, 0.05, np.random.default_rng(1))
        model = kmedoids_transformer(2, 4, 0.05).run(Xo, init, 5, rng=np.random.default_rng(1))
        np.testing.assert_allclose(model.centers, twin.centers, rtol=0, atol=1e-12 * abs(offset))
        np.testing.assert_array_equal(model.labels, twin.labels)
