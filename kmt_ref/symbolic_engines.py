"""The library's layer and the engines that run it, in exact arithmetic, on every assignment pattern.

The lemmas of :mod:`kmt_ref.symbolic` prove the constructions' blocks on their
weights. The statements here read the *code that runs*: each is one run of
the library's own functions per assignment pattern, on numbers for which every
operation is exact, compared coordinate by coordinate with the statement
``[X | Y_t], [C_t | I] -> [X | Y_t+1], [C_t+1 | I]``:

* :func:`library_layer_lemma`: :func:`~kmt_ref.layer.transformer_layer` on the
  reference engine, on arrays of exact rationals (:class:`ExactNumber`);
* :func:`engine_lemma`: an engine's own run of the layer (the fast dense
  kernels of ``Engine()``, or the labels run of
  :data:`~kmt_ref.engine.LABELS`) on float64 integers chosen so that float64
  computes exactly: every coordinate, square, sum and mean the statement needs
  is an integer below ``2^53``. Its patterns add exact ties (a point as far
  from two centers, shared half and half by a hardmax whose center update is
  linear) and empty clusters (a center that keeps no point takes the mean of
  all points).

A hardmax's arg-max is decided by the library's own rule on the same numbers.
"""

import itertools
import math
import operator
from fractions import Fraction

import numpy as np

from .engine import LABELS, REFERENCE, Engine
from .kernels.labels import dense_assignments, label_layer
from .layer import transformer_layer
from .symbolic import Checked, SymbolicCheckError, _checked, _size, describe_block

__all__ = ["ExactNumber", "library_layer_lemma", "engine_lemma", "ENGINES"]

#: The engines :func:`engine_lemma` proves, by name.
ENGINES = {"dense kernels": Engine(), "labels run": LABELS}


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


def _patterns(k, n, ties):
    """Each point's place: a center ``a``, or with ``ties`` the pair ``(a, a + 1)`` it is exactly as far from."""
    places = list(range(k)) + ([(a, a + 1) for a in range(k - 1)] if ties else [])
    return itertools.product(places, repeat=n)


def _integer_problem(d, k, pattern):
    """Points realizing ``pattern`` and the centers, float64 integers: center ``j`` at ``4 M j`` on the first
    axis, point ``i`` at its center (or at the middle of its pair) plus ``M (i + 1)`` on the second, so the
    points are distinct and each nearest its center (or exactly as near both of its pair). ``M`` is the least
    common multiple of ``1 .. 2n``: every mean the statement takes (weights 1 and 1/2) is then an integer."""
    n = len(pattern)
    M = math.lcm(*range(1, 2 * n + 1))
    C = np.zeros((k, d))
    C[:, 0] = 4 * M * np.arange(k)
    X = np.zeros((n, d))
    for i, place in enumerate(pattern):
        X[i, 0] = 4 * M * place if isinstance(place, int) else 4 * M * place[0] + 2 * M
        X[i, 1] = M * (i + 1)
    return X, C


def _statement(layout, X, pattern):
    """The exact tokens ``[X | Y_t+1], [C_t+1 | I]`` of ``pattern``: a tied point's row ``(e_a + e_b) / 2``;
    each center the weighted mean of its members, the mean of all points when it has none."""
    k = layout.k
    E = np.vectorize(ExactNumber, otypes=[object])
    Xe = E(X.astype(object))
    Y = np.full((len(pattern), k), ExactNumber(0), dtype=object)
    for i, place in enumerate(pattern):
        for a in ([place] if isinstance(place, int) else place):
            Y[i, a] = ExactNumber(1, 1 if isinstance(place, int) else 2)
    means = []
    for j in range(k):
        weight = np.sum(Y[:, j])
        means.append(np.sum(Xe * Y[:, j : j + 1], axis=0) / weight if weight else np.sum(Xe, axis=0) / len(X))
    eye = np.array([[ExactNumber(int(i == j)) for j in range(k)] for i in range(k)], dtype=object)
    return _exact_tokens(layout, Xe, Y), _exact_tokens(layout, np.array(means, dtype=object), eye)


def engine_lemma(model, engine, n=3):
    """An engine's run of one layer is the statement, exactly, for every assignment pattern of ``n`` points.

    Parameters
    ----------
    model : KMeansTransformer
        A construction at ``gamma = inf`` with ``d >= 2`` (hardmax, linear and identity blocks). Exact
        ties are among the patterns when its CAC is linear (the statement then shares a tied point half
        and half; a Euclidean hardmax CAC states something else of ties).
    engine : Engine or str
        An :class:`~kmt_ref.engine.Engine`, or a name of :data:`ENGINES`. The labels run needs a model of
        its pattern (``kmt_ref.kernels.labels.label_layer``).
    n : int
        Points, 1 to :data:`~kmt_ref.symbolic.MAX_POINTS`.

    Returns
    -------
    Checked

    Raises
    ------
    SymbolicCheckError
        Naming the pattern, the old assignments, the token and the coordinate where the run is not the
        statement.
    """
    n = _checked(model, n, low=1)
    engine = ENGINES[engine] if isinstance(engine, str) and engine in ENGINES else engine
    if not isinstance(engine, Engine):
        raise ValueError(f"engine must be an Engine or one of {sorted(ENGINES)}; got engine={engine!r}")
    layout = model.layout
    if layout.d < 2 or "y" not in layout.slices:
        raise SymbolicCheckError(f"the integer problems need d >= 2 and an assignment block; got {layout}")
    for name, block in model.blocks.items():
        if block.normalizer not in ("hardmax", "linear", "identity"):
            raise SymbolicCheckError(f"{name}: {describe_block(block)} is not exact arithmetic; the lemma covers "
                                     "gamma = inf (hardmax, linear, identity)")
    lean = label_layer(model) if engine.labels else None
    if engine.labels and lean is None:
        raise SymbolicCheckError(f"{model.name} is not of the labels run's pattern: the labels engine runs its "
                                 "blocks, which the dense kernels' statement covers")
    ties = model.blocks["CAC"].normalizer == "linear"
    y, k = layout.slices["y"], layout.k
    count = 0
    for pattern in _patterns(k, n, ties):
        X, C = _integer_problem(layout.d, k, pattern)
        want_P, want_Q = _statement(layout, X, pattern)
        olds = ((None, "none"),) if lean is not None else (
            (np.zeros((n, k)), "none"), (np.eye(k)[[(i + 1) % k for i in range(n)]], "elsewhere"))
        for before, said in olds:
            P, Q = layout.embed(X, C)
            if lean is not None:
                queries, values, kept = lean.fixed(X, lambda P=P: P, Q)
                Q, labels, shared = lean.step(queries, values, kept, Q)
                P[:, y] = dense_assignments(labels, shared, k)
            else:
                P[:, y] = before
                P, Q = transformer_layer(P, Q, model.blocks, ffn=model.ffn, norm=model.norm, engine=engine)
            for what, got, want in (("points", P, want_P), ("centers", Q, want_Q)):
                wrong = [i for i in np.ndindex(want.shape) if Fraction(float(got[i])) != want[i]]
                if wrong:
                    row, col = wrong[0]
                    raise SymbolicCheckError(
                        f"{model.name} on {_engine_name(engine)}: {what} after one layer are not the statement's "
                        f"for the pattern {pattern} (Y_t {said}): token {row}, coordinate {col} is "
                        f"{float(got[row, col])!r}, not {want[row, col]}")
        count += 1
    return Checked(f"{_engine_name(engine)}, in float64 that is exact on these integers, maps [X | Y_t], "
                   f"[C_t | I] to [X | Y_t+1], [C_t+1 | I] for every pattern of {n} points ({count} patterns"
                   f"{', exact ties and empty clusters among them' if ties else ', empty clusters among them'})",
                   _size(layout, n), source="on the engine's own run of the layer")


def _engine_name(engine):
    for name, known in ENGINES.items():
        if engine == known:
            return f"the {name}"
    return repr(engine)
