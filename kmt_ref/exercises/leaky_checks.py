"""Checks for the chapter "A closed form for the layer's gain: leaky soft k-means"."""

import numpy as np

from ..tasks import gaussian_mixture, initial_centers
from ..variants.leaky import leaky_kmeans_transformer
from ._feedback import as_array, call, expect, expect_close, inputs


def check_leaky_step(leaky_step):
    """Exercise 23: one leaky step against the transformer that runs it, near and far from the origin."""
    rng = np.random.default_rng(23)
    for n, d, k, beta, sharpness in ((30, 2, 3, 2.0, 6.0), (80, 4, 5, 40.0, 3.0), (50, 1, 2, 0.5, 50.0)):
        X, init, _ = gaussian_mixture(rng, n=n, d=d, k=k)
        on = inputs(X=X, C=init, beta=beta, sharpness=sharpness)
        got = as_array(call(leaky_step, X, init, beta, sharpness, on=on), "centers", on, shape=(k, d))
        want = leaky_kmeans_transformer(d, k, beta, sharpness).run(X, init, 1).centers[1]
        expect_close(got, want, "centers", on, rtol=1e-9, atol=1e-12,
                     hint="each center averages ALL the points with weights softmax_i(sharpness R_ij): a softmax "
                          "over the points, no division by the responsibilities' sum")
    # Far from the origin and at a large stiffness: a softmax without its row maximum overflows.
    X, init, _ = gaussian_mixture(rng, n=40, d=2, k=3)
    X, init = X + 1e3, init + 1e3
    on = inputs(X=X, C=init, beta=1e3, sharpness=6.0)
    got = as_array(call(leaky_step, X, init, 1e3, 6.0, on=on), "centers", on, shape=(3, 2))
    expect(np.all(np.isfinite(got)), "the centers should be finite\n" + on)
    want = leaky_kmeans_transformer(2, 3, 1e3, 6.0).run(X, init, 1).centers[1]
    expect_close(got, want, "centers", on, rtol=0, atol=1e-6, hint="subtract each row's maximum before np.exp")
    return "three mixtures and one far from the origin agree with the leaky soft k-means transformer"


def check_farthest_first(farthest_first):
    """Exercise 24: spread-out starts, against the library's on mixtures, by hand on a line, and at a tie."""
    rng = np.random.default_rng(24)
    for n, d, k in ((30, 2, 3), (80, 4, 6), (12, 1, 12)):
        X, _, _ = gaussian_mixture(rng, n=n, d=d, k=k)
        on = inputs(X=X, k=k)
        got = as_array(call(farthest_first, X, k, on=on), "centers", on, shape=(k, d))
        expect_close(got, initial_centers(X[None], k, "farthest-first")[0], "centers", on, rtol=0, atol=0,
                     hint="each next center is the point farthest from its NEAREST chosen center (a minimum over "
                          "the centers so far), not from the last one or from their sum")
    # On a line from 0: 10 is farthest; then 4 and 6 are both 4 away from {0, 10}: the first of them, 4.
    X = np.array([[0.0], [1.0], [4.0], [10.0], [6.0]])
    on = inputs(X=X, k=3)
    got = as_array(call(farthest_first, X, 3, on=on), "centers", on, shape=(3, 1))
    expect_close(got, np.array([[0.0], [10.0], [4.0]]), "centers", on, rtol=0, atol=0,
                 hint="when two points are equally far, take the first of them (np.argmax does)")
    return "three mixtures, a line by hand and a tie agree with initial_centers(..., 'farthest-first')"
