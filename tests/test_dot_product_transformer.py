"""Theorem 2.2: dot-product attention plus a relu^2 FFN runs Lloyd's algorithm."""

import numpy as np
import pytest

from kmt_ref import (
    BLOCK_NAMES,
    figure3_data,
    gaussian_mixture,
    lloyd,
    lloyd_transformer,
    transformer_layer,
)
from kmt_ref.dot_product_transformer import (
    dot_product_lloyd_transformer,
    norm_writing_ffn,
    parameter_counts,
)
from kmt_ref.feedforward import FeedForward
from kmt_ref.layer import KMeansTransformer

CONFIGS = ("validated", "all-attention")
EPS = np.finfo(float).eps


def _mixture(seed, n, d, k, offset=0.0):
    X, init, _ = gaussian_mixture(np.random.default_rng(seed), n=n, d=d, k=k)
    return X + offset, init + offset


def _log_gap(traj, ref, X):
    return float(np.max(np.abs(traj.log_objectives(X) - ref.log_objectives(X))))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize(
    "seed,n,d,k,offset",
    [
        (0, 300, 2, 5, 0.0),
        (1, 400, 8, 10, 0.0),
        (2, 150, 1, 3, 0.0),
        (3, 500, 5, 7, 0.0),
        (4, 300, 4, 4, 1e3),
        (5, 200, 1, 4, 1e3),
    ],
)
def test_theorem22_at_gamma_inf_equals_lloyd_for_every_depth(config, seed, n, d, k, offset):
    X, init = _mixture(seed, n, d, k, offset)
    model = dot_product_lloyd_transformer(d, k, config=config)
    ref = lloyd(X, init, 10)
    # 1e-12 absolute near the origin. Far from it, a center is updated through the
    # residual c + (mean - c), which rounds to half an ulp of |c| (5.7e-14 at 1e3) on
    # top of the mean's own summation error: absolute 1e-12 is not guaranteed in
    # float64, so the bound is 16 ulps of the data scale (3.6e-12 at 1e3).
    atol = max(1e-12, 16 * EPS * np.max(np.abs(X)))
    for T in range(1, 11):
        traj = model.run(X, init, T)
        np.testing.assert_allclose(traj.centers, ref.centers[: T + 1], rtol=0, atol=atol)
        np.testing.assert_array_equal(traj.labels, ref.labels[:T])
        np.testing.assert_array_equal(traj.assignments[-1], np.eye(k)[ref.labels[T - 1]])


@pytest.mark.parametrize("config", CONFIGS)
def test_every_block_scores_with_a_dot_product(config):
    for gamma in (1e3, np.inf):
        model = dot_product_lloyd_transformer(3, 4, gamma, config=config)
        assert [model.blocks[b].score for b in BLOCK_NAMES] == ["dot"] * 4


def test_weights_are_the_documented_matrices():
    d, k = 3, 2
    D = d + k + 2
    x, y, s, one = slice(0, 3), slice(3, 5), 5, 6  # layout [x | y | sqnorm | one]
    P_x, P_y, P_s = np.zeros((D, D)), np.zeros((D, D)), np.zeros((D, D))
    P_x[x, x], P_y[y, y], P_s[s, s] = np.eye(d), np.eye(k), 1.0
    Wq = 2 * P_x
    Wq[s, one] = 1.0  # the query carries the constant 1 in the sqnorm slot
    Wk = P_x - P_s  # the key carries -||.||^2 there
    expected = {
        "CAX": (Wq, Wk, P_y),
        "SAX": (Wq, Wk, -P_y),
        "CAC": (P_y, P_y, P_x),
        "SAC": (P_y, P_y, -(P_x + P_s)),
    }
    for config in CONFIGS:
        w = dot_product_lloyd_transformer(d, k, config=config).weights
        assert tuple(w) == BLOCK_NAMES + ("FFN",)
        for block, mats in expected.items():
            for name, M in zip(("Wq", "Wk", "Wv"), mats, strict=True):
                np.testing.assert_array_equal(w[block][name], M)
        W1 = np.zeros((2 * d, D))
        W1[:, x] = np.vstack([np.eye(d), -np.eye(d)])
        W2 = np.zeros((D, 2 * d))
        W2[s] = 1.0
        np.testing.assert_array_equal(w["FFN"]["W1"], W1)
        np.testing.assert_array_equal(w["FFN"]["W2"], W2)
        np.testing.assert_array_equal(w["FFN"]["b1"], 0.0)
        np.testing.assert_array_equal(w["FFN"]["b2"], 0.0)


def test_the_dot_score_equals_negative_squared_distance_plus_the_query_norm():
    rng = np.random.default_rng(0)
    model = dot_product_lloyd_transformer(4, 3)
    X, C = rng.normal(size=(6, 4)), rng.normal(size=(3, 4))
    P, Q = model.layout.embed(X, C)
    block = model.blocks["CAX"]
    scores = (P @ block.Wq.T) @ (Q @ block.Wk.T).T
    expected = np.sum(X**2, 1)[:, None] - np.sum((X[:, None] - C[None]) ** 2, axis=2)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-13)


def test_the_ffn_alone_writes_the_exact_squared_norm_into_a_center_token():
    layout = dot_product_lloyd_transformer(3, 2).layout
    ffn = norm_writing_ffn(layout)
    # Integers: every operation is exact, so equality is exact.
    C = np.array([[1.0, -2.0, 3.0], [-4.0, 0.0, 0.5]])
    _, Q = layout.embed(C, C)
    Q[:, layout.slices["sqnorm"]] = 0.0  # the state SAC leaves behind
    out = Q + ffn(Q)
    expected = Q.copy()
    expected[:, layout.slices["sqnorm"]] = [[14.0], [16.25]]
    np.testing.assert_array_equal(out, expected)
    # Hidden units are relu(c)^2 and relu(-c)^2.
    np.testing.assert_array_equal(ffn.hidden(Q), np.hstack([np.maximum(C, 0), np.maximum(-C, 0)]) ** 2)
    # Random centers: the norm to a few ulps, every other coordinate untouched.
    C = np.random.default_rng(1).normal(scale=50.0, size=(2, 3))
    _, Q = layout.embed(C, C)
    Q[:, layout.slices["sqnorm"]] = 0.0
    out = Q + ffn(Q)
    np.testing.assert_allclose(layout.read(out, "sqnorm")[:, 0], np.sum(C * C, axis=1), rtol=4 * EPS)
    keep = [b for b in layout.blocks if b != "sqnorm"]
    for b in keep:
        np.testing.assert_array_equal(layout.read(out, b), layout.read(Q, b))


@pytest.mark.parametrize("config", CONFIGS)
def test_a_center_update_overwrites_a_stale_squared_norm(config):
    X, init = _mixture(6, 80, 3, 4)
    model = dot_product_lloyd_transformer(3, 4, config=config)
    P, Q = model.layout.embed(X, init)
    P, Q = transformer_layer(P, Q, model.blocks)  # no FFN: one Lloyd step of x and y
    Q[:, model.layout.slices["sqnorm"]] = [[7.0], [-3.0], [1e6], [0.0]]  # garbage
    _, Q2 = transformer_layer(P, Q, model.blocks, model.ffn)
    C2 = model.layout.read(Q2, "x")
    np.testing.assert_allclose(model.layout.read(Q2, "sqnorm")[:, 0], np.sum(C2 * C2, 1), rtol=4 * EPS)
    np.testing.assert_array_equal(model.layout.read(Q2, "y"), np.eye(4))


def test_without_the_ffn_the_center_norms_go_stale_and_lloyd_is_lost():
    X, init = _mixture(7, 300, 2, 5)
    model = dot_product_lloyd_transformer(2, 5)
    broken = KMeansTransformer(model.layout, model.blocks, ffn=None)
    ref = lloyd(X, init, 5)
    traj = broken.run(X, init, 5)
    # Layer 1 uses the embedded (correct) norms; from layer 2 on SAC has cleared them.
    np.testing.assert_array_equal(traj.labels[0], ref.labels[0])
    assert np.any(traj.labels[1:] != ref.labels[1:])


@pytest.mark.parametrize("gamma", [1e1, 1e2, 1e4, 1e6])
def test_validated_model_equals_theorem21_validated_at_finite_gamma(gamma):
    # The only softmax is CAX, whose dot score is the Euclidean score plus ||x||^2.
    X, init = _mixture(8, 400, 3, 6)
    # (at the small gammas both are far from Lloyd's algorithm on purpose: warn=False)
    ours = dot_product_lloyd_transformer(3, 6, gamma).run(X, init, 8, warn=False)
    euclid = lloyd_transformer(3, 6, gamma).run(X, init, 8, warn=False)
    np.testing.assert_allclose(ours.centers, euclid.centers, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.assignments, euclid.assignments, rtol=0, atol=1e-12)


@pytest.mark.parametrize("config", CONFIGS)
def test_ties_and_duplicates_behave_as_in_the_euclidean_model(config):
    # Integer data: the point 1 is exactly equidistant from the centers 0 and 2 in both
    # scores, so both models give it y = (1/2, 1/2); duplicated points are reset exactly.
    X = np.array([[0.0], [0.0], [1.0], [2.0], [2.0], [3.0], [1.0]])
    init = np.array([[0.0], [2.0]])
    with pytest.warns(UserWarning, match="Theorem 2.2 .* shares point 2 between centers 0, 1"):
        ours = dot_product_lloyd_transformer(1, 2, config=config).run(X, init, 4)
    with pytest.warns(UserWarning, match="Theorem 2.1 .* shares point 2 between centers 0, 1"):
        euclid = lloyd_transformer(1, 2, config=config).run(X, init, 4)
    np.testing.assert_array_equal(ours.assignments, euclid.assignments)
    np.testing.assert_array_equal(ours.centers, euclid.centers)
    np.testing.assert_array_equal(ours.assignments[0][2], [0.5, 0.5])


def test_an_empty_cluster_moves_to_the_global_mean_as_in_lloyd():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [10.0, 10.0]])
    init = np.array([[0.0, 0.0], [10.0, 10.0], [100.0, 100.0]])  # center 2 gets no point
    ref = lloyd(X, init, 3)
    for config in CONFIGS:
        traj = dot_product_lloyd_transformer(2, 3, config=config).run(X, init, 3)
        np.testing.assert_allclose(traj.centers, ref.centers, rtol=0, atol=1e-13)
    np.testing.assert_allclose(ref.centers[1, 2], X.mean(axis=0))


def test_finite_gamma_threshold_on_figure3_data_is_2e3_for_the_validated_model():
    # Threshold: the smallest gamma (on a 1-2-5 grid) with a log-objective gap <= 1e-3 at
    # every one of the 10 layers. CAX's softmax is the only finite-gamma block, so below
    # it boundary points keep fractional assignments and pull the centers.
    X, init = figure3_data(seed=0)
    ref = lloyd(X, init, 10)
    gaps = {g: _log_gap(dot_product_lloyd_transformer(2, 5, g).run(X, init, 10, warn=False), ref, X)
            for g in (1e2, 1e3, 2e3, 1e4, 1e6)}
    for g in (2e3, 1e4, 1e6):
        assert gaps[g] <= 1e-3, gaps
    assert gaps[1e3] > 1e-3, gaps  # just below: fails, by a factor of about 2.5
    assert gaps[1e2] > 1e-2, gaps  # well below: the documented disagreement


def test_on_the_authors_figure3_draw_the_gap_is_larger_than_on_the_numpy_draw():
    # The numbers the docstrings and the book state for figure3_data() (the authors' draw).
    X, init = figure3_data()
    ref = lloyd(X, init, 10)
    for build in (dot_product_lloyd_transformer, lloyd_transformer):
        gaps = {g: _log_gap(build(2, 5, g).run(X, init, 10), ref, X) for g in (2e3, 1e4, 5e4, 1e5)}
        assert 1e-2 < gaps[2e3] < 1.1e-2 and 6.5e-3 < gaps[1e4] < 6.7e-3, gaps
        assert gaps[5e4] > 1e-3 > gaps[1e5], gaps


def test_all_attention_threshold_on_small_figure3_data_lies_between_1e6_and_1e7():
    # All-softmax: SAX must single out each point among its neighbours. On 1,000 points
    # of the Figure 3 kind, gamma = 1e6 still averages neighbours with different y, and
    # the one-sided dot CAC lets the resulting y_ij > 1 dominate the means.
    X, init, _ = gaussian_mixture(np.random.default_rng(0), n=1_000, d=2, k=5)
    ref = lloyd(X, init, 10)
    assert _log_gap(dot_product_lloyd_transformer(2, 5, 1e6, "all-attention").run(X, init, 10), ref, X) > 0.1
    assert _log_gap(dot_product_lloyd_transformer(2, 5, 1e7, "all-attention").run(X, init, 10), ref, X) <= 1e-3


@pytest.mark.parametrize("d,k", [(1, 1), (2, 5), (32, 10), (100, 3)])
def test_parameter_and_nonzero_counts_match_the_closed_forms(d, k):
    counts = parameter_counts(d, k)
    D = d + k + 2
    assert counts["Theorem 2.1"] == {"parameters": 12 * (d + k) ** 2, "nonzeros": 6 * (d + k)}
    assert counts["Theorem 2.2"] == {
        "parameters": 12 * D**2 + 4 * d * D + 2 * d + D,
        "nonzeros": 10 * d + 6 * k + 5,
    }
    # The price of dot products: 4d + 5 more non-zeros (the FFN's 4d, the constant's 4
    # entries in CAX/SAX, SAC's clearing of the old norm).
    assert counts["Theorem 2.2"]["nonzeros"] - counts["Theorem 2.1"]["nonzeros"] == 4 * d + 5


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(d=2, k=3, gamma=0.0), r"gamma must be a positive number or numpy.inf; got gamma=0.0"),
        (dict(d=2, k=3, gamma=-1.0), r"got gamma=-1.0"),
        (dict(d=2, k=3, gamma=float("nan")), r"got gamma=nan"),
        (dict(d=2, k=3, gamma="big"), r"gamma must be a positive number; got gamma='big'"),
        (dict(d=0, k=3), r"d must be an integer >= 1; got d=0"),
        (dict(d=2, k=0), r"k must be an integer >= 1; got k=0"),
        (dict(d=2, k=2.0), r"k must be an integer; got k=2.0"),
        (dict(d=2, k=3, config="fast"), r"config must be one of \[.*\]; got config='fast'"),
    ],
)
def test_dot_product_transformer_rejects_bad_construction_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dot_product_lloyd_transformer(**kwargs)


def test_feedforward_rejects_unknown_activations_and_mismatched_shapes():
    with pytest.raises(ValueError, match=r"activation must be one of \[.*\]; got activation='tanh'"):
        FeedForward(np.zeros((2, 3)), np.zeros(2), np.zeros((3, 2)), np.zeros(3), activation="tanh")
    match = r"W2 must have shape \(3, 2\) for W1.shape=\(2, 3\); got W2.shape=\(2, 3\)"
    with pytest.raises(ValueError, match=match):
        FeedForward(np.zeros((2, 3)), np.zeros(2), np.zeros((2, 3)), np.zeros(3))


def test_parameter_counts_rejects_bad_sizes():
    with pytest.raises(ValueError, match=r"d must be an integer >= 1; got d=0"):
        parameter_counts(0, 3)


X_OK = np.arange(20, dtype=float).reshape(10, 2)
INIT_OK = X_OK[:3].copy()


@pytest.mark.parametrize(
    "X,init,n_layers,match",
    [
        (np.zeros((10, 3)), INIT_OK, 2, r"this model was built for d=2; got X with d=3"),
        (X_OK, X_OK[:4], 2, r"init must have k=3 rows; got init.shape=\(4, 2\)"),
        (X_OK[:2], INIT_OK, 2, r"must be <= n=2"),
        (X_OK, INIT_OK, -3, r"n_layers must be a non-negative integer; got n_layers=-3"),
        (X_OK, INIT_OK, "3", r"n_layers must be a non-negative integer; got n_layers='3'"),
        (np.full((10, 2), np.nan), INIT_OK, 2, r"X must be finite"),
        (X_OK, np.full((3, 2), np.inf), 2, r"init must be finite"),
    ],
)
def test_a_dot_product_model_rejects_bad_data_and_depths(X, init, n_layers, match):
    for config in CONFIGS:
        with pytest.raises(ValueError, match=match):
            dot_product_lloyd_transformer(2, 3, config=config).run(X, init, n_layers)


def test_run_does_not_modify_its_inputs():
    X, init = _mixture(9, 50, 2, 3)
    X0, init0 = X.copy(), init.copy()
    dot_product_lloyd_transformer(2, 3, config="all-attention").run(X, init, 3)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(init, init0)


def test_gamma_sweep_plot_draws_one_line_per_model_and_rejects_bad_input():
    pytest.importorskip("matplotlib", reason="needs matplotlib, of the plot extra: pip install -e '.[plot]'")
    from matplotlib.figure import Figure

    from kmt_ref.plotting.dot_product import plot_gamma_sweep

    fig = plot_gamma_sweep([1e2, 1e4], {"a": [0.1, 0.0], "b": [1.0, 1e-5]})
    assert isinstance(fig, Figure)
    assert len(fig.axes[0].get_lines()) == 3  # two models and the tolerance
    with pytest.raises(ValueError, match=r"gammas must be a non-empty 1-D array of positive finite numbers"):
        plot_gamma_sweep([0.0, 1.0], {"a": [0.1, 0.2]})
    with pytest.raises(ValueError, match=r"gaps\['a'\] must be non-negative with shape \(2,\)"):
        plot_gamma_sweep([1.0, 2.0], {"a": [0.1]})


def test_ffn_weights_are_exposed_read_only():
    model = dot_product_lloyd_transformer(2, 3)
    assert set(model.weights["FFN"]) == {"W1", "b1", "W2", "b2"}
    with pytest.raises(ValueError):
        model.weights["FFN"]["W1"][0, 0] = 5.0
