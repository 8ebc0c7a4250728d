"""The constructions' lemmas proved by computer algebra, on the weight matrices the library builds.

The tests and ``verify`` check the constructions on samples; the book proves
them on paper. This module connects the two: it reads a model's weight
matrices (no second copy of them), turns them into exact SymPy rationals
(a float64 entry is a binary fraction, so this is its exact value), and
evaluates each block's scores, weights and values on tokens whose
coordinates are *symbols*. Each lemma is then an identity that SymPy reduces
to zero for every input, at the given sizes: a changed sign or entry in a
weight matrix leaves a non-zero residual, which the failure names.

SymPy is an optional dependency (``pip install "kmt-ref[test]"``, also in
``[book]`` and ``[all]``): ``import kmt_ref`` never imports this module.

What is proved, for a model of dimension ``d`` and ``k`` centers on ``n``
symbolic points (:func:`prove`):

* CAX's score of point ``i`` for center ``j`` is ``-||x_i - c_j||^2`` plus a
  term that does not depend on ``j`` (whatever the point's assignment block
  holds), and its value on center ``j`` is the id ``e_j`` in the assignment
  block (:func:`cax_lemma`);
* SAX's value on point ``l`` is ``-y_l`` in the assignment block, and, when
  SAX is an attention, its score of ``l`` for ``i`` is ``-||x_i - x_l||^2``
  plus a term constant in ``l``: maximal exactly at ``l = i`` for distinct
  points (:func:`sax_lemma`);
* CAC writes, for every one-hot assignment of the ``n`` points, the mean of
  each cluster's members (the mean of all points for an empty cluster), and
  SAC writes ``-c_j`` (:func:`center_lemmas`);
* the layer's residual sums map ``[X | Y_t], [C_t | I]`` to
  ``[X | Y_{t+1}], [C_{t+1} | I]`` for every assignment pattern, ``Y_t``
  arbitrary: the induction step of Theorems 2.1 and 2.2 (:func:`layer_lemma`);
* Theorem 2.2's FFN writes ``||c||^2`` into the cleared norm slot, through
  ``relu(t)^2 + relu(-t)^2 = t^2`` (:func:`ffn_lemma`).

The hardmax's arg-max is not an algebraic operation; the lemmas above state what
it is given (the nearest center, the point itself), which the score lemmas prove.
Two statements read the rest of the model and the code that runs it:

* each block's mechanism is the one the statement names: score, normalizer, its
  parameter (gamma, beta, the sharpness, the threshold) and no biases, against
  the configuration (:func:`theorem_mechanisms`) or the variant's statement at
  the parameter its classical twin takes (:func:`mechanism_lemma`,
  :func:`prove_variant`);
* the library's own :func:`~kmt_ref.layer.transformer_layer`, run on arrays of
  exact rationals (:class:`ExactNumber`), maps ``[X | Y_t], [C_t | I]`` to
  ``[X | Y_t+1], [C_t+1 | I]`` for every assignment pattern, on one exact
  problem per pattern, the arg-max decided by the library's own rule
  (:func:`library_layer_lemma`).
"""

import itertools
import operator
import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy as sp

from ._validation import check_instance, check_int
from .attention import NORMALIZERS
from .engine import REFERENCE
from .layer import KMeansTransformer, transformer_layer

__all__ = ["Identity", "SymbolicCheckError", "typeset", "MAX_POINTS", "exact", "symbolic_tokens", "block_scores",
           "block_values", "cax_score_feedback", "cax_value_feedback", "cac_feedback", "ffn_feedback", "cax_lemma",
           "variant_lemmas", "sax_lemma", "center_lemmas", "layer_lemma", "ffn_lemma", "prove", "Checked",
           "ExactNumber", "describe_block", "mechanism_lemma", "theorem_mechanisms", "library_layer_lemma",
           "prove_variant"]


class SymbolicCheckError(AssertionError):
    """A lemma that does not hold for the model's weights; the message names the residual term."""


@dataclass(frozen=True)
class Identity:
    """A proved identity: ``statement`` in words, ``lhs == rhs`` as SymPy expressions, at ``size``, proved on
    ``source`` (a model's weights, or a formula)."""

    statement: str
    lhs: object
    rhs: object
    size: str
    source: str = "on the model's own weights"

    def latex(self):
        """The identity typeset, for the book."""
        return f"{sp.latex(self.lhs)} = {sp.latex(self.rhs)}"

    def _repr_markdown_(self):
        """How a notebook (a book page) shows it: what was proved, at which size, and the identity typeset."""
        return (f"Proved by SymPy for every input ({typeset(self.size)}), {self.source}: "
                f"{typeset(self.statement)}.\n\n$$\n{self.latex()}\n$$\n")


#: Whole formulas of the statements, written as a reader would typeset them (applied first).
_FORMULAS = (
    (r"\(s \+ 1\)\(z_\(s\+1\) - h\(s\+1\)\)", r"$(s + 1)(z_{s+1} - h(s+1))$"),
    (r"tau = m - sqrt\(\(1 - V\)/s\)", r"$\\tau = m - \\sqrt{(1 - V)/s}$"),
    (r"r_j / \(1 \+ r_j\)", r"$r_j / (1 + r_j)$"),
    (r"z_(\d+) - tau", r"$z_\1 - \\tau$"),
    (r"\|\|([^|]+)\|\|\^2", lambda m: "$\\lVert " + _subscripts(m.group(1)) + "\\rVert^2$"),
    (r"\[([^\]$]*\|[^\]$]*)\]", lambda m: "$[" + _subscripts(m.group(1)).replace(" | ", " \\mid ") + "]$"),
    (r"\bc~", r"$\\tilde c$"),
    (r"\bl1 distance", r"$\\ell_1$ distance"),
)
#: Single symbols, typeset where they stand alone (not inside a formula already typeset).
_GREEK = {"gamma": "\\gamma", "beta": "\\beta", "tau": "\\tau", "delta": "\\delta", "Delta": "\\Delta",
          "eps": "\\varepsilon", "eta": "\\eta", "mu": "\\mu"}


def _subscripts(text):
    """``s_12`` -> ``s_{12}``, ``Y_t+1`` -> ``Y_{t+1}`` inside a formula."""
    return re.sub(r"\b([A-Za-z])_(\w+(?:\+1)?)", lambda m: f"{m.group(1)}_{{{m.group(2)}}}", text)


#: The most symbolic points a lemma takes. It proves every assignment pattern (k^n of them), and SymPy's
#: simplification grows fast with n.
MAX_POINTS = 6


def _checked(model, n=None, low=1):
    """``n`` validated (None: not asked; at least ``low``, the points a statement names), once ``model`` is a
    model: the lemmas' one check of their inputs."""
    check_instance(model, "model", KMeansTransformer)
    return None if n is None else check_int(n, "n", low=low, high=MAX_POINTS)


def typeset(text):
    """A statement's ASCII mathematics (``s_12``, ``||x_1 - c_2||^2``, ``gamma > 0``, ``[c | e_1]``) as inline
    LaTeX for a book page; the words stay words. The terminal (``verify``) prints the ASCII."""
    parts = [text]
    for pattern, repl in _FORMULAS:
        parts = [p if p.startswith("$") else re.sub(pattern, repl, p) for p in parts]
        parts = [q for p in parts for q in (re.split(r"(\$[^$]*\$)", p) if not p.startswith("$") else [p]) if q]
    greek = "|".join(_GREEK)
    symbol = (rf"-?\b(?:(?:{greek})(?:_\w+)?|[A-Za-z]_\w+(?:\+1)?|[a-z]\^2|[A-Za-z] = -?[0-9.e+-]+)"
              rf"(?: ?[<>=] ?-?[0-9.e+-]+\b)?")

    def one(m):
        tex = m.group(0)
        for word, command in _GREEK.items():
            tex = re.sub(rf"\b{word}(?![A-Za-z])", lambda _, c=command: c, tex)
        return "$" + _subscripts(tex) + "$"

    return "".join(p if p.startswith("$") else re.sub(symbol, one, p) for p in parts)


def exact(W):
    """The matrix ``W`` as a SymPy matrix of exact rationals (each float64 entry's exact value).

    Raises ``ValueError`` for a non-finite entry, which no exact number represents.
    """
    W = np.asarray(W, dtype=float)
    if not np.all(np.isfinite(W)):
        raise ValueError(f"a weight matrix must be finite to be made exact; got a nan or inf in W of shape {W.shape}")
    return sp.Matrix(W.shape[0], W.shape[1], [sp.Rational(float(v)) for v in W.ravel()])


def _without_relu(expr):
    """``expr`` with every ``relu(u) = max(0, u)`` written ``(u + |u|) / 2``: then ``|u|^2`` is ``u^2`` for real
    ``u``, and a sum of rectified squares expands to a polynomial."""
    def relu(m):
        (u,) = [a for a in m.args if a != 0]
        return (u + sp.Abs(u)) / 2

    return expr.replace(lambda e: isinstance(e, sp.Max) and len(e.args) == 2 and 0 in e.args, relu)


def _require(residual, statement):
    """Raise :class:`SymbolicCheckError` unless every entry of ``residual`` simplifies to zero."""
    entries = residual if isinstance(residual, sp.MatrixBase) else sp.Matrix([residual])
    for index, term in enumerate(entries):
        term = sp.simplify(sp.expand(_without_relu(term)))
        if term != 0:
            row, col = divmod(index, entries.shape[1])
            raise SymbolicCheckError(f"{statement}: the residual at ({row}, {col}) is {term}, not 0")


def symbolic_tokens(layout, n, assignments=None):
    """Point tokens ``P`` (n x D) and center tokens ``Q`` (k x D) with symbolic coordinates.

    Points ``x_i`` and centers ``c_j`` are real symbols; the assignment block of
    point ``i`` is the symbols ``y_i`` or, given ``assignments`` (a label per
    point, ``-1`` for all zeros), that one-hot row; centers carry their ids
    ``e_j``; a ``sqnorm`` block holds the exact squared norm, a ``one`` block 1.
    Returns ``(P, Q, X, Y, C)`` with ``X`` (n x d), ``Y`` (n x k), ``C`` (k x d).
    """
    d, k = layout.d, layout.k
    X = sp.Matrix(n, d, lambda i, a: sp.Symbol(f"x_{i + 1}{a + 1}", real=True))
    C = sp.Matrix(k, d, lambda j, a: sp.Symbol(f"c_{j + 1}{a + 1}", real=True))
    if assignments is None:
        Y = sp.Matrix(n, k, lambda i, j: sp.Symbol(f"y_{i + 1}{j + 1}", real=True))
    else:
        Y = sp.Matrix(n, k, lambda i, j: sp.Integer(int(assignments[i] == j)))
    return _tokens(layout, X, Y), _tokens(layout, C, sp.eye(k)), X, Y, C


def _tokens(layout, Z, ids):
    """Tokens of the layout holding the rows of ``Z`` and, in the ``y`` block, the rows of ``ids``."""
    T = sp.zeros(Z.shape[0], layout.width)
    for name, part in layout.slices.items():
        for r in range(Z.shape[0]):
            if name == "x":
                block = Z[r, :]
            elif name == "y":
                block = ids[r, :]
            elif name == "sqnorm":
                block = sp.Matrix([[sum(v**2 for v in Z[r, :])]])
            else:  # "one"
                block = sp.Matrix([[1]])
            T[r, part.start : part.stop] = block
    return T


def block_scores(block, Zq, Zk):
    """The block's scores (m x r) on symbolic tokens, from its exact weights (``gamma`` not applied)."""
    queries, keys = Zq * exact(block.Wq).T, Zk * exact(block.Wk).T
    if block.score == "dot":
        return queries * keys.T
    return sp.Matrix(queries.shape[0], keys.shape[0],
                     lambda a, b: -sum((queries[a, c] - keys[b, c]) ** 2 for c in range(queries.shape[1])))


def block_values(block, Zk):
    """The block's values (r x D) on symbolic tokens, from its exact ``Wv``."""
    return Zk * exact(block.Wv).T


def factored(expr):
    """``expr`` expanded and factored, the same every run: SymPy's multivariate factoring (Wang's algorithm)
    draws its evaluation points from SymPy's unseeded generator, and a rare draw takes minutes, so the draw is
    pinned here and SymPy's generator is restored afterwards."""
    from sympy.core import random as sympy_random

    state = sympy_random.rng.getstate()
    sympy_random.seed(0)
    try:
        return sp.factor(sp.expand(expr))
    finally:
        sympy_random.rng.setstate(state)


def _sq(u, v):
    return sum((a - b) ** 2 for a, b in zip(u, v, strict=True))


def _write(layout, rows, name, block):
    """Tokens (rows x D) holding ``block`` in the layout's block ``name`` and zeros elsewhere."""
    T = sp.zeros(rows, layout.width)
    part = layout.slices[name]
    T[:, part.start : part.stop] = block
    return T


#: Normalizers whose weights do not change when every score of a row is multiplied by the same positive number.
SCALE_FREE = ("hardmax", "linear")


def _score_scale(block, differences, targets, statement):
    """The factor ``lambda`` with ``differences = lambda * targets`` for every input (each a SymPy expression):
    any positive one for a normalizer that does not see it (``SCALE_FREE``: weights right in float but not
    exact rationals, such as ``3 * fl(1/3)``, are right), exactly 1 for one that does (a softmax sees the
    factor as a change of gamma). Raises :class:`SymbolicCheckError` naming the residual otherwise."""
    lam = sp.Symbol("lambda")
    equations = [sp.expand(a - lam * b) for a, b in zip(differences, targets, strict=True)]
    symbols = sorted(set().union(*(e.free_symbols for e in equations)) - {lam}, key=str)
    coefficients = [c for e in equations for c in (sp.Poly(e, *symbols).coeffs() if symbols else [e])]
    solution = sp.solve(coefficients, lam, dict=True) if any(c.has(lam) for c in coefficients) else []
    factor = solution[0][lam] if solution else None
    if factor is None:
        _require(sp.Matrix([sp.expand(a - b) for a, b in zip(differences, targets, strict=True)]), statement)
        raise SymbolicCheckError(f"{statement}: it is no multiple of what it must be")
    if block.normalizer in SCALE_FREE and factor > 0:
        return factor
    if factor != 1:
        raise SymbolicCheckError(f"{statement}: it is {factor} times what it must be, a factor the "
                                 f"{block.normalizer} sees" + (" (it ranks the other way)" if factor <= 0 else ""))
    return factor


def _scaled(factor):
    """How a statement names the factor a scale-free normalizer does not see."""
    return "" if factor == 1 else f", up to the positive factor {float(factor):.17g} the normalizer does not see"


def cax_lemma(model, n=2):
    """CAX's score is ``-||x_i - c_j||^2`` plus a term constant in ``j`` (times a positive factor where the
    normalizer does not see it, ``_score_scale``); its value on center ``j`` is ``e_j``."""
    n = _checked(model, n)
    layout, block = model.layout, model.blocks["CAX"]
    P, Q, X, _, C = symbolic_tokens(layout, n)
    S = block_scores(block, P, Q)
    pairs = [(i, j) for i in range(n) for j in range(1, layout.k)]
    factor = _score_scale(block, [S[i, j] - S[i, 0] for i, j in pairs],
                          [_sq(X[i, :], C[0, :]) - _sq(X[i, :], C[j, :]) for i, j in pairs],
                          "CAX: score + ||x_i - c_j||^2 is not the same for every center")
    _require(block_values(block, Q) - _write(layout, layout.k, "y", sp.eye(layout.k)),
             "CAX: the value of center j is not its id e_j in the assignment block")
    return Identity("CAX's score s_12 of center 2 for point 1, plus ||x_1 - c_2||^2: the same for every center"
                    + _scaled(factor),
                    sp.Add(sp.Symbol("s_{12}"), factor * _sq(X[0, :], C[1, :]), evaluate=False),
                    factored(S[0, 0] + factor * _sq(X[0, :], C[0, :])), _size(layout, n))


def sax_lemma(model, n=3):
    """SAX's value on point ``l`` is ``-y_l``; an attention SAX's score is ``-||x_i - x_l||^2`` plus a term
    constant in ``l``."""
    n = _checked(model, n, low=2)
    layout, block = model.layout, model.blocks["SAX"]
    P, _, X, Y, _ = symbolic_tokens(layout, n)
    _require(block_values(block, P) + _write(layout, n, "y", Y),
             "SAX: the value of point l is not -y_l in the assignment block")
    if block.normalizer == "identity":
        return Identity("SAX's value v_1 on point 1, in the assignment block (identity attention: each point reads "
                        "itself)", sp.Symbol("v_1"), block_values(block, P)[0, layout.slices["y"]], _size(layout, n))
    S = block_scores(block, P, P)
    pairs = [(i, l) for i in range(n) for l in range(n) if l != i]
    factor = _score_scale(block, [S[i, l] - S[i, i] for i, l in pairs], [-_sq(X[i, :], X[l, :]) for i, l in pairs],
                          "SAX: score + ||x_i - x_l||^2 is not the same for every point")
    return Identity("SAX's score s_12 of point 2 for point 1, plus ||x_1 - x_2||^2: the same for every point, "
                    "so the score is largest at the point itself" + _scaled(factor),
                    sp.Add(sp.Symbol("s_{12}"), factor * _sq(X[0, :], X[1, :]), evaluate=False),
                    factored(S[0, 0]), _size(layout, n))


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


def _attend(block, Zq, Zk, name):
    """The block ``name``'s output on tokens whose scores compare ids with one-hot rows, at gamma = inf: the
    scores must be exact numbers (a score that reads a coordinate fails the lemma, naming it)."""
    values = block_values(block, Zk)
    if block.normalizer == "identity":
        return values
    S = block_scores(block, Zq, Zk)
    for (a, b), s in np.ndenumerate(np.array(S.tolist(), dtype=object)):
        if not sp.sympify(s).is_number:
            raise SymbolicCheckError(f"{name}: its score ({a}, {b}) is {sp.expand(s)}, which reads coordinates, "
                                     "not the ids alone")
    if block.normalizer == "linear":
        rows = []
        for a in range(S.shape[0]):
            total = sum(S[a, :])
            rows.append([S[a, b] / total if total != 0 else sp.Rational(1, S.shape[1]) for b in range(S.shape[1])])
        return sp.Matrix(rows) * values
    if block.normalizer != "hardmax":
        raise SymbolicCheckError(f"{name}: {describe_block(block)} is not what the lemmas state; they cover "
                                 "gamma = inf (hardmax, linear, identity)")
    weights = sp.zeros(*S.shape)
    for a in range(S.shape[0]):
        top = max(S[a, :])
        members = [b for b in range(S.shape[1]) if S[a, b] == top]
        for b in members:
            weights[a, b] = sp.Rational(1, len(members))
    return weights * values


def _shown(k, n):
    """The assignment pattern an identity shows: the first point in cluster 1, the others in cluster 2."""
    return tuple(min(i, 1, k - 1) for i in range(n))


def _means(X, labels, k):
    """The mean of each cluster's members (of all points for an empty cluster), as a k x d matrix."""
    rows = []
    for j in range(k):
        members = [i for i, a in enumerate(labels) if a == j] or list(range(len(labels)))
        rows.append([sum(X[i, c] for i in members) / len(members) for c in range(X.shape[1])])
    return sp.Matrix(rows)


def center_lemmas(model, n=3):
    """For every one-hot assignment of ``n`` points, CAC writes each cluster's mean and SAC writes ``-c_j``."""
    n = _checked(model, n)
    layout = model.layout
    for labels in itertools.product(range(layout.k), repeat=n):
        P, Q, X, _, C = symbolic_tokens(layout, n, labels)
        _require(_attend(model.blocks["CAC"], Q, P, "CAC") - _write(layout, layout.k, "x", _means(X, labels, layout.k)),
                 f"CAC: the centers are not their clusters' means for the assignment {labels}")
        reset = _attend(model.blocks["SAC"], Q, Q, "SAC")
        _require(reset[:, layout.slices["x"]] + C, "SAC: center j does not subtract c_j")
    labels = _shown(layout.k, n)
    P, Q, _, _, _ = symbolic_tokens(layout, n, labels)
    return Identity(f"every assignment of the points to the centers (and SAC's write -c_j); shown, the assignment "
                    f"{[a + 1 for a in labels]}: the x block a_2 of CAC's write for center 2 is its cluster's mean",
                    sp.Symbol("a_2"), _attend(model.blocks["CAC"], Q, P, "CAC")[1, layout.slices["x"]],
                    _size(layout, n))


def layer_lemma(model, n=3):
    """The residual sums of one layer: ``[X | Y_t], [C_t | I]`` to ``[X | Y_{t+1}], [C_{t+1} | I]``, for every
    assignment ``Y_{t+1}`` of ``n`` points (the nearest centers, as the CAX lemma makes them) and any ``Y_t``.

    CAX's output is the value of the center each point is assigned to, SAX's the value of the point itself
    (the arg-max sets the score lemmas prove); CAC and SAC are computed; the FFN, if any, is applied.
    """
    n = _checked(model, n)
    layout = model.layout
    for labels in itertools.product(range(layout.k), repeat=n):
        new_P, new_Q, expected_P, expected_Q = _one_layer(model, labels)
        _require(new_P - expected_P, f"points after CAX + SAX are not [X | Y_t+1] for the assignment {labels}")
        _require(new_Q - expected_Q, f"centers after CAC + SAC are not [C_t+1 | I] for the assignment {labels}")
    labels = _shown(layout.k, n)
    members = [i + 1 for i, a in enumerate(labels) if a == 1]
    mean = sp.Matrix(1, layout.d, lambda _, a: sp.Symbol(f"m_{{2{a + 1}}}"))
    return Identity(f"every assignment Y_t+1 of the points, any Y_t; shown, the assignment "
                    f"{[a + 1 for a in labels]}: center 2's token q_2 after one layer holds m_2, the mean of points "
                    f"{members}, and e_2" + (", ||m_2||^2 and 1" if "sqnorm" in layout.slices else ""),
                    sp.Symbol("q_2"), _tokens(layout, mean, sp.eye(layout.k)[1:2, :]), _size(layout, n))


def _one_layer(model, labels):
    """One layer's tokens from symbolic ``[X | Y_t], [C_t | I]`` when the points' nearest centers are ``labels``,
    and the tokens the theorem says it gives: ``(P', Q', [X | Y_t+1], [C_t+1 | I])``."""
    layout, blocks, n = model.layout, model.blocks, len(labels)
    P, Q, X, _, _ = symbolic_tokens(layout, n)
    cax, sax = block_values(blocks["CAX"], Q), block_values(blocks["SAX"], P)
    new_P = P + sp.Matrix([cax[labels[i], :] for i in range(n)]) + sax
    expected_P, _, _, _, _ = symbolic_tokens(layout, n, labels)
    new_Q = Q + _attend(blocks["CAC"], Q, new_P, "CAC") + _attend(blocks["SAC"], Q, Q, "SAC")
    if model.ffn is not None:
        new_Q = new_Q + _ffn(model.ffn, new_Q)
    return new_P, new_Q, expected_P, _tokens(layout, _means(X, labels, layout.k), sp.eye(layout.k))


def _ffn(ffn, Q):
    """``W2 act(W1 q + b1) + b2`` on symbolic tokens, for the ``relu2`` activation."""
    if ffn.activation != "relu2":
        raise SymbolicCheckError(f"FFN: its activation is {ffn.activation!r}; the FFN lemma states relu2, whose "
                                 "square makes ||c||^2")
    W1, b1, W2, b2 = (exact(np.atleast_2d(ffn.weights[name])) for name in ("W1", "b1", "W2", "b2"))
    hidden = (Q * W1.T + sp.ones(Q.shape[0], 1) * b1).applyfunc(lambda t: sp.Max(t, 0) ** 2)
    return hidden * W2.T + sp.ones(Q.shape[0], 1) * b2


def ffn_lemma(model):
    """Theorem 2.2's FFN writes ``||c||^2`` into the norm slot of a center token ``[c | e | 0 | 1]``, and nothing
    else: ``relu(t)^2 + relu(-t)^2 = t^2``."""
    _checked(model)
    if model.ffn is None or "sqnorm" not in model.layout.slices:
        raise ValueError(f"ffn_lemma needs a Theorem 2.2 model (an FFN and a norm slot); got {model.name!r}")
    layout = model.layout
    C = sp.Matrix(1, layout.d, lambda _, a: sp.Symbol(f"c_{a + 1}", real=True))
    Q = _tokens(layout, C, sp.eye(layout.k)[:1, :]) - _write(layout, 1, "sqnorm", sp.Matrix([[sum(v**2 for v in C)]]))
    out = _ffn(model.ffn, Q).applyfunc(lambda e: sp.expand(_without_relu(e)))
    expected = _write(layout, 1, "sqnorm", sp.Matrix([[sum(v**2 for v in C)]]))
    _require(out - expected, "FFN: the update of [c | e | 0 | 1] is not ||c||^2 in the norm slot")
    return Identity("the FFN's update of [c | e_1 | 0 | 1]", sp.simplify(out), expected, f"d = {layout.d}")


def variant_lemmas(model, n=3, expected=None):
    """The blocks of a registered variant (:data:`~kmt_ref.variants.registry.VARIANTS`), each proved as the variant's
    proposition uses it, for every input: a list of :class:`Identity`.

    CAX: a Euclidean score is ``-||x_i - c_j||^2`` plus a term constant in ``j`` (:func:`cax_lemma`), a
    dot-product one is ``x_i . c_j`` (the cosine once the tokens are normalized); its value is ``e_j``.
    SAX and SAC (identity attention): ``-y_i`` and ``-c_j``. CAC's value of point ``i`` is ``x_i``, and by
    mechanism: linear attention on dot
    scores writes the responsibility-weighted mean ``sum_i y_ij x_i / sum_i y_ij`` for any non-negative
    assignment block (soft, spherical k-means); a softmax on dot scores reads the scores ``y_ij`` (leaky soft
    k-means, whose normalizer multiplies them by its sharpness); a Euclidean score is
    ``-(G ||e_j - y_i||^2 + eps ||c_j - x_i||^2)`` with positive ``G, eps`` and no other term (the CAC
    variants: trimmed, robust, entmax, k-medoids), ``G`` and ``eps`` the squares of the weights' scales.

    ``expected``: the statement's mechanisms (``Variant.mechanisms`` at the
    model's parameter; :func:`prove_variant` passes them): each block's normalizer, its parameter and no
    biases (:func:`mechanism_lemma`), a Euclidean CAC's ``G`` and ``eps`` (to 1e-12: the weights hold their
    square roots in float64), and a normalization of the ``x`` block (``_unit_x_norm``).
    """
    n = _checked(model, n, low=2)
    layout, blocks = model.layout, model.blocks
    P, Q, X, Y, C = symbolic_tokens(layout, n)
    proved = []
    if expected is not None:
        proved.append(mechanism_lemma(model, expected))
        if model.norm is not None:
            proved.append(_unit_x_norm(model))
    if blocks["CAX"].score == "euclidean":
        proved.append(cax_lemma(model, min(n, 2)))
    else:
        S = block_scores(blocks["CAX"], P, Q)
        _require(S - X * C.T, "CAX: the dot score is not x_i . c_j")
        _require(block_values(blocks["CAX"], Q) - _write(layout, layout.k, "y", sp.eye(layout.k)),
                 "CAX: the value of center j is not its id e_j in the assignment block")
        proved.append(Identity("CAX's dot score s_12 of center 2 for point 1", sp.Symbol("s_{12}"), S[0, 1],
                               _size(layout, n)))
    proved.append(sax_lemma(model, n))
    _require(_attend(blocks["SAC"], Q, Q, "SAC") + _write(layout, layout.k, "x", C),
             "SAC: center j does not subtract [c_j | 0]")
    cac = blocks["CAC"]
    S = block_scores(cac, Q, P)
    _require(block_values(cac, P) - _write(layout, n, "x", X), "CAC: the value of point i is not [x_i | 0]")
    if cac.score == "dot" and cac.normalizer == "linear":
        out = _attend(cac, Q, P, "CAC") if all(s.is_number for s in S) else sp.Matrix(
            [[sum(S[j, i] * block_values(cac, P)[i, c] for i in range(n)) / sum(S[j, :])
              for c in range(layout.width)] for j in range(layout.k)])
        _require(S - Y.T, "CAC: the dot score of point i for center j is not y_ij")
        mean = sp.Matrix([[sum(Y[i, j] * X[i, c] for i in range(n)) / sum(Y[:, j]) for c in range(layout.d)]
                          for j in range(layout.k)])
        _require(out[:, layout.slices["x"]] - mean, "CAC: the write is not the responsibility-weighted mean")
        proved.append(Identity("the x block a_1 of CAC's write for center 1, any non-negative assignment block Y",
                               sp.Symbol("a_1"), mean[0, :], _size(layout, n)))
    elif cac.score == "dot":
        _require(S - Y.T, "CAC: the dot score of point i for center j is not y_ij")
        proved.append(Identity("CAC's score of point 1 for center 1 (before the normalizer's factor)", S[0, 0],
                               Y[0, 0], _size(layout, n)))
    else:
        G, eps = sp.symbols("G epsilon")
        stated = [-(G * _sq(sp.eye(layout.k)[j, :], Y[i, :]) + eps * _sq(C[j, :], X[i, :]))
                  for j in range(layout.k) for i in range(n)]
        residual = [sp.expand(S[j, i] - stated[j * n + i]) for j in range(layout.k) for i in range(n)]
        coefficients = [c for r in residual for c in sp.Poly(r, *X, *Y, *C).coeffs()]
        solution = sp.solve(coefficients, [G, eps], dict=True)
        if not solution or not all(solution[0][v] > 0 for v in (G, eps)):
            raise SymbolicCheckError(f"CAC: the Euclidean score is not -(G ||e_j - y_i||^2 + eps ||c_j - x_i||^2) "
                                     f"with positive G, eps: the residual of the stated form is {residual[0]}")
        G0, eps0 = solution[0][G], solution[0][eps]
        for symbol, value in (("G", G0), ("eps", eps0)):
            want = (expected or {}).get("CAC", {}).get(symbol)
            if want is not None and abs(float(value) / want - 1) > 1e-12:
                raise SymbolicCheckError(f"CAC: its score's {symbol} is {float(value):.10g}, where the statement "
                                         f"has {want:.10g}")
        proved.append(Identity(f"CAC's score s_11 of point 1 for center 1, with G = {float(G0):.6g} and eps = "
                               f"{float(eps0):.6g} (the squares of the weights' scales, as float64 holds them)",
                               sp.Symbol("s_{11}"), stated[0], _size(layout, n)))
    return proved


@dataclass(frozen=True)
class Checked:
    """A statement checked exactly on the library's objects (no identity to typeset): ``statement`` at ``size``."""

    statement: str
    size: str
    source: str = "on the model the library builds"

    def _repr_markdown_(self):
        return f"Checked exactly ({typeset(self.size)}), {self.source}: {typeset(self.statement)}.\n"


def describe_block(block):
    """A block's mechanism in words: its score, its normalizer with its parameters, and its biases."""
    if block.normalizer == "identity":
        text = "identity attention (each token reads itself)"
    else:
        gamma = f" at gamma = {block.gamma:g}" if NORMALIZERS[block.normalizer].uses_gamma else ""
        params = "".join(f", {name} = {value:g}" for name, value in block.params.items())
        limit = " (gamma = inf)" if block.normalizer == "hardmax" else ""
        text = f"{block.score} score, {block.normalizer}{limit}{gamma}{params}"
    biases = [name for name in ("bq", "bk", "bv") if getattr(block, name) is not None]
    return text + (f", biases {', '.join(biases)}" if biases else ", no biases")


def theorem_mechanisms(spec):
    """The mechanisms a configuration of Theorems 2.1 and 2.2 states at ``gamma = inf``, as
    :func:`mechanism_lemma` reads them: ``spec`` maps each block to ``(score, kind)`` (the ``CONFIGS`` of
    :mod:`kmt_ref.lloyd_transformer` and :mod:`kmt_ref.dot_product_transformer`); an attention is the
    hardmax, the limit of softmax as gamma grows."""
    normalizer = {"attention": "hardmax", "linear": "linear", "identity": "identity"}
    return {name: ({"normalizer": "identity"} if kind == "identity"
                   else {"score": score, "normalizer": normalizer[kind]}) for name, (score, kind) in spec.items()}


def mechanism_lemma(model, expected):
    """Every block's mechanism is the one the statement names: its score, its normalizer, the normalizer's
    parameter (``gamma`` where the normalizer uses it, ``params`` such as sparsemax's threshold) and no
    biases; the model has no normalization between layers unless ``expected`` names one (``"norm"``), and an
    FFN only with the ``relu2`` activation the FFN lemma proves.

    ``expected``: ``{block: {"score": str, "normalizer": str, "gamma": float, "params": dict}}``, a key left
    out not stated (the CAC variants' ``"G"`` and ``"eps"`` are read by :func:`variant_lemmas`). Floats are
    compared exactly: a model built at ``beta = 3`` is not the statement at 6."""
    _checked(model)
    for name, block in model.blocks.items():
        want = expected.get(name, {})
        for field in ("score", "normalizer", "gamma"):
            if field in want and getattr(block, field) != want[field]:
                raise SymbolicCheckError(f"{name}: its {field} is {getattr(block, field)!r}, where the statement "
                                         f"has {want[field]!r} ({describe_block(block)})")
        if "params" in want and dict(block.params) != dict(want["params"]):
            raise SymbolicCheckError(f"{name}: its normalizer's parameters are {dict(block.params)}, where the "
                                     f"statement has {dict(want['params'])}")
        biases = [b for b in ("bq", "bk", "bv") if getattr(block, b) is not None]
        if biases:
            raise SymbolicCheckError(f"{name}: it has biases ({', '.join(biases)}); the statement has none")
    if (model.norm is not None) != ("norm" in expected):
        raise SymbolicCheckError(f"the model has {'a' if model.norm is not None else 'no'} normalization between "
                                 f"layers; the statement has {'one' if 'norm' in expected else 'none'}")
    if model.ffn is not None and getattr(model.ffn, "activation", None) != "relu2":
        raise SymbolicCheckError(f"the FFN's activation is {getattr(model.ffn, 'activation', model.ffn)!r}, not "
                                 "the relu2 whose square makes ||c||^2")
    blocks = "; ".join(f"{name}: {describe_block(block)}" for name, block in model.blocks.items())
    return Checked(f"the blocks' mechanisms are the statement's ({blocks})", f"d = {model.d}, k = {model.k}")


def _exact_operation(op, reflected=False):
    def method(a, b):
        if isinstance(b, (float, np.floating)):
            b = Fraction(float(b))  # the float's exact value (inf or nan raise: no exact number is one)
        elif isinstance(b, np.integer):
            b = int(b)
        elif not isinstance(b, (int, Fraction)):
            return NotImplemented
        return ExactNumber(op(b, Fraction(a)) if reflected else op(Fraction(a), b))
    return method


class ExactNumber(Fraction):
    """A rational whose arithmetic with a float uses the float's exact value (a ``Fraction`` would round the
    result to a float): the library's code, run on arrays of these, computes in exact arithmetic."""

    __add__, __radd__ = _exact_operation(operator.add), _exact_operation(operator.add, True)
    __sub__, __rsub__ = _exact_operation(operator.sub), _exact_operation(operator.sub, True)
    __mul__, __rmul__ = _exact_operation(operator.mul), _exact_operation(operator.mul, True)
    __truediv__, __rtruediv__ = _exact_operation(operator.truediv), _exact_operation(operator.truediv, True)

    def __neg__(self):
        return ExactNumber(-Fraction(self))

    def __pos__(self):
        return self

    def __abs__(self):
        return ExactNumber(abs(Fraction(self)))

    def __pow__(self, exponent):
        return ExactNumber(Fraction(self) ** exponent)


def _exact_tokens(layout, Z, ids):
    """Tokens (an object array of :class:`ExactNumber`) holding the rows of ``Z`` and of ``ids`` (the ``y`` block),
    the exact squared norm and 1 where the layout has those blocks: the embedding the statement names."""
    T = np.full((Z.shape[0], layout.width), ExactNumber(0), dtype=object)
    for name, part in layout.slices.items():
        T[:, part] = {"x": lambda: Z, "y": lambda: ids, "sqnorm": lambda: np.sum(Z * Z, axis=1)[:, None],
                      "one": lambda: ExactNumber(1)}[name]()
    return T


def _exact_problem(layout, labels):
    """Exact points whose nearest centers are ``labels``, distinct and exactly float64 (the Euclidean hardmax
    decides on float64 numbers), and the centers: centers 4 apart along the first axis, each point within
    1/2 of its own."""
    d, k = layout.d, layout.k
    C = np.array([[ExactNumber(4 * j) if a == 0 else ExactNumber(j + a, 4) for a in range(d)] for j in range(k)],
                 dtype=object)
    X = np.array([[C[label, a] + ExactNumber(i + 1, 2 ** (a + 4)) * (-1) ** a for a in range(d)]
                  for i, label in enumerate(labels)], dtype=object)
    return X, C


def library_layer_lemma(model, n=3):
    """The library's own layer (:func:`kmt_ref.layer.transformer_layer`, the reference attention) in exact
    arithmetic maps ``[X | Y_t], [C_t | I]`` to ``[X | Y_t+1], [C_t+1 | I]`` for every assignment pattern of
    ``n`` points: Lloyd's step, with no rounding anywhere.

    The tokens are arrays of :class:`ExactNumber`, which the layer's code computes with as it does with
    floats, so this reads the code that runs, not a second writing of it: which block reads which tokens, the
    order of the residual sums, the normalizers' arithmetic, the FFN. A hardmax's arg-max is decided by the
    library's own rule on the same numbers (they are float64 values). One exact problem per pattern (points
    near their centers, at distinct places), each with two ``Y_t``: none (as embedded) and every point
    assigned elsewhere. Needs the mechanisms of ``gamma = inf`` (hardmax, linear, identity).
    """
    n = _checked(model, n, low=1)
    layout = model.layout
    for name, block in model.blocks.items():
        if block.normalizer not in ("hardmax", "linear", "identity"):
            raise SymbolicCheckError(f"{name}: {describe_block(block)} is not exact arithmetic; the layer's lemma "
                                     "covers gamma = inf (hardmax, linear, identity)")
    eye = np.array([[ExactNumber(int(i == j)) for j in range(layout.k)] for i in range(layout.k)], dtype=object)
    for labels in itertools.product(range(layout.k), repeat=n):
        X, C = _exact_problem(layout, labels)
        members = [[i for i, a in enumerate(labels) if a == j] or list(range(n)) for j in range(layout.k)]
        means = np.array([np.sum(X[m], axis=0) / len(m) for m in members], dtype=object)
        expected_P, expected_Q = _exact_tokens(layout, X, eye[list(labels)]), _exact_tokens(layout, means, eye)
        for before in (np.full((n, layout.k), ExactNumber(0), dtype=object), eye[[(a + 1) % layout.k for a in labels]]):
            P, Q = _exact_tokens(layout, X, before), _exact_tokens(layout, C, eye)
            try:
                new_P, new_Q = transformer_layer(P, Q, model.blocks, ffn=model.ffn, norm=model.norm, engine=REFERENCE)
            except (ArithmeticError, TypeError, ValueError, AttributeError) as exc:
                raise SymbolicCheckError(f"the layer does not compute in exact arithmetic ({type(exc).__name__}: "
                                         f"{exc}) for the assignment {labels}") from exc
            for what, got, want in (("points", new_P, expected_P), ("centers", new_Q, expected_Q)):
                wrong = [index for index in np.ndindex(want.shape) if not _same_exact(got[index], want[index])]
                if wrong:
                    row, col = wrong[0]
                    raise SymbolicCheckError(
                        f"the library's layer: {what} after one layer are not the statement's for the assignment "
                        f"{labels} (Y_t {'none' if not np.any(before) else 'elsewhere'}): token {row}, coordinate "
                        f"{col} is {got[row, col]}, not {want[row, col]}")
    return Checked(f"the library's transformer_layer, in exact arithmetic, maps [X | Y_t], [C_t | I] to "
                   f"[X | Y_t+1], [C_t+1 | I] for every assignment of {n} points ({layout.k ** n} patterns, "
                   "Y_t none or elsewhere)", _size(layout, n), source="on the library's own layer")


def _same_exact(got, want):
    """``got`` is the exact number ``want`` (not a float that rounds to it)."""
    return isinstance(got, (int, Fraction)) and not isinstance(got, bool) and got == want


def _unit_x_norm(model):
    """The model's normalization between layers (``model.norm``, the library's own, run on three tokens) maps the
    ``x`` block to unit length, to rounding, and copies every other coordinate exactly."""
    layout = model.layout
    rng = np.random.default_rng(0)
    X, C = rng.normal(size=(3, layout.d)), rng.normal(size=(layout.k, layout.d))
    P, _ = layout.embed(X, C)
    P[:, layout.slices["y"]] = rng.normal(size=(3, layout.k))
    out = model.norm(P)
    lengths = np.linalg.norm(layout.read(out, "x"), axis=1)
    others = np.delete(np.arange(layout.width), np.arange(layout.width)[layout.slices["x"]])
    if np.max(np.abs(lengths - 1)) > 8 * layout.d * np.finfo(float).eps or not np.array_equal(out[:, others],
                                                                                              P[:, others]):
        raise SymbolicCheckError(f"the normalization between layers maps x to lengths {lengths}, not 1 (or "
                                 "changes other coordinates)")
    return Checked("the normalization between layers (the library's, on 3 tokens) maps x to unit length, within "
                   f"{np.max(np.abs(lengths - 1)):.1e}, and copies the other coordinates exactly",
                   f"d = {layout.d}, k = {layout.k}", source="checked on samples")


def prove_variant(variant, value=None, d=2, k=3, n=3):
    """A registered variant's transformer at ``value`` (default: its first checked value) against its statement:
    its mechanisms at that parameter (``Variant.mechanisms``) and the blocks'
    lemmas (:func:`variant_lemmas`), on ``d``, ``k`` and ``n`` symbolic points. A list of the statements."""
    from .variants.registry import Variant

    check_instance(variant, "variant", Variant)
    value = variant.values[0] if value is None else value
    expected = None if variant.mechanisms is None else variant.mechanisms(d, value)
    return variant_lemmas(variant.build(d, k, value), n, expected)


def _size(layout, n):
    return f"d = {layout.d}, k = {layout.k}, n = {n}"


def prove(model, n=3):
    """Every lemma of the model's construction, proved on its weights: a list of :class:`Identity`.

    ``model``: a Theorem 2.1 or 2.2 construction at ``gamma = inf`` (every configuration). Raises
    :class:`SymbolicCheckError` naming the first lemma that fails and its residual.
    """
    n = _checked(model, n, low=2)
    proved = [cax_lemma(model, min(n, 2)), sax_lemma(model, n), center_lemmas(model, n), layer_lemma(model, n)]
    if model.ffn is not None:
        proved.append(ffn_lemma(model))
    return proved
