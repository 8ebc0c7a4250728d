"""The exactness certificate: sound, tight on generic data, and min_gamma delivers."""

import numpy as np
import pytest

from kmt_ref import (
    exactness_certificate,
    gaussian_mixture,
    lloyd,
    lloyd_transformer,
    min_gamma,
)
from kmt_ref.certificate import reset_leakage, rule_of_thumb_gamma

#: Stated tightness on generic data at gamma = min_gamma(tol=1e-6): the bound is
#: within these factors of the measured deviation (median, worst case over tasks).
TIGHTNESS_MEDIAN_MAX = 1.5
TIGHTNESS_WORST_MAX = 2.0


def _deviation(X, init, n_layers, gamma, config="validated"):
    d, k = X.shape[1], init.shape[0]
    traj = lloyd_transformer(d, k, gamma, config=config).run(X, init, n_layers, warn=False)  # the gap is measured
    ref = lloyd(X, init, n_layers)
    return np.abs(traj.centers - ref.centers).max(axis=(1, 2)), traj, ref


def _random_instance(rng, trial):
    """Generic mixtures, Gaussian blobs at three scales, and adversarial near-ties."""
    n = int(rng.choice([12, 40, 150]))
    d = int(rng.choice([1, 2, 5]))
    k = int(rng.choice([2, 3, 6]))
    kind = trial % 3
    if kind == 0:
        X, init, _ = gaussian_mixture(rng, n=n, d=d, k=k, scale=float(rng.choice([0.05, 0.2])))
    elif kind == 1:
        X = rng.standard_normal((n, d)) * float(rng.choice([0.1, 1.0, 10.0]))
        init = X[rng.choice(n, k, replace=False)] + 0.01 * rng.standard_normal((k, d))
    else:
        # Half the points within 1e-3 of the bisector of two centers: tiny margins.
        init = rng.standard_normal((k, d))
        mid = (init[0] + init[1]) / 2
        near = mid + 1e-3 * rng.standard_normal((n // 2, d))
        X = np.concatenate([near, rng.standard_normal((n - n // 2, d))])
    return X, init


def test_bound_is_never_exceeded_on_random_and_adversarial_instances():
    rng = np.random.default_rng(0)
    ratios, certified = [], 0
    for trial in range(240):
        X, init = _random_instance(rng, trial)
        n_layers = int(rng.integers(1, 6))
        ref = lloyd(X, init, n_layers)
        D2 = np.sort(((X[:, None, :] - ref.centers[0][None]) ** 2).sum(-1), axis=1)
        margin = max(float((D2[:, 1] - D2[:, 0]).min()), 1e-12)
        # gamma from 1x to 1000x the inverse margin: trivial, loose and tight bounds.
        gamma = float(10 ** rng.uniform(0, 3)) / margin
        dev, traj, ref = _deviation(X, init, n_layers, gamma)
        cert = exactness_certificate(X, init, n_layers, gamma)
        assert cert.bound.shape == (n_layers + 1,)
        assert np.all(dev <= cert.bound), (trial, dev, cert.bound)
        gap = np.abs(traj.log_objectives(X) - ref.log_objectives(X))
        assert np.all(gap <= cert.log_objective_gap), (trial, gap, cert.log_objective_gap)
        if cert.assignments_exact:
            certified += 1
            assert np.array_equal(traj.labels, ref.labels), trial
        if cert.bound.max() < 0.1 * np.ptp(X):
            ratios.append(np.min(cert.bound[1:] / np.maximum(dev[1:], 1e-300)))
    # The test has teeth: on some instance the bound is nearly attained, so a
    # bound 5% too small would have been caught; most instances are informative.
    assert min(ratios) < 1.05
    assert len(ratios) > 150 and certified > 150


def test_log_objective_gap_bound_holds():
    rng = np.random.default_rng(1)
    for _ in range(20):
        X, init, _ = gaussian_mixture(rng, n=200, d=3, k=4)
        gamma = float(10 ** rng.uniform(3, 6))
        _, traj, ref = _deviation(X, init, 6, gamma)
        cert = exactness_certificate(X, init, 6, gamma)
        gap = np.abs(traj.log_objectives(X) - ref.log_objectives(X))
        assert np.all(gap <= cert.log_objective_gap)


def test_bound_is_tight_on_generic_data():
    rng = np.random.default_rng(2)
    factors = []
    for trial in range(12):
        d, k = (2, 8)[trial % 2], (3, 5, 10)[trial % 3]
        X, init, _ = gaussian_mixture(rng, n=400, d=d, k=k)
        gamma = min_gamma(X, init, 10, 1e-6)
        dev, _, _ = _deviation(X, init, 10, gamma)
        factors.append(exactness_certificate(X, init, 10, gamma).bound.max() / dev.max())
    factors = np.array(factors)
    print(f"tightness factor: median {np.median(factors):.3f}, worst {factors.max():.3f}")
    assert np.all(factors >= 1)
    assert np.median(factors) <= TIGHTNESS_MEDIAN_MAX
    assert factors.max() <= TIGHTNESS_WORST_MAX


def test_min_gamma_meets_tol_and_is_nearly_minimal():
    rng = np.random.default_rng(3)
    for tol in (1e-3, 1e-6, 1e-9):
        X, init, _ = gaussian_mixture(rng, n=300, d=2, k=4)
        gamma = min_gamma(X, init, 8, tol)
        assert np.isfinite(gamma)
        dev, _, _ = _deviation(X, init, 8, gamma)
        assert dev.max() < tol
        assert exactness_certificate(X, init, 8, gamma).bound.max() <= tol
        assert exactness_certificate(X, init, 8, gamma / 1.01).bound.max() > tol


def test_bound_is_monotone_in_gamma():
    X, init, _ = gaussian_mixture(np.random.default_rng(4), n=300, d=2, k=5)
    gammas = np.logspace(0, 8, 33)
    bounds = np.array([exactness_certificate(X, init, 8, g).bound for g in gammas])
    assert np.all(np.diff(bounds, axis=0) <= 0)
    assert bounds[0].max() > 0.1 and bounds[-1].max() < 1e-9


def test_rule_of_thumb_gamma_is_sufficient():
    rng = np.random.default_rng(5)
    applicable = 0
    for _ in range(10):
        X, init, _ = gaussian_mixture(rng, n=200, d=4, k=3)
        gamma = rule_of_thumb_gamma(X, init, 6, 1e-7)
        if np.isfinite(gamma):
            applicable += 1
            cert = exactness_certificate(X, init, 6, gamma, float_allowance=False)
            assert cert.assignments_exact and cert.bound.max() <= 1e-7
            assert gamma >= min_gamma(X, init, 6, 1e-7, float_allowance=False)
    assert applicable == 10


def test_hardmax_is_certified_up_to_rounding_and_ties_are_not():
    X, init, _ = gaussian_mixture(np.random.default_rng(6), n=100, d=2, k=3)
    cert = exactness_certificate(X, init, 5, np.inf)
    assert cert.assignments_exact and cert.bound.max() < 1e-12
    # A point exactly halfway between two centers: no gamma certifies it.
    X = np.array([[0.0], [1.0], [2.0]])
    init = np.array([[0.0], [2.0]])
    assert not exactness_certificate(X, init, 1, 1e6).assignments_exact
    assert min_gamma(X, init, 1, 1e-3) == np.inf


def test_all_attention_reset_leak_bounds_the_assignment_block():
    rng = np.random.default_rng(7)
    X, init, _ = gaussian_mixture(rng, n=60, d=2, k=3)
    X = np.concatenate([X, X[:5]])  # duplicates leak nothing
    for gamma in (1e2, 1e3, 1e4):
        beta = reset_leakage(X, gamma)
        model = lloyd_transformer(2, 3, gamma, config="all-attention")
        traj = model.run(X, init, 4, warn=False)  # the leak is what this test measures
        for t in range(1, 4):
            D2 = ((X[:, None, :] - traj.centers[t][None]) ** 2).sum(-1)
            S = np.exp(-gamma * (D2 - D2.min(axis=1, keepdims=True)))
            S /= S.sum(axis=1, keepdims=True)
            err = np.abs(traj.assignments[t] - S).sum(axis=1).max()
            if 2 * beta < 1:
                assert err <= 2 * beta / (1 - 2 * beta) + 1e-12
    assert reset_leakage(X, 1e-3) > 0.5 > reset_leakage(X, 1e6)


@pytest.mark.parametrize(
    "call",
    [
        lambda X, C: exactness_certificate(X, C, 2, 0.0),
        lambda X, C: exactness_certificate(X, C, -1, 1.0),
        lambda X, C: exactness_certificate(X, C[:, :1], 2, 1.0),
        lambda X, C: min_gamma(X, C, 2, -1e-3),
        lambda X, C: min_gamma(X, C, 2, np.nan),
        lambda X, C: reset_leakage(X, "big"),
    ],
)
def test_bad_input_raises_value_error_naming_it(call):
    X, init, _ = gaussian_mixture(np.random.default_rng(8), n=20, d=2, k=2)
    with pytest.raises(ValueError, match="="):
        call(X, init)


def test_empty_cluster_is_certified_only_past_float64_underflow():
    # Center 2 starts far away and gets no point: Lloyd moves it to the global mean.
    X = np.array([[0.0], [0.1], [1.0], [1.1]])
    init = np.array([[0.0], [1.0], [50.0]])
    assert np.bincount(lloyd(X, init, 1).labels[0], minlength=3)[2] == 0
    # gamma * (gap to the empty center) is about 240 at gamma = 0.1: no underflow, trivial
    # bound; at gamma = 1e4 every gap (>= 0.2 at layer 2) underflows.
    low, high = exactness_certificate(X, init, 2, 0.1), exactness_certificate(X, init, 2, 1e4)
    assert low.bound[1] >= 1.0 and high.bound.max() < 1e-12
    for gamma in (0.1, 1e4):
        dev, _, _ = _deviation(X, init, 2, gamma)
        assert np.all(dev <= exactness_certificate(X, init, 2, gamma).bound)


def test_the_margins_subtract_the_float_allowance_where_it_decides():
    # Centers 0 and 1, a point 0.5 - h with h = 5e-15: its exact margin D_1 - D_0 = 2h (from the float's exact
    # value) is below the allowance 2 sigma, sigma = 4 (d + 2) eps (2 max|x|)^2, for rounded squared distances.
    # With the allowance the certificate may not call its assignment exact; without it, it does.
    from fractions import Fraction

    from kmt_ref.certificate import exactness_certificate

    X = np.array([[0.5 - 5e-15], [0.0], [1.0], [0.1], [0.9]])
    init = np.array([[0.0], [1.0]])
    x = Fraction(float(X[0, 0]))
    exact_margin = float((x - 1) ** 2 - x**2)
    sigma = 4 * (1 + 2) * np.finfo(float).eps * (2 * 1.0) ** 2
    assert 0 < exact_margin < 2 * sigma
    with_allowance = exactness_certificate(X, init, 1, 1e20)
    exact_rule = exactness_certificate(X, init, 1, 1e20, float_allowance=False)
    # to the rounding of squared distances near 1/4 (the allowance itself is 100 times larger)
    np.testing.assert_allclose(with_allowance.margins[0], exact_margin - 2 * sigma, rtol=0, atol=4e-16)
    np.testing.assert_allclose(exact_rule.margins[0], exact_margin, rtol=0, atol=4e-16)
    assert not with_allowance.assignments_exact and exact_rule.assignments_exact
