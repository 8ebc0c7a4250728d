"""What the trained layer learned: the ablations change what they say, the measurements measure what they say."""

import json
import os

import numpy as np
import pytest

from kmt_ref import gaussian_mixture, lloyd_transformer
from kmt_ref.learning import protocols
from kmt_ref.learning.model import ModelConfig, init_params, params_from_transformer, unflatten
from kmt_ref.programs import dissection, registry

TINY = dict(n_steps=12, seeds=(0, 1), eval_tasks=6, val_tasks=6, n_eval_steps=3, gen_n=(40,),
            train=dict(d=2, k=3, n=24, batch=3, eval_every=4))


@pytest.mark.parametrize("name", dissection.ABLATIONS)
def test_an_ablation_changes_its_block_s_part_and_nothing_else(name):
    config = ModelConfig(3, 4)
    theta = init_params(config, np.random.default_rng(0))
    before = theta.copy()
    phi = dissection.ablated(theta, config, name)
    assert np.array_equal(theta, before)  # the model itself is untouched
    old, new = unflatten(theta, config), unflatten(phi, config)
    block, change = name.split(": ")
    x, y = slice(0, 3), slice(3, 7)
    expect = {key: value.copy() for key, value in old[block].items()}
    if change == "removed":
        expect["Wv"][:], expect["bv"][:] = 0, 0
    elif change == "uniform attention":
        for key in ("Wq", "Wk", "bq", "bk"):
            expect[key][:] = 0
    elif change.startswith("scores ignore"):
        cols = x if change.endswith("x") else y
        expect["Wq"][:, cols], expect["Wk"][:, cols] = 0, 0
    elif change.startswith("writes no"):
        rows = x if change.endswith("x") else y
        expect["Wv"][rows], expect["bv"][rows] = 0, 0
    elif change == "the construction's":
        built, _ = params_from_transformer(lloyd_transformer(3, 4, dissection.CONSTRUCTION_GAMMA,
                                                             config="all-attention"))
        expect = unflatten(built, config)[block]
    else:  # the nearest a_x P_x + a_y P_y, by least squares over the two scalars
        for key, value in expect.items():
            if value.ndim == 2:
                basis = [np.diag(np.r_[np.ones(3), np.zeros(4)]), np.diag(np.r_[np.zeros(3), np.ones(4)])]
            else:
                basis = [np.r_[np.ones(3), np.zeros(4)], np.r_[np.zeros(3), np.ones(4)]]
            A = np.stack([b.ravel() for b in basis], axis=1)
            coef = np.linalg.lstsq(A, old[block][key].ravel(), rcond=None)[0]
            expect[key] = (A @ coef).reshape(value.shape)
    for b in old:
        for key in old[b]:
            want = expect[key] if b == block else old[b][key]
            if change == "diagonal summary" and b == block:
                np.testing.assert_allclose(new[b][key], want, rtol=1e-12, atol=1e-15, err_msg=(b, key))
            else:
                np.testing.assert_array_equal(new[b][key], want, err_msg=(b, key))


def test_an_unknown_ablation_is_refused_by_name():
    config = ModelConfig(3, 4)
    with pytest.raises(ValueError, match="name must be one of"):
        dissection.ablated(init_params(config, np.random.default_rng(0)), config, "CAX: doubled")


def test_the_measurements_read_the_construction_s_known_values():
    # Theorem 2.1's all-attention construction in the learned format: CAX is a Euclidean softmax at its gamma,
    # SAX one between points at the same gamma, and its center step is a full Lloyd step (at this gamma SAX
    # resets these points' assignments, so the layer is Lloyd's step).
    gamma = 1e4
    theta, config = params_from_transformer(lloyd_transformer(2, 3, gamma, config="all-attention"))
    X, init, _ = gaussian_mixture(np.random.default_rng(3), n=60, d=2, k=3, scale=0.05)
    q = dissection.first_layer_quantities(theta, config, X[None], init[None])
    assert q["cax_inverse_temperature"] == pytest.approx(gamma, rel=1e-6) and q["cax_fit_r2"] > 0.999999
    assert q["sax_inverse_width"] == pytest.approx(gamma, rel=1e-6) and q["sax_fit_r2"] > 0.999999
    assert q["center_step"] == pytest.approx(1.0, abs=1e-4)
    assert q["cax_not_nearest"] == q["cac_not_nearest"] == 0.0
    # At a gamma where every weight but the largest is exactly 0 there is no temperature to fit: None, not NaN.
    theta, config = params_from_transformer(lloyd_transformer(2, 3, 1e8, config="all-attention"))
    q = dissection.first_layer_quantities(theta, config, X[None], init[None])
    assert q["cax_inverse_temperature"] is None and q["sax_inverse_width"] is None
    # a full step, to the rounding of the means (the layer's product and NumPy's mean round by the BLAS kernel)
    assert q["center_step"] == pytest.approx(1.0, rel=1e-12)


def test_dissection_runs_one_job_per_seed_and_reuses_finished_jobs(monkeypatch, tmp_path):
    monkeypatch.setitem(protocols.SCALES, "quick", TINY)
    out = registry.run_experiment("dissection", "quick", str(tmp_path), progress=False)
    assert out["n_seeds"] == 2 and set(out["ablations"]) == set(dissection.ABLATIONS)
    for p, gain in zip(out["per_seed"], out["gain"], strict=True):
        assert gain == p["final"]["Lloyd"] - p["final"]["learned"]
        assert os.path.exists(tmp_path / "quick" / "dissection" / f"seed{p['seed']}.json")
    removed = [p["final"]["SAC: removed"] - p["final"]["learned"] for p in out["per_seed"]]
    assert out["ablations"]["SAC: removed"]["median"] == np.median(removed)

    def no_work(*args):
        raise AssertionError("a finished seed was computed again")

    monkeypatch.setattr(dissection, "_seed_job", no_work)
    again = registry.run_experiment("dissection", "quick", str(tmp_path), progress=False)
    assert again["per_seed"] == out["per_seed"]
    with open(tmp_path / "quick" / "dissection.json") as f:
        assert json.load(f)["ablations"] == out["ablations"]


def test_a_rerun_computes_only_the_ablations_a_finished_seed_lacks(monkeypatch, tmp_path):
    monkeypatch.setitem(protocols.SCALES, "quick", TINY)
    out = registry.run_experiment("dissection", "quick", str(tmp_path), progress=False, seeds=(0,))
    path = tmp_path / "quick" / "dissection" / "seed0.json"
    with open(path) as f:
        older = json.load(f)
    name = "SAX: diagonal summary"
    del older["final"][name]  # as written by a version without this ablation
    with open(path, "w") as f:
        json.dump(older, f)
    made, ablated = [], dissection.ablated
    monkeypatch.setattr(dissection, "ablated", lambda theta, config, n: made.append(n) or ablated(theta, config, n))
    again = registry.run_experiment("dissection", "quick", str(tmp_path), progress=False, seeds=(0,))
    assert made == [name]
    assert again["per_seed"][0]["final"] == out["per_seed"][0]["final"]
