"""The ``verify`` section of proofs: the constructions' lemmas on the weights the library builds, and the
statements about the algorithms' formulas, each a row of :class:`~kmt_ref.programs.rows.Row` (kind ``proof``).
"""

import numpy as np

from ..dot_product_transformer import CONFIGS as DOT_CONFIGS
from ..dot_product_transformer import dot_product_lloyd_transformer
from ..kernels.labels import label_layer
from ..lloyd_transformer import CONFIGS, lloyd_transformer
from ..variants import VARIANTS
from .rows import Row

__all__ = ["symbolic_rows", "FORMULAS", "LIBRARY_NORMALIZERS"]

#: The formula statements of the book, each with the proposition it serves: ``{claim: prove(module)}``.
FORMULAS = {
    "softmax is within 2 eps / Z of hardmax (r = 3, 4)": lambda f: (f.softmax_hardmax_lemma(3, 1),
                                                                      f.softmax_hardmax_lemma(4, 2)),
    "a softmax row ignores a constant shift": lambda f: f.row_shift_lemma(),
    "Lloyd's mean lowers the sum of squares by n ||m - c||^2": lambda f: f.mean_lemma(),
    "soft responsibilities tend to Lloyd's (k = 3)": lambda f: f.soft_to_lloyd_lemma(),
    "sparsemax's threshold on a support of 1, 2, 3": lambda f: [f.sparsemax_threshold_lemma(s) for s in (1, 2, 3)],
    "inf-norm normmax's closed form (s = 1, 2)": lambda f: [f.normmax_inf_lemma(s) for s in (1, 2)],
    "a member mean's preferences sum (spherical)": lambda f: f.member_mean_lemma(),
    "Gumbel-max gives softmax (r = 2, 3)": lambda f: [f.gumbel_max_lemma(r) for r in (2, 3)],
    "no score gives the medoid: the counterexample": lambda f: f.medoid_counterexample(),
    "the all-attention reset's error recursion": lambda f: f.reset_recursion_lemma(),
    "entmax-1.5's threshold on a support of 1, 2, 3": lambda f: [f.entmax_threshold_lemma(s) for s in (1, 2, 3)],
    "the certificate's margins, soft weights, center shift, rule": lambda f: (
        f.margin_lemma(), f.soft_weight_lemma(), f.center_shift_lemma(), f.rule_algebra_lemma()),
    "the circuit's CAC as a Euclidean score (k = 2, 3)": lambda f: [f.circuit_score_lemma(k) for k in (2, 3)],
}
#: The library's own normalizers against their definitions (:mod:`kmt_ref.symbolic_library`): ``{claim: check}``.
LIBRARY_NORMALIZERS = {
    "the library's softmax, to 30-digit exponentials": lambda lib: lib.softmax_check(),
    "the library's sparsemax is the simplex projection": lambda lib: lib.sparsemax_check(),
    "the library's entmax-1.5 is its definition": lambda lib: lib.entmax_check(),
    "the library's inf-norm normmax solves its program": lambda lib: lib.normmax_inf_check(),
    "the library's Gumbel step is argmax(z + g)": lambda lib: lib.gumbel_max_check(),
}


def _holds(prove):
    """Whether ``prove()`` finishes: a failed identity, or a model whose code cannot be run as the statement
    says (an error of any kind), is a row that fails, not a crash of ``verify``."""
    try:
        prove()
    except Exception:  # noqa: BLE001 - whatever the model's code raises, the statement does not hold
        return False
    return True


def symbolic_rows(quick=False):
    """Every lemma of Theorems 2.1 and 2.2, each configuration, and the blocks of every registered variant,
    proved for every input by computer algebra on the weights the library builds (:mod:`kmt_ref.symbolic`;
    d = 2, k = 2, three symbolic points); each block's mechanism and parameter, and the library's own layer in
    exact arithmetic for every assignment pattern, checked exactly; the library's normalizers against their
    definitions (:mod:`kmt_ref.symbolic_library`); and the statements about the algorithms' formulas the book's
    propositions rest on (:mod:`kmt_ref.symbolic_formulas`, at the sizes of their book cells). Needs SymPy (the
    ``test``, ``book`` and ``all`` extras); without it, one row says so."""
    try:
        from .. import symbolic, symbolic_engines, symbolic_formulas, symbolic_library, symbolic_variants
    except ImportError:
        return [Row("(SymPy not installed)", "-", float("inf"), "pip install \"kmt-ref[test]\" to prove the lemmas",
                    0.0, 0.0, None, None, kind="proof")]
    rows = []
    for theorem, build, configs in (("2.1", lloyd_transformer, CONFIGS), ("2.2", dot_product_lloyd_transformer,
                                                                          DOT_CONFIGS)):
        for config in sorted(configs, key=("paper", "validated", "all-attention").index):
            model = build(2, 2, config=config)
            lemmas = [("mechanisms, as configured", lambda m, n, spec=configs[config]:
                       symbolic_variants.mechanism_lemma(m, symbolic_variants.theorem_mechanisms(spec))),
                      ("CAX score and value", symbolic.cax_lemma), ("SAX score and value", symbolic.sax_lemma),
                      ("CAC means, SAC reset", symbolic.center_lemmas),
                      ("one layer's residual sums", symbolic.layer_lemma),
                      ("the library's layer, exact arithmetic", symbolic_engines.library_layer_lemma),
                      ("the dense kernels' layer, exact", lambda m, n: symbolic_engines.engine_lemma(
                          m, "dense kernels", n))]
            if label_layer(model) is not None:
                lemmas.append(("the labels run's layer, exact", lambda m, n: symbolic_engines.engine_lemma(
                    m, "labels run", n)))
            if model.ffn is not None:
                lemmas.append(("FFN writes ||c||^2", lambda m, n: symbolic.ffn_lemma(m)))
            for name, lemma in lemmas:
                holds = _holds(lambda lemma=lemma, model=model: lemma(model, 3))
                rows.append(Row(f"Thm {theorem} {config}", "symbolic d=2 k=2 n=3", float("inf"), name, 0.0, 0.0,
                                holds, True, kind="proof"))
    for name, variant in VARIANTS.items():
        holds = _holds(lambda variant=variant: [symbolic_variants.prove_variant(variant, value, 2, 2, 3)
                                                for value in variant.values])
        rows.append(Row(name, "symbolic d=2 k=2 n=3", np.inf if variant.parameter is None else variant.values[0],
                        "its blocks, as its proposition states them", 0.0, 0.0, holds, True,
                        variant.parameter or "gamma", kind="proof"))
    for name, prove in FORMULAS.items():
        holds = _holds(lambda prove=prove: prove(symbolic_formulas))
        rows.append(Row("formula", "symbolic", float("nan"), name, 0.0, 0.0, holds, True, parameter="",
                        kind="proof"))
    for name, check in LIBRARY_NORMALIZERS.items():
        holds = _holds(lambda check=check: check(symbolic_library))
        rows.append(Row("normalizer", "exact, every support r=3", float("nan"), name, 0.0, 0.0, holds, True,
                        parameter="", kind="proof"))
    return rows
