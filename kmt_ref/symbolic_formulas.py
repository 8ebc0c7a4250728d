"""The statements about the algorithms and normalizers, proved by computer algebra on their formulas.

:mod:`kmt_ref.symbolic` proves what the constructions' *weights* do; the book's other statements are about
formulas: the softmax, Lloyd's update, soft k-means' responsibilities, the normalizers' thresholds. Here each
is reduced to an identity SymPy proves for every input at the given sizes, with the inequalities written as an
identity whose other side is manifestly non-negative (a sum or product of positive terms), or as a limit SymPy
evaluates. The library's own functions are NumPy, not symbolic: these are the formulas they compute (the tests
compare the two on samples). A wrong formula leaves a non-zero residual, which the failure names.

SymPy is an optional dependency, as for :mod:`kmt_ref.symbolic`: ``import kmt_ref`` never imports this module.
"""

import sympy as sp

from ._validation import check_int
from .symbolic import Identity, SymbolicCheckError, _require, factored

__all__ = ["row_shift_lemma", "softmax_hardmax_lemma", "mean_lemma", "soft_to_lloyd_lemma",
           "sparsemax_threshold_lemma", "normmax_inf_lemma", "member_mean_lemma", "gumbel_max_lemma",
           "medoid_counterexample", "reset_recursion_lemma", "entmax_threshold_lemma", "margin_lemma",
           "soft_weight_lemma", "center_shift_lemma", "rule_algebra_lemma", "circuit_score_lemma"]


class _TeX(sp.Symbol):
    """A symbol that stands for a stated quantity, typeset as the TeX it is named by."""

    def _latex(self, printer):
        return self.name


def _softmax(row, gamma):
    total = sum(sp.exp(gamma * v) for v in row)
    return [sp.exp(gamma * v) / total for v in row]


#: The largest size a statement is proved at here: SymPy's work grows fast with it.
MAX_SIZE = 6


def _size(value, name, low=1):
    return check_int(value, name, low=low, high=MAX_SIZE)


def _mean(X):
    """The mean of the rows of ``X`` (Lloyd's update of one cluster)."""
    return sp.Matrix(1, X.shape[1], lambda _, a: sum(X[:, a]) / X.shape[0])


def _sparsemax_threshold(z):
    """Sparsemax's threshold when the support is all of ``z``."""
    return (sum(z) - 1) / len(z)


def _uniform_value(z, t, m):
    """The normmax objective ``<p, z> - t ||p||_inf`` of ``p`` uniform on the first ``m`` scores of ``z``."""
    return (sum(z[:m]) - t) / m


def _distance_sums(points):
    """Each point's sum of distances to the others (the k-medoids cost of choosing it)."""
    return [sum(abs(p - q) for q in points) for p in points]


def row_shift_lemma(r=3):
    """A row-wise softmax does not see a constant added to its row: ``softmax(gamma (s + a 1)) =
    softmax(gamma s)`` for every real row ``s`` of ``r`` scores, every ``a`` and ``gamma > 0`` (the lemma that
    makes Theorem 2.2's dot-product CAX the Euclidean one). :func:`kmt_ref.attention.softmax` computes this
    formula, stabilized by the row maximum, itself such a shift."""
    r = _size(r, "r", low=1)
    s = sp.symbols(f"s_1:{r + 1}", real=True)
    a, gamma = sp.Symbol("a", real=True), sp.Symbol("gamma", positive=True)
    shifted, plain = _softmax([v + a for v in s], gamma), _softmax(list(s), gamma)
    for b in range(r):
        _require(sp.simplify(sp.powsimp(sp.expand(shifted[b] - plain[b]))), "softmax: a constant shift of the row "
                 "changes a weight")
    return Identity("a softmax weight of a row shifted by a, at every gamma > 0", shifted[0], plain[0], f"r = {r}",
                    "on the formula")


def softmax_hardmax_lemma(r=3, m=1):
    """Softmax against averaging hardmax: with ``m`` maximal scores among ``r`` and the others below the
    maximum by gaps ``Delta_b > 0``, ``||softmax(gamma s) - hardmax(s)||_1 = 2 eps / Z``, where
    ``eps = sum_b exp(-gamma Delta_b)`` and ``Z = m + eps``; every maximal score's hardmax weight ``1/m`` is at
    least its softmax weight, by ``eps / (m Z)``. With ``exp(-gamma Delta_b) <= exp(-gamma Delta)`` this gives
    the proposition's bound ``2 (r - m) exp(-gamma Delta)``."""
    r = _size(r, "r", low=2)
    m = check_int(m, "m", low=1, high=r - 1)
    top, gamma = sp.Symbol("s^*", real=True), sp.Symbol("gamma", positive=True)
    gaps = sp.symbols(f"Delta_1:{r - m + 1}", positive=True)
    weights = _softmax([top] * m + [top - g for g in gaps], gamma)
    eps = sum(sp.exp(-gamma * g) for g in gaps)
    Z = m + eps
    for b in range(m):
        _require(sp.simplify(sp.Rational(1, m) - weights[b] - eps / (m * Z)),
                 "softmax: a maximal score's weight is not 1/m - eps/(m Z)")
    # The absolute values resolved by the signs just proved: below 1/m on M, above 0 off M.
    distance = sum(sp.Rational(1, m) - w for w in weights[:m]) + sum(weights[m:])
    _require(sp.simplify(distance - 2 * eps / Z), "softmax: the l1 distance to hardmax is not 2 eps / Z")
    distance_tex = r"\lVert \operatorname{softmax}(\gamma s) - \operatorname{hardmax}(s) \rVert_1"
    return Identity("the l1 distance between the softmax and the averaging hardmax of a row with m maximal scores, "
                    "the others below them by Delta_b", _TeX(distance_tex),
                    2 * eps / Z, f"r = {r}, m = {m}", "on the formula")


def mean_lemma(n=3, d=2):
    """Lloyd's update minimizes a cluster's sum of squares: ``sum_i ||x_i - c||^2 = sum_i ||x_i - m||^2 +
    n ||m - c||^2`` for every ``c``, ``m`` the members' mean (the step of the monotone-descent proposition)."""
    n = _size(n, "n", low=1)
    d = _size(d, "d", low=1)
    X = sp.Matrix(n, d, lambda i, a: sp.Symbol(f"x_{i + 1}{a + 1}", real=True))
    c = sp.Matrix(1, d, lambda _, a: sp.Symbol(f"c_{a + 1}", real=True))
    mean = _mean(X)

    def sq(u):
        return sum(v**2 for v in u)

    around_c = sum(sq(X[i, :] - c) for i in range(n))
    _require(sp.expand(around_c - sum(sq(X[i, :] - mean) for i in range(n)) - n * sq(mean - c)),
             "Lloyd: the sum of squares about c is not the one about the mean plus n ||m - c||^2")
    return Identity("a cluster's sum of squares about any c, minus that about its mean", _TeX(
        r"\sum_i \lVert x_i - c \rVert^2 - \sum_i \lVert x_i - m \rVert^2"),
                    n * _TeX(r"\lVert m - c \rVert^2"), f"d = {d}, n = {n}", "on the formula")


def soft_to_lloyd_lemma(k=3):
    """Soft k-means' responsibilities of a point with a unique nearest center (its others farther by
    ``delta_j > 0`` in squared distance): each other responsibility is ``exp(-beta delta_j)`` less a positive
    term, and the nearest center's tends to 1 as ``beta -> oo``."""
    k = _size(k, "k", low=2)
    beta = sp.Symbol("beta", positive=True)
    deltas = sp.symbols(f"delta_2:{k + 1}", positive=True)
    near = sp.Symbol("D", nonnegative=True)  # the squared distance to the nearest center
    R = _softmax([-near] + [-(near + g) for g in deltas], beta)
    eps = sum(sp.exp(-beta * g) for g in deltas)
    for j, g in enumerate(deltas, start=1):
        _require(sp.simplify(sp.exp(-beta * g) - R[j] - sp.exp(-beta * g) * eps / (1 + eps)),
                 "soft k-means: a farther center's responsibility is not exp(-beta delta) eps / (1 + eps) below "
                 "exp(-beta delta)")
    limit = sp.limit(sp.simplify(R[0]), beta, sp.oo)
    if limit != 1:
        raise SymbolicCheckError(f"soft k-means: the nearest center's responsibility tends to {limit}, not 1")
    return Identity("the limit of the nearest center's responsibility as beta grows, the others farther by "
                    "delta_j > 0", sp.Limit(sp.simplify(R[0]), beta, sp.oo), limit, f"k = {k}", "on the formula")


def sparsemax_threshold_lemma(s=3):
    """Sparsemax's threshold on a support of the ``s`` largest scores ``z_1 >= ... >= z_s``:
    ``tau = (z_1 + ... + z_s - 1) / s`` makes the weights ``z_l - tau`` sum to 1, and the smallest of them is
    positive exactly when ``1 + s z_s > z_1 + ... + z_s``: ``s (z_s - tau) = 1 + s z_s - sum_l z_l``."""
    s = _size(s, "s", low=1)
    z = sp.symbols(f"z_1:{s + 1}", real=True)
    tau = _sparsemax_threshold(z)
    _require(sp.expand(sum(v - tau for v in z) - 1), "sparsemax: the weights on the support do not sum to 1")
    _require(sp.expand(s * (z[-1] - tau) - (1 + s * z[-1] - sum(z))),
             "sparsemax: the support condition is not the sign of the smallest weight")
    return Identity(f"s times the smallest weight z_{s} - tau of a support of the {s} largest scores",
                    _TeX(f"{s}\\,(z_{{{s}}} - \\tau)"), 1 + s * z[-1] - sum(z), f"s = {s}", "on the formula")


def normmax_inf_lemma(s=2):
    """The closed form of the inf-norm normmax: with ``h(s) = (S_s - t) / s`` the value of the uniform weights on
    the ``s`` largest scores (``S_s`` their sum), ``h(s+1) - h(s) = (z_{s+1} - h(s)) / (s+1)``,
    ``z_{s+1} - h(s+1) = s (z_{s+1} - h(s)) / (s+1)``, and ``(s+1) (z_{s+1} - h(s+1)) = t - sum_{l <= s+1}
    (z_l - z_{s+1})``: the three equivalences of the lemma's proof, each a positive multiple."""
    s = _size(s, "s", low=1)
    z = sp.symbols(f"z_1:{s + 2}", real=True)
    t = sp.Symbol("t", positive=True)

    def h(m):
        return _uniform_value(z, t, m)

    _require(sp.simplify(h(s + 1) - h(s) - (z[s] - h(s)) / (s + 1)), "normmax: h(s+1) - h(s) is not (z - h(s))/(s+1)")
    _require(sp.simplify(z[s] - h(s + 1) - s * (z[s] - h(s)) / (s + 1)),
             "normmax: z_(s+1) - h(s+1) is not s (z_(s+1) - h(s)) / (s+1)")
    _require(sp.expand((s + 1) * (z[s] - h(s + 1)) - (t - sum(v - z[s] for v in z[: s + 1]))),
             "normmax: (s+1)(z_(s+1) - h(s+1)) is not t minus the sum of the gaps")
    return Identity(f"(s + 1)(z_(s+1) - h(s+1)) at s = {s}", _TeX(f"{s + 1}\\,(z_{{{s + 1}}} - h({s + 1}))"),
                    t - sum(v - z[s] for v in z[: s + 1]), f"s = {s}", "on the formula")


def member_mean_lemma(n=3, d=2):
    """The spherical zero-mean lemma's step: ``sum_{i in S} x_i . (c_j - c_l) = |S| m_j . (c_j - c_l)`` for the
    members' mean ``m_j``, so a zero mean makes the sum of strictly positive preferences zero."""
    n = _size(n, "n", low=1)
    d = _size(d, "d", low=1)
    X = sp.Matrix(n, d, lambda i, a: sp.Symbol(f"x_{i + 1}{a + 1}", real=True))
    cj = sp.Matrix(1, d, lambda _, a: sp.Symbol(f"c_{a + 1}", real=True))
    cl = sp.Matrix(1, d, lambda _, a: sp.Symbol(f"b_{a + 1}", real=True))
    mean = _mean(X)
    lhs = sum((X[i, :] * (cj - cl).T)[0] for i in range(n))
    _require(sp.expand(lhs - n * (mean * (cj - cl).T)[0]),
             "spherical: the summed preferences are not |S| m . (c_j - c_l)")
    return Identity("the members' summed preferences for c_j over c_l",
                    _TeX(r"\sum_{i \in S_j} x_i \cdot (c_j - c_l)"),
                    n * _TeX(r"m_j \cdot (c_j - c_l)"), f"d = {d}, n = {n}", "on the formula")


def gumbel_max_lemma(r=2):
    """The Gumbel-max trick for ``r`` scores: ``P(s_1 + g_1 > s_b + g_b for all b) = softmax(s)_1`` for
    independent standard Gumbel ``g_b``. With ``u = exp(-g_1)`` the probability is
    ``int_0^oo exp(-u (1 + sum_b exp(s_b - s_1))) du``, which SymPy integrates."""
    r = _size(r, "r", low=2)
    s = sp.symbols(f"s_1:{r + 1}", real=True)
    u = sp.Symbol("u", positive=True)
    # P(g_b < s_1 - s_b + g_1) = exp(-exp(-(s_1 - s_b + g_1))) = exp(-u exp(s_b - s_1)); g_1's density in u is
    # exp(-u) du.
    integrand = sp.exp(-u) * sp.Mul(*[sp.exp(-u * sp.exp(v - s[0])) for v in s[1:]])
    probability = sp.integrate(sp.powsimp(integrand, combine="exp"), (u, 0, sp.oo), conds="none")
    softmax = _softmax(s, 1)[0]
    _require(sp.simplify(probability - softmax), "Gumbel-max: the probability of the first index is not softmax")
    return Identity("the probability that the first score wins after adding independent Gumbel noise",
                    _TeX(r"P\bigl(1 = \operatorname{argmax}_b (s_b + g_b)\bigr)"), softmax, f"r = {r}",
                    "on the formula")


def medoid_counterexample():
    """The proposition that no attention score realizes the medoid update, on its own example: the medoid of
    ``{0, 1, 2}`` is 1, that of ``{0, 1, 2, 10, 11}`` is 2 (distance sums ``24, 21, 20, 28, 31``), although 10
    and 11 do not win: independence of irrelevant alternatives fails. Exact integers."""
    small, large = [0, 1, 2], [0, 1, 2, 10, 11]
    small_sums, large_sums = _distance_sums(small), _distance_sums(large)
    won = small[small_sums.index(min(small_sums))], large[large_sums.index(min(large_sums))]
    if won != (1, 2) or large_sums != [24, 21, 20, 28, 31]:
        raise SymbolicCheckError(f"k-medoids: the example's medoids are {won}, distance sums {large_sums}")
    return Identity("the medoids of {0, 1, 2} and of {0, 1, 2, 10, 11} (distance sums 24, 21, 20, 28, 31)",
                    sp.Tuple(*(_TeX(rf"\operatorname{{medoid}}\{{{', '.join(map(str, p))}\}}")
                               for p in (small, large))), sp.Tuple(*won), "5 points", "in exact integers")


def reset_recursion_lemma(n=3):
    """The all-attention reset's two steps: a row of ``(I - W) Y`` is ``sum_l w_il (y_i - y_l)`` when ``W``'s rows
    sum to 1 (any ``n`` tokens), and the error recursion ``e -> beta (2 + 2 e)`` stays below its fixed point
    ``e* = 2 beta / (1 - 2 beta)``: ``e* - beta (2 + 2 e) = 2 beta (e* - e)``, non-negative for ``e <= e*``."""
    n = _size(n, "n", low=2)
    W = sp.Matrix(n, n, lambda i, l: sp.Symbol(f"w_{i + 1}{l + 1}", real=True))
    W[:, -1] = sp.ones(n, 1) - W[:, :-1] * sp.ones(n - 1, 1)  # rows that sum to 1
    Y = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"y_{i + 1}", real=True))
    moved = (sp.eye(n) - W) * Y
    for i in range(n):
        _require(sp.expand(moved[i] - sum(W[i, l] * (Y[i] - Y[l]) for l in range(n))),
                 "reset: a row of (I - W) Y is not the weighted sum of differences")
    beta, e = sp.Symbol("beta", positive=True), sp.Symbol("e", nonnegative=True)
    fixed = 2 * beta / (1 - 2 * beta)
    _require(sp.simplify(fixed - beta * (2 + 2 * fixed)), "reset: 2 beta / (1 - 2 beta) is not the fixed point")
    _require(sp.simplify(fixed - beta * (2 + 2 * e) - 2 * beta * (fixed - e)),
             "reset: the recursion's distance to its fixed point is not 2 beta (e* - e)")
    return Identity("the distance of the reset's error recursion to its fixed point", fixed - beta * (2 + 2 * e),
                    2 * beta * (fixed - e), f"n = {n}", "on the formula")


def _entmax_threshold(w):
    """Entmax-1.5's threshold when the support is all of ``w`` (``w = z / 2``)."""
    mean = sum(w) / len(w)
    return mean - sp.sqrt((1 - sum((v - mean) ** 2 for v in w)) / len(w))


def _margin(a, b, delta):
    """The certificate's lower bound on a point's margin when both distances move by ``delta``."""
    return a**2 - b**2 - 2 * delta * (a + b)


def _soft_weights(r):
    """The soft weights of the non-nearest centers from their ratios ``r`` to the nearest one's."""
    return [v / (1 + sum(r)) for v in r]


def _shift_change(x, c, u):
    """The change of ``||x - c||^2`` when ``c`` moves by ``u``, as the objective bound writes it."""
    return 2 * ((-u) * (x - c).T)[0] + sum(t**2 for t in u)


def _rule_bound(q, Delta, n, N, k):
    """The closed-form rule's bound on a center's deviation."""
    return q * Delta * (n / N + k - 2) / (1 - (k - 1) * q)


def entmax_threshold_lemma(s=3):
    """Entmax-1.5's threshold on a support of ``s`` entries of ``w = z / 2``: with ``m`` their mean and ``V`` the
    sum of their squared deviations from it (``V < 1``), ``tau = m - sqrt((1 - V) / s)`` solves
    ``sum_l (w_l - tau)^2 = 1``, so the weights ``(w_l - tau)^2`` sum to one, and it is the root below the
    mean (``sum_l (w_l - tau) = sqrt(s (1 - V)) >= 0``), the one whose weights are not clipped."""
    s = _size(s, "s", low=1)
    w = sp.symbols(f"w_1:{s + 1}", real=True)
    tau = _entmax_threshold(w)
    _require(sp.simplify(sp.expand(sum((v - tau) ** 2 for v in w)) - 1),
             "entmax: the threshold does not make the weights sum to 1")
    # Both roots of the quadratic make the squares sum to 1; the weights are [w - tau]_+^2, so tau must be the
    # root below the mean: sum_l (w_l - tau) = s (m - tau) is the non-negative sqrt(s (1 - V)).
    mean = sum(w) / s
    V = sum((v - mean) ** 2 for v in w)
    _require(sp.simplify(sum(v - tau for v in w) - s * sp.sqrt((1 - V) / s)),
             "entmax: the threshold is not the root below the mean (the sign condition)")
    return Identity(f"the sum of the entmax-1.5 weights on a support of {s}, at tau = m - sqrt((1 - V)/s)",
                    _TeX(r"\sum_l (w_l - \tau)^2"), sp.Integer(1), f"s = {s}", "on the formula")


def margin_lemma():
    """The certificate's perturbed margin: with ``a = sqrt(D_ij)`` and ``b = sqrt(D_ia)`` moved by at most
    ``delta`` each, ``(a - delta)^2 - (b + delta)^2 = a^2 - b^2 - 2 delta (a + b)``."""
    a, b, delta = sp.symbols("a b delta", nonnegative=True)
    _require(sp.expand((a - delta) ** 2 - (b + delta) ** 2 - _margin(a, b, delta)),
             "certificate: the perturbed margin is not a^2 - b^2 - 2 delta (a + b)")
    return Identity("the margin of a point between two centers each moved by delta",
                    (a - delta) ** 2 - (b + delta) ** 2, _margin(a, b, delta), "scalars", "on the formula")


def soft_weight_lemma(k=3):
    """The certificate's soft weights: with ratios ``r_j = s_ij / s_ia`` to the nearest center's weight,
    ``s_ij = r_j / (1 + R)``, ``R = sum_l r_l``, and ``r_j / (1 + r_j) - s_ij = r_j (R - r_j) / ((1 + r_j)(1 + R))``,
    non-negative: each weight is at most ``r_j / (1 + r_j)``."""
    k = _size(k, "k", low=2)
    r = sp.symbols(f"r_2:{k + 1}", positive=True)
    R = sum(r)
    weights = _soft_weights(r)
    for v, weight in zip(r, weights, strict=True):
        _require(sp.simplify(v / (1 + v) - weight - v * (R - v) / ((1 + v) * (1 + R))),
                 "certificate: r/(1 + r) minus a soft weight is not r (R - r) / ((1 + r)(1 + R))")
    return Identity("how far a soft weight is below r_j / (1 + r_j)", r[0] / (1 + r[0]) - weights[0],
                    factored(r[0] * (R - r[0]) / ((1 + r[0]) * (1 + R))), f"k = {k}", "on the formula")


def center_shift_lemma(d=2):
    """The objective bound's first term: moving a center from ``c`` to ``c~`` changes a point's squared distance by
    ``||x - c~||^2 - ||x - c||^2 = 2 (c - c~) . (x - c) + ||c - c~||^2``, at most ``2 delta ||x - c|| + delta^2``
    by Cauchy-Schwarz when ``||c - c~|| <= delta``."""
    d = _size(d, "d", low=1)
    x, c, e = (sp.Matrix(1, d, lambda _, a, n=n: sp.Symbol(f"{n}_{a + 1}", real=True)) for n in ("x", "c", "u"))
    moved = c + e  # u = c~ - c

    def sq(v):
        return sum(t**2 for t in v)

    _require(sp.expand(sq(x - moved) - sq(x - c) - _shift_change(x, c, e)),
             "certificate: the change of a squared distance is not 2 (c - c~).(x - c) + ||c - c~||^2")
    return Identity("the change of a point's squared distance when its center moves from c to c~",
                    _TeX(r"\lVert x - \tilde c \rVert^2 - \lVert x - c \rVert^2"),
                    _TeX(r"2 (c - \tilde c) \cdot (x - c) + \lVert c - \tilde c \rVert^2"), f"d = {d}",
                    "on the formula")


def rule_algebra_lemma():
    """The closed-form rule's last step: ``q Delta (N (k - 1) + (n - N)) / (N (1 - (k - 1) q)) =
    q Delta (n / N + k - 2) / (1 - (k - 1) q)``."""
    q, Delta, n, N, k = sp.symbols("q Delta n N k", positive=True)
    lhs = q * Delta * (N * (k - 1) + (n - N)) / (N * (1 - (k - 1) * q))
    rhs = _rule_bound(q, Delta, n, N, k)
    _require(sp.simplify(lhs - rhs), "certificate: the rule's bound does not reduce to q Delta (n/N + k - 2)/(...)")
    return Identity("the bound of the closed-form rule", lhs, rhs, "symbols", "on the formula")


def _circuit_score(eta, zeta, A, j):
    """The circuit's CAC summary: center ``j``'s score of a point with weights ``A`` over the centers."""
    return eta * A[j] - zeta * sum(v**2 for v in A)


def circuit_score_lemma(k=3):
    """The circuit's CAC built as a Euclidean score (:func:`kmt_ref.learning.circuit.circuit_transformer`): with
    ``b = sqrt(zeta)`` and ``a = eta / (2 b)``, ``-||a e_j - b A_i||^2 = eta A_ij - zeta ||A_i||^2 - a^2``; the
    ``-a^2`` is the same for every point, so the softmax over the points is the summary's."""
    k = _size(k, "k", low=2)
    eta, zeta = sp.symbols("eta zeta", positive=True)
    A = sp.symbols(f"A_1:{k + 1}", real=True)
    b = sp.sqrt(zeta)
    a = eta / (2 * b)
    score = -sum((a * (1 if m == 0 else 0) - b * A[m]) ** 2 for m in range(k))  # center j = 1
    _require(sp.expand(score + a**2 - _circuit_score(eta, zeta, A, 0)),
             "circuit: the Euclidean score plus a^2 is not eta A_ij - zeta ||A_i||^2")
    return Identity("the built CAC's score of a point for center 1, plus a^2", sp.expand(score + a**2),
                    _circuit_score(eta, zeta, A, 0), f"k = {k}", "on the formula")
