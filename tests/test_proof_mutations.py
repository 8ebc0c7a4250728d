"""Changes to the library that move the centers must fail a proof row of ``verify``.

Each entry of ``MUTATIONS`` rewrites one line of one library function at run time (the function is compiled
again from its source with the change, and bound wherever the library holds it), runs the proof section of
``verify`` and names the row that must fail. A reader extends the list with a change the proofs should see.
A failed proof is a row that fails, never a crash of the section.
"""

import dataclasses
import inspect
import sys
import textwrap

import pytest

pytest.importorskip("sympy", reason="needs sympy, of the test extra: pip install -e '.[test]'")

from kmt_ref import engine, layer, normalizers, symbolic_formulas  # noqa: E402
from kmt_ref.dot_product_transformer import dot_product_weights, norm_writing_ffn  # noqa: E402
from kmt_ref.kernels import labels, plain  # noqa: E402
from kmt_ref.lloyd_transformer import assemble_blocks, equation5_weights  # noqa: E402
from kmt_ref.programs.proofs import symbolic_rows  # noqa: E402
from kmt_ref.variants import VARIANTS, leaky, soft, spherical, trimmed  # noqa: E402

#: ``{change: (function, old text, new text, (construction, claim) of a row that must fail)}``.
MUTATIONS = {
    "soft k-means built with gamma = 2 beta": (
        soft.soft_kmeans_transformer, "base = lloyd_transformer(d, k, gamma=beta,",
        "base = lloyd_transformer(d, k, gamma=2 * beta,",
        ("soft k-means", "its blocks, as its proposition states them")),
    "leaky soft k-means: CAC at twice its sharpness": (
        leaky.leaky_kmeans_transformer, "gamma=sharpness)", "gamma=2 * sharpness)",
        ("leaky soft k-means (beta=4)", "its blocks, as its proposition states them")),
    "trimmed: epsilon doubled": (
        trimmed.trimmed_kmeans_transformer, '"normmax_inf", separation, 1.0,', '"normmax_inf", separation, 2.0,',
        ("trimmed (normmax)", "its blocks, as its proposition states them")),
    "spherical: the normalization's gain doubled": (
        spherical.BlockRMSNorm.__init__, "np.full(s.stop - s.start, 1.0 /", "np.full(s.stop - s.start, 2.0 /",
        ("spherical k-means", "its blocks, as its proposition states them")),
    "the library's layer: CAC reads the old points": (
        layer.transformer_layer, "Q = engine.residual(Q, Q, *_write_order(Q, P,",
        "Q = engine.residual(Q, Q, *_write_order(Q, old_P,",
        ("Thm 2.1 validated", "the library's layer, exact arithmetic")),
    "CAX softmax at gamma = 1 instead of hardmax": (
        assemble_blocks, "score=score, normalizer=normalizer, gamma=gamma)",
        'score=score, normalizer="softmax" if name == "CAX" else normalizer, gamma=1.0 if name == "CAX" else gamma)',
        ("Thm 2.1 validated", "mechanisms, as configured")),
    "a CAC value bias of 1e-3": (
        assemble_blocks, "score=score, normalizer=normalizer, gamma=gamma)",
        'score=score, normalizer=normalizer, gamma=gamma, bv=np.full(len(weights[name][0]), 1e-3) '
        'if name == "CAC" else None)',
        ("Thm 2.1 validated", "the library's layer, exact arithmetic")),
    "Theorem 2.2's FFN with relu instead of relu2": (
        norm_writing_ffn, 'activation="relu2")', 'activation="relu")',
        ("Thm 2.2 validated", "FFN writes ||c||^2")),
    "SAC's value adds the center instead of subtracting it": (
        equation5_weights, '"SAC": (P_y, P_y, -P_x),', '"SAC": (P_y, P_y, P_x),',
        ("Thm 2.1 paper", "CAC means, SAC reset")),
    "Theorem 2.2's CAX query off by 1e-9": (
        dot_product_weights, "Wq_x, Wk_x = 2.0 * P_x", "Wq_x, Wk_x = (2.0 + 1e-9) * P_x",
        ("Thm 2.2 validated", "CAX score and value")),
    "the labels run: an empty cluster keeps its old center": (
        labels.LabelLayer.step, "means[empty] = np.sum(values[b], axis=0) / values.shape[-2]",
        "means[empty] = Q[b, :, rows][empty]",
        ("Thm 2.1 validated", "the labels run's layer, exact")),
    "the labels run: a shared point weighs 1 in each cluster": (
        labels._member_sums, "weights[columns[i] : columns[i + 1]] = shared[i][nz]",
        "weights[columns[i] : columns[i + 1]] = 1.0",
        ("Thm 2.2 validated", "the labels run's layer, exact")),
    "the dense kernels: a tied point's row weighs 1 on each nearest key": (
        plain.tie_shares, "nearest / np.count_nonzero(nearest)", "nearest * 1.0",
        ("Thm 2.1 validated", "the dense kernels' layer, exact")),
    "the dense kernels: a residual adds its first block only": (
        engine.Engine.residual, "for Zk, block in ((Zk1, block1), (Zk2, block2)):",
        "for Zk, block in ((Zk1, block1),):",
        ("Thm 2.1 paper", "the dense kernels' layer, exact")),
    "entmax-1.5 with the other root as its threshold": (
        normalizers.entmax15, "tau = mean - np.sqrt(", "tau = mean + np.sqrt(",
        ("normalizer", "the library's entmax-1.5 is its definition")),
    "sparsemax's threshold off by its sign": (
        normalizers.sparsemax, "tau = (_take(cs, s) - 1.0)", "tau = (_take(cs, s) + 1.0)",
        ("normalizer", "the library's sparsemax is the simplex projection")),
    "the entmax threshold lemma's formula with the other root": (
        symbolic_formulas._entmax_threshold, "return mean - sp.sqrt(", "return mean + sp.sqrt(",
        ("formula", "entmax-1.5's threshold on a support of 1, 2, 3")),
}
# The layer mutation needs the old points under a name: bound where the point tokens are first replaced.
_OLD_POINTS = ('    P = engine.residual(P, P,', '    old_P = P\n    P = engine.residual(P, P,')


def _mutate(monkeypatch, function, old, new):
    """Bind, wherever the library holds ``function``, the function compiled from its source with ``old``
    replaced by ``new`` (each found once)."""
    source = textwrap.dedent(inspect.getsource(function))
    edits = [(old, new)] + ([_OLD_POINTS] if "old_P" in new else [])
    for before, after in edits:
        assert source.count(before) == 1, f"{before!r} is not once in {function.__qualname__}"
        source = source.replace(before, after)
    namespace = dict(function.__globals__)
    exec(compile(source, inspect.getsourcefile(function), "exec"), namespace)  # noqa: S102 - the library's own source
    changed = namespace[function.__name__]
    owners = [m for name, m in list(sys.modules.items()) if name.startswith("kmt_ref") and m is not None]
    owners += [v for m in owners for v in vars(m).values()
               if isinstance(v, type) and v.__module__.startswith("kmt_ref")]
    bound = 0
    for owner in owners:
        for attr, value in list(vars(owner).items()):
            if value is function:
                monkeypatch.setattr(owner, attr, changed)
                bound += 1
    for name, variant in list(VARIANTS.items()):
        if variant.transformer is function:
            monkeypatch.setitem(VARIANTS, name, dataclasses.replace(variant, transformer=changed))
            bound += 1
    assert bound, f"{function.__qualname__} is bound nowhere"


def _failing(rows):
    return {(row.construction, row.claim) for row in rows if not row.holds}


def test_every_proof_row_holds_on_the_library_as_it_is():
    assert _failing(symbolic_rows()) == set()


#: The changes the quick run makes, one per theorem and one of a variant; the slow tier makes every other.
QUICK_MUTATIONS = {"the library's layer: CAC reads the old points", "Theorem 2.2's CAX query off by 1e-9",
                   "trimmed: epsilon doubled"}


@pytest.mark.parametrize("change", [c if c in QUICK_MUTATIONS else pytest.param(c, marks=pytest.mark.slow)
                                    for c in sorted(MUTATIONS)])
def test_a_change_that_moves_the_centers_fails_a_proof_row(monkeypatch, change):
    function, old, new, row = MUTATIONS[change]
    _mutate(monkeypatch, function, old, new)
    failing = _failing(symbolic_rows())  # a failed proof is a row, not an exception
    assert row in failing, f"{change}: no proof row fails (failing: {sorted(failing)})"
