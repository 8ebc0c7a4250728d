"""Checks for the chapter "How large must γ be?"."""

import numpy as np
from scipy.special import softmax

from ._feedback import as_array, call, expect, expect_close, inputs


def _bound_by_definition(s, gamma):
    top = max(s)
    outside = [v for v in s if v != top]
    if not outside:
        return 0.0
    return 2.0 * len(outside) * float(np.exp(-gamma * (top - max(outside))))


def check_softmax_gap_bound(softmax_gap_bound):
    """Exercise 10: the softmax-hardmax bound, and that it bounds the measured L1 distance."""
    rng = np.random.default_rng(20)
    cases = [
        (np.array([[0.0, -0.01, -0.5, -2.0]]), 100.0),
        (np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 2.0]]), 3.0),  # a tied maximum; a constant row
        (rng.normal(size=(50, 6)), 5.0),
    ]
    for scores, gamma in cases:
        on = inputs(scores=scores, gamma=gamma)
        got = as_array(call(softmax_gap_bound, scores, gamma, on=on), "bound", on, shape=(scores.shape[0],))
        expected = np.array([_bound_by_definition(list(row), gamma) for row in scores])
        got = expect_close(got, expected, "bound", on, rtol=1e-9, atol=1e-300,
                           hint="2 (r - |M|) exp(-gamma Delta): |M| counts the entries equal to the maximum, "
                           "Delta is the maximum minus the largest entry outside M")
        mask = (scores == scores.max(axis=1, keepdims=True)).astype(float)
        measured = np.abs(softmax(gamma * scores, axis=1) - mask / mask.sum(axis=1, keepdims=True)).sum(axis=1)
        expect(np.all(measured <= got * (1 + 1e-9) + 1e-15),
               f"the bound must be at least the measured L1 distance; measured {measured}, bound {got}\n"
               f"  on input:\n{on}")
    return "the bound matches its formula on 53 rows and is never below the measured L1 distance"
