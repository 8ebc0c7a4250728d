"""Checks for the chapter "Beyond the paper"."""

import numpy as np

from ..learning.model import ModelConfig, init_params, unflatten
from ..real_data import adjusted_rand_index
from ._feedback import as_array, call, expect, expect_close, inputs


def check_untie(untie):
    """Exercise 21: the full matrix of a tied map, and its symmetry under relabelling the ids."""
    rng = np.random.default_rng(31)
    d = 3
    config = ModelConfig(d, 4, tied=True)
    theta = init_params(config, rng)
    for k in (1, 4, 6):
        # the library's tied CAC value matrix at this k, and the pieces it was built from
        W = unflatten(theta, config.at_k(k))["CAC"]["Wv"]
        A, u, v = W[:d, :d], W[d, :d], W[:d, d]
        nu = W[d + 1, d] if k > 1 else 0.0
        lam = W[d, d] - nu
        on = inputs(A=A, u=u, v=v, lam=lam, nu=nu, k=k)
        got = as_array(call(untie, A, u, v, lam, nu, k, on=on), "W", on, shape=(d + k, d + k))
        expect_close(got, W, "W", on, rtol=1e-14, atol=1e-15,
                     hint="W[:d, d:] has every column v, W[d:, :d] every row u, W[d:, d:] = lam I + nu (all ones)")
        perm = rng.permutation(k)
        G = np.eye(d + k)[np.concatenate([np.arange(d), d + perm])]
        expect(np.allclose(G @ got @ G.T, got),
               "relabelling the ids (a permutation of the y coordinates) should leave W unchanged\n" + on)
    return "the tied matrix at k = 1, 4 and 6 equals the library's, and no relabelling of the ids changes it"


def _ari_by_pairs(a, b):
    n = len(a)
    i, j = np.triu_indices(n, 1)
    same_a, same_b = a[i] == a[j], b[i] == b[j]
    both, na, nb, m = np.sum(same_a & same_b), np.sum(same_a), np.sum(same_b), len(i)
    expected, top = na * nb / m, (na + nb) / 2
    return 1.0 if top == expected else (both - expected) / (top - expected)


def check_adjusted_rand_index(ari):
    """Exercise 22: the adjusted Rand index, against counting pairs of points."""
    cases = [([0, 0, 1, 1], [0, 0, 1, 2], 4 / 7), ([0, 0, 1, 1], [7, 7, 3, 3], 1.0),
             ([0, 1, 0, 1], [0, 0, 1, 1], -0.5), ([2, 2, 2], [5, 5, 5], 1.0)]
    for a, b, value in cases:
        on = inputs(labels_true=np.array(a), labels_pred=np.array(b))
        got = float(as_array(call(ari, np.array(a), np.array(b), on=on), "index", on, shape=()))
        expect_close(got, value, "index", on, rtol=1e-12, atol=1e-12,
                     hint="(sum_ij C(n_ij, 2) - E) / (mean of the margins' sums - E); 1 when that is 0 / 0")
    rng = np.random.default_rng(32)
    for _ in range(20):
        n = int(rng.integers(2, 40))
        a, b = rng.integers(0, 4, n), rng.integers(0, 5, n)
        on = inputs(labels_true=a, labels_pred=b)
        got = float(as_array(call(ari, a, b, on=on), "index", on, shape=()))
        expect_close(got, _ari_by_pairs(a, b), "index", on, rtol=1e-9, atol=1e-12)
        expect_close(got, adjusted_rand_index(a, b), "index", on, rtol=1e-9, atol=1e-12)
    return "four hand-computed cases and 20 random labelings agree with counting pairs"
