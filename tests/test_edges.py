"""Correct at the numerical edges: far from the origin, huge and tiny values, bad types."""

import numpy as np
import pytest
from scipy.cluster.vq import kmeans2

import kmt_ref
import kmt_ref.running
from kmt_ref import dot_product_lloyd_transformer, kmeans_objective, lloyd, lloyd_transformer


def test_two_points_a_millionth_apart_at_one_million_keep_their_own_centers():
    X = np.array([[1000000.000512], [1000000.00095]])
    init = X.copy()
    assert lloyd(X, init, 1).labels.tolist() == [[0, 1]]
    assert kmeans_objective(X, init) == 0.0
    for model in (lloyd_transformer(1, 2), lloyd_transformer(1, 2, config="all-attention"),
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


def test_min_gamma_refuses_an_rtol_float64_cannot_resolve():
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(0), n=60, d=2, k=3)
    for rtol in (1e-17, 0.0, 1.0, "1e-3"):
        with pytest.raises(ValueError, match="rtol"):
            kmt_ref.min_gamma(X, init, 2, 1e-3, rtol=rtol)
    assert np.isfinite(kmt_ref.min_gamma(X, init, 2, 1e-3, rtol=1e-12))  # the finest accepted ends


@pytest.mark.parametrize("call, name", [
    (lambda: kmt_ref.min_gamma([[0.0], [1.0]], [[0.0]], 1, 1e-3, float_allowance="no"), "float_allowance"),
    (lambda: lloyd_transformer(1, 1).run([[0.0], [1.0]], [[0.0]], 1, reembed="yes"), "reembed"),
    (lambda: lloyd([[0, 1], [2]], [[0, 1]], 1), "X"),
    (lambda: lloyd([[0.0]], [[0.0]], 10**12), "n_iter"),
    (lambda: kmt_ref.figure3_data(-1), "seed"),
])
def test_bad_types_and_limits_are_value_errors_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_numpy_scalars_and_zero_d_arrays_mean_what_python_numbers_mean():
    X = np.array([[0.0], [1.0], [5.0]])
    ref = lloyd(X, X[:2], 3)
    np.testing.assert_array_equal(lloyd(X, X[:2], np.array(3)).centers, ref.centers)
    np.testing.assert_array_equal(lloyd(X, X[:2], np.int64(3)).centers, ref.centers)
    model = lloyd_transformer(np.int64(1), np.int32(2), gamma=np.array(1e4))
    assert model.run(X, X[:2], np.int64(2)).centers.shape == (3, 2, 1)


def test_learning_configs_and_samplers_refuse_strings_for_flags_and_accept_numpy_integers():
    from kmt_ref.learning.config import TrainConfig
    from kmt_ref.tasks import sample_tasks

    for kwargs in (dict(equal_weights="False"), dict(isotropic=2), dict(seed=-1), dict(tau="0.1")):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            TrainConfig(**kwargs)
    config = TrainConfig(seed=np.int64(3), d=np.int64(32))
    assert config == TrainConfig(seed=3) and type(config.seed) is int
    with pytest.raises(ValueError, match="equal_weights"):
        sample_tasks(np.random.default_rng(0), 2, 10, 2, 2, equal_weights="no")


def test_learning_functions_refuse_nan_and_mismatched_batches():
    from kmt_ref import kmeans_objective
    from kmt_ref.learning import ModelConfig, forward, init_params, run_steps
    from kmt_ref.learning.loss import smoothed_objective

    config = ModelConfig(2, 3)
    theta = init_params(config, np.random.default_rng(0))
    X = np.random.default_rng(1).uniform(size=(4, 10, 2))
    init = X[:, :3]
    bad_X = X.copy()
    bad_X[1, 2, 0] = np.nan
    for fn in (lambda X, C: forward(theta, X, C, config), lambda X, C: run_steps(theta, X, C, config, 2),
               lambda X, C: smoothed_objective(X, C, 0.1), kmeans_objective):
        with pytest.raises(ValueError, match="X must be finite"):
            fn(bad_X, init)
        with pytest.raises(ValueError, match="batch size"):
            fn(X, init[:2])
    with pytest.raises(ValueError, match="n_layers"):
        run_steps(theta, X, init, config, -1)
    diverged = init.copy()
    diverged[0, 0, 0] = np.inf
    assert kmeans_objective(X, diverged)[0] == np.inf  # reported, not refused


def test_a_gamma_far_too_small_for_the_data_scale_can_be_told_cheaply():
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(0), n=300, d=2, k=3)
    tiny_X, tiny_init = X * 1e-4, init * 1e-4
    model = lloyd_transformer(2, 3, gamma=1e4)
    with pytest.warns(UserWarning) as said:  # the certificate's warning before the run, the split one after
        model.run(tiny_X, tiny_init, 3, warn=True)
    assert any("too small" in str(w.message) for w in said) and any("certificate" in str(w.message) for w in said)
    with pytest.warns(UserWarning, match="split assignments"):  # the defaults say it too, from the last layer
        assert model.run(tiny_X, tiny_init, 3).split_fraction()[-1] > 0.9
    assert model.run(X, init, 3).split_fraction()[-1] < 0.05  # the same gamma on unit-scale data
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.run(X, init, 3, warn=True)


def test_duplicates_and_near_duplicates_keep_the_all_attention_layers_on_lloyds_path():
    cases = [
        (dot_product_lloyd_transformer(1, 2, config="all-attention"), [[0.0]] * 7 + [[1.0], [5.0]], [[0.5], [5.0]]),
        (lloyd_transformer(1, 3, config="all-attention"), [[0.0]] * 7 + [[1.0]], [[0.0], [1.0], [50.0]]),
        (lloyd_transformer(1, 2, config="all-attention"), [[0.0], [1 - 1e-9], [1 + 1e-9], [2.0]], [[0.5], [1.5]]),
        (lloyd_transformer(1, 2, config="all-attention"), [[1e6], [1e6 + 1 - 3e-3], [1e6 + 1 + 3e-3], [1e6 + 2]],
         [[1e6 + 0.5], [1e6 + 1.5]]),
    ]
    for model, X, init in cases:
        X, init = np.array(X), np.array(init)
        np.testing.assert_allclose(model.run(X, init, 3).centers, lloyd(X, init, 3).centers, rtol=0, atol=1e-12)


def test_an_exact_tie_next_to_an_empty_cluster_follows_the_documented_rule():
    # Outside Theorem 2.1: the point 1 is exactly equidistant from the centers 0 and 2. Its
    # assignment is split (0, 1/2, 1/2); all-attention CAC scores it -3/2 for the empty cluster 0
    # (everyone else -2), so that cluster takes exactly the tied point. Lloyd gives the point
    # to the lower index and the empty center the global mean.
    X, init = np.array([[0.0], [1.0], [2.0], [10.0]]), np.array([[100.0], [0.0], [2.0]])
    with pytest.warns(UserWarning, match="layer 1 shares point 1 between centers 1, 2"):
        traj = lloyd_transformer(1, 3, config="all-attention").run(X, init, 1)
    np.testing.assert_array_equal(traj.assignments[0, 1], [0.0, 0.5, 0.5])
    np.testing.assert_array_equal(traj.centers[1].ravel(), [1.0, 0.0, 6.0])
    np.testing.assert_array_equal(lloyd(X, init, 1).centers[1].ravel(), [3.25, 0.5, 6.0])


def test_the_classical_twins_are_accurate_far_from_the_origin_too():
    from kmt_ref.variants.robust import robust_kmeans
    from kmt_ref.variants.soft import soft_kmeans
    from kmt_ref.variants.trimmed import gap_trimmed_kmeans

    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(6), n=300, d=2, k=3)
    for run in (lambda X, C: soft_kmeans(X, C, 5, 50.0), lambda X, C: robust_kmeans(X, C, 5, 0.5),
                lambda X, C: gap_trimmed_kmeans(X, C, 5, 1.0)):
        near, far = run(X, init), run(X + 1e6, init + 1e6)
        np.testing.assert_allclose(far.centers - 1e6, near.centers, atol=1e-8)


def test_iterate_protects_the_recorded_iterates_from_the_step():
    from kmt_ref.trajectory import iterate

    X = np.array([[0.0], [1.0], [3.0]])
    init = np.array([[0.0], [3.0]])

    def in_place(C, t):
        C += 1.0  # a step that moves its input would shift every recorded iterate
        return C, np.zeros(3, dtype=int)

    with pytest.raises(ValueError, match="read-only"):
        iterate(in_place, X, init, 2)

    def copying(C, t):
        return C + 1.0, np.zeros(3, dtype=int)

    traj = iterate(copying, X, init, 2)
    np.testing.assert_array_equal(traj.centers[0], init)
    np.testing.assert_array_equal(traj.centers[2], init + 2.0)


@pytest.mark.parametrize("bad, match", [
    (lambda C, t: (C[0], np.zeros(3, dtype=int)), r"centers of shape \(2, 1\).*got centers of shape \(1,\)"),
    (lambda C, t: (C, np.zeros(3)), "labels of shape .* integer dtype"),
    (lambda C, t: (C.astype(complex), np.zeros(3, dtype=int)), "real dtype"),
])
def test_iterate_checks_what_the_step_returns(bad, match):
    from kmt_ref.trajectory import iterate

    with pytest.raises(ValueError, match=match):
        iterate(bad, np.array([[0.0], [1.0], [3.0]]), np.array([[0.0], [3.0]]), 1)


def test_a_run_that_would_keep_gigabytes_of_assignments_is_refused_before_work(monkeypatch):
    import kmt_ref.layer

    monkeypatch.setattr(kmt_ref.running, "MAX_KEPT_BYTES", 8 * 10 * 50 * 3 - 1)
    X, init = np.random.default_rng(0).random((50, 2)), np.random.default_rng(1).random((3, 2))
    with pytest.raises(ValueError, match="keep_assignments=False"):
        lloyd_transformer(2, 3).run(X, init, 10)
    traj = lloyd_transformer(2, 3).run(X, init, 10, keep_assignments=False)
    assert traj.assignments is None and traj.labels.shape == (10, 50)


def _exact_mask(x, C):
    from fractions import Fraction

    exact = [sum((Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(x, c, strict=True)) for c in C]
    return np.array([e == min(exact) for e in exact])


def test_exact_nearest_decides_centers_that_met_or_nearly_met_as_rational_arithmetic_does():
    from kmt_ref.geometry import exact_nearest

    rng = np.random.default_rng(4)
    for _ in range(600):
        d, k = int(rng.integers(1, 40)), int(rng.integers(2, 6))
        a = rng.standard_normal(d) * rng.choice([1, 1e3]) + rng.choice([0, 1e6])
        C = np.array([a + rng.choice([0.0, 1e-16, 1e-14, 1e-10, 1e-6]) * np.abs(a).max() * rng.standard_normal(d)
                      for _ in range(k)])
        C[rng.integers(k)] = C[rng.integers(k)]  # often two centers that are the same point
        x = (C[0] + C[-1]) / 2 if rng.random() < 0.3 else a + rng.standard_normal(d) * rng.choice([1e-8, 1, 1e3])
        np.testing.assert_array_equal(exact_nearest(x, C), _exact_mask(x, C))


def test_labels_next_to_centers_that_met_cost_no_rational_arithmetic(monkeypatch):
    # Two identical centers tie for every point; that is decided without Fractions (it took minutes).
    import fractions

    from kmt_ref.geometry import nearest_center

    X = np.random.default_rng(0).random((2000, 8))
    C = np.vstack([X[:3], X[:1]])  # the fourth center is the first
    monkeypatch.setattr(fractions.Fraction, "__new__", lambda *a, **k: pytest.fail("rational arithmetic"))
    labels = nearest_center(X, C)
    assert not np.any(labels == 3) and np.array_equal(labels, np.argmin(((X[:, None] - C[:3]) ** 2).sum(-1), 1))


@pytest.mark.slow
def test_nearest_center_gives_the_same_exact_labels_from_any_frame_inside_the_data(monkeypatch):
    from kmt_ref import geometry
    from kmt_ref.geometry import nearest_center, point_frame

    rng = np.random.default_rng(8)
    for offset in (0.0, 1e6):
        X = rng.integers(-3, 4, size=(3, 200, 4)).astype(float) / 3 + offset  # many exact and near ties
        for k in (3, 40, 100):  # both ways of finding the nearest (up to FEW_CENTERS, and above)
            C = X[:, rng.choice(200, k, replace=False)]
            plain = nearest_center(X, C)
            framed = nearest_center(X, C, point_frame(X, X[:, 5:6] + 0.25))
            np.testing.assert_array_equal(framed, plain)
            with monkeypatch.context() as m:  # many chunks per call, and a partial last one
                m.setattr(geometry, "NEAREST_ELEMENTS", 2**10)
                np.testing.assert_array_equal(nearest_center(X, C), plain)
                np.testing.assert_array_equal(nearest_center(X, C, point_frame(X, X[:, 5:6] + 0.25)), plain)
            for b in range(3):  # each task of the batch alone, and as exact arithmetic decides
                np.testing.assert_array_equal(nearest_center(X[b], C[b]), plain[b])
                np.testing.assert_array_equal(plain[b], [np.argmax(_exact_mask(x, C[b])) for x in X[b]])


def test_nearest_center_measures_far_data_again_from_the_first_center(monkeypatch):
    # Without a frame, points are scored from 0 first; far from 0 that leaves many points to exact arithmetic, so
    # each chunk is scored again from its first center: the labels are the exact ones either way, and few points
    # go to exact arithmetic (from 0 alone, thousands would).
    from kmt_ref import geometry

    calls = []
    exact = geometry.exact_nearest
    monkeypatch.setattr(geometry, "exact_nearest", lambda x, C: calls.append(1) or exact(x, C))
    rng = np.random.default_rng(9)
    X = rng.standard_normal((20_000, 3))
    C = X[:5].copy()
    near = geometry.nearest_center(X, C)
    assert len(calls) <= geometry.UNDECIDED * 2
    for offset in (1e3, 1e6, -3e9):
        calls.clear()
        np.testing.assert_array_equal(geometry.nearest_center(X + offset, C + offset), near)
        assert len(calls) <= geometry.UNDECIDED * 2  # a few per chunk at most
    monkeypatch.setattr(geometry, "UNDECIDED", 10**9)  # from 0 only: the same labels, far more exact arithmetic
    calls.clear()
    np.testing.assert_array_equal(geometry.nearest_center(X + 1e6, C + 1e6), near)
    assert len(calls) > 100


ISSUE_X = np.array([1.000000001, 2.999999999, 2.999999999, 1e-09, 0.0, 0.0, -1e-09, 1e-09, 0.0, 1e-09, 0.0, 1e-09,
                    3.0, 0.0, 2.0, -1e-09, 1.000000001, 1e-09, 1.0, 0.0, -1e-09]).reshape(-1, 1)


def test_a_point_self_attention_that_cannot_tell_two_points_apart_says_so_before_the_run():
    # 1.0 and 1.000000001 are closer than the dot-product SAX's rounding resolves; Lloyd's second step parts them,
    # and the third layer resets each with the other's assignment: centers off Lloyd's by 0.82.
    init = np.array([[0.0], [1.0]])
    model = dot_product_lloyd_transformer(1, 2, config="all-attention")
    # and at the third layer, where the reset points meet, it shares a point
    with pytest.warns(UserWarning, match="layer 3 shares point 0"), \
            pytest.warns(UserWarning, match=r"squared distance 1e-18 is below 4\.8e-14.*point self-attention"):
        traj = model.run(ISSUE_X, init, 3)
    assert abs(traj.centers[-1, 0, 0] - lloyd(ISSUE_X, init, 3).centers[-1, 0, 0]) > 0.8  # what it warns of
    import warnings

    with warnings.catch_warnings():  # the Euclidean point self-attention decides exactly: no warning, Lloyd's path
        warnings.simplefilter("error")
        for config in ("paper", "all-attention", "validated"):
            np.testing.assert_allclose(lloyd_transformer(1, 2, config=config).run(ISSUE_X, init, 3).centers,
                                       lloyd(ISSUE_X, init, 3).centers, rtol=0, atol=1e-15)
        # points as far apart as the resolution allows are told apart: no warning
        limit = kmt_ref.dot_product_transformer.dot_self_attention_resolution(np.array([[0.0], [3.0]]))
        far = np.array([[0.0], [np.sqrt(limit) * 1.01], [3.0]])
        model.run(far, far[[0, 2]], 2)


def test_a_finite_gamma_below_what_the_data_need_is_said_before_the_run_that_fails():
    # Two tight clusters far apart: CAX is hard at gamma = 1, but the paper configuration's softmax center reset
    # mixes the two centers' ids (weight 0.12); the validated configuration has no such reset and is certified.
    rng = np.random.default_rng(0)
    X = np.concatenate([-2.68 + 1e-3 * rng.random(5), -20.74 + 1e-3 * rng.random(5)])[:, None]
    init = X[[0, 5]]
    with pytest.warns(UserWarning, match=r"before layer 1, the softmax SAC gives weight up to 0\.119"):
        with pytest.raises(ValueError, match="non-negative"):  # its linear CAC then meets a negative assignment
            lloyd_transformer(1, 2, 1.0, config="paper").run(X, init, 3, warn=True)
    with pytest.warns(UserWarning, match=r"before layer 1, the softmax SAC"):
        lloyd_transformer(1, 2, 1.0, config="all-attention").run(X, init, 3, warn=True)
    with pytest.warns(UserWarning, match=r"softmax SAX gives point"):  # points 1e-3 apart at gamma = 30
        lloyd_transformer(1, 2, 30.0, config="all-attention").run(X, init, 3, warn=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lloyd_transformer(1, 2, 1.0).run(X, init, 3, warn=True)
    # a gamma the certificate cannot certify for the validated configuration either
    close = np.array([[0.0], [0.999], [2.0], [2.1]])  # 0.999 is 0.004 nearer to 0 than to 2 in squared distance
    with pytest.warns(UserWarning) as said:  # and the split assignments after the run
        lloyd_transformer(1, 2, 10.0).run(close, close[[0, 2]], 2, warn=True)
    assert any("before layer 1, gamma = 10 is below what the exactness certificate" in str(w.message) for w in said)
    assert kmt_ref.exactness_certificate(close, close[[0, 2]], 1, 10.0).bound[1] > 1e-3 * 2.1
    assert kmt_ref.min_gamma(close, close[[0, 2]], 1, 1e-3 * 2.1) > 10.0


@pytest.mark.parametrize("build", [lloyd_transformer, dot_product_lloyd_transformer])
def test_the_softmax_center_update_of_all_attention_is_checked_on_the_soft_assignments_it_reads(build):
    import warnings

    # Point 5 is assigned 0.995 to center 1 at gamma = 1e4: the linear CAC weighs it 0.995 (certified, silent);
    # the all-attention softmax CAC weighs it exp(-gamma ||y - e_1||^2) = exp(-0.5) of a member's due.
    gamma = 1e4
    X = np.array([[0.0], [0.1], [-0.1], [1.0], [1.1], [0.5 + np.log(199) / (2 * gamma)]])
    init = np.array([[0.0], [1.0]])
    truth = lloyd(X, init, 2).centers
    said = r"before layer 1, the softmax CAC \((euclidean|dot) id scores\) moves center 1 by 0\.(0553|183)"
    with pytest.warns(UserWarning, match=said + r" from Lloyd's step: it weighs point 5, assigned 0\.995"):
        run = build(1, 2, gamma, config="all-attention").run(X, init, 2, warn=True)
    assert np.max(np.abs(run.centers - truth)) > 0.05  # what it warns of
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the validated configuration's linear CAC: within the certificate
        run = build(1, 2, gamma).run(X, init, 2, warn=True)
        assert np.max(np.abs(run.centers - truth)) < 1e-3
        # a gamma at which the soft member weighs as a member: nothing to say
        build(1, 2, 1e6, config="all-attention").run(X, init, 2, warn=True)
