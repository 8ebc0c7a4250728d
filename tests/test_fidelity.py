"""Fidelity of a candidate explanation to a layer, task by task (kmt_ref.programs.fidelity)."""

import itertools

import numpy as np

import kmt_ref
from kmt_ref.learning.model import params_from_transformer, run_steps
from kmt_ref.programs.fidelity import (
    averaged_step,
    candidate_steps,
    fidelity_of_seed,
    partial_correlation,
    summarize_fidelity,
)


def _layer_and_tasks(gamma=1e7):
    """The all-attention construction in the learned model's format (it runs Lloyd at a large gamma), and
    eight well-separated tasks."""
    theta, config = params_from_transformer(kmt_ref.lloyd_transformer(2, 3, gamma, config="all-attention"))
    X, init = zip(*[kmt_ref.gaussian_mixture(np.random.default_rng(s), n=40, d=2, k=3)[:2] for s in range(8)],
                  strict=True)
    return theta, config, np.array(X), np.array(init)


def test_a_candidate_that_is_the_layer_has_fidelity_zero_and_one_and_lloyd_has_no_gain():
    theta, config, X, init = _layer_and_tasks()
    steps = {"the layer itself": lambda X, C: run_steps(theta, X, C, config, 1)[1],
             "half the layer's step": lambda X, C: (C + run_steps(theta, X, C, config, 1)[1]) / 2,
             **candidate_steps(2.0, {1: dict(beta=4.0, sharpness=6.0)})}
    out = fidelity_of_seed(theta, config, X, init, 3, steps)
    assert out["the layer itself"]["one_step_ratio"]["median"] == 0.0
    assert abs(out["half the layer's step"]["one_step_ratio"]["median"] - 0.5) < 1e-12  # half-way: 0.5
    # the construction at gamma = 1e7 runs Lloyd on these tasks: Lloyd is where it goes, and gains nothing
    assert out["Lloyd"]["one_step_ratio"]["q75"] < 1e-6
    assert np.isnan(out["Lloyd"]["gain_correlation"])
    summary = summarize_fidelity([out, out])
    assert summary["the layer itself"]["one_step_ratio"] == [0.0, 0.0]
    assert set(summary) == set(steps)


def test_the_gain_correlation_is_one_for_a_candidate_that_wins_where_the_layer_wins():
    theta, config, X, init = _layer_and_tasks(gamma=3.0)  # a soft layer: it does not run Lloyd
    steps = {"the layer itself": lambda X, C: run_steps(theta, X, C, config, 1)[1]}
    out = fidelity_of_seed(theta, config, X, init, 4, steps)
    assert abs(out["the layer itself"]["gain_correlation"] - 1.0) < 1e-12
    assert abs(out["the layer itself"]["recovered"] - 1.0) < 1e-12
    assert abs(out["the layer itself"]["final_correlation"] - 1.0) < 1e-12
    assert abs(out["the layer itself"]["partial_correlation"] - 1.0) < 1e-12


def test_the_partial_correlation_is_the_correlation_of_what_lloyd_does_not_predict():
    rng = np.random.default_rng(4)
    given, noise = rng.normal(size=(2, 50))
    a, b = 3 * given + noise, -2 * given + 0.5 * noise + 0.1 * rng.normal(size=50)
    rest = [v - np.polyval(np.polyfit(given, v, 1), given) for v in (a, b)]  # independent: polyfit's residuals
    assert abs(partial_correlation(a, b, given) - np.corrcoef(*rest)[0, 1]) < 1e-12
    assert np.corrcoef(a, b)[0, 1] < 0 < partial_correlation(a, b, given)  # the shared noise, not Lloyd's part
    assert np.isnan(partial_correlation(2 * given + 1, b, given))  # nothing left once Lloyd's part is removed


def test_the_label_averaged_layer_over_every_relabelling_treats_every_id_alike():
    theta, config, X, init = _layer_and_tasks(gamma=3.0)
    layer = lambda X, C: run_steps(theta, X, C, config, 1)[1]  # noqa: E731
    every = list(itertools.permutations(range(3)))
    average = averaged_step(theta, config, [np.array(p) for p in every])
    assert np.array_equal(averaged_step(theta, config, [np.arange(3)])(X, init), layer(X, init))
    for perm in every:
        perm = np.array(perm)
        back = np.empty_like(init)
        back[:, perm] = average(X, init[:, perm])
        assert np.allclose(back, average(X, init), rtol=0, atol=1e-12)
    # by hand: the mean of the six relabelled steps, each mapped back
    by_hand = np.zeros_like(init)
    for perm in every:
        step = layer(X, init[:, list(perm)])
        by_hand[:, list(perm)] += step / 6
    assert np.allclose(average(X, init), by_hand, rtol=0, atol=1e-13)
