"""The check every registered variant must pass: its transformer equals its classical twin."""

import numpy as np
import pytest

import kmt_ref
from kmt_ref.variants import VARIANTS, Variant, register_variant
from kmt_ref.variants.entmax import entmax_kmeans, entmax_kmeans_transformer

CASES = [(n, d, k, seed) for seed, (n, d, k) in enumerate([(60, 2, 3), (90, 3, 5), (40, 5, 2), (120, 2, 6)])]


def test_every_variant_of_the_book_is_registered():
    assert list(VARIANTS) == ["soft k-means", "spherical k-means", "trimmed (normmax)", "robust (sparsemax)",
                              "k-medoids (Gumbel)", "entmax-1.5 k-means"]


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("n, d, k, seed", CASES)
def test_variant_transformer_equals_its_classical_twin(name, n, d, k, seed):
    v = VARIANTS[name]
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(100 + seed), n=n, d=d, k=k)
    if d < v.min_d:
        pytest.skip(f"{name} needs d >= {v.min_d}")
    for value in v.values:
        traj, ref = v.run_both(X, init, 6, value)
        Xv, _ = v.problem(X, init)
        np.testing.assert_allclose(traj.centers, ref.centers, rtol=0, atol=v.allowed(Xv, value))
        np.testing.assert_array_equal(traj.labels, ref.labels)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_twins_are_not_lloyd_so_the_check_can_fail(name):
    # each variant moves centers differently from Lloyd somewhere (else the comparison would prove nothing new)
    v = VARIANTS[name]
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(5), n=80, d=3, k=4)
    Xv, initv = v.problem(X, init)
    lloyd = kmt_ref.lloyd(Xv, initv, 6).centers
    differs = []
    for value in v.values:
        _, ref = v.run_both(X, init, 6, value)
        differs.append(np.max(np.abs(ref.centers - lloyd)) > 1e-6)
    assert any(differs)


def test_register_variant_refuses_duplicates_and_bad_declarations():
    v = VARIANTS["robust (sparsemax)"]
    with pytest.raises(ValueError, match="already a registered variant"):
        register_variant(v)
    with pytest.raises(ValueError, match="values"):
        Variant("x", entmax_kmeans, entmax_kmeans_transformer, "a", (0.0,), "nothing")
    with pytest.raises(ValueError, match="values=\\(None,\\)"):
        Variant("x", entmax_kmeans, entmax_kmeans_transformer, None, (1.0,), "nothing")
    with pytest.raises(ValueError, match="classical must be callable"):
        Variant("x", None, entmax_kmeans_transformer, "a", (1.0,), "nothing")


def test_entmax_kmeans_hand_computed_step():
    # one cluster on the line, r = (0, 1, 9), a = 1/4 (d = 1): scores (0, -1/4, -9/4), halves (0, -1/8, -9/8);
    # support {0, 1}: (0 - tau)^2 + (-1/8 - tau)^2 = 1
    tau = (-1 / 8 - np.sqrt(2 - 1 / 64)) / 2
    w = np.array([tau**2, (-1 / 8 - tau) ** 2])
    X = np.array([[0.0], [1.0], [3.0]])
    np.testing.assert_allclose(entmax_kmeans(X, [[0.0]], 1, a=0.25).centers[1], [[w[1] * 1.0]], rtol=1e-14)
    np.testing.assert_allclose(w.sum(), 1.0)


def test_entmax_separation_is_what_the_proof_needs():
    # a non-member closer to c_j than any member: with the sparsemax separation (1) it would leak in
    from kmt_ref.variants._cac import cac_variant

    X = np.array([[0.0], [2.0], [2.1], [-1.0]])
    # point 0 is a member of c_1 (0.9 < 0.95) but nearer to c_0 than c_0's members 2.0 and 2.1
    init = np.array([[0.95], [-0.9]])
    a = 4.0
    ref = entmax_kmeans(X, init, 1, a)
    good = entmax_kmeans_transformer(1, 2, a).run(X, init, 1)
    np.testing.assert_allclose(good.centers, ref.centers, atol=1e-12)
    leaky = cac_variant(1, 2, "entmax15", 1.0, a, name="separation 1").run(X, init, 1)
    assert np.max(np.abs(leaky.centers - ref.centers)) > 1e-3
