"""Spherical k-means: the classical algorithm, its transformer, and the normalization."""

from dataclasses import replace

import numpy as np
import pytest

from kmt_ref import gaussian_mixture, lloyd, lloyd_transformer, transformer_layer
from kmt_ref.variants.spherical import (
    BlockRMSNorm,
    normalize_rows,
    spherical_kmeans,
    spherical_kmeans_transformer,
)

CASES = [  # (seed, n, d, k)
    (0, 200, 2, 3),
    (1, 300, 5, 6),
    (2, 150, 3, 4),
    (3, 250, 8, 10),
]


def _task(seed, n, d, k):
    """Directional data: a centred Gaussian mixture, rows rescaled by random positive factors."""
    rng = np.random.default_rng(seed)
    X, _, _ = gaussian_mixture(rng, n=n, d=d, k=k)
    X = (X - 0.5) * rng.uniform(0.1, 10.0, size=(n, 1))
    return X, X[:k].copy()


@pytest.mark.parametrize("seed,n,d,k", CASES)
def test_spherical_transformer_equals_spherical_kmeans_on_random_data(seed, n, d, k):
    X, init = _task(seed, n, d, k)
    ref = spherical_kmeans(X, init, 10)
    out = spherical_kmeans_transformer(d, k).run(X, init, 10)
    assert np.array_equal(out.labels, ref.labels)
    np.testing.assert_allclose(out.centers, ref.centers, rtol=0, atol=1e-12)


def test_classical_spherical_matches_a_hand_computation():
    # Unit points (0.6, 0.8), (0.8, 0.6), (0, 1), (-0.8, 0.6); init directions (1, 0), (0, 1).
    X = np.array([[3.0, 4.0], [4.0, 3.0], [0.0, 5.0], [-4.0, 3.0]])
    t = spherical_kmeans(X, [[1.0, 0.0], [0.0, 2.0]], 3)
    # Iteration 1: cosines with (1,0): .6 .8 0 -.8; with (0,1): .8 .6 1 .6 -> labels 1 0 1 1.
    # c_0 = (0.8, 0.6); c_1 = direction of (0.6+0-0.8, 0.8+1+0.6) = (-0.2, 2.4).
    # Iteration 2: cosines with c_0: .96 1 .6 -.28; with c_1: .747 .461 .997 .664 -> labels 0 0 1 1.
    # c_0 = direction of (1.4, 1.4); c_1 = direction of (-0.8, 1.6) = (-1, 2)/sqrt(5).
    # Iteration 3: cosines with c_0: .99 .99 .707 -.141; with c_1: .447 .179 .894 .894: a fixed point.
    expected = np.array(
        [
            [[1.0, 0.0], [0.0, 1.0]],
            [[0.8, 0.6], [-0.2 / np.sqrt(5.8), 2.4 / np.sqrt(5.8)]],
            [[1 / np.sqrt(2), 1 / np.sqrt(2)], [-1 / np.sqrt(5), 2 / np.sqrt(5)]],
            [[1 / np.sqrt(2), 1 / np.sqrt(2)], [-1 / np.sqrt(5), 2 / np.sqrt(5)]],
        ]
    )
    np.testing.assert_allclose(t.centers, expected, rtol=0, atol=1e-15)
    assert t.labels.tolist() == [[1, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]]


def test_spherical_step_is_a_lloyd_step_on_unit_data_then_normalized():
    X, init = _task(4, 200, 3, 4)
    Xh, C = normalize_rows(X), normalize_rows(init)
    ref = spherical_kmeans(X, init, 6)
    for t in range(6):
        step = lloyd(Xh, C, 1)  # on unit vectors, nearest = largest cosine
        assert np.array_equal(step.labels[0], ref.labels[t])
        C = normalize_rows(step.centers[1])
        np.testing.assert_allclose(ref.centers[t + 1], C, rtol=0, atol=1e-14)


def test_spherical_kmeans_ignores_positive_rescaling_of_rows():
    X, init = _task(5, 100, 4, 3)
    rng = np.random.default_rng(0)
    a = spherical_kmeans(X, init, 5)
    b = spherical_kmeans(X * rng.uniform(0.01, 100, (100, 1)), init * 7.0, 5)
    np.testing.assert_allclose(a.centers, b.centers, rtol=0, atol=1e-14)


def test_spherical_centers_are_unit_vectors():
    X, init = _task(6, 150, 3, 5)
    t = spherical_kmeans(X, init, 5)
    np.testing.assert_allclose(np.linalg.norm(t.centers, axis=2), 1.0, atol=1e-15)


def test_normalization_changes_only_the_x_block_of_every_token():
    model = spherical_kmeans_transformer(3, 4)
    rng = np.random.default_rng(1)
    T = rng.standard_normal((2, 5, model.layout.width))  # a batch of arbitrary tokens
    out = model.norm(T)
    y = model.layout.slices["y"]
    assert np.array_equal(out[..., y], T[..., y])  # bit for bit
    x_in, x_out = model.layout.read(T, "x"), model.layout.read(out, "x")
    np.testing.assert_allclose(np.linalg.norm(x_out, axis=-1), 1.0, atol=1e-15)
    np.testing.assert_allclose(x_out * np.linalg.norm(x_in, axis=-1, keepdims=True), x_in, atol=1e-14)


def test_normalization_sends_a_zero_x_block_to_zero_and_keeps_the_ids():
    layout = spherical_kmeans_transformer(2, 2).layout
    Q = np.array([[0.0, 0.0, 1.0, 0.0], [3.0, 4.0, 0.0, 1.0]])
    out = BlockRMSNorm(layout, "x")(Q)
    np.testing.assert_allclose(out, [[0.0, 0.0, 1.0, 0.0], [0.6, 0.8, 0.0, 1.0]], atol=1e-15)


def test_layer_keeps_ids_exact_and_assignments_one_hot_with_the_normalization():
    X, init = _task(7, 120, 3, 4)
    model = spherical_kmeans_transformer(3, 4)
    ref = spherical_kmeans(X, init, 5)
    P, Q = (model.norm(T) for T in model.layout.embed(X, init))  # the embedding normalization
    for t in range(5):
        P, Q = transformer_layer(P, Q, model.blocks, rng=None, norm=model.norm)
        assert np.array_equal(model.layout.read(Q, "y"), np.eye(4))  # ids intact, bit for bit
        assert np.array_equal(model.layout.read(P, "y"), np.eye(4)[ref.labels[t]])  # exact one-hot assignment
        np.testing.assert_allclose(model.layout.read(P, "x"), normalize_rows(X), atol=1e-15)


def test_theorem21_model_has_no_normalization_and_is_unchanged_by_the_hook():
    X, init = _task(8, 100, 2, 3)
    model = lloyd_transformer(2, 3)
    assert model.norm is None and "NORM" not in model.weights
    P, Q = model.layout.embed(X, init)
    a = transformer_layer(P, Q, model.blocks)
    b = transformer_layer(P, Q, model.blocks, norm=None)
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    np.testing.assert_allclose(model.run(X, init, 5).centers, lloyd(X, init, 5).centers, atol=1e-12)


def test_spherical_transformer_uses_equation5_weights_and_exposes_the_norm_gain():
    model = spherical_kmeans_transformer(3, 2)
    base = lloyd_transformer(3, 2)
    for name in model.blocks:
        for w in ("Wq", "Wk", "Wv"):
            assert np.array_equal(model.weights[name][w], base.weights[name][w])
    assert model.blocks["CAX"].score == "dot" and model.blocks["CAX"].normalizer == "hardmax"
    np.testing.assert_allclose(model.weights["NORM"]["gain"], 1 / np.sqrt(3))


def test_euclidean_cax_on_normalized_tokens_gives_the_same_spherical_result():
    X, init = _task(9, 200, 3, 5)
    model = spherical_kmeans_transformer(3, 5)
    blocks = dict(model.blocks)
    blocks["CAX"] = replace(blocks["CAX"], score="euclidean")
    euclid = type(model)(model.layout, blocks, norm=model.norm)
    np.testing.assert_allclose(euclid.run(X, init, 8).centers, model.run(X, init, 8).centers, atol=1e-12)


def test_empty_cluster_moves_to_the_direction_of_the_mean_in_both():
    X = np.array([[1.0, 0.2], [1.0, 0.5], [0.3, 1.0], [0.2, 1.0]])
    init = np.array([[1.0, 0.1], [0.1, 1.0], [-1.0, -1.0]])  # the third center wins no point
    ref = spherical_kmeans(X, init, 2)
    assert 2 not in ref.labels[0]
    direction = normalize_rows(normalize_rows(X).mean(axis=0)[None])[0]
    np.testing.assert_allclose(ref.centers[1, 2], direction, atol=1e-15)
    out = spherical_kmeans_transformer(2, 3).run(X, init, 2)
    np.testing.assert_allclose(out.centers, ref.centers, rtol=0, atol=1e-12)


def test_zero_member_mean_gives_a_zero_center_not_nan_in_both():
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])  # directions cancel exactly
    ref = spherical_kmeans(X, [[1.0, 1.0]], 3)
    out = spherical_kmeans_transformer(2, 1).run(X, [[1.0, 1.0]], 3)
    assert np.array_equal(ref.centers[1:], np.zeros((3, 1, 2)))
    assert np.array_equal(out.centers, ref.centers)


def test_a_mean_whose_directions_cancel_to_rounding_is_warned_about():

    from kmt_ref.variants.spherical import unique_largest_cosine

    # A and -A, shuffled: the one cluster's mean is 0 in exact arithmetic and rounding in float; its direction
    # is then rounding's, and the transformer and the classical function sum in different orders.
    rng = np.random.default_rng(10)
    A = rng.standard_normal((3, 3))
    X = np.vstack([A, -A])[rng.permutation(6)]
    init = np.array([[0.3, -1.0, 0.2]])
    # the mean's direction is rounding's, which two orders of summing need not share
    assert np.linalg.norm(normalize_rows(X).mean(axis=0)) < 1e-15
    assert "the directions of center 0's members cancel: their mean has norm" in unique_largest_cosine(X, init)
    with pytest.warns(UserWarning, match=r"before layer 1, the directions of center 0's members cancel"):
        spherical_kmeans_transformer(3, 1).run(X, init, 2, warn=True)
    # the exact zero of the book's example is said too; points whose mean is far from 0 are not
    exact = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    assert "norm 0.0e+00" in unique_largest_cosine(exact, np.array([[1.0, 1.0]]))
    assert unique_largest_cosine(np.vstack([A, -A + 0.1]), init) is None


@pytest.mark.parametrize("where", ["X", "init"])
def test_a_zero_row_is_refused_with_its_index(where):
    X, init = _task(10, 20, 3, 2)
    if where == "X":
        X[5] = 0.0
    else:
        init[1] = 0.0
    pattern = rf"{where}\[{5 if where == 'X' else 1}\] must be nonzero"
    with pytest.raises(ValueError, match=pattern):
        spherical_kmeans(X, init, 1)
    with pytest.raises(ValueError, match=pattern):
        spherical_kmeans_transformer(3, 2).run(X, init, 1)
    # in a batch, the task is named too
    Xb, initb = np.stack([_task(10, 20, 3, 2)[0], X]), np.stack([_task(10, 20, 3, 2)[1], init])
    pattern = rf"{where}\[1, {5 if where == 'X' else 1}\] must be nonzero"
    with pytest.raises(ValueError, match=pattern):
        spherical_kmeans_transformer(3, 2).run(Xb, initb, 1)


def test_spherical_kmeans_refuses_bad_shapes_and_counts_and_keeps_inputs():
    X, init = _task(11, 20, 3, 2)
    X0 = X.copy()
    with pytest.raises(ValueError, match="n_iter"):
        spherical_kmeans(X, init, 1.5)
    with pytest.raises(ValueError, match="init"):
        spherical_kmeans(X, init[:, :2], 1)
    with pytest.raises(ValueError, match="d=3"):
        spherical_kmeans_transformer(3, 2).run(X[:, :2], init[:, :2], 1)
    with pytest.raises(ValueError, match="block"):
        BlockRMSNorm(spherical_kmeans_transformer(3, 2).layout, "sqnorm")
    spherical_kmeans(X, init, 2)
    spherical_kmeans_transformer(3, 2).run(X, init, 2)
    assert np.array_equal(X, X0)


def test_spherical_trajectory_has_exactly_n_iter_iterations():
    X, init = _task(12, 40, 2, 3)
    for T in (0, 1, 6):
        for t in (spherical_kmeans(X, init, T), spherical_kmeans_transformer(2, 3).run(X, init, T)):
            assert t.centers.shape == (T + 1, 3, 2) and t.labels.shape == (T, 40)


@pytest.mark.parametrize("tiny_or_huge", [1e-200, 1e-160, 1e140])
def test_rows_with_tiny_or_huge_entries_keep_their_direction(tiny_or_huge):
    # [1e-200, 0.5e-200] squares to 0 in float64: the direction must survive, in the
    # classical algorithm and the transformer (entries above 1e150 are refused).
    X = np.array([[1.0, 0.5], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.2]]) * np.array([[tiny_or_huge], [1], [1], [1]])
    init = np.array([[1.0, 0.1], [0.1, 1.0]])
    np.testing.assert_allclose(normalize_rows(X)[0], np.array([1.0, 0.5]) / np.sqrt(1.25), rtol=1e-15)
    ref = spherical_kmeans(X, init, 3)
    got = spherical_kmeans_transformer(2, 2).run(X, init * tiny_or_huge, 3)
    assert np.all(np.isfinite(ref.centers)) and np.all(np.isfinite(got.centers))
    np.testing.assert_allclose(got.centers[1:], ref.centers[1:], atol=1e-12)  # [0] is init as given
    np.testing.assert_array_equal(got.labels, ref.labels)


def test_a_cosine_tie_is_warned_about_where_the_run_leaves_spherical_kmeans():
    import warnings

    from kmt_ref.variants.spherical import spherical_kmeans_transformer, unique_largest_cosine

    # the point (1, 1) has cosine 1/sqrt(2) with both (1, 0) and (0, 1): an exact tie
    X = np.array([[1.0, 1.0], [1.0, 0.1], [0.1, 1.0], [1.0, 0.2], [0.2, 1.0]])
    init = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert "point 0's largest cosines, with centers 0 and 1, differ by 0.0e+00" in unique_largest_cosine(X, init)
    with pytest.raises(ValueError, match="X must be finite"):
        unique_largest_cosine(np.where(X == 1.0, np.inf, X), init)
    with warnings.catch_warnings(record=True) as said:  # and, after the last layer, the split assignments
        warnings.simplefilter("always")
        spherical_kmeans_transformer(2, 2).run(X, init, 2, warn=True)
    assert "before layer 1, point 0's largest cosines, with centers 0 and 1" in str(said[0].message)
    # a cosine gap beyond rounding is no tie; one within it is
    tol = 4 * (2 + 4) * np.finfo(float).eps
    for tilt, tied in ((1e-9, False), (tol / 8, True)):
        Y = np.array([[np.cos(np.pi / 4 + tilt), np.sin(np.pi / 4 + tilt)]])
        assert (unique_largest_cosine(Y, init) is not None) == tied
    # where every largest cosine is clear, nothing is said and the run is spherical k-means
    Z = np.random.default_rng(0).normal(size=(200, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = spherical_kmeans_transformer(4, 5).run(Z, Z[:5], 6, warn=True)
    np.testing.assert_allclose(run.centers, spherical_kmeans(Z, Z[:5], 6).centers, rtol=0, atol=1e-12)
