"""The variants' lemmas and every model's mechanisms, proved on the weights the library builds.

:func:`variant_lemmas` proves what a variant's transformer computes block by block, on symbolic tokens
(:mod:`kmt_ref.symbolic`); :func:`mechanism_lemma` states each block's score, normalizer and parameter
against the statement (:func:`theorem_mechanisms` for Theorems 2.1 and 2.2); :func:`prove_variant` runs both
for a registered variant. SymPy is needed (``pip install "kmt-ref[test]"``).
"""

import numpy as np
import sympy as sp

from ._validation import check_instance
from .symbolic import (
    Checked,
    Identity,
    SymbolicCheckError,
    _attend,
    _checked,
    _require,
    _size,
    _sq,
    _write,
    block_scores,
    block_values,
    cax_lemma,
    describe_block,
    sax_lemma,
    symbolic_tokens,
)

__all__ = ["variant_lemmas", "theorem_mechanisms", "mechanism_lemma", "prove_variant"]


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
