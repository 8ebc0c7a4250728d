"""Soft k-means: the classical algorithm and its transformer."""

import numpy as np
import pytest
from scipy.special import softmax

from kmt_ref import gaussian_mixture, lloyd, lloyd_transformer
from kmt_ref.variants.soft import distance_to_lloyd, soft_kmeans, soft_kmeans_transformer

CASES = [  # (seed, n, d, k)
    (0, 200, 2, 3),
    (1, 300, 5, 6),
    (2, 120, 1, 4),
    (3, 250, 8, 10),
]


def _task(seed, n, d, k):
    X, init, _ = gaussian_mixture(np.random.default_rng(seed), n=n, d=d, k=k)
    return X, init


@pytest.mark.parametrize("seed,n,d,k", CASES)
@pytest.mark.parametrize("beta", [0.3, 5.0, 100.0, 1e4])
def test_soft_transformer_equals_soft_kmeans_on_random_data(seed, n, d, k, beta):
    X, init = _task(seed, n, d, k)
    ref = soft_kmeans(X, init, 8, beta)
    out = soft_kmeans_transformer(d, k, beta).run(X, init, 8)
    np.testing.assert_allclose(out.centers, ref.centers, rtol=0, atol=1e-12)
    # Responsibilities are exp(-beta * distance): rounding of the distances is amplified by beta.
    np.testing.assert_allclose(out.assignments, ref.assignments, rtol=0, atol=1e-14 * max(1.0, beta))


def test_soft_transformer_is_the_validated_lloyd_transformer_at_gamma_beta():
    beta = 37.0
    soft = soft_kmeans_transformer(3, 4, beta)
    base = lloyd_transformer(3, 4, gamma=beta, config="validated")
    for name, block in soft.blocks.items():
        other = base.blocks[name]
        assert (block.score, block.normalizer, block.gamma) == (other.score, other.normalizer, other.gamma)
        for w in ("Wq", "Wk", "Wv"):
            assert np.array_equal(getattr(block, w), getattr(other, w))
    assert soft.blocks["CAX"].normalizer == "softmax" and soft.blocks["CAX"].gamma == beta
    assert soft.blocks["CAC"].normalizer == "linear"


def test_soft_kmeans_matches_the_defining_formula_computed_point_by_point():
    X, init = _task(4, 40, 3, 3)
    beta = 7.5
    C = init.copy()
    for _ in range(5):
        R = np.array([softmax([-beta * np.sum((x - c) ** 2) for c in C]) for x in X])
        C = np.array([sum(R[i, j] * X[i] for i in range(len(X))) / R[:, j].sum() for j in range(len(C))])
    np.testing.assert_allclose(soft_kmeans(X, init, 5, beta).centers[-1], C, rtol=0, atol=1e-12)


def test_soft_kmeans_approaches_lloyd_as_beta_grows():
    X, init = _task(5, 300, 2, 4)
    ref = lloyd(X, init, 6)
    betas = (1e1, 1e2, 1e3, 1e8)
    devs = [np.max(np.abs(soft_kmeans(X, init, 6, beta).centers - ref.centers)) for beta in betas]
    assert devs[0] > devs[1] > devs[2] > devs[3]
    assert devs[3] < 1e-10


def test_one_soft_step_is_within_the_exponential_bound_of_lloyd_assignment():
    X, init = _task(6, 200, 3, 5)
    D2 = np.sum((X[:, None, :] - init[None]) ** 2, axis=2)
    part = np.sort(D2, axis=1)
    delta = np.min(part[:, 1] - part[:, 0])  # smallest gap nearest vs second nearest
    k = init.shape[0]
    onehot = np.eye(k)[np.argmin(D2, axis=1)]
    for beta in (1.0, 10.0, 100.0):
        R = soft_kmeans(X, init, 1, beta).assignments[0]
        assert np.max(np.sum(np.abs(R - onehot), axis=1)) <= 2 * (k - 1) * np.exp(-beta * delta) + 1e-15


def test_soft_kmeans_at_small_beta_moves_every_center_near_the_global_mean():
    X, init = _task(7, 100, 2, 3)
    C1 = soft_kmeans(X, init, 1, 1e-9).centers[1]
    np.testing.assert_allclose(C1, np.broadcast_to(X.mean(axis=0), C1.shape), atol=1e-8)


def test_underflowed_cluster_moves_to_the_global_mean_in_both_without_nan():
    X, init = _task(8, 50, 2, 2)
    init = np.vstack([init, [[1e3, 1e3]]])  # responsibilities exp(-beta * 1e6) underflow to 0
    ref = soft_kmeans(X, init, 3, beta=1e3)
    out = soft_kmeans_transformer(2, 3, 1e3).run(X, init, 3)
    assert np.all(np.isfinite(ref.centers))
    np.testing.assert_allclose(ref.centers[1, 2], X.mean(axis=0), atol=1e-15)
    np.testing.assert_allclose(out.centers, ref.centers, rtol=0, atol=1e-12)


def test_soft_trajectory_has_exactly_n_iter_iterations():
    X, init = _task(9, 60, 2, 3)
    for T in (0, 1, 7):
        t = soft_kmeans(X, init, T, 2.0)
        assert t.centers.shape == (T + 1, 3, 2) and t.labels.shape == (T, 60)
        assert t.assignments.shape == (T, 60, 3)
        assert soft_kmeans_transformer(2, 3, 2.0).run(X, init, T).centers.shape == (T + 1, 3, 2)


def test_soft_labels_are_the_argmax_of_the_responsibilities():
    X, init = _task(10, 80, 2, 3)
    t = soft_kmeans(X, init, 3, 4.0)
    assert np.array_equal(t.labels, np.argmax(t.assignments, axis=2))
    np.testing.assert_allclose(t.assignments.sum(axis=2), 1.0, atol=1e-15)


def test_soft_kmeans_does_not_modify_its_inputs():
    X, init = _task(11, 30, 2, 2)
    X0, init0 = X.copy(), init.copy()
    soft_kmeans(X, init, 2, 1.0)
    soft_kmeans_transformer(2, 2, 1.0).run(X, init, 2)
    assert np.array_equal(X, X0) and np.array_equal(init, init0)


@pytest.mark.parametrize("beta", [0, -1.0, np.inf, np.nan, "1", True, None])
def test_soft_kmeans_refuses_a_bad_beta_by_name(beta):
    X, init = _task(12, 20, 2, 2)
    with pytest.raises(ValueError, match="beta"):
        soft_kmeans(X, init, 1, beta)
    with pytest.raises(ValueError, match="beta"):
        soft_kmeans_transformer(2, 2, beta)


def test_soft_kmeans_refuses_bad_data_shapes_and_counts():
    X, init = _task(13, 20, 2, 2)
    with pytest.raises(ValueError, match="n_iter"):
        soft_kmeans(X, init, -1, 1.0)
    with pytest.raises(ValueError, match="init"):
        soft_kmeans(X, init[:, :1], 1, 1.0)
    with pytest.raises(ValueError, match="X"):
        soft_kmeans(np.full((3, 2), np.nan), init, 1, 1.0)
    with pytest.raises(ValueError, match="k"):
        soft_kmeans(X[:1], init, 1, 1.0)


def test_distance_to_lloyd_is_the_center_deviation_and_vanishes_at_large_beta():
    X, init = _task(14, 150, 2, 3)
    betas = [2.0, 1e8]
    dist = distance_to_lloyd(X, init, 4, betas)
    direct = np.max(np.abs(soft_kmeans(X, init, 4, 2.0).centers - lloyd(X, init, 4).centers))
    assert dist[0] == direct and dist[1] < 1e-10
    with pytest.raises(ValueError, match=r"betas\[1\]"):
        distance_to_lloyd(X, init, 4, [1.0, -2.0])


def test_soft_and_spherical_figures_are_drawn():
    pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
    from kmt_ref.plotting.soft_spherical import plot_distance_to_lloyd, plot_spherical_clusters
    from kmt_ref.variants.spherical import spherical_kmeans

    X, init = _task(15, 60, 2, 3)
    fig = plot_distance_to_lloyd([1.0, 10.0], [0.1, 0.0])
    assert len(fig.axes) == 1 and len(fig.axes[0].lines) == 1
    Xc = X - 0.5
    fig = plot_spherical_clusters(Xc, spherical_kmeans(Xc, Xc[:3], 3))
    assert len(fig.axes[0].lines) == 1 + 2 * 3  # circle + (path, final star) per center
    with pytest.raises(ValueError, match="d=2"):
        plot_spherical_clusters(np.ones((5, 3)), spherical_kmeans(np.ones((5, 3)), np.ones((1, 3)), 1))


def test_verify_section_soft_and_spherical_holds_on_quick_data():
    from kmt_ref.programs.verify import variant_rows

    rows = variant_rows(quick=True)
    names = {r.construction for r in rows}
    assert {"soft k-means", "spherical k-means"} <= names
    assert all(r.ok for r in rows)


def test_run_warns_where_a_center_s_responsibilities_are_all_subnormal():
    # Hypothesis found it: a center 27 units from data in [0, 1] at beta = 1 gets responsibilities near exp(-745),
    # which keep no relative precision; the twin and the transformer then round its new center differently.
    import warnings

    from kmt_ref.variants.soft import normal_responsibilities

    X = np.random.default_rng(0).random((2000, 1))
    far = np.array([[-27.2563002], [0.61816418]])
    model = soft_kmeans_transformer(1, 2, 1.0)
    with pytest.warns(UserWarning, match="cluster 0's responsibilities are all below the smallest normal float"):
        model.run(X, far, 1, warn=True)
    assert normal_responsibilities(1.0)(X, np.array([[-40.0], [0.5]])) is None  # all exactly 0: an empty cluster
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        model.run(X, np.array([[0.2], [0.7]]), 3, warn=True)  # normal responsibilities: nothing said of them
    assert not [w for w in said if "normal float" in str(w.message)]


@pytest.mark.parametrize("beta", [0.0, -1.0, np.inf, np.nan])
def test_normal_responsibilities_refuses_a_bad_stiffness_before_any_work(beta):
    from kmt_ref.variants.soft import normal_responsibilities

    with pytest.raises(ValueError, match="beta"):
        normal_responsibilities(beta)


def test_soft_kmeans_holds_a_chunk_of_responsibilities_and_refuses_to_keep_gigabytes(monkeypatch):
    import kmt_ref.variants.soft as soft

    X, init, _ = gaussian_mixture(np.random.default_rng(4), n=500, d=3, k=4)
    whole = soft.soft_kmeans(X, init, 3, 5.0)
    monkeypatch.setattr(soft, "CHUNK_ELEMENTS", 64)  # chunks of 16 points: another summation order
    chunked = soft.soft_kmeans(X, init, 3, 5.0)
    np.testing.assert_allclose(chunked.centers, whole.centers, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(chunked.assignments, whole.assignments, rtol=0, atol=1e-12)
    lean = soft.soft_kmeans(X, init, 3, 5.0, keep_assignments=False)
    assert lean.assignments is None
    np.testing.assert_array_equal(lean.centers, chunked.centers)
    np.testing.assert_array_equal(lean.labels, chunked.labels)
    monkeypatch.setattr(soft, "MAX_KEPT_BYTES", 8 * 3 * 500 * 4 - 1)
    with pytest.raises(ValueError, match="keep_assignments=False"):
        soft.soft_kmeans(X, init, 3, 5.0)
