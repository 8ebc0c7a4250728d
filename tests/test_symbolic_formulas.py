"""The statements about the algorithms' and normalizers' formulas, proved by computer algebra, and shown able to
fail: each with the formula it rests on replaced by a wrong one."""

import subprocess
import sys

import numpy as np
import pytest

sp = pytest.importorskip("sympy", reason="needs sympy, of the test extra: pip install -e '.[test]'")
F = pytest.importorskip("kmt_ref.symbolic_formulas")
from kmt_ref.symbolic import SymbolicCheckError  # noqa: E402


@pytest.mark.parametrize("lemma, sizes", [
    (F.row_shift_lemma, [dict(r=2), dict(r=4)]),
    (F.softmax_hardmax_lemma, [dict(r=2, m=1), dict(r=4, m=2), dict(r=4, m=3)]),
    (F.mean_lemma, [dict(n=1, d=1), dict(n=4, d=3)]),
    (F.soft_to_lloyd_lemma, [dict(k=2), dict(k=4)]),
    (F.sparsemax_threshold_lemma, [dict(s=1), dict(s=2), dict(s=4)]),
    (F.normmax_inf_lemma, [dict(s=1), dict(s=3)]),
    (F.member_mean_lemma, [dict(n=1, d=1), dict(n=4, d=3)]),
    (F.gumbel_max_lemma, [dict(r=2), dict(r=3)]),
    (F.reset_recursion_lemma, [dict(n=2), dict(n=4)]),
    (F.entmax_threshold_lemma, [dict(s=1), dict(s=2), dict(s=4)]),
    (F.margin_lemma, [{}]),
    (F.soft_weight_lemma, [dict(k=2), dict(k=4)]),
    (F.center_shift_lemma, [dict(d=1), dict(d=3)]),
    (F.rule_algebra_lemma, [{}]),
    (F.circuit_score_lemma, [dict(k=2), dict(k=5)]),
])
def test_every_statement_is_proved_at_several_sizes(lemma, sizes):
    for size in sizes:
        proved = lemma(**size)
        assert proved.source == "on the formula" and isinstance(proved.latex(), str)


def test_the_medoid_counterexample_holds_in_exact_integers():
    proved = F.medoid_counterexample()
    assert proved.rhs == sp.Tuple(1, 2) and proved.source == "in exact integers"


def _wrong_softmax(row, gamma):
    """A "softmax" that gives every weight a little too much: its weights do not sum to 1."""
    total = sum(sp.exp(gamma * v) for v in row)
    return [sp.exp(gamma * v) / total + sp.Rational(1, 100) for v in row]


@pytest.mark.parametrize("lemma", [F.row_shift_lemma, F.softmax_hardmax_lemma, F.soft_to_lloyd_lemma,
                                   F.gumbel_max_lemma])
def test_a_wrong_softmax_fails_the_statements_that_rest_on_it(monkeypatch, lemma):
    if lemma is F.row_shift_lemma:  # a constant per weight survives the shift: make the shift visible instead
        monkeypatch.setattr(F, "_softmax", lambda row, gamma: [sp.exp(gamma * v) for v in row])
    else:
        monkeypatch.setattr(F, "_softmax", _wrong_softmax)
    with pytest.raises(SymbolicCheckError):
        lemma()


@pytest.mark.parametrize("lemma", [F.mean_lemma, F.member_mean_lemma])
def test_a_wrong_mean_fails_the_statements_that_rest_on_it(monkeypatch, lemma):
    monkeypatch.setattr(F, "_mean", lambda X: sp.Matrix(1, X.shape[1], lambda _, a: sum(X[:, a]) / (X.shape[0] + 1)))
    with pytest.raises(SymbolicCheckError):
        lemma()


def test_a_wrong_threshold_or_value_fails_the_normalizers_statements(monkeypatch):
    monkeypatch.setattr(F, "_sparsemax_threshold", lambda z: (sum(z) - 1) / (len(z) + 1))
    with pytest.raises(SymbolicCheckError, match="sum to 1"):
        F.sparsemax_threshold_lemma()
    monkeypatch.setattr(F, "_uniform_value", lambda z, t, m: (sum(z[:m]) - 2 * t) / m)
    with pytest.raises(SymbolicCheckError, match="normmax"):
        F.normmax_inf_lemma()


def test_a_wrong_cost_fails_the_medoid_counterexample(monkeypatch):
    monkeypatch.setattr(F, "_distance_sums", lambda points: [sum((p - q) ** 2 for q in points) for p in points])
    with pytest.raises(SymbolicCheckError, match="k-medoids"):
        F.medoid_counterexample()


def test_the_formulas_are_the_ones_the_library_computes():
    """Each formula the statements rest on, on exact rationals, against the library's NumPy function."""
    from kmt_ref.attention import softmax
    from kmt_ref.normalizers import normmax_inf, sparsemax

    rng = np.random.default_rng(0)
    s = rng.normal(size=5)
    weights = [float(w) for w in F._softmax([sp.Rational(v) for v in s], sp.Rational(3, 2))]
    assert np.allclose(weights, softmax(1.5 * s), rtol=1e-14, atol=0)
    z = np.array([0.9, 0.5, 0.45, -1.0])  # support: the three largest (1 + 3 * 0.45 > 1.85)
    tau = float(F._sparsemax_threshold([sp.Rational(v) for v in z[:3]]))
    assert np.allclose(sparsemax(z), np.maximum(z - tau, 0), atol=1e-15)
    t = 0.45  # the largest s with sum_{l <= s} (z_l - z_s) <= t is 2 here (0.4, then 0.5): the two largest
    assert np.allclose(normmax_inf(z, threshold=t), [0.5, 0.5, 0, 0])
    assert float(F._uniform_value([sp.Rational(v) for v in z], sp.Rational(t), 2)) == pytest.approx(
        float(normmax_inf(z, threshold=t) @ z - t * 0.5), abs=1e-15)


def test_importing_the_library_does_not_import_the_formulas_module():
    code = "import sys, kmt_ref; assert 'kmt_ref.symbolic_formulas' not in sys.modules and 'sympy' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_weights_whose_rows_do_not_sum_to_one_fail_the_reset_recursion(monkeypatch):
    ones = sp.ones
    monkeypatch.setattr(F.sp, "ones", lambda *shape: 2 * ones(*shape))  # rows that sum to 2 - sum_l w_il
    with pytest.raises(SymbolicCheckError, match="reset"):
        F.reset_recursion_lemma()


@pytest.mark.parametrize("lemma, helper, wrong", [
    (F.entmax_threshold_lemma, "_entmax_threshold", lambda w: sum(w) / len(w) - sp.sqrt(1 / len(w))),
    (F.margin_lemma, "_margin", lambda a, b, delta: a**2 - b**2 - delta * (a + b)),
    (F.soft_weight_lemma, "_soft_weights", lambda r: [v / sum(r) for v in r]),
    (F.center_shift_lemma, "_shift_change", lambda x, c, u: 2 * ((-u) * (x - c).T)[0]),
    (F.rule_algebra_lemma, "_rule_bound", lambda q, Delta, n, N, k: q * Delta * (n / N + k - 1) / (1 - (k - 1) * q)),
    (F.circuit_score_lemma, "_circuit_score", lambda eta, zeta, A, j: eta * A[j] - zeta * sum(A) ** 2),
])
def test_the_certificate_and_entmax_statements_fail_with_a_wrong_formula(monkeypatch, lemma, helper, wrong):
    monkeypatch.setattr(F, helper, wrong)
    with pytest.raises(SymbolicCheckError):
        lemma()


@pytest.mark.parametrize("lemma, kwargs, name", [
    (F.mean_lemma, dict(n=0), "n"), (F.softmax_hardmax_lemma, dict(r=3, m=3), "m"),
    (F.soft_to_lloyd_lemma, dict(k=1), "k"),
    (F.sparsemax_threshold_lemma, dict(s=99), "s"), (F.gumbel_max_lemma, dict(r=2.5), "r"),
    (F.reset_recursion_lemma, dict(n=1), "n"), (F.center_shift_lemma, dict(d=-1), "d"),
    (F.circuit_score_lemma, dict(k=1), "k"),
])
def test_a_size_out_of_range_is_refused_by_name(lemma, kwargs, name):
    with pytest.raises(ValueError, match=name):
        lemma(**kwargs)
