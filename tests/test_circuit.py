"""The trained layer distilled block by block (kmt_ref.learning.circuit).

A layer that *is* a circuit (its blocks built from known scalars, in the learned model's format) is the
independent reference: the fit must recover the scalars, and every circuit, whatever it summarizes, must
compute that layer's step.
"""

from dataclasses import replace

import numpy as np
import pytest

from kmt_ref.attention import Block
from kmt_ref.layer import KMeansTransformer
from kmt_ref.learning.circuit import SUMMARIES, circuit_step, circuit_transformer, fit_circuit, value_maps
from kmt_ref.learning.config import TrainConfig
from kmt_ref.learning.model import params_from_transformer, run_steps
from kmt_ref.learning.protocols import committed_model
from kmt_ref.programs.fidelity import CIRCUITS
from kmt_ref.tasks import draw_tasks

KNOWN = dict(beta=3.0, inv_width=5.0, sharpness=7.0, penalty=2.5, mu=[0.2, 0.5, 0.3])
CONFIG = TrainConfig(d=2, k=3, n=24, n_steps=1, val_tasks=1)


def _known_layer(known=KNOWN):
    """The circuit of ``known`` as a learned model's ``theta``: every block a Euclidean softmax, SAC's a
    softmax so sharp between distinct ids (weight exp(-2 * 900) = 0) that it is the identity reset."""
    layout = CONFIG.model.layout
    P_x, P_y = layout.projector("x"), layout.projector("y")
    b, mu = np.sqrt(known["penalty"]), known["mu"]
    blocks = {"CAX": Block(P_x, P_x, P_y, gamma=known["beta"]),
              "SAX": Block(P_x, P_x, mu[2] / mu[1] * P_x, gamma=known["inv_width"]),
              "CAC": Block(known["sharpness"] / (2 * b) * P_y, b * P_y, mu[1] * P_x),
              "SAC": Block(30 * P_y, 30 * P_y, (mu[0] - 1) * P_x)}
    theta, model_config = params_from_transformer(KMeansTransformer(layout, blocks))
    assert model_config == CONFIG.model
    return theta


def _tasks(seed=3, n_tasks=5):
    return draw_tasks(np.random.default_rng(seed), n_tasks, init="first", **CONFIG.task_kwargs())


def test_the_fit_recovers_the_scalars_of_a_layer_that_is_a_circuit():
    fit = fit_circuit(_known_layer(), CONFIG, n_tasks=8)
    for key in ("beta", "inv_width", "sharpness", "penalty"):
        assert fit[key] == pytest.approx(KNOWN[key], rel=1e-8), key
    assert fit["mu"] == pytest.approx(KNOWN["mu"], rel=1e-8)
    assert all(r2 == pytest.approx(1.0, abs=1e-10) for r2 in fit["r2"].values())
    assert len(fit["subsets"]) == 4
    assert all(part["sharpness"] == pytest.approx(7.0, rel=1e-8) for part in fit["subsets"])


def test_the_value_maps_of_a_layer_that_is_a_circuit_are_its_mu_times_the_identity():
    maps = value_maps(_known_layer(), CONFIG.model)
    mu, eye = KNOWN["mu"], np.eye(CONFIG.d)
    for name, scale in (("keep", mu[0]), ("own", mu[1]), ("smoothed", mu[2]), ("assignment", 0.0)):
        assert np.allclose(maps[name], scale * eye, rtol=0, atol=1e-12), name
    with pytest.raises(ValueError, match="tokens"):
        value_maps(np.zeros(replace(CONFIG, tokens="d").model.n_params), replace(CONFIG, tokens="d").model)


def test_every_circuit_computes_the_step_of_a_layer_that_is_a_circuit_and_its_weights_the_same():
    theta = _known_layer()
    X, init = _tasks()
    layer = run_steps(theta, X, init, CONFIG.model, 1)[1]
    for summarized in CIRCUITS:
        got = circuit_step(theta, CONFIG.model, KNOWN, X, init, summarized)
        assert np.allclose(got, layer, rtol=0, atol=1e-12), summarized
    for cax, summarized in (("layer", ("values", "SAX", "CAC")), ("summary", SUMMARIES)):
        model = circuit_transformer(theta, CONFIG.model, KNOWN, cax)
        built = model.run(X[0], init[0], 1).centers[1]
        assert np.allclose(built, circuit_step(theta, CONFIG.model, KNOWN, X[:1], init[:1], summarized)[0],
                           rtol=0, atol=1e-12)


def test_each_summary_is_used_where_it_is_named():
    theta = _known_layer()
    X, init = _tasks()
    layer = run_steps(theta, X, init, CONFIG.model, 1)[1]
    for key, summarized in (("inv_width", ("values", "SAX")), ("sharpness", ("values", "CAC")),
                            ("beta", SUMMARIES), ("mu", ("values",))):
        wrong = dict(KNOWN, **{key: [0.3, 0.4, 0.3] if key == "mu" else 2 * KNOWN[key]})
        assert not np.allclose(circuit_step(theta, CONFIG.model, wrong, X, init, summarized), layer, atol=1e-6), key
        block = {"inv_width": "SAX", "sharpness": "CAC", "beta": "CAX", "mu": "values"}[key]
        unused = [s for s in CIRCUITS if block not in s]
        for other in unused:
            assert np.allclose(circuit_step(theta, CONFIG.model, wrong, X, init, other), layer, atol=1e-12)


def test_on_a_trained_layer_the_values_summary_is_close_and_cax_summary_is_not():
    r = committed_model("paper", "d+k", 0)
    fit = fit_circuit(r.theta, r.config, n_tasks=4)
    X, init = draw_tasks(np.random.default_rng(1), 4, init="first", **r.config.task_kwargs())
    layer = run_steps(r.theta, X, init, r.config.model, 1)[1]
    moved = np.linalg.norm(layer - init)

    def gap(summarized):
        return np.linalg.norm(circuit_step(r.theta, r.config.model, fit, X, init, summarized) - layer) / moved
    assert 0 < gap(("values",)) < 0.15 and gap(("values", "SAX", "CAC")) < 0.4 < gap(SUMMARIES)
    assert 0 < fit["r2"]["CAC"] < fit["r2"]["values"] < 1


def test_bad_arguments_are_refused_by_name():
    theta = _known_layer()
    X, init = _tasks(n_tasks=1)
    for summarized in ((), ("SAX",), ("values", "CAX"), ("values", "FFN")):
        with pytest.raises(ValueError, match="summarized"):
            circuit_step(theta, CONFIG.model, KNOWN, X, init, summarized)
    with pytest.raises(ValueError, match="X"):
        circuit_step(theta, CONFIG.model, KNOWN, X[0], init, ("values",))  # one task without its batch axis
    with pytest.raises(ValueError, match="model_config"):
        circuit_step(theta, CONFIG, KNOWN, X, init, ("values",))
    with pytest.raises(ValueError, match="model_config"):
        value_maps(theta, CONFIG)
    with pytest.raises(ValueError, match="config"):
        fit_circuit(theta, CONFIG.model)
    with pytest.raises(ValueError, match="penalty"):
        circuit_transformer(theta, CONFIG.model, dict(KNOWN, penalty=-1.0))
    with pytest.raises(ValueError, match="beta"):
        circuit_transformer(theta, CONFIG.model, dict(KNOWN, beta=0.0), cax="summary")
    with pytest.raises(ValueError, match="cax"):
        circuit_transformer(theta, CONFIG.model, KNOWN, cax="learned")
    with pytest.raises(ValueError, match="tokens"):
        fit_circuit(theta, replace(CONFIG, tokens="d"))
    with pytest.raises(ValueError, match="n_tasks"):
        fit_circuit(theta, CONFIG, n_tasks=0)
    with pytest.raises(ValueError, match="subsets"):
        fit_circuit(theta, CONFIG, n_tasks=2, subsets=3)


def test_distilled_end_to_end_the_circuit_finds_a_term_shared_by_every_id():
    """The goal is the circuit of KNOWN with a CAX term ``-alpha ||c_j||^2``: the block-by-block fit (alpha 0)
    misses it, the end-to-end fit finds every scalar."""
    from kmt_ref.programs.fidelity import distill_circuit, distill_soft, soft_step

    theta = _known_layer()
    known = dict(KNOWN, center_penalty=0.4)
    goal = lambda X, C: circuit_step(theta, CONFIG.model, known, X, C, SUMMARIES)  # noqa: E731
    fit = distill_circuit(theta, CONFIG, n_tasks=8, target=goal)
    assert fit["start_loss"] > 1e-4 and fit["loss"] < 1e-16
    for key in ("beta", "center_penalty", "inv_width", "sharpness", "penalty"):
        assert fit[key] == pytest.approx(known[key], rel=1e-5), key
    assert fit["mu"] == pytest.approx(KNOWN["mu"], rel=1e-5)
    # without a target: the layer itself, which is the circuit with alpha = 0
    assert distill_circuit(theta, CONFIG, n_tasks=8)["center_penalty"] == pytest.approx(0.0, abs=1e-6)
    soft = distill_soft(theta, CONFIG, n_tasks=8, target=lambda X, C: soft_step(X, C, 5.0))
    assert soft["beta"] == pytest.approx(5.0, rel=1e-4) and soft["loss"] < 1e-10
