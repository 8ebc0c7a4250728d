"""The library's own normalizers against their definitions, answered exactly.

:mod:`kmt_ref.symbolic_formulas` proves the formulas the normalizers compute; here the library's functions
themselves (:mod:`kmt_ref.normalizers`, :func:`kmt_ref.attention.softmax`) are run on every row of a grid
of scores (``GRID``: ties, gaps below and above the thresholds, so every support pattern occurs at the
stated size), and each output is compared with the answer the normalizer's *definition* gives, found in
exact arithmetic without the library's formula: sparsemax as the point of the simplex that satisfies the
projection's optimality conditions, tried on every support; entmax-1.5 as the threshold that makes the
weights sum to one with every kept weight's root positive (the sign condition that picks the root); the
inf-norm normmax as an optimum of its linear program, over every vertex; softmax against exponentials to
30 digits; a Gumbel step against the arg-max of the scores plus the same draws. The outputs are float64:
they must equal the exact answer to rounding, and be zero exactly where it is.

SymPy is an optional dependency, as for :mod:`kmt_ref.symbolic`.
"""

import decimal
import itertools
from decimal import Decimal
from fractions import Fraction

import numpy as np
import sympy as sp

from . import normalizers
from ._validation import check_int
from .attention import softmax
from .symbolic import Checked, SymbolicCheckError

__all__ = ["GRID", "sparsemax_check", "entmax_check", "normmax_inf_check", "softmax_check", "gumbel_max_check"]

#: The scores each entry of a row takes (float64 numbers, so the library sees them exactly).
GRID = (Fraction(0), Fraction(-1, 4), Fraction(-1, 2), Fraction(-1), Fraction(-2))
#: The rounding allowed between a float64 output and the exact answer (weights are at most 1).
TOLERANCE = 32 * np.finfo(float).eps


def _rows(r):
    return [list(z) for z in itertools.product(GRID, repeat=check_int(r, "r", low=1, high=4))]


def _compare(got, exact, name, z):
    """``got`` (floats) equals ``exact`` to rounding, and is 0 exactly where ``exact`` is."""
    for g, e in zip(got, exact, strict=True):
        if (e == 0) != (g == 0) or abs(Fraction(float(g)) - Fraction(e)) > TOLERANCE:
            raise SymbolicCheckError(f"the library's {name} of {[str(v) for v in z]} is {list(got)}, where its "
                                     f"definition gives {[str(v) for v in exact]}")


def _subsets(r):
    return [S for m in range(1, r + 1) for S in itertools.combinations(range(r), m)]


def sparsemax_check(r=3):
    """The library's sparsemax is the Euclidean projection onto the simplex: on every grid row, the one
    ``p = z - tau`` on a support ``S`` (``tau = (sum_S z - 1) / |S|``) with ``p > 0`` on ``S`` and
    ``z <= tau`` off it, the projection's optimality conditions, found by trying every ``S``."""
    seen = set()
    for z in _rows(r):
        found = []
        for S in _subsets(r):
            tau = (sum(z[i] for i in S) - 1) / len(S)
            if all(z[i] > tau for i in S) and all(z[j] <= tau for j in range(r) if j not in S):
                found.append([z[i] - tau if i in S else Fraction(0) for i in range(r)])
        if len(found) != 1:
            raise SymbolicCheckError(f"sparsemax: {len(found)} supports satisfy the conditions for {z}")
        _compare(normalizers.sparsemax(np.array([float(v) for v in z])), found[0], "sparsemax", z)
        seen.add(sum(v > 0 for v in found[0]))
    return Checked(f"the library's sparsemax is the Euclidean projection onto the simplex on all {len(GRID) ** r} "
                   f"rows of the grid (supports of {sorted(seen)} entries), to rounding and zero exactly off the "
                   "support", f"r = {r}", source="on the library's own function")


def _positive(a, sign, D):
    """Whether ``a + sign sqrt(D) > 0``, for rational ``a`` and ``D >= 0``, decided exactly."""
    return (a > 0 or D > a * a) if sign > 0 else (a > 0 and a * a > D)


def _sqrt(D):
    """``sqrt(D)`` to 45 digits, as a Fraction."""
    with decimal.localcontext() as context:
        context.prec = 45
        return Fraction((Decimal(D.numerator) / Decimal(D.denominator)).sqrt())


def entmax_check(r=3):
    """The library's entmax-1.5 is its definition: ``p = [w - tau]_+^2`` (``w = z / 2``) summing to 1, with
    ``tau`` a root of ``sum_S (w - tau)^2 = 1`` below every kept ``w`` (the sign condition that picks the
    root) and at least every dropped one, found by trying every support ``S`` and both roots
    ``tau = (A -+ sqrt(D)) / s`` (``A = sum_S w``, ``D = A^2 - s (sum_S w^2 - 1)``), the signs decided exactly."""
    seen = set()
    for z in _rows(r):
        w = [v / 2 for v in z]
        found = []
        for S in _subsets(r):
            m = len(S)
            A, B = sum(w[i] for i in S), sum(w[i] * w[i] for i in S)
            D = A * A - m * (B - 1)
            if D < 0:
                continue
            for sign in (1, -1):  # tau = (A - sign sqrt(D)) / m, so w_i - tau = (m w_i - A + sign sqrt(D)) / m
                if all(_positive(m * w[i] - A, sign, D) for i in S) and not any(
                        _positive(m * w[j] - A, sign, D) for j in range(r) if j not in S):
                    root = sign * _sqrt(D)
                    found.append([((m * w[i] - A + root) / m) ** 2 if i in S else Fraction(0) for i in range(r)])
        if len(found) != 1:
            raise SymbolicCheckError(f"entmax-1.5: {len(found)} roots satisfy the conditions for {z}")
        _compare(normalizers.entmax15(np.array([float(v) for v in z])), found[0], "entmax-1.5", z)
        seen.add(sum(v != 0 for v in found[0]))
    return Checked(f"the library's entmax-1.5 is its definition on all {len(GRID) ** r} rows of the grid (supports "
                   f"of {sorted(seen)} entries; the threshold the root below every kept score), to rounding",
                   f"r = {r}", source="on the library's own function")


def normmax_inf_check(r=3, threshold=Fraction(1, 2)):
    """The library's inf-norm normmax solves its linear program ``max_p <p, z> - t max_i p_i`` over the
    simplex: its output's objective, computed exactly, is the optimum, the largest value over the program's
    vertices (``p`` uniform on a set ``S``: ``(sum_S z - t) / |S|``), and tied scores get equal weights."""
    t = Fraction(threshold)
    for z in _rows(r):
        optimum = max((sum(z[i] for i in S) - t) / len(S) for S in _subsets(r))
        got = normalizers.normmax_inf(np.array([float(v) for v in z]), float(t))
        p = [Fraction(float(v)) for v in got]
        value = sum(a * b for a, b in zip(p, z, strict=True)) - t * max(p)
        if abs(value - optimum) > TOLERANCE or abs(sum(p) - 1) > TOLERANCE or min(p) < 0 or any(
                z[a] == z[b] and p[a] != p[b] for a in range(r) for b in range(r)):
            raise SymbolicCheckError(f"the library's normmax_inf of {[str(v) for v in z]} at t = {t} is {list(got)}, "
                                     f"of value {float(value)}, where the program's optimum is {optimum}")
    return Checked(f"the library's inf-norm normmax reaches the optimum of its linear program (every vertex "
                   f"tried) on all {len(GRID) ** r} rows of the grid at t = {t}, tied scores weighted alike",
                   f"r = {r}", source="on the library's own function")


def softmax_check(r=3):
    """The library's softmax is ``exp(z_i) / sum_j exp(z_j)`` to rounding, against exponentials to 30 digits."""
    for z in _rows(r):
        exps = [sp.exp(sp.Rational(v.numerator, v.denominator)) for v in z]
        exact = [Fraction(str(sp.N(e / sum(exps), 30))) for e in exps]
        got = softmax(np.array([float(v) for v in z]))
        if any(abs(Fraction(float(g)) - e) > TOLERANCE for g, e in zip(got, exact, strict=True)):
            raise SymbolicCheckError(f"the library's softmax of {[str(v) for v in z]} is {list(got)}, not "
                                     f"{[float(e) for e in exact]}")
    return Checked(f"the library's softmax is exp(z_i) / sum_j exp(z_j) on all {len(GRID) ** r} rows of the grid, "
                   "to rounding", f"r = {r}", source="on the library's own function")


def gumbel_max_check(r=3):
    """The library's Gumbel step is the one-hot of ``argmax(z + g)`` for the Gumbel draws ``g`` of its generator,
    the trick whose law :func:`kmt_ref.symbolic_formulas.gumbel_max_lemma` proves."""
    rows = np.array([[float(v) for v in z] for z in _rows(r)])
    got = normalizers.gumbel_max(rows, np.random.default_rng(0))
    g = np.random.default_rng(0).gumbel(size=rows.shape)
    if not np.array_equal(got, np.eye(r)[np.argmax(rows + g, axis=-1)]):
        raise SymbolicCheckError("the library's Gumbel step is not the one-hot of argmax(z + g) for its draws g")
    return Checked(f"the library's Gumbel step is the one-hot of argmax(z + g) for its own draws g, on all "
                   f"{len(GRID) ** r} rows of the grid", f"r = {r}", source="on the library's own function")
