"""The tied layer (parameters independent of k) and training through several re-embedded steps."""

import json

import autograd
import numpy as np
import pytest
from autograd.test_util import check_grads

from kmt_ref import lloyd_transformer
from kmt_ref.engine import REFERENCE, Engine
from kmt_ref.learning import checkpoint
from kmt_ref.learning.config import TrainConfig
from kmt_ref.learning.model import ModelConfig, forward, init_params, params_from_transformer, run_steps, unflatten
from kmt_ref.learning.sharing import tie
from kmt_ref.learning.train import batch_loss, load_result, train
from kmt_ref.tasks import sample_tasks


def test_a_tied_model_has_the_same_number_of_parameters_at_every_k():
    counts = {k: ModelConfig(4, k, tied=True).n_params for k in (1, 2, 5, 25)}
    d = 4
    assert set(counts.values()) == {4 * (3 * (d * d + 2 * d + 2) + 3 * (d + 1))}
    assert ModelConfig(4, 5).n_params != ModelConfig(4, 6).n_params


def test_tied_matrices_have_the_tied_form_and_grow_with_k():
    d = 3
    config = ModelConfig(d, 4, tied=True)
    theta = init_params(config, np.random.default_rng(0))
    for k in (2, 4, 7):
        W = unflatten(theta, config.at_k(k))["CAC"]["Wv"]
        assert W.shape == (d + k, d + k)
        ids = W[d:, d:]
        off = ids[~np.eye(k, dtype=bool)]
        assert np.all(off == off[0]) and np.all(np.diag(ids) == ids[0, 0]) and ids[0, 0] != off[0]
        assert np.all(W[d:, :d] == W[d, :d]) and np.all(W[:d, d:] == W[:d, d:d + 1])
        # the data block is the same matrix at every k
        np.testing.assert_array_equal(W[:d, :d], unflatten(theta, config.at_k(2))["CAC"]["Wv"][:d, :d])


@pytest.mark.parametrize("tied", [True, False])
def test_tied_layer_is_equivariant_to_relabelling_the_clusters_and_the_untied_is_not(tied):
    config = ModelConfig(3, 5, tied=tied)
    theta = init_params(config, np.random.default_rng(1))
    X, init = sample_tasks(np.random.default_rng(2), 2, n=30, d=3, k=5)
    perm = np.array([3, 0, 4, 1, 2])
    out, out_perm = forward(theta, X, init, config), forward(theta, X, init[:, perm], config)
    if tied:
        np.testing.assert_allclose(out_perm, out[:, perm], rtol=1e-12, atol=1e-14)
    else:
        assert not np.allclose(out_perm, out[:, perm], atol=1e-6)


def test_relabelled_agreement_is_rounding_for_a_tied_layer_and_order_one_for_an_untied_one():
    from types import SimpleNamespace

    from kmt_ref.programs.experiments import relabelled_agreement

    X, init = sample_tasks(np.random.default_rng(2), 6, n=30, d=3, k=5)
    out = {}
    for tied in (True, False):
        config = ModelConfig(3, 5, tied=tied)
        run = SimpleNamespace(theta=init_params(config, np.random.default_rng(1)), config=SimpleNamespace(model=config))
        out[tied] = relabelled_agreement(run, X, init, n_relabellings=4)
        assert len(out[tied]["median"]) == 4 and out[tied]["worst"] >= max(out[tied]["median"])
    assert out[True]["worst"] < 1e-12
    assert min(out[False]["median"]) > 0.05
    # the permutations come from the seed: the same seed, the same numbers
    config = ModelConfig(3, 5)
    run = SimpleNamespace(theta=init_params(config, np.random.default_rng(1)), config=SimpleNamespace(model=config))
    assert relabelled_agreement(run, X, init, n_relabellings=4) == out[False]
    assert relabelled_agreement(run, X, init, n_relabellings=4, seed=1) != out[False]


@pytest.mark.parametrize("k_run", [2, 4, 7])
def test_the_construction_is_a_tied_model_and_runs_lloyd_at_any_k(k_run):
    phi, config = tie(*params_from_transformer(lloyd_transformer(2, 4, gamma=40.0, config="all-attention")))
    assert config == ModelConfig(2, 4, tied=True)
    X, init = sample_tasks(np.random.default_rng(k_run), 3, n=25, d=2, k=k_run)
    ours = run_steps(phi, X, init, config.at_k(k_run), 4)
    built = lloyd_transformer(2, k_run, gamma=40.0, config="all-attention")
    for t in range(3):
        np.testing.assert_allclose(ours[:, t], built.run(X[t], init[t], 4, reembed=True, warn=False).centers,
                                   rtol=1e-11, atol=1e-12)  # gamma = 40 is far from Lloyd: compared as is


def test_tie_refuses_a_model_whose_maps_treat_ids_differently():
    config = ModelConfig(2, 3)
    theta = init_params(config, np.random.default_rng(3))
    with pytest.raises(ValueError, match="CAX.Wq does not act alike"):
        tie(theta, config)
    with pytest.raises(ValueError, match="untied 'd\\+k'"):
        tie(theta, ModelConfig(2, 3, "d"))


def test_tied_model_options_are_checked():
    with pytest.raises(ValueError, match="tied=True ties the id block"):
        ModelConfig(2, 3, "d", tied=True)
    with pytest.raises(ValueError, match="tied"):
        ModelConfig(2, 3, tied="yes")
    with pytest.raises(ValueError, match="n_layers"):
        TrainConfig(n_layers=0)


def _tiny(**options):
    config = TrainConfig(d=2, k=3, n=12, batch=2, tau=0.5, **options)
    rng = np.random.default_rng(4)
    theta = init_params(config.model, rng)
    X, init = sample_tasks(rng, config.batch, **config.task_kwargs())
    return config, theta, X, init


@pytest.mark.parametrize("options", [dict(tied=True), dict(n_layers=3), dict(tied=True, n_layers=2),
                                     dict(n_layers=3, loss_on="every")])
def test_loss_gradients_pass_check_grads(options):
    config, theta, X, init = _tiny(**options)
    check_grads(lambda th: batch_loss(th, X, init, config), modes=["rev"], order=1)(theta)


def test_multi_step_gradient_is_the_same_through_the_reference_attention():
    config, theta, X, init = _tiny(n_layers=3)
    grad = autograd.value_and_grad(batch_loss)
    fast, ref = grad(theta, X, init, config, Engine()), grad(theta, X, init, config, REFERENCE)
    np.testing.assert_allclose(fast[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(fast[1], ref[1], rtol=1e-9, atol=1e-12)


def test_loss_on_every_step_is_the_mean_of_the_losses_after_each_application():
    from kmt_ref.learning.loss import smoothed_objective

    config, theta, X, init = _tiny(n_layers=3, loss_on="every")
    by_hand = np.mean([np.mean(smoothed_objective(X, forward(theta, X, init, config.model, n_layers=t), config.tau))
                       for t in (1, 2, 3)])
    np.testing.assert_allclose(batch_loss(theta, X, init, config), by_hand, rtol=1e-13)
    with pytest.raises(ValueError, match="loss_on"):
        TrainConfig(loss_on="first")
    # through one application "every" is "last": refused rather than trained again under a second name
    with pytest.raises(ValueError, match="loss_on='every' needs n_layers > 1.*got n_layers=1"):
        TrainConfig(loss_on="every")


def test_multi_step_forward_equals_the_evaluation_loop():
    config = ModelConfig(3, 4)
    theta = init_params(config, np.random.default_rng(5))
    X, init = sample_tasks(np.random.default_rng(6), 3, n=20, d=3, k=4)
    centers = run_steps(theta, X, init, config, 3)
    for T in (1, 2, 3):
        np.testing.assert_allclose(forward(theta, X, init, config, n_layers=T), centers[T], rtol=1e-14, atol=0)


def test_multi_step_training_validates_against_as_many_lloyd_steps(tmp_path):
    config = TrainConfig(d=2, k=3, n=16, batch=4, n_steps=20, eval_every=10, val_tasks=8, n_layers=2)
    r = train(config, str(tmp_path / "m.npz"), progress=False)
    assert r.finished and len(r.history["val_ratio"]) == 3 and np.all(np.isfinite(r.history["val_ratio"]))
    assert load_result(str(tmp_path / "m.npz")).config.n_layers == 2


def test_a_checkpoint_written_before_tied_and_n_layers_existed_still_resumes(tmp_path):
    path = str(tmp_path / "old.npz")
    config = TrainConfig(d=2, k=3, n=16, batch=4, n_steps=20, eval_every=10, val_tasks=8)
    train(config, path, stop_at=10, progress=False)
    arrays, meta = checkpoint.load_checkpoint(path)
    for field in ("tied", "n_layers", "loss_on"):
        del meta["config"][field]
    checkpoint.save_checkpoint(path, arrays, json.loads(json.dumps(meta)))
    resumed = train(config, path, resume=True, progress=False)
    fresh = train(config, progress=False)
    np.testing.assert_array_equal(resumed.theta, fresh.theta)


def test_nearest_tied_model_is_a_projection():
    config = ModelConfig(3, 4)
    theta = init_params(config, np.random.default_rng(7))
    phi, tied = tie(theta, config, nearest=True)
    # the nearest tied model, written back as an untied one, is exactly tied: tie finds the same pieces
    s = np.sqrt(config.gamma / tied.gamma)
    untied_theta = []
    for p in unflatten(phi, tied).values():
        for w, m in p.items():
            untied_theta.append(np.ravel(m / s if w in ("Wq", "Wk", "bq", "bk") else m))
    again, _ = tie(np.concatenate(untied_theta), config)
    np.testing.assert_allclose(again, phi, rtol=1e-12, atol=1e-15)


def test_id_structure_is_one_for_tied_maps_and_small_for_random_ones():
    from kmt_ref.learning.sharing import id_structure

    built, config = params_from_transformer(lloyd_transformer(3, 4, gamma=20.0, config="all-attention"))
    assert set(id_structure(built, config).values()) == {1.0}
    config = ModelConfig(32, 10)
    shares = id_structure(init_params(config, np.random.default_rng(8)), config)
    # a random matrix keeps about (2d + 2) / (2dk + k^2) = 66 / 740 of its id-touching energy
    assert 0.03 < np.median(list(shares.values())) < 0.2


def test_symmetries_are_rounding_for_a_layer_that_has_them_and_the_nulls_are_what_they_say():
    from types import SimpleNamespace

    from kmt_ref import lloyd_transformer
    from kmt_ref.classical import lloyd
    from kmt_ref.learning.model import params_from_transformer, run_steps
    from kmt_ref.objective import kmeans_objective
    from kmt_ref.programs import experiments

    X, init = sample_tasks(np.random.default_rng(2), 8, n=30, d=3, k=4)
    # The construction in the learned format acts alike on every id, coordinate and sign; a random untied
    # layer on none.
    theta, config = params_from_transformer(lloyd_transformer(3, 4, 10.0, config="all-attention"))
    built = SimpleNamespace(theta=theta, config=SimpleNamespace(model=config))
    out = experiments.symmetry_of_seed(built, X, init, 3, np.random.default_rng(0))
    assert len(out["relabelled"]["one_step"]) == experiments.RELABELLINGS
    assert max(out["relabelled"]["one_step"]) < 1e-9
    assert max(out["coordinates"]["permuted"] + out["coordinates"]["reflected"]) < 1e-9
    assert min(out["relabelled"]["final_correlation"]) > 1 - 1e-9
    untied = ModelConfig(3, 4)
    run = SimpleNamespace(theta=init_params(untied, np.random.default_rng(1)), config=SimpleNamespace(model=untied))
    rough = experiments.symmetry_of_seed(run, X, init, 3, np.random.default_rng(0))
    # (a draw may be the identity: d = 3 has 6 orders)
    assert np.median(rough["relabelled"]["one_step"]) > 0.01 and np.median(rough["coordinates"]["permuted"]) > 0.01
    # The constant candidate's F2 is the correlation of Lloyd's final log objective with the layer's gain.
    final_lloyd = np.log(kmeans_objective(X, lloyd(X, init, 3).centers[-1]))
    gain = final_lloyd - np.log(kmeans_objective(X, run_steps(run.theta, X, init, untied, 3)[-1]))
    assert rough["constant_final_f2"] == pytest.approx(np.corrcoef(final_lloyd, gain)[0, 1], rel=1e-12)
    assert rough == experiments.symmetry_of_seed(run, X, init, 3, np.random.default_rng(0))  # its draws are its rng's
