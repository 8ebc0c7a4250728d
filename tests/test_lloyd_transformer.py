"""Theorem 2.1: the k-means transformer runs Lloyd's algorithm."""

import numpy as np
import pytest

import kmt_ref.attention
from kmt_ref import BLOCK_NAMES, dot_product_lloyd_transformer, figure3_data, gaussian_mixture, lloyd, lloyd_transformer
from kmt_ref.geometry import squared_distances

CONFIGS = ("validated", "paper", "all-attention")


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed,n,d,k", [(0, 300, 2, 5), (1, 400, 8, 10), (2, 150, 1, 3), (3, 500, 5, 7)])
def test_theorem21_at_gamma_inf_equals_lloyd_for_every_depth(mixture, config, seed, n, d, k):
    X, init = mixture(seed, n, d, k)
    model = lloyd_transformer(d, k, config=config)
    ref = lloyd(X, init, 10)
    for T in range(1, 11):
        traj = model.run(X, init, T)
        np.testing.assert_allclose(traj.centers, ref.centers[: T + 1], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(traj.labels, ref.labels[:T])
        # The assignment block is exactly one-hot: the invariant P = [X | Y_t].
        np.testing.assert_array_equal(traj.assignments[-1], np.eye(k)[ref.labels[T - 1]])


def test_weights_are_exactly_equation_5():
    d, k = 3, 4
    I_d, I_k = np.eye(d), np.eye(k)
    Z_dk, Z_kd = np.zeros((d, k)), np.zeros((k, d))
    P_x = np.block([[I_d, Z_dk], [Z_kd, np.zeros((k, k))]])
    P_y = np.block([[np.zeros((d, d)), Z_dk], [Z_kd, I_k]])
    expected = {
        "CAX": (P_x, P_x, P_y),
        "SAX": (P_x, P_x, -P_y),
        "CAC": (P_y, P_y, P_x),
        "SAC": (P_y, P_y, -P_x),
    }
    for config in CONFIGS:
        model = lloyd_transformer(d, k, config=config)
        assert tuple(model.weights) == BLOCK_NAMES
        for block, (Wq, Wk, Wv) in expected.items():
            np.testing.assert_array_equal(model.weights[block]["Wq"], Wq)
            np.testing.assert_array_equal(model.weights[block]["Wk"], Wk)
            np.testing.assert_array_equal(model.weights[block]["Wv"], Wv)


@pytest.mark.parametrize("d,k", [(1, 1), (2, 5), (32, 10), (100, 3)])
def test_nonzero_count_is_linear_in_d_plus_k(d, k):
    # CAX, SAX: 2d + k each; CAC, SAC: d + 2k each.
    assert lloyd_transformer(d, k).nonzero_count() == 6 * (d + k)


def test_weights_are_read_only():
    model = lloyd_transformer(2, 3)
    with pytest.raises(ValueError):
        model.weights["CAX"]["Wq"][0, 0] = 5.0


def test_hand_computed_toy_case_through_the_transformer():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [10.0, 10.0], [11.0, 10.0]])
    init = np.array([[0.0, 0.0], [10.0, 10.0]])
    for config in CONFIGS:
        traj = lloyd_transformer(2, 2, config=config).run(X, init, 2)
        np.testing.assert_array_equal(traj.labels, [[0, 0, 0, 1, 1]] * 2)
        np.testing.assert_allclose(traj.centers[1], [[1 / 3, 1 / 3], [10.5, 10.0]], atol=1e-15)
        np.testing.assert_allclose(traj.centers[2], traj.centers[1], atol=1e-15)


def test_duplicated_points_reset_exactly_in_the_all_attention_layer():
    # SAX splits its attention over identical copies of a point; they carry the
    # same y, so the reset is still exact.
    rng = np.random.default_rng(7)
    X, init, _ = gaussian_mixture(rng, n=60, d=2, k=3)
    X = np.concatenate([X, X[:20], X[:5]])  # many exact duplicates
    traj = lloyd_transformer(2, 3, config="all-attention").run(X, init, 8)
    ref = lloyd(X, init, 8)
    np.testing.assert_allclose(traj.centers, ref.centers, rtol=0, atol=1e-12)
    for Y in traj.assignments:
        assert set(np.unique(Y)) <= {0.0, 1.0}


def _tie_case():
    # x = 1 is equidistant from the centers 0 and 2; the others are not.
    X = np.array([[0.0], [-0.5], [1.0], [2.0], [2.5]])
    init = np.array([[0.0], [2.0]])
    return X, init


def test_a_tie_gives_a_fractional_assignment_and_the_lowest_label():
    X, init = _tie_case()
    for config in CONFIGS:
        with pytest.warns(UserWarning, match="layer 1 shares point 2 between centers 0, 1"):
            traj = lloyd_transformer(1, 2, config=config).run(X, init, 1)
        np.testing.assert_array_equal(traj.assignments[0][2], [0.5, 0.5])
        assert traj.labels[0][2] == 0  # as numpy.argmin in lloyd


def test_at_a_tie_the_all_attention_layer_excludes_the_tied_point():
    X, init = _tie_case()
    with pytest.warns(UserWarning, match="layer 1 shares point 2 between centers 0, 1"):
        traj = lloyd_transformer(1, 2, config="all-attention").run(X, init, 1)
    # Euclidean CAC scores the tied point -1/2 against both ids, below the members' 0.
    np.testing.assert_allclose(traj.centers[1], [[-0.25], [2.25]], atol=1e-15)


def test_at_a_tie_the_validated_layer_counts_the_tied_point_half_in_each_cluster():
    X, init = _tie_case()
    with pytest.warns(UserWarning, match="layer 1 shares point 2 between centers 0, 1"):
        traj = lloyd_transformer(1, 2, config="validated").run(X, init, 1)
    # Linear CAC weights point i by y_ij: (0 - 0.5 + 0.5*1) / 2.5 and (2 + 2.5 + 0.5*1) / 2.5.
    np.testing.assert_allclose(traj.centers[1], [[0.0], [2.0]], atol=1e-15)
    # Lloyd (lowest index) disagrees here, which is why ties are excluded by the theorem.
    assert not np.allclose(lloyd(X, init, 1).centers[1], traj.centers[1])


@pytest.mark.parametrize("config", CONFIGS)
def test_an_empty_cluster_moves_to_the_global_mean_as_lloyd_default(config):
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    init = np.array([[1.5], [100.0]])
    # the emptied center moves to the mean, 1.5, where center 0 is: from layer 2 on every point is tied
    with pytest.warns(UserWarning, match="layer 2 shares point 0 between centers 0, 1"):
        traj = lloyd_transformer(1, 2, config=config).run(X, init, 3)
    ref = lloyd(X, init, 3)  # empty_cluster="global_mean" is the default
    assert traj.centers[1, 1, 0] == pytest.approx(1.5)
    np.testing.assert_allclose(traj.centers, ref.centers, atol=1e-14)
    assert np.all(np.isfinite(traj.centers))


def test_figure3_on_the_authors_draw_prints_the_papers_log_objectives():
    # The paper's Figure 3 notebook prints these, two decimals, after 0..10 layers.
    paper = [6.44, 5.78, 5.47, 4.96, 4.69, 4.61, 4.59, 4.59, 4.59, 4.59, 4.59]
    X, init = figure3_data()
    got = lloyd_transformer(2, 5, gamma=1e4).run(X, init, 10)
    np.testing.assert_array_equal(np.round(got.log_objectives(X), 2), paper)
    # Lloyd's curve is on top of it in the figure; in numbers, within 1e-2 at every layer
    # (6.6e-3 at layer 3, where the transformer is ahead) and 1e-6 after the last.
    gap = np.abs(got.log_objectives(X) - lloyd(X, init, 10).log_objectives(X))
    assert gap.max() <= 1e-2 and gap[-1] <= 1e-6


def test_figure3_validated_layer_at_gamma_1e4_agrees_with_lloyd_to_1e_3_in_log_objective():
    # 1e-3 is this project's tolerance, not the paper's; on this NumPy draw it holds.
    X, init = figure3_data(seed=0)
    ref = lloyd(X, init, 10).log_objectives(X)
    got = lloyd_transformer(2, 5, gamma=1e4).run(X, init, 10).log_objectives(X)
    assert np.max(np.abs(got - ref)) <= 1e-3


def test_figure3_data_refuses_a_bad_seed():
    for seed in (-1, 0.5, "0", True):
        with pytest.raises(ValueError, match="seed"):
            figure3_data(seed)


def test_all_attention_layer_at_gamma_1e4_fails_on_dense_data_because_sax_cannot_separate_points():
    rng = np.random.default_rng(0)
    X, init, _ = gaussian_mixture(rng, n=2000, d=2, k=5)
    ref = lloyd(X, init, 5)
    traj = lloyd_transformer(2, 5, gamma=1e4, config="all-attention").run(X, init, 5)
    # The reset is smeared over neighbours: the assignment block is no longer one-hot...
    Y = traj.assignments[-1]
    assert np.max(np.abs(Y - np.eye(5)[ref.labels[-1]])) > 0.1
    # ...and the log objective drifts several times past the paper's 1e-3 tolerance.
    gap = np.max(np.abs(traj.log_objectives(X) - ref.log_objectives(X)))
    assert gap > 5e-3
    # The validated configuration on the same data does not.
    ok = lloyd_transformer(2, 5, gamma=1e4).run(X, init, 5).log_objectives(X)
    assert np.max(np.abs(ok - ref.log_objectives(X))) <= 1e-3


def test_chunked_self_attention_equals_unchunked(monkeypatch, mixture):
    X, init = mixture(0, 300, 3, 4)
    block = lloyd_transformer(3, 4, gamma=50.0, config="all-attention").blocks["SAX"]
    P = np.concatenate([X, np.zeros((300, 4))], axis=1)
    full = kmt_ref.attention.attend(P, P, block)  # the reference: every weight at once
    monkeypatch.setattr(kmt_ref.kernels.fast, "CACHE_ELEMENTS", 1000)  # 3 query rows per chunk
    np.testing.assert_allclose(kmt_ref.kernels.attend(P, P, block), full, rtol=0, atol=1e-15)


def test_run_with_reembedding_is_the_same_for_the_construction(mixture):
    X, init = mixture(1, 200, 2, 4)
    model = lloyd_transformer(2, 4)
    a, b = model.run(X, init, 6), model.run(X, init, 6, reembed=True)
    np.testing.assert_allclose(a.centers, b.centers, atol=1e-14)


@pytest.mark.slow
def test_all_attention_layer_runs_at_n_20000_without_an_n_by_n_matrix():
    from kmt_ref.programs.bench import peak_memory

    rng = np.random.default_rng(0)
    X, init, _ = gaussian_mixture(rng, n=20_000, d=2, k=5)
    model = lloyd_transformer(2, 5, gamma=1e4, config="all-attention")
    peak = peak_memory(lambda: model.run(X, init, 1))
    n_by_n = 8 * 20_000**2  # 3.2 GB
    assert peak < n_by_n / 8


def test_assemble_blocks_turns_attention_into_hardmax_at_gamma_inf_and_softmax_otherwise():
    from kmt_ref.lloyd_transformer import CONFIGS, assemble_blocks, equation5_weights
    from kmt_ref.tokens import TokenLayout

    weights = equation5_weights(TokenLayout(2, 3))
    exact = assemble_blocks(weights, CONFIGS["validated"], np.inf)
    soft = assemble_blocks(weights, CONFIGS["validated"], 1e4)
    assert exact["CAX"].normalizer == "hardmax" and soft["CAX"].normalizer == "softmax"
    assert exact["CAC"].normalizer == soft["CAC"].normalizer == "linear"
    assert soft["CAX"].gamma == 1e4 and np.array_equal(soft["CAX"].Wv, weights["CAX"][2])
    # Weights are values: a block holds its own read-only copy.
    assert soft["CAX"].Wv is not weights["CAX"][2] and not soft["CAX"].Wv.flags.writeable


def test_keep_assignments_false_keeps_labels_and_centers_and_still_warns(mixture):
    X, init = mixture(2, 300, 2, 4)
    model = lloyd_transformer(2, 4, gamma=1e4)
    full, lean = model.run(X, init, 5), model.run(X, init, 5, keep_assignments=False)
    np.testing.assert_array_equal(full.centers, lean.centers)
    np.testing.assert_array_equal(full.labels, lean.labels)
    assert full.assignments.shape == (5, 300, 4) and lean.assignments is None
    cold = lloyd_transformer(2, 4, gamma=1e-3)  # far too small: most assignments split
    with pytest.warns(UserWarning) as said:  # the certificate's warning before the run too
        cold.run(X, init, 2, warn=True, keep_assignments=False)
    assert any("split assignments" in str(w.message) for w in said)
    with pytest.raises(ValueError, match="keep_assignments"):
        model.run(X, init, 1, keep_assignments="no")


def _batch_models(d, k):
    from kmt_ref import dot_product_lloyd_transformer
    from kmt_ref.learning import ModelConfig, init_params, to_transformer

    learned = {tokens: to_transformer(init_params(ModelConfig(d, k, tokens), np.random.default_rng(3)),
                                      ModelConfig(d, k, tokens)) for tokens in ("d+k", "d")}
    return {"validated inf": lloyd_transformer(d, k), "validated 1e4": lloyd_transformer(d, k, 1e4),
            "all-attention 1e2": lloyd_transformer(d, k, 1e2, config="all-attention"),
            "dot product 1e4": dot_product_lloyd_transformer(d, k, 1e4),
            "learned d+k": learned["d+k"], "learned d": learned["d"]}


@pytest.mark.parametrize("reembed", [False, True])
def test_a_batch_of_tasks_runs_each_task_as_if_alone_bit_for_bit(reembed):
    d, k, B = 3, 4, 5
    rng = np.random.default_rng(11)
    X = rng.normal(size=(B, 60, d)) * rng.uniform(0.5, 3, size=(B, 1, 1)) + rng.normal(size=(B, 1, d)) * 1e3
    init = X[:, :k] + 0.1
    for name, model in _batch_models(d, k).items():
        batch = model.run(X, init, 3, reembed=reembed)
        assert batch.centers.shape == (4, B, k, d) and batch.labels.shape == (3, B, 60), name
        for b in range(B):
            alone = model.run(X[b], init[b], 3, reembed=reembed)
            np.testing.assert_array_equal(batch.centers[:, b], alone.centers, err_msg=name)
            np.testing.assert_array_equal(batch.labels[:, b], alone.labels, err_msg=name)
            if alone.assignments is not None:
                np.testing.assert_array_equal(batch.assignments[:, b], alone.assignments, err_msg=name)


def test_a_diverging_run_raises_or_returns_its_non_finite_centers_as_asked():
    from kmt_ref.learning import ModelConfig, init_params, to_transformer

    config = ModelConfig(2, 3)
    model = to_transformer(1e3 * init_params(config, np.random.default_rng(0)), config)
    X = np.random.default_rng(1).normal(size=(2, 20, 2))
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="non-finite centers appeared"):
        model.run(X[0], X[0, :3], 30)
    traj = model.run(X, X[:, :3], 30, diverged="return")
    finite = np.isfinite(traj.centers).reshape(31, -1).all(axis=1)
    assert finite[0] and not finite[-1]
    with pytest.raises(ValueError, match="diverged"):
        model.run(X, X[:, :3], 1, diverged="ignore")
    with pytest.raises(ValueError, match="built for k=3"):
        model.run(X, X[:, :2], 1)


def test_the_papers_configuration_is_its_summary_and_the_validated_one_differs_by_the_resets():
    from kmt_ref.lloyd_transformer import CONFIGS as MECHANISMS

    paper = MECHANISMS["paper"]
    # points: Euclidean attention (assignment and point reset); centers: dot-product (linear) averaging
    assert paper["CAX"] == paper["SAX"] == ("euclidean", "attention") and paper["CAC"] == ("dot", "linear")
    differ = {b for b in paper if paper[b] != MECHANISMS["validated"][b]}
    assert differ == {"SAX", "SAC"} and all(MECHANISMS["validated"][b][1] == "identity" for b in differ)
    assert {b for b in paper if paper[b] != MECHANISMS["all-attention"][b]} == {"CAC"}


def test_the_papers_configuration_at_finite_gamma_needs_sax_to_separate_points():
    # like the all-attention layer, the paper's point reset is a softmax over points: at gamma = 1e4
    # it cannot tell 1,000 points in the unit square apart. It subtracts neighbours' assignments,
    # some weights turn negative, and the linear center update is undefined on them: a clear error.
    X, init, _ = gaussian_mixture(np.random.default_rng(0), n=1000, d=2, k=5)
    with pytest.raises(ValueError, match="linear attention needs non-negative scores"):
        lloyd_transformer(2, 5, 1e4, config="paper").run(X, init, 5)
    ref = lloyd(X, init, 5).log_objectives(X)
    assert np.abs(lloyd_transformer(2, 5, 1e4).run(X, init, 5).log_objectives(X) - ref).max() < 1e-3
    # and with gamma large enough for SAX (40 / smallest squared distance) it is exact again
    dmin = np.min(squared_distances(X, X) + np.diag(np.full(len(X), np.inf)))
    exact = lloyd_transformer(2, 5, 40 / dmin, config="paper").run(X, init, 5)
    np.testing.assert_allclose(exact.centers, lloyd(X, init, 5).centers, rtol=0, atol=1e-12)


def test_the_old_name_faithful_still_works_with_a_warning():
    with pytest.warns(FutureWarning, match="renamed config='all-attention'"):
        old = lloyd_transformer(2, 3, config="faithful")
    new = lloyd_transformer(2, 3, config="all-attention")
    assert all(old.blocks[b].normalizer == new.blocks[b].normalizer and old.blocks[b].score == new.blocks[b].score
               for b in BLOCK_NAMES)
    with pytest.warns(FutureWarning):
        dot_product_lloyd_transformer(2, 3, config="faithful")


def test_the_reference_point_of_a_run_is_every_coordinates_lower_median():
    from kmt_ref.readout import _column_stats

    rng = np.random.default_rng(4)
    for shape in ((1, 1), (6, 1), (2, 7, 3), (3, 1001, 70)):
        X = rng.integers(-3, 3, size=shape).astype(float) + rng.random(shape) * (rng.random(shape) < 0.5)
        lower = np.sort(X, axis=-2)[..., (X.shape[-2] - 1) // 2, :]
        for width in (1, 3, 64):  # blocks of columns, the last one partial
            medians, low, high = _column_stats(X, width)
            np.testing.assert_array_equal(medians, lower)
            np.testing.assert_array_equal(low, X.min(axis=-2))
            np.testing.assert_array_equal(high, X.max(axis=-2))


def _exact_ties(X, C):
    """Points with two nearest centers, by integer arithmetic (integer data: every squared distance exact)."""
    D = ((X[:, None, :].astype(int) - C[None, :, :].astype(int)) ** 2).sum(axis=-1)
    return [i for i, row in enumerate(D) if np.count_nonzero(row == row.min()) > 1]


@pytest.mark.parametrize("build", [lloyd_transformer, dot_product_lloyd_transformer])
def test_at_gamma_inf_a_tie_is_warned_about_where_the_run_leaves_lloyd(build):
    import warnings

    from kmt_ref.lloyd_transformer import unique_nearest

    g = np.array([[0, 0, 0], [2, 0, 0], [1, 0, 0], [1, 1, 0], [0, 2, 0], [2, 2, 0]], dtype=float)
    X = np.vstack([g, g + 5])
    init = X[[0, 1, 4]]
    assert _exact_ties(X, init)[:1] == [2]
    with pytest.raises(ValueError, match="C must have 3 columns|C.*d=3|3 columns"):
        unique_nearest(X, init[:, :2])
    with pytest.raises(ValueError, match="X must be finite"):
        unique_nearest(np.where(X == 5, np.nan, X), init)
    # the hardmax shares a tied point, Lloyd's algorithm gives it to the lowest index: the runs part
    with pytest.warns(UserWarning, match=r"before layer 1, point 2 is exactly as near to center 0 as to center 1 "
                                         r"\(a tie.*6 points tied\).*Lloyd's algorithm gives it to center 0"):
        run = build(3, 3, np.inf).run(X, init, 3, warn=True)
    assert np.max(np.abs(run.centers - lloyd(X, init, 3).centers)) > 0.1
    # on integer data the check is the integer one, tie or not, center by center
    rng = np.random.default_rng(4)
    for _ in range(200):
        Y = rng.integers(0, 4, size=(12, 2)).astype(float)
        C = rng.integers(0, 4, size=(3, 2)).astype(float)
        assert (unique_nearest(Y, C) is None) == (not _exact_ties(Y, C))
    # where no point is tied, nothing is said and the run is Lloyd's
    Z, _, _ = gaussian_mixture(np.random.default_rng(0), n=200, d=3, k=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = build(3, 3, np.inf).run(Z, Z[:3], 5, warn=True)
    np.testing.assert_allclose(run.centers, lloyd(Z, Z[:3], 5).centers, rtol=0, atol=1e-12)


@pytest.mark.parametrize("build", [lloyd_transformer, dot_product_lloyd_transformer])
def test_by_default_a_run_names_the_first_point_its_hardmax_shares(build):
    import warnings

    from kmt_ref.engine import LABELS, REFERENCE, Engine

    g = np.array([[0, 0, 0], [2, 0, 0], [1, 0, 0], [1, 1, 0], [0, 2, 0], [2, 2, 0]], dtype=float)
    X = np.vstack([g, g + 5])
    init = X[[0, 1, 4]]

    def said(warn, X=X, init=init, engine=None):
        with warnings.catch_warnings(record=True) as out:
            warnings.simplefilter("always")
            build(3, 3).run(X, init, 3, engine=engine, **({} if warn is None else dict(warn=warn)))
        return [str(w.message) for w in out]

    for engine in (Engine(), LABELS, REFERENCE):  # the default is warn="ties": read off the layer's own output
        (message,) = said(None, engine=engine)
        assert ("layer 1 shares point 2 between centers 0, 1 (their scores tie; 6 points shared at that layer), "
                "where the classical algorithm gives it to center 0") in message
    assert said("ties") == said(None) and said(False) == []
    assert len(said(True)) == 1 and "exactly as near" in said(True)[0]  # the assumption says it first
    # a batch over two threads names the task, and the first layer's first tie over all tasks
    XB, CB = np.stack([X + 0.25 * np.eye(3)[0], X, X]), np.stack([init + 0.5, init, init])
    (message,) = said(None, X=XB, init=CB, engine=Engine(threads=2))
    assert "layer 1 in task 1 shares point 2 between centers 0, 1" in message
    for bad in ("yes", 1, None, "Ties"):
        with pytest.raises(ValueError, match="warn must be 'ties', True or False"):
            build(3, 3).run(X, init, 1, warn=bad)
    # without a tie: nothing
    Z, _, _ = gaussian_mixture(np.random.default_rng(0), n=200, d=3, k=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build(3, 3).run(Z, Z[:3], 5)


@pytest.mark.parametrize("config", ["validated", "paper", "all-attention"])
def test_an_empty_cluster_s_mean_is_the_points_sum_over_their_count_so_an_exact_tie_survives(config):
    from kmt_ref.engine import LABELS, REFERENCE, Engine

    # Centers 2 and 4 lose their points: each moves to the mean of all points, which sum to 0 exactly; center 3
    # keeps the points at the origin. So three centers are at the origin and the points there are tied, as
    # Lloyd's algorithm sees them. Weights 1/6 times each point left the empty centers an ulp off 0: the tie
    # was broken, the label went to center 3, silently.
    X = np.array([[-2.0, -4.0], [0.0, 0.0], [-4.0, -8.0], [0.0, 0.0], [2.0, 4.0], [4.0, 8.0]])
    init = np.array([[0.22, 4.65], [-3.84, -3.68], [2.36, 0.59], [0.21, 1.59], [3.80, -2.28]])
    ref = lloyd(X, init, 3)
    assert ref.labels[1].tolist() == [1, 2, 1, 2, 0, 0] and np.all(ref.centers[1, 2:] == 0)
    for engine in (Engine(), LABELS, REFERENCE):
        # the points at the origin stay shared by the three centers there, to the last layer
        with pytest.warns(UserWarning, match="after the last layer, 33% of the points have split assignments"), \
                pytest.warns(UserWarning, match="point 1 is exactly as near to center 2 as to centers 3, 4"):
            run = lloyd_transformer(2, 5, config=config).run(X, init, 3, warn=True, engine=engine)
        assert np.all(run.centers[1, 2:] == 0)
        np.testing.assert_array_equal(run.labels, ref.labels)


def test_the_cac_variants_assume_no_tie_as_well():
    import warnings

    from kmt_ref.variants import VARIANTS

    g = np.array([[0, 0, 0], [2, 0, 0], [1, 0, 0], [1, 1, 0], [0, 2, 0], [2, 2, 0]], dtype=float)
    X = np.vstack([g, g + 5])
    for name in ("robust (sparsemax)", "trimmed (normmax)", "entmax-1.5 k-means", "k-medoids (Gumbel)"):
        v = VARIANTS[name]
        model = v.build(3, 3, v.values[0])
        options = dict(rng=np.random.default_rng(0)) if v.needs_rng else {}
        with warnings.catch_warnings(record=True) as said:  # some also say the last layer's split assignments
            warnings.simplefilter("always")
            model.run(X, X[[0, 1, 4]], 2, warn=True, **options)
        assert "point 2 is exactly as near to center 0 as to center 1" in str(said[0].message), name


def test_the_frame_shifts_a_coordinate_only_where_the_shift_is_exact():
    # Sterbenz: x - o is exact for o/2 <= x <= 2o. Coordinate 0 lies in [1000, 1500] (shifted by its lower
    # median, exactly); coordinate 1 reaches 1e-3 with a median near 1.5 (not shifted: 1e-3 - 1.5 rounds).
    from kmt_ref.readout import choose_frame

    rng = np.random.default_rng(2)
    X = np.column_stack([rng.uniform(1000, 1500, 41), np.r_[1e-3, rng.uniform(1, 2, 40)]])
    C = X[:3].copy()
    model = lloyd_transformer(2, 3)
    shifted, origin = choose_frame(model, X.copy(), C)
    assert origin[0, 0] == np.sort(X[:, 0])[20] and origin[0, 1] == 0.0
    np.testing.assert_array_equal(shifted + origin, X)  # every shift undone exactly
    np.testing.assert_array_equal(shifted[:, 1], X[:, 1])
    run = model.run(X, C, 3)
    np.testing.assert_array_equal(run.labels, kmt_ref.lloyd(X, C, 3).labels)
