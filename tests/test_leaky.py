"""Leaky soft k-means (the closed form the trained layer points to), its transformer, and the fit of its scalars."""

import itertools
import json

import numpy as np
import pytest
import scipy.optimize
from autograd.test_util import check_grads
from scipy.special import softmax

from kmt_ref import gaussian_mixture, lloyd
from kmt_ref.learning import closed_form, protocols
from kmt_ref.learning.closed_form import fit_leaky, unrolled_loss
from kmt_ref.learning.config import TrainConfig
from kmt_ref.programs import interpret, registry
from kmt_ref.tasks import draw_tasks, sample_tasks
from kmt_ref.variants.leaky import leaky_kmeans, leaky_kmeans_transformer, leaky_step
from kmt_ref.variants.soft import soft_kmeans_transformer

TINY = dict(n_steps=12, seeds=(0, 1), eval_tasks=6, val_tasks=6, n_eval_steps=3, gen_n=(40,),
            train=dict(d=2, k=3, n=24, batch=3, eval_every=4))


def _task(seed, n, d, k):
    X, init, _ = gaussian_mixture(np.random.default_rng(seed), n=n, d=d, k=k)
    return X, init


def test_leaky_kmeans_matches_the_defining_formula_computed_point_by_point():
    X, init = _task(4, 40, 3, 3)
    beta, sharpness = 3.0, 6.0
    C = init.copy()
    for _ in range(5):
        R = np.array([softmax([-beta * np.sum((x - c) ** 2) for c in C]) for x in X])
        W = np.array([softmax(sharpness * R[:, j]) for j in range(len(C))])  # each center over every point
        C = np.array([sum(W[j, i] * X[i] for i in range(len(X))) for j in range(len(C))])
    np.testing.assert_allclose(leaky_kmeans(X, init, 5, beta, sharpness).centers[-1], C, rtol=0, atol=1e-12)


def test_a_center_that_shares_its_cluster_is_released_toward_the_mean_of_all_points():
    # Five tight clusters on a circle; two centers start in cluster 0, one in each of clusters 1-3.
    rng = np.random.default_rng(0)
    V = 2 * np.stack([np.cos(2 * np.pi * np.arange(5) / 5), np.sin(2 * np.pi * np.arange(5) / 5)], axis=1)
    X = np.concatenate([v + 0.1 * rng.standard_normal((40, 2)) for v in V])
    init = np.stack([V[0] + [0.05, 0], V[0] - [0.05, 0], V[1], V[2], V[3]])
    after, means, mean = leaky_kmeans(X, init, 1, 4.0, 6.0).centers[1], lloyd(X, init, 1).centers[1], X.mean(axis=0)
    # How far from the mean of all points each center lands, against Lloyd's step (1: as far as Lloyd's mean).
    reach = np.linalg.norm(after - mean, axis=1) / np.linalg.norm(means - mean, axis=1)
    assert max(reach[:2]) < 0.95 < min(reach[2:])
    assert reach[0] < 0.8


def test_leaky_kmeans_is_lloyd_when_both_scalars_are_large():
    X, init = _task(5, 300, 2, 4)
    ref = lloyd(X, init, 6)
    got = leaky_kmeans(X, init, 6, 1e9, 1e4)  # every gap to a tie here is over 1e-6
    np.testing.assert_allclose(got.centers, ref.centers, rtol=0, atol=1e-9)


def test_the_transformer_is_the_soft_k_means_transformer_with_cac_made_a_softmax_at_lam():
    leaky, soft = leaky_kmeans_transformer(3, 4, 2.0, 7.0), soft_kmeans_transformer(3, 4, 2.0)
    def same(a, b):
        return (a.score, a.normalizer, a.gamma) == (b.score, b.normalizer, b.gamma) and all(
            np.array_equal(getattr(a, w), getattr(b, w)) for w in ("Wq", "Wk", "Wv"))

    assert all(same(leaky.blocks[name], soft.blocks[name]) for name in ("CAX", "SAX", "SAC"))
    cac = leaky.blocks["CAC"]
    assert (cac.score, cac.normalizer, cac.gamma) == ("dot", "softmax", 7.0)
    for w in ("Wq", "Wk", "Wv"):
        assert np.array_equal(getattr(cac, w), getattr(soft.blocks["CAC"], w))


@pytest.mark.parametrize("beta, sharpness", [(0.5, 1.0), (4.0, 6.0), (30.0, 100.0)])
def test_the_transformer_equals_leaky_kmeans(beta, sharpness):
    X, init = _task(6, 120, 3, 5)
    got = leaky_kmeans_transformer(3, 5, beta, sharpness).run(X, init, 8)
    ref = leaky_kmeans(X, init, 8, beta, sharpness)
    np.testing.assert_allclose(got.centers, ref.centers, rtol=0, atol=1e-12)


def test_one_step_on_a_batch_is_the_step_of_each_task():
    X, init = sample_tasks(np.random.default_rng(1), 3, 50, 2, 4)
    batch, R = leaky_step(X, init, 3.0, 5.0)
    assert R.shape == (3, 50, 4)
    for t in range(3):
        alone, _ = leaky_step(X[t], init[t], 3.0, 5.0)
        np.testing.assert_allclose(batch[t], alone, rtol=0, atol=1e-15)


def test_leaky_kmeans_far_from_the_origin_is_leaky_kmeans_translated():
    # Distances are measured from the first center: a million units away the rounding stays at the
    # data's spread (with raw squared distances the centers were 1.6e-4 off).
    X, init, _ = gaussian_mixture(np.random.default_rng(0), n=200, d=2, k=4)
    near = leaky_kmeans(X, init, 5, 4.0, 6.0).centers
    far = leaky_kmeans(X + 1e6, init + 1e6, 5, 4.0, 6.0).centers - 1e6
    np.testing.assert_allclose(far, near, rtol=0, atol=1e-8)
    batch, _ = leaky_step(np.stack([X, X + 1e6]), np.stack([init, init + 1e6]), 4.0, 6.0)
    np.testing.assert_allclose(batch[1] - 1e6, batch[0], rtol=0, atol=1e-8)  # each task from its own center


def test_leaky_kmeans_does_not_modify_its_inputs_and_never_gives_nan():
    X, init = _task(2, 60, 2, 3)
    X0, init0 = X.copy(), init.copy()
    far = init + 1e3  # every responsibility row underflows to one center; every weight stays positive
    for start in (init, far):
        assert np.all(np.isfinite(leaky_kmeans(X, start, 4, 50.0, 30.0).centers))
    assert np.array_equal(X, X0) and np.array_equal(init, init0)


@pytest.mark.parametrize("kwargs, name", [(dict(beta=0.0), "beta"), (dict(beta=np.inf), "beta"),
                                          (dict(sharpness=-1.0), "sharpness"), (dict(sharpness=np.nan), "sharpness")])
def test_bad_scalars_are_refused_by_name(kwargs, name):
    X, init = _task(2, 30, 2, 3)
    args = dict(dict(beta=1.0, sharpness=1.0), **kwargs)
    with pytest.raises(ValueError, match=name):
        leaky_kmeans(X, init, 2, **args)
    with pytest.raises(ValueError, match=name):
        leaky_kmeans_transformer(2, 3, **args)


def test_the_unrolled_loss_has_the_gradient_autograd_checks():
    X, init = sample_tasks(np.random.default_rng(3), 2, 30, 2, 3)
    check_grads(lambda p: unrolled_loss(p, X, init, 3, 0.1), modes=["rev"], order=1)(np.log([3.0, 5.0]))


def test_the_fit_is_the_lowest_minimum_of_its_sample_from_any_start_and_a_function_of_its_generator():
    config = TrainConfig(d=2, k=3, n=40)
    a = fit_leaky(np.random.default_rng(0), config, 2, n_tasks=16, restarts=3, subsets=2)
    assert a == fit_leaky(np.random.default_rng(0), config, 2, n_tasks=16, restarts=3, subsets=2)
    X, init = draw_tasks(np.random.default_rng(0), 16, init="first", **config.task_kwargs())  # its sample
    best = np.log([a["beta"], a["sharpness"]])
    assert unrolled_loss(best, X, init, 2, config.tau) == pytest.approx(a["loss"], rel=1e-12)
    assert len(a["restarts"]) == 3 and a["loss"] == min(r["loss"] for r in a["restarts"])
    # Independent searches (Nelder-Mead, no gradient) from starts all over the plane find no lower point.
    for start in itertools.product(np.log([0.3, 3.0, 30.0, 300.0]), repeat=2):
        other = scipy.optimize.minimize(lambda p: unrolled_loss(p, X, init, 2, config.tau), np.array(start),
                                        method="Nelder-Mead", options=dict(xatol=1e-8, fatol=1e-12, maxiter=4000))
        assert a["loss"] <= other.fun + 1e-9 * abs(other.fun), start
    # Each subset is a disjoint half of the sample, fitted the same way.
    assert len(a["subsets"]) == 2
    for half, fit in zip((slice(0, 8), slice(8, 16)), a["subsets"], strict=True):
        assert unrolled_loss(np.log([fit["beta"], fit["sharpness"]]), X[half], init[half], 2,
                             config.tau) == pytest.approx(fit["loss"], rel=1e-12)


def test_the_fit_moves_little_when_the_last_bits_of_its_sample_do():
    # Adam on fresh batches moved by 14% under such a change; the minimizer of a fixed sample barely moves.
    config = TrainConfig(d=2, k=3, n=40)
    a = fit_leaky(np.random.default_rng(0), config, 3, n_tasks=32)
    X, init = draw_tasks(np.random.default_rng(0), 32, init="first", **config.task_kwargs())
    bumped = X * (1 + 1e-15 * np.random.default_rng(1).standard_normal(X.shape))
    assert not np.array_equal(bumped, X)
    b = closed_form._minimize(bumped, init, 3, config.tau, np.log([4.0, 6.0]))
    assert b != a
    np.testing.assert_allclose([b["beta"], b["sharpness"]], [a["beta"], a["sharpness"]], rtol=1e-3)


def test_a_fit_whose_search_steps_far_out_is_sent_back_and_never_ends_in_nan():
    # A trial step past log beta = 709 overflowed exp and gave nan centers on some CPUs' rounding (the sample of
    # the test above, under OpenBLAS's AVX-512 kernel). Outside the box the loss is the box's plus a penalty.
    config = TrainConfig(d=2, k=3, n=40)
    X, init = draw_tasks(np.random.default_rng(0), 8, init="first", **config.task_kwargs())
    far = closed_form._minimize(X, init, 3, config.tau, np.array([800.0, -800.0]))
    assert np.isfinite([far["beta"], far["sharpness"], far["loss"]]).all()
    assert max(abs(np.log(far["beta"])), abs(np.log(far["sharpness"]))) <= closed_form.LOG_LIMIT
    near = closed_form._minimize(X, init, 3, config.tau, np.log([4.0, 6.0]))
    at = np.log([near["beta"], near["sharpness"]])
    assert near["loss"] == pytest.approx(closed_form.unrolled_loss(at, X, init, 3, config.tau), rel=1e-12)


@pytest.mark.parametrize("kwargs, name", [(dict(n_unroll=0), "n_unroll"), (dict(n_tasks=0), "n_tasks"),
                                          (dict(restarts=0), "restarts"), (dict(subsets=-1), "subsets"),
                                          (dict(config=dict(d=2)), "config")])
def test_the_fit_refuses_bad_settings_by_name(kwargs, name):
    args = dict(dict(n_unroll=1, config=TrainConfig(d=2, k=3, n=20)), **kwargs)
    with pytest.raises(ValueError, match=name):
        fit_leaky(np.random.default_rng(0), **args)


def test_interpret_reports_every_algorithm_on_every_seed_and_the_share_it_recovers(monkeypatch, tmp_path):
    monkeypatch.setitem(protocols.SCALES, "quick", TINY)
    monkeypatch.setitem(interpret.FIT, "quick", dict(n_tasks=4, seed=1))
    registry.run_experiment("kmeanspp", "quick", str(tmp_path), progress=False)
    monkeypatch.setattr(interpret, "SHIFTS", ("kmeanspp",))  # read from this run's results, not the committed
    out = registry.run_experiment("interpret", "quick", str(tmp_path), progress=False)
    assert out["seeds"] == [0, 1] and out["soft_beta"] in interpret.SOFT_BETAS
    assert set(out["fits"]) == {"1", "3"}
    for p in out["per_seed"]:
        assert set(p["final"]) == {"Lloyd", "soft k-means", "learned", "leaky, fitted through 1",
                                   "leaky, fitted through 3"}
    for name, shares in out["recovered"].items():
        for p, share in zip(out["per_seed"], shares, strict=True):
            f = p["final"]
            assert share == (f["Lloyd"] - f[name]) / (f["Lloyd"] - f["learned"])
        assert set(p["stride"]) == set(p["final"])
        assert sum(p["centers"].values()) > 0
        assert all(v in (None, [1.0, 1.0]) for v in p["stride"]["Lloyd"].values())  # Lloyd's move is Lloyd's
    assert len(out["shifted"]["kmeanspp"]["kmeans++"]["leaky_final"]) == 2
    assert set(out["made"]) == set(interpret.MADE_STARTS)
    assert out["made"]["crowded"]["shares"] == [1.0, 1.0]  # every crowded center shares its points
    real = protocols.committed("real-data", "beyond")["per_dataset"]
    for name, row in out["real_data"].items():
        assert row["lloyd"] == pytest.approx(real[name]["lloyd"], rel=1e-12)  # the same starts as the experiment's
        assert "learned" not in row  # these models have another k and width
        assert 0 <= row["shares"] <= 1
    with open(tmp_path / "quick" / "interpret.json") as f:
        assert json.load(f)["recovered"] == out["recovered"]
    assert registry.EXPERIMENTS["interpret"].report(out)


def test_strides_sort_centers_by_ownership_and_measure_their_moves_against_lloyd_s():
    # Two centers in one tight cluster share it; the one alone in the other cluster owns it.
    rng = np.random.default_rng(0)
    X = np.concatenate([c + 0.05 * rng.standard_normal((30, 2)) for c in ([0.0, 0.0], [3.0, 0.0])])
    init = np.array([[-0.01, 0.0], [0.01, 0.0], [3.1, 0.0]])[None]
    means = lloyd(X, init[0], 1).centers[1]

    def half(x, c):
        return c + 0.5 * (means - c)

    def double_the_pair(x, c):
        return c + np.array([[2.0], [2.0], [1.0]]) * (means - c)

    got, counts = interpret.strides(X[None], init, {"half": half, "double the pair": double_the_pair})
    assert counts == {"owns": 1, "shares": 2}
    np.testing.assert_allclose(got["half"]["owns"], [0.5, 0.5], rtol=1e-12)
    np.testing.assert_allclose(got["half"]["shares"], [0.5, 0.5], rtol=1e-12)
    np.testing.assert_allclose(got["double the pair"]["shares"], [2.0, 2.0], rtol=1e-12)
    np.testing.assert_allclose(got["double the pair"]["owns"], [1.0, 1.0], rtol=1e-12)


def test_the_closed_form_runs_on_the_committed_shift_experiments_tasks_and_checks_they_are_the_same(monkeypatch):
    import copy

    models = [protocols.committed_model("quick", "d+k", 0)]
    fit = dict(beta=2.7, sharpness=6.5)
    monkeypatch.setattr(interpret, "SHIFTS", ("kmeanspp",))
    out = interpret._shifted(models, "quick", fit, 20, progress=False)
    row = out["kmeanspp"]["kmeans++"]
    done = protocols.committed("kmeanspp", "quick")["kmeans++"]
    assert row["learned_median"] == done["learned"]["median"][-1]
    assert abs(row["lloyd_final"][0] - done["lloyd"]["median"][-1]) < 1e-12
    assert len(row["leaky_final"]) == 1 and 0 <= row["shares"][0] <= 1
    other = copy.deepcopy(done)
    other["lloyd"]["median"][-1] += 1e-6  # as if the tasks were others
    real = protocols.committed
    monkeypatch.setattr(interpret, "committed", lambda name, scale: dict(real(name, scale), **{"kmeans++": other}))
    with pytest.raises(ValueError, match="not the same tasks"):
        interpret._shifted(models, "quick", fit, 20, progress=False)
