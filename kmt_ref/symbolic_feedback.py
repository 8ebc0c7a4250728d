"""What is wrong with a block's weights, proved for every input: the workbook's hints.

Each function reads a block (or an FFN) a reader built for an exercise, evaluates it on symbolic tokens
(:mod:`kmt_ref.symbolic`) and says, in one sentence, which part of the statement it breaks, or returns None
when that part holds. SymPy is needed (``pip install "kmt-ref[test]"``).
"""

import itertools

import numpy as np
import sympy as sp

from .symbolic import (
    SymbolicCheckError,
    _attend,
    _means,
    _sq,
    _tokens,
    _without_relu,
    _write,
    block_scores,
    block_values,
    exact,
    factored,
    symbolic_tokens,
)

__all__ = ["cax_score_feedback", "cax_value_feedback", "cac_feedback", "ffn_feedback"]


def _reading(W, layout, out, inp):
    """The number ``a`` with ``W``'s block (``out`` rows, ``inp`` columns) equal to ``a`` times the identity, or
    None when it is not such a multiple."""
    part = np.asarray(W, dtype=float)[layout.slices[out], layout.slices[inp]]
    a = part[0, 0] if part.size else 0.0
    return float(a) if part.shape[0] == part.shape[1] and np.array_equal(part, a * np.eye(part.shape[0])) else None


def cax_score_feedback(block, layout):
    """What is wrong with a CAX block's score (for the workbook), or None if nothing is: first what the
    weights' structure says (a Euclidean score whose query and key read the positions at different scales),
    then the polynomials.

    The score of center ``j`` for point 1, plus ``||x_1 - c_j||^2``, must be the same for every center (a
    per-row constant, which neither softmax nor hardmax sees). Computed for every input on symbolic tokens.
    """
    P, Q, X, _, C = symbolic_tokens(layout, 1)
    S = block_scores(block, P, Q)
    left = [factored(S[0, j] + _sq(X[0, :], C[j, :])) for j in range(layout.k)]
    if all(sp.expand(r - left[0]) == 0 for r in left):
        return None
    a, b = _reading(block.Wq, layout, "x", "x"), _reading(block.Wk, layout, "x", "x")
    if block.score == "euclidean" and a is not None and b is not None and a != b and a * b != 0:
        return (f"W_K reads the positions {b / a:g} times as strongly as W_Q does ({b:g} P_x against {a:g} P_x), so "
                f"the score is -||{a:g} x_i - {b:g} c_j||^2, which does not rank the centers by their distance: "
                "read both with the same factor")
    return (f"your score of center 2 for point 1 is {factored(S[0, 1])}; plus ||x_1 - c_2||^2 it "
            f"leaves {left[1]}, but for center 1 it leaves {left[0]}: what is left must be the same for every "
            f"center (a difference of {factored(left[1] - left[0])})")


def cax_value_feedback(block, layout):
    """What is wrong with a CAX block's value (for the workbook), or None: the value of center ``j`` must be its
    id ``e_j`` in the ``y`` block and 0 elsewhere; the message names the block that holds something else and
    what (the id with another sign or factor, the id in the wrong block, the center's position)."""
    _, Q, _, _, C = symbolic_tokens(layout, 1)
    values = block_values(block, Q)
    for name, part in layout.slices.items():
        got = values[:, part]
        want = sp.eye(layout.k) if name == "y" else sp.zeros(layout.k, part.stop - part.start)
        if got == want:
            continue
        ids = got == sp.eye(layout.k) if got.shape == (layout.k, layout.k) else False
        factor = _reading(block.Wv, layout, name, "y")
        if name == "y" and factor is not None and factor != 1 and not got.free_symbols:
            return f"the value writes {factor:g} e_j into the y block, where it must write e_j"
        if name != "y" and ids:
            return f"the value writes e_j into the {name} block; it belongs in the y block"
        if got.free_symbols & set(C):
            return f"the value copies the center's position into the {name} block, where it must write " + (
                "e_j" if name == "y" else "nothing")
        return f"the value of center 1 writes {list(got[0, :])} into the {name} block, where it must write " \
               f"{list(want[0, :])}"
    return None


def cac_feedback(block, layout, n=3):
    """What is wrong with a CAC block (for the workbook), or None: for every one-hot assignment of ``n``
    symbolic points, its write must be each cluster's mean (the mean of all points for an empty cluster)."""
    for labels in itertools.product(range(layout.k), repeat=n):
        P, Q, X, _, _ = symbolic_tokens(layout, n, labels)
        want = _write(layout, layout.k, "x", _means(X, labels, layout.k))
        try:
            got = _attend(block, Q, P, "CAC")
        except SymbolicCheckError as err:
            return f"your block's {err}"
        for j in range(layout.k):
            if any(sp.simplify(got[j, c] - want[j, c]) != 0 for c in range(layout.width)):
                return (f"with the points assigned to the centers {[a + 1 for a in labels]} (x symbolic), your "
                        f"block writes {list(got[j, :])} for center {j + 1}, where it must write {list(want[j, :])}")
    return None


def ffn_feedback(W1, W2, layout):
    """What is wrong with a norm-writing FFN ``W2 relu(W1 q)^2`` (for the workbook), or None: its update of a
    center token ``[c | e_1 | 0 | 1]`` must be ``||c||^2`` in the norm slot and 0 elsewhere."""
    C = sp.Matrix(1, layout.d, lambda _, a: sp.Symbol(f"c_{a + 1}", real=True))
    Q = _tokens(layout, C, sp.eye(layout.k)[:1, :]) - _write(layout, 1, "sqnorm", sp.Matrix([[sum(v**2 for v in C)]]))
    hidden = (Q * exact(W1).T).applyfunc(lambda t: sp.Max(t, 0) ** 2)
    update = (hidden * exact(W2).T).applyfunc(lambda e: factored(_without_relu(e)))
    expected = _write(layout, 1, "sqnorm", sp.Matrix([[sum(v**2 for v in C)]]))
    wrong = [(c, update[0, c], expected[0, c]) for c in range(layout.width)
             if sp.simplify(update[0, c] - expected[0, c]) != 0]
    if not wrong:
        return None
    c, got, want = wrong[0]
    return f"your FFN writes {got} into coordinate {c} of [c | e_1 | 0 | 1], where it must write {want}"
