"""Sparse and random normalizers against brute-force solves of their definitions."""

import numpy as np
import pytest
from scipy.optimize import brentq, linprog, minimize
from scipy.stats import chisquare

from kmt_ref.attention import NORMALIZERS, Block, attend, softmax
from kmt_ref.normalizers import (
    entmax15,
    gumbel_max,
    gumbel_softmax,
    hardmax,
    hardmax_average,
    normmax2,
    normmax_inf,
    sparsemax,
)

RNG_SEEDS = range(20)
SIMPLEX = [{"type": "eq", "fun": lambda p: np.sum(p) - 1.0}]


def _random_row(seed, r=6):
    rng = np.random.default_rng(seed)
    return rng.normal(scale=rng.choice([0.3, 1.0, 3.0]), size=r)


def _slsqp(objective, r):
    best = None
    for start in (np.full(r, 1.0 / r), np.eye(r)[0], np.eye(r)[-1]):
        res = minimize(objective, start, method="SLSQP", bounds=[(0, 1)] * r, constraints=SIMPLEX,
                       options={"ftol": 1e-14, "maxiter": 500})
        if best is None or res.fun < best.fun:
            best = res
    return best


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_sparsemax_is_the_euclidean_projection_onto_the_simplex(seed):
    z = _random_row(seed)
    res = _slsqp(lambda p: np.sum((p - z) ** 2), z.size)
    p = sparsemax(z)
    assert np.all(p >= 0) and np.isclose(p.sum(), 1.0)
    assert np.sum((p - z) ** 2) <= res.fun * (1 + 1e-9)
    assert np.allclose(p, res.x, atol=1e-5)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_normmax2_maximizes_score_minus_t_times_2norm(seed):
    z = _random_row(seed)
    t = float(np.random.default_rng(seed + 100).uniform(0.1, 3.0))
    res = _slsqp(lambda p: -(p @ z - t * np.linalg.norm(p)), z.size)
    p = normmax2(z, threshold=t)
    value = p @ z - t * np.linalg.norm(p)
    assert np.all(p >= 0) and np.isclose(p.sum(), 1.0)
    assert value >= -res.fun - 1e-9 * abs(res.fun)
    assert np.allclose(p, res.x, atol=1e-4)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_normmax_inf_solves_its_linear_programme(seed):
    # max <p, z> - t u  s.t.  p_i <= u, sum p = 1, p >= 0: variables (p, u).
    z = _random_row(seed)
    r = z.size
    t = float(np.random.default_rng(seed + 200).uniform(0.1, 3.0))
    res = linprog(np.append(-z, t), A_ub=np.hstack([np.eye(r), -np.ones((r, 1))]), b_ub=np.zeros(r),
                  A_eq=np.append(np.ones(r), 0.0)[None], b_eq=[1.0], bounds=[(0, None)] * (r + 1),
                  method="highs")
    p = normmax_inf(z, threshold=t)
    assert np.isclose(p @ z - t * p.max(), -res.fun, atol=1e-12)
    assert np.allclose(p, res.x[:r], atol=1e-9)


def test_normmax_inf_gives_tied_scores_equal_weight():
    p = normmax_inf(np.array([3.0, 1.0, 1.0, 0.0]), threshold=2.0)
    assert np.allclose(p, [1 / 3, 1 / 3, 1 / 3, 0.0])


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_entmax15_solves_its_threshold_equation(seed):
    # [z/2 - tau]_+^2 sums to one: solve for tau by bracketing (the sum falls from >= 1 to 0 on [max - 1, max])
    z = _random_row(seed)
    w = z / 2
    tau = brentq(lambda t: np.sum(np.maximum(w - t, 0.0) ** 2) - 1.0, w.max() - 1.0, w.max(), xtol=1e-15)
    p = entmax15(z)
    assert np.all(p >= 0) and np.isclose(p.sum(), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(p, np.maximum(w - tau, 0.0) ** 2, atol=1e-12)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_entmax15_maximizes_its_regularized_score(seed):
    z = _random_row(seed)
    def objective(p):
        return -(p @ z + 4 / 3 * np.sum(p - np.maximum(p, 0.0) ** 1.5))
    res = _slsqp(objective, z.size)
    p = entmax15(z)
    assert objective(p) <= res.fun + 1e-9
    assert np.allclose(p, res.x, atol=1e-4)


def test_entmax15_hand_cases_and_its_place_between_softmax_and_sparsemax():
    # two equal scores: 2 (0 - tau)^2 = 1, weights 1/2; a gap of 2 or more in z/2 leaves one weight
    np.testing.assert_allclose(entmax15(np.array([1.0, 1.0])), [0.5, 0.5])
    np.testing.assert_array_equal(entmax15(np.array([0.0, -2.0])), [1.0, 0.0])
    z = np.array([0.0, -0.5, -1.0, -4.0])
    support = lambda p: np.sum(p > 0)  # noqa: E731
    assert support(sparsemax(z)) <= support(entmax15(z)) <= support(softmax(z))
    np.testing.assert_allclose(entmax15(z + 7.0), entmax15(z), atol=1e-15)  # shift invariant


@pytest.mark.parametrize("fn", [sparsemax, entmax15, normmax2, normmax_inf])
def test_sparse_normalizers_vectorize_over_rows_and_batch_axes(fn):
    Z = np.random.default_rng(0).normal(size=(3, 4, 7))
    out = fn(Z)
    rowwise = np.array([[fn(row) for row in block] for block in Z])
    assert np.allclose(out, rowwise, rtol=0, atol=1e-15)
    assert np.allclose(out.sum(axis=-1), 1.0)


def test_the_hardmax_average_is_the_weights_times_the_values_and_none_stands_for_the_identity():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 3, size=(2, 7, 5)).astype(float)  # small integers: ties in most rows
    scores[0, 3, 2] = np.nan  # a nan row: nan weights, as 0 / 0
    values = rng.normal(size=(5, 4))
    with np.errstate(invalid="ignore"):
        weights, ours = hardmax(scores), hardmax_average(scores, None)
        same_as_eye, averaged = hardmax_average(scores, np.eye(5)), hardmax_average(scores, values)
    assert (np.count_nonzero(weights == weights.max(-1, keepdims=True), axis=-1) > 1).any()
    np.testing.assert_array_equal(ours, weights)
    np.testing.assert_array_equal(ours, same_as_eye)
    assert np.isnan(ours[0, 3]).all() and not np.isnan(np.delete(ours[0], 3, axis=0)).any()
    np.testing.assert_allclose(averaged, weights @ values, rtol=1e-15, atol=1e-15)
    tied = np.ones((1, 7))  # seven tied one-hot assignments average to the assignment itself
    onehot = np.array([[0.0, 1.0, 0.0]] * 7)
    np.testing.assert_array_equal(hardmax_average(tied, onehot), onehot[:1])
    assert not np.array_equal(hardmax(tied) @ onehot, onehot[:1])  # seven sevenths are not one


def test_sparse_normalizers_tend_to_hardmax_at_low_temperature_and_uniform_at_high():
    z = np.array([[0.3, 1.2, 1.2, -0.5, 0.9]])
    assert np.allclose(sparsemax(1e6 * z), hardmax(z))
    assert np.allclose(sparsemax(1e-6 * z), 1 / 5, atol=1e-6)
    for fn in (normmax2, normmax_inf):
        assert np.allclose(fn(z, threshold=1e-9), hardmax(z))
        assert np.allclose(fn(z, threshold=1e9), 1 / 5, atol=1e-8)


def test_gumbel_max_samples_follow_softmax_chi_square_at_level_0_001():
    z = np.array([0.5, -1.0, 2.0, 0.0, 1.0])
    draws = 20_000
    onehots = gumbel_max(np.broadcast_to(z, (draws, z.size)), np.random.default_rng(7))
    assert np.all(onehots.sum(axis=1) == 1)
    counts = onehots.sum(axis=0)
    expected = draws * softmax(z)
    assert chisquare(counts, expected).pvalue > 1e-3
    # The test can fail: the law of softmax(2 z) is rejected on the same draws.
    assert chisquare(counts, draws * softmax(2 * z)).pvalue < 1e-3


def test_gumbel_softmax_tends_to_gumbel_max_at_low_temperature_and_uniform_at_high():
    z = np.random.default_rng(1).normal(size=(50, 6))
    cold = gumbel_softmax(z, np.random.default_rng(3), temperature=1e-6)
    assert np.allclose(cold, gumbel_max(z, np.random.default_rng(3)))
    hot = gumbel_softmax(z, np.random.default_rng(3), temperature=1e8)
    assert np.allclose(hot, 1 / 6, atol=1e-7)


def test_registered_normalizers_run_inside_attend_with_params_and_rng():
    rng = np.random.default_rng(0)
    Zq, Zk = rng.normal(size=(4, 3)), rng.normal(size=(9, 3))
    eye = np.eye(3)
    for name, params in [("sparsemax", {}), ("normmax2", {"threshold": 0.5}), ("normmax_inf", {"threshold": 0.5})]:
        out = attend(Zq, Zk, Block(eye, eye, eye, normalizer=name, params=params))
        scores = -((Zq[:, None] - Zk[None]) ** 2).sum(-1)
        assert np.allclose(out, NORMALIZERS[name].fn(scores, **params) @ Zk)
    block = Block(eye, eye, eye, normalizer="gumbel_max")
    out = attend(Zq, Zk, block, rng=np.random.default_rng(5))
    assert all(np.any(np.all(np.isclose(row, Zk), axis=1)) for row in out)
    with pytest.raises(ValueError, match="rng"):
        attend(Zq, Zk, block)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan, "1", True])
def test_normmax_and_gumbel_softmax_reject_a_non_positive_parameter(bad):
    with pytest.raises(ValueError, match="threshold="):
        normmax2(np.zeros(3), threshold=bad)
    with pytest.raises(ValueError, match="threshold="):
        normmax_inf(np.zeros(3), threshold=bad)
    with pytest.raises(ValueError, match="temperature="):
        gumbel_softmax(np.zeros(3), np.random.default_rng(0), temperature=bad)
