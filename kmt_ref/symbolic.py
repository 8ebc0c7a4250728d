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
Each block's mechanism against the statement, and the variants' lemmas, are in
:mod:`kmt_ref.symbolic_variants`; the library's own layer and every engine that
runs it, in exact arithmetic, in :mod:`kmt_ref.symbolic_engines`.
"""

import itertools
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ._validation import check_instance, check_int
from .attention import NORMALIZERS
from .layer import KMeansTransformer
from .symbolic_typeset import typeset

__all__ = ["Identity", "SymbolicCheckError", "MAX_POINTS", "exact", "symbolic_tokens", "block_scores",
           "block_values", "cax_lemma", "sax_lemma", "center_lemmas", "layer_lemma", "ffn_lemma", "prove", "Checked",
           "describe_block", "factored"]


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


#: The most symbolic points a lemma takes. It proves every assignment pattern (k^n of them), and SymPy's
#: simplification grows fast with n.
MAX_POINTS = 6


def _checked(model, n=None, low=1, required=False):
    """``n`` validated (None: not asked, unless ``required``; at least ``low``, the points a statement names),
    once ``model`` is a model: the lemmas' one check of their inputs."""
    check_instance(model, "model", KMeansTransformer)
    return None if n is None and not required else check_int(n, "n", low=low, high=MAX_POINTS)


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
    n = _checked(model, n, required=True)
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
    n = _checked(model, n, required=True)
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


def _size(layout, n):
    return f"d = {layout.d}, k = {layout.k}, n = {n}"


def prove(model, n=3):
    """Every lemma of the model's construction, proved on its weights: a list of :class:`Identity`.

    ``model``: a Theorem 2.1 or 2.2 construction at ``gamma = inf`` (every configuration). Raises
    :class:`SymbolicCheckError` naming the first lemma that fails and its residual.
    """
    n = _checked(model, n, low=2, required=True)
    proved = [cax_lemma(model, min(n, 2)), sax_lemma(model, n), center_lemmas(model, n), layer_lemma(model, n)]
    if model.ffn is not None:
        proved.append(ffn_lemma(model))
    return proved
