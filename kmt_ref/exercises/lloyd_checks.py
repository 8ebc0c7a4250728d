"""Checks for the chapter "k-means and Lloyd's algorithm"."""

import numpy as np

from ..classical import lloyd
from ..tasks import gaussian_mixture
from ._feedback import call, expect, expect_close, inputs


def check_lloyd_step(lloyd_step):
    """Exercise 01: one Lloyd iteration, against :func:`kmt_ref.lloyd`."""
    rng = np.random.default_rng(1)
    X_mix, init_mix, _ = gaussian_mixture(rng, n=60, d=3, k=4)
    cases = [
        ("two obvious clusters", np.array([[0.0, 0.0], [0.0, 1.0], [4.0, 0.0], [4.0, 1.0]]),
         np.array([[0.0, 0.0], [4.0, 0.0]]), ""),
        ("a Gaussian mixture (n=60, d=3, k=4)", X_mix, init_mix, ""),
        ("a tie: x=1 is as close to c=0 as to c=2", np.array([[0.0], [1.0], [2.0]]),
         np.array([[0.0], [2.0]]), "a tied point goes to the LOWEST center index, as numpy.argmin"),
        ("an empty cluster: center 2 is far from every point",
         np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0], [6.0, 5.0]]),
         np.array([[0.0, 0.0], [6.0, 5.0], [100.0, 100.0]]),
         "a center that receives no point moves to the mean of ALL points "
         "(what the transformer does: its attention is uniform)"),
    ]
    for label, X, C, hint in cases:
        on = f"  ({label})\n" + inputs(X=X, centers=C)
        expected = lloyd(X, C, 1).centers[1]
        X_before, C_before = X.copy(), C.copy()
        got = call(lloyd_step, X, C, on=on)
        expect_close(got, expected, "new centers", on, hint=hint)
        expect(np.array_equal(X, X_before) and np.array_equal(C, C_before), "internal: inputs changed")
    return "your Lloyd step matches kmt_ref.lloyd on 4 inputs, including a tie and an empty cluster"
