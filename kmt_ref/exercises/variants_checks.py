"""Checks for the variant chapters "Soft k-means", "Spherical k-means" and "Robust k-means from sparsemax attention"."""

import numpy as np
from scipy.optimize import linprog, minimize
from scipy.special import softmax

from ..geometry import squared_distances
from ..layer import KMeansTransformer, transformer_layer
from ..lloyd_transformer import lloyd_transformer
from ..tasks import gaussian_mixture
from ..tokens import TokenLayout
from ._feedback import as_array, call, expect, expect_close, inputs


def _project_to_simplex(z):
    """Brute force: ``argmin_p ||p - z||^2`` over the simplex, by SLSQP."""
    r = z.shape[0]
    res = minimize(lambda p: 0.5 * np.sum((p - z) ** 2), np.full(r, 1.0 / r), jac=lambda p: p - z,
                   bounds=[(0.0, 1.0)] * r, method="SLSQP",
                   constraints=[{"type": "eq", "fun": lambda p: np.sum(p) - 1.0,
                                 "jac": lambda p: np.ones(r)}],
                   options={"ftol": 1e-14, "maxiter": 500})
    return res.x


def check_sparsemax(sparsemax):
    """Exercise 14: sparsemax against a numerical projection onto the simplex."""
    rng = np.random.default_rng(10)
    cases = [
        np.array([[0.0, 0.0]]),
        np.array([[3.0, 0.0, 0.0]]),
        np.array([[1.0, 0.5, -5.0]]),
        rng.normal(size=(6, 5)),
        rng.normal(size=(2, 3, 4)) * 0.2,  # small scores: wide support; a batch axis
    ]
    for z in cases:
        on = inputs(scores=z)
        got = call(sparsemax, z, on=on)
        expected = np.apply_along_axis(_project_to_simplex, -1, z)
        got = expect_close(got, expected, "sparsemax", on, atol=1e-6,
                           hint="p = max(z - tau, 0) with tau chosen so that sum(p) = 1: sort z in "
                           "decreasing order and find the support size")
        expect(np.all(got >= 0) and np.allclose(got.sum(axis=-1), 1.0, atol=1e-12),
               f"every row must be a probability vector (>= 0, sum 1); got row sums {got.sum(axis=-1)}"
               f"\n  on input:\n{on}")
    return "sparsemax equals the Euclidean projection onto the simplex (SLSQP) on 5 inputs"


def _soft_kmeans(X, C, beta, n_iter):
    """Soft k-means (MacKay), written directly from its definition."""
    out = [C]
    for _ in range(n_iter):
        R = softmax(-beta * squared_distances(X, out[-1]), axis=1)  # (n, k) responsibilities
        out.append((R.T @ X) / R.sum(axis=0)[:, None])
    return np.array(out)


def check_soft_kmeans_transformer(soft_kmeans_transformer):
    """Exercise 11: a transformer that runs soft k-means exactly."""
    rng = np.random.default_rng(11)
    X, C, _ = gaussian_mixture(rng, n=40, d=2, k=3)
    for beta in (1.0, 30.0):
        on = inputs(X=X, init=C, beta=beta, n_layers=4)
        model = call(soft_kmeans_transformer, 2, 3, beta, on=on)
        expect(isinstance(model, KMeansTransformer),
               f"expected a kmt_ref.KMeansTransformer, got {type(model).__name__}\n  on input:\n{on}")
        traj = call(model.run, X, C, 4, on=on)
        expect_close(traj.centers, _soft_kmeans(X, C, beta, 4), f"centers after 0..4 layers (beta={beta:g})",
                     on, atol=1e-9,
                     hint="soft k-means: responsibilities softmax_j(-beta ||x_i - c_j||^2), centers "
                     "= responsibility-weighted means. Which block must stay soft, which must "
                     "average with weights y_ij, and which resets must not be blurred by softmax?")
    return "the model runs soft k-means (beta = 1 and 30) for 4 layers to 1e-9"


def _spherical_step(X, C):
    """One spherical k-means step (Dhillon & Modha): largest cosine, normalized mean."""
    labels = np.argmax(X @ C.T, axis=1)
    sums = np.array([X[labels == j].sum(axis=0) for j in range(C.shape[0])])
    return sums / np.linalg.norm(sums, axis=1, keepdims=True)


def check_spherical_normalize(spherical_normalize):
    """Exercise 12: a normalization of the center tokens that leaves the id block intact."""
    rng = np.random.default_rng(12)
    d, k = 3, 4
    layout = TokenLayout(d, k)
    Q = np.hstack([rng.normal(size=(k, d)) * 3.0, np.eye(k)])
    Q[2, :d] = 0.0  # a zero center must not produce NaN
    expected = Q.copy()
    norms = np.linalg.norm(Q[:, :d], axis=1, keepdims=True)
    expected[:, :d] = np.where(norms > 0, Q[:, :d] / np.where(norms > 0, norms, 1.0), 0.0)
    on = f"  (d={d}, k={k}; tokens [c | e_j]; center 2 is zero)\n" + inputs(Q=Q)
    got = call(spherical_normalize, Q, d, k, on=on)
    got = as_array(got, "normalized tokens", on, shape=Q.shape)
    expect_close(got[:, d:], Q[:, d:], "id block (must be untouched)", on, atol=0.0, rtol=0.0,
                 hint="normalize only the x coordinates; a whole-token RMSNorm would rescale the ids")
    expect_close(got, expected, "normalized tokens", on, atol=1e-12,
                 hint="x <- x / ||x||, and a zero x stays zero (no NaN)")
    # One spherical k-means step: the Theorem 2.1 layer on unit vectors, then the normalization.
    X = rng.normal(size=(30, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    C0 = X[:k].copy()
    model = lloyd_transformer(d, k, gamma=np.inf, config="all-attention")
    P, Q = layout.embed(X, C0)
    _, Q = transformer_layer(P, Q, model.blocks)
    on = "  (one Theorem 2.1 layer on unit vectors, then your normalization)\n" + inputs(X=X, init=C0)
    got = as_array(call(spherical_normalize, Q, d, k, on=on), "normalized tokens", on, shape=Q.shape)
    expect_close(got[:, d:], np.eye(k), "id block after the layer (must stay I_k)", on, atol=0.0, rtol=0.0)
    expect_close(got[:, :d], _spherical_step(X, C0), "centers after one spherical k-means step", on,
                 atol=1e-10)
    return "x block normalized, ids intact: layer + normalization = one spherical k-means step"


def _normmax_lp_value(z, t):
    """Brute force: ``max_p <p, z> - t max_i p_i`` over the simplex, as a linear program in (p, m)."""
    r = z.shape[0]
    # minimize -(z.p) + t m  s.t.  p_i - m <= 0,  sum p = 1,  p >= 0
    res = linprog(np.concatenate([-z, [t]]), A_ub=np.hstack([np.eye(r), -np.ones((r, 1))]), b_ub=np.zeros(r),
                  A_eq=np.concatenate([np.ones(r), [0.0]])[None, :], b_eq=[1.0],
                  bounds=[(0, None)] * r + [(None, None)], method="highs")
    return -res.fun


def check_normmax_inf(normmax_inf):
    """Exercise 13: inf-norm normmax against a linear program, and its uniform-on-support form."""
    rng = np.random.default_rng(21)
    cases = [(np.array([[3.0, 2.0, 0.0, -5.0]]), 1.5), (np.array([[1.0, 1.0, 1.0]]), 0.1),
             (rng.normal(size=(8, 6)), 0.7), (rng.normal(size=(4, 5)), 20.0)]
    for z, t in cases:
        on = inputs(scores=z, threshold=t)
        got = as_array(call(normmax_inf, z, t, on=on), "weights", on, shape=z.shape)
        expect(np.all(got >= -1e-12) and np.allclose(got.sum(axis=1), 1.0, atol=1e-9),
               f"every row must be a probability vector; got row sums {got.sum(axis=1)}\n  on input:\n{on}")
        values = (got * z).sum(axis=1) - t * got.max(axis=1)
        best = np.array([_normmax_lp_value(row, t) for row in z])
        expect_close(values, best, "objective <p, z> - t max p of your rows", on, atol=1e-8,
                     hint="an optimum is uniform on the top s scores: compare mean(top s) - t / s over s")
        for row in got:
            kept = row[row > 1e-12]
            expect(np.allclose(kept, kept[0]), f"weights must be uniform on their support; got {row}\n"
                   f"  on input:\n{on}")
    return "inf-norm normmax reaches the linear program's optimum on 14 rows, uniform on its support"


def check_medoid_law(medoid_law):
    """Exercise 15: the medoid law, by definition and against the Gumbel transformer's draws."""
    from scipy.stats import chisquare

    from ..variants.kmedoids import kmedoids_transformer

    rng = np.random.default_rng(22)
    X = rng.normal(size=(12, 2))
    C = np.array([X[0], X[1], [40.0, 40.0]])  # the third center has no point: all points are its candidates
    temperature = 0.5
    on = inputs(X=X, centers=C, temperature=temperature)
    got = as_array(call(medoid_law, X, C, temperature, on=on), "law", on, shape=(3, 12))
    D = squared_distances(C, X)
    labels = np.argmin(D, axis=0)
    expected = np.zeros_like(D)
    for j in range(3):
        S = labels == j if np.any(labels == j) else np.ones(12, dtype=bool)
        expected[j, S] = softmax(-D[j, S] / temperature)
    expect_close(got, expected, "law", on, atol=1e-12,
                 hint="softmax of -||x_i - c_j||^2 / temperature over the candidates of center j only")
    model = kmedoids_transformer(2, 3, temperature)
    draws = np.array([model.run(X, C, 1, rng=np.random.default_rng(s)).centers[1, 0] for s in range(1500)])
    # A medoid is a data point, up to one rounding of reading it back from shifted coordinates.
    picked = np.argmin(squared_distances(draws, X), axis=1)
    support = np.flatnonzero(got[0] > 0)
    counts = np.array([np.sum(picked == i) for i in support])
    p = chisquare(counts, 1500 * got[0, support] / got[0, support].sum()).pvalue
    expect(p > 1e-4, f"1500 draws of the Gumbel-max transformer do not follow your law for center 0 "
           f"(chi-square p = {p:.1e})\n  on input:\n{on}")
    return "your law is the definition, and the Gumbel-max transformer's 1500 draws follow it"
