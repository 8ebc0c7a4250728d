"""The fast kernels compute what the reference attention computes, for every model."""

import warnings

import numpy as np
import pytest

import kmt_ref
from kmt_ref import attention, kernels, normalizers, products
from kmt_ref.engine import LABELS, REFERENCE, Engine
from kmt_ref.kernels import pool
from kmt_ref.layer import transformer_layer
from kmt_ref.learning.model import ModelConfig, init_params, to_transformer
from kmt_ref.variants import VARIANTS

pytest.importorskip("hypothesis", reason="needs hypothesis, of the test extra: pip install -e '.[test]'")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

MODELS = {
    "Theorem 2.1, validated, gamma=inf": lambda: kmt_ref.lloyd_transformer(3, 4),
    "Theorem 2.1, validated, gamma=1e4": lambda: kmt_ref.lloyd_transformer(3, 4, gamma=1e4),
    "Theorem 2.1, all-attention, gamma=inf": lambda: kmt_ref.lloyd_transformer(3, 4, config="all-attention"),
    "Theorem 2.1, all-attention, gamma=50": lambda: kmt_ref.lloyd_transformer(3, 4, gamma=50.0, config="all-attention"),
    "Theorem 2.1, paper, gamma=inf": lambda: kmt_ref.lloyd_transformer(3, 4, config="paper"),
    "Theorem 2.2 (dot product + FFN)": lambda: kmt_ref.dot_product_lloyd_transformer(3, 4),
    "Theorem 2.2, all-attention, gamma=inf": lambda: kmt_ref.dot_product_lloyd_transformer(3, 4,
                                                                                        config="all-attention"),
    "soft k-means": lambda: kmt_ref.soft_kmeans_transformer(3, 4, beta=5.0),
    "spherical k-means": lambda: kmt_ref.spherical_kmeans_transformer(3, 4),
    "trimmed k-means": lambda: kmt_ref.trimmed_kmeans_transformer(3, 4, threshold=1.0),
    "robust k-means": lambda: kmt_ref.robust_kmeans_transformer(3, 4),
    "randomized k-medoids": lambda: kmt_ref.kmedoids_transformer(3, 4, temperature=0.5),
    "learned (d+k tokens)": lambda: to_transformer(init_params(ModelConfig(3, 4), np.random.default_rng(0)),
                                                    ModelConfig(3, 4)),
    "learned (d tokens)": lambda: to_transformer(init_params(ModelConfig(3, 4, "d"), np.random.default_rng(1)),
                                                 ModelConfig(3, 4, "d")),
    "learned (tied)": lambda: to_transformer(init_params(ModelConfig(3, 4, tied=True), np.random.default_rng(2)),
                                             ModelConfig(3, 4, tied=True)),
}
# every registered variant, at its first parameter value
MODELS.update({f"variant: {name}": (lambda v=v: v.build(3, 4)) for name, v in VARIANTS.items()})


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_runs_the_same_through_the_kernels_and_the_reference(name):
    model = MODELS[name]()
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(3), n=120, d=3, k=4)
    P, Q = model._embed(X, init)
    for _ in range(3):  # several layers: the second and third see tokens the first produced
        fast = transformer_layer(P, Q, model.blocks, model.ffn, model.norm,
                                 rng=np.random.default_rng(7), engine=Engine())
        ref = transformer_layer(P, Q, model.blocks, model.ffn, model.norm,
                                rng=np.random.default_rng(7), engine=REFERENCE)
        for a, b in zip(fast, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        P, Q = fast


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_block_attends_the_same_through_the_kernels_and_the_reference(name):
    model = MODELS[name]()
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(4), n=50, d=3, k=4)
    P, Q = model._embed(X, init)
    inputs = {"CAX": (P, Q), "SAX": (P, P), "CAC": (Q, P), "SAC": (Q, Q)}
    for block_name, (Zq, Zk) in inputs.items():
        block = model.blocks[block_name]
        fast = kernels.attend(Zq, Zk, block, rng=np.random.default_rng(1))
        ref = attention.attend(Zq, Zk, block, rng=np.random.default_rng(1))
        np.testing.assert_allclose(fast, ref, rtol=1e-12, atol=1e-12, err_msg=block_name)
        part, rows = kernels.attend_parts(Zq, Zk, block, rng=np.random.default_rng(1))
        if rows is not None:
            np.testing.assert_array_equal(fast[..., rows], part)
            assert not np.any(np.delete(fast, np.arange(fast.shape[-1])[rows], axis=-1))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_layer_that_may_overwrite_its_tokens_computes_the_same_numbers(name):
    model = MODELS[name]()
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(5), n=90, d=3, k=4)
    P, Q = model._embed(X, init)
    for _ in range(3):
        kept = P.copy(), Q.copy()
        copied = transformer_layer(P, Q, model.blocks, model.ffn, model.norm, rng=np.random.default_rng(7))
        np.testing.assert_array_equal(P, kept[0])  # without overwrite, the tokens are never written
        np.testing.assert_array_equal(Q, kept[1])
        mine = P.copy(), Q.copy()
        overwritten = transformer_layer(*mine, model.blocks, model.ffn, model.norm, rng=np.random.default_rng(7),
                                        overwrite=True)
        for a, b in zip(overwritten, copied, strict=True):
            np.testing.assert_array_equal(a, b)
        P, Q = copied


@pytest.mark.parametrize("name", sorted(MODELS))
def test_blocks_added_into_the_tokens_a_chunk_at_a_time_compute_the_reference_numbers(name, monkeypatch):
    # Chunks of a few queries: every block that is computed in chunks is added into the tokens chunk by chunk.
    monkeypatch.setattr(kernels.fast, "CACHE_ELEMENTS", 16)
    monkeypatch.setattr(kernels.plain, "STREAM_ELEMENTS", 16)
    model = MODELS[name]()
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(6), n=70, d=3, k=4)
    P, Q = model._embed(X, init)
    for _ in range(2):
        ref = transformer_layer(P, Q, model.blocks, model.ffn, model.norm, rng=np.random.default_rng(7),
                                engine=REFERENCE)
        fast = transformer_layer(P.copy(), Q.copy(), model.blocks, model.ffn, model.norm,
                                 rng=np.random.default_rng(7), overwrite=True)
        for a, b in zip(fast, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        P, Q = ref


def test_only_a_residual_whose_second_block_reads_nothing_the_first_writes_is_added_in_place():
    # Theorem 2.1: the resets write what the cross-attentions do not read; both residuals in place.
    model = kmt_ref.lloyd_transformer(3, 4)
    X = np.random.default_rng(2).random((30, 3))
    P, Q = model.layout.embed(X, X[:4])
    P1, Q1 = transformer_layer(P, Q, model.blocks, overwrite=True)
    assert P1 is P and Q1 is Q
    width = model.layout.width
    blocks = model.blocks
    assert kernels.adds_in_place(blocks["SAX"], blocks["CAX"], width, True, False)
    # cross-attention first (the order of a softmax reset): SAX reads the assignments CAX writes
    assert not kernels.adds_in_place(blocks["CAX"], blocks["SAX"], width, False, True)
    # a softmax self-attention that reads, as keys, the assignments it writes: later chunks would see earlier ones
    soft = kmt_ref.lloyd_transformer(3, 4, gamma=50.0, config="all-attention").blocks["SAX"]
    assert not kernels.adds_in_place(blocks["SAX"], soft, width, True, True)
    assert kernels.adds_in_place(blocks["SAX"], soft, width, True, False)
    learned = MODELS["learned (d+k tokens)"]()
    P, Q = learned.layout.embed(X, X[:4])
    P1, Q1 = transformer_layer(P, Q, learned.blocks, overwrite=True)
    assert P1 is not P and Q1 is not Q


@pytest.mark.parametrize("k", [5, kernels.plain.FEW_SOFTMAX_KEYS, kernels.plain.FEW_SOFTMAX_KEYS + 1])
@pytest.mark.parametrize("build", [kmt_ref.lloyd_transformer, kmt_ref.dot_product_lloyd_transformer])
@pytest.mark.parametrize("gamma", [1.0, 300.0, 1e4])  # every weight live; some dead; most dead
def test_a_softmax_of_few_keys_added_one_key_per_row_is_the_one_by_rows_bit_for_bit(monkeypatch, k, build, gamma):
    # several chunks of queries (the last one short: BLAS's product rounds a chunk's last rows its own way)
    model = build(3, k, gamma=gamma)
    X = np.random.default_rng(k).random((14_003, 3))
    P, Q = model.layout.embed(X, X[:k])
    block = model.blocks["CAX"]
    calls = []
    monkeypatch.setattr(kernels.plain, "softmax_columns",
                        lambda *a: calls.append(1) or kernels.softmax.softmax_columns(*a))
    out = kernels.add_attention(P.copy(), P, Q, block)
    assert bool(calls) == (k <= kernels.plain.FEW_SOFTMAX_KEYS)
    monkeypatch.setattr(kernels.plain, "FEW_SOFTMAX_KEYS", 0)
    np.testing.assert_array_equal(out, kernels.add_attention(P.copy(), P, Q, block))
    np.testing.assert_allclose(out, P + attention.attend(P, Q, block), rtol=0, atol=1e-10)  # the scores' rounding


def test_column_sums_refuse_rows_numpy_would_sum_in_halves():
    # above 128 terms NumPy's pairwise sum splits a row in two: column_sums would not have its bits
    with pytest.raises(ValueError, match=r"at most 128 rows; got T.shape=\(129, 3\)"):
        kernels.softmax.column_sums(np.ones((129, 3)))
    np.testing.assert_array_equal(kernels.softmax.column_sums(np.ones((128, 3))), 128.0)


def test_the_hardmax_adds_each_points_nearest_centers_ids_exactly_at_ties():
    # x = 1 is exactly halfway between 0 and 2, x = 0.5 is not; the id rows are added where they are 1.
    model = kmt_ref.lloyd_transformer(1, 3)
    block = model.blocks["CAX"]
    P, Q = model.layout.embed(np.array([[1.0], [0.5], [5.0]]), np.array([[0.0], [2.0], [2.0]]))
    out = np.full(P.shape, -0.25)
    kernels.add_attention(out, P, Q, block)
    np.testing.assert_array_equal(out[:, 1:], [[-0.25 + 1 / 3] * 3, [0.75, -0.25, -0.25], [-0.25, 0.25, 0.25]])
    np.testing.assert_array_equal(out[:, 0], -0.25)
    labels, tied = kmt_ref.geometry.nearest_center(np.array([[1.0], [0.5]]), np.array([[0.0], [2.0], [2.0]]), ties=True)
    np.testing.assert_array_equal(labels, [0, 0])
    assert list(tied) == [(0,)]
    np.testing.assert_array_equal(tied[(0,)], [True, True, True])


def test_the_dot_product_hardmax_splits_a_tie_and_keeps_a_nan_as_the_reference_does():
    model = kmt_ref.dot_product_lloyd_transformer(1, 3)
    P, Q = model.layout.embed(np.array([[1.0], [0.5], [5.0]]), np.array([[0.0], [2.0], [2.0]]))
    block = model.blocks["CAX"]
    fast, ref = kernels.attend(P, Q, block), attention.attend(P, Q, block)
    np.testing.assert_array_equal(fast, ref)
    np.testing.assert_array_equal(model.layout.read(fast, "y"), [[1 / 3] * 3, [1, 0, 0], [0, 0.5, 0.5]])
    P[1, 0] = np.nan  # (the reference's full-width product also spreads it to coordinates no block writes)
    with np.errstate(invalid="ignore"):
        fast, ref = kernels.attend(P, Q, block), attention.attend(P, Q, block)
    np.testing.assert_array_equal(model.layout.read(fast, "y"), model.layout.read(ref, "y"))
    assert np.isnan(model.layout.read(fast, "y")[1]).all()


def test_a_diagonal_projection_is_a_scaling_with_the_products_numbers():
    from kmt_ref.kernels.structure import _projection, affine

    W = np.diag([2.0, 2.0, -1.0, 0.5])
    projection = _projection(W, None, None)
    np.testing.assert_array_equal(projection.diagonal, [2.0, 2.0, -1.0, 0.5])
    Z = np.random.default_rng(3).normal(size=(40, 4)) * 1e3
    np.testing.assert_array_equal(projection(Z), affine(Z, W, None))
    b = np.arange(4.0)
    np.testing.assert_array_equal(_projection(W, b, None)(Z), affine(Z, W, b))
    Z[3, 1] = np.inf  # 0 * inf is nan in the product: the product decides
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(projection(Z), affine(Z, W, None))
    assert _projection(W + np.eye(4, k=1), None, None).diagonal is None


def test_batches_of_tasks_run_the_same_as_one_task_at_a_time():
    model = kmt_ref.lloyd_transformer(2, 3, gamma=30.0, config="all-attention")
    rng = np.random.default_rng(5)
    X = rng.random((4, 40, 2))
    init = X[:, :3].copy()
    P, Q = model.layout.embed(X, init)
    batched = transformer_layer(P, Q, model.blocks)
    for b in range(4):
        single = transformer_layer(P[b], Q[b], model.blocks)
        np.testing.assert_array_equal(batched[1][b], single[1])


def test_task_chunks_do_not_change_a_single_bit(monkeypatch):
    config = ModelConfig(4, 3)
    theta = init_params(config, np.random.default_rng(0))
    X = np.random.default_rng(1).random((6, 30, 4))
    init = X[:, :3].copy()
    import autograd

    from kmt_ref.learning.config import TrainConfig
    from kmt_ref.learning.train import batch_loss

    cfg = TrainConfig(d=4, k=3, n=30, batch=6)
    monkeypatch.setattr(pool, "TASK_CHUNK_ELEMENTS", 2**30)  # the whole batch at once
    whole = autograd.value_and_grad(batch_loss)(theta, X, init, cfg)
    monkeypatch.setattr(pool, "TASK_CHUNK_ELEMENTS", 1)  # a task at a time
    one = autograd.value_and_grad(batch_loss)(theta, X, init, cfg)
    assert whole[0] == one[0]
    assert np.array_equal(whole[1], one[1])


def test_weights_are_frozen_values():
    model = kmt_ref.lloyd_transformer(2, 3)
    with pytest.raises(ValueError, match="read-only"):
        model.blocks["CAX"].Wq[0, 0] = 7.0
    # Blocks built from one array hold separate copies.
    assert model.blocks["CAX"].Wq is not model.blocks["SAX"].Wq
    with pytest.raises(TypeError):
        model.blocks["CAX"].params["threshold"] = 1.0


def test_register_normalizer_refuses_bad_names_and_duplicates():
    with pytest.raises(ValueError, match="already a normalizer"):
        attention.register_normalizer("softmax", attention.NORMALIZERS["softmax"])
    with pytest.raises(ValueError, match="name="):
        attention.register_normalizer("", attention.NORMALIZERS["softmax"])
    with pytest.raises(ValueError, match="normalizer="):
        attention.register_normalizer("mine", lambda s: s)


@pytest.mark.parametrize("k", [9, kernels.plain.FEW_KEYS, 40])  # one key per row (up to FEW_KEYS), and by rows
def test_the_hardmax_added_where_it_is_not_zero_equals_the_dense_add(k):
    rng = np.random.default_rng(8)
    scores = rng.integers(0, 4, size=(200, k)).astype(float)  # ties in many rows
    scores[7, 3] = np.nan
    scores[8] = -np.inf  # all tied
    scores[9, [2, 5]] = np.inf
    tokens = rng.normal(size=(200, k + 3))
    before = scores.copy()
    with np.errstate(invalid="ignore"):
        dense = tokens[:, 1 : k + 1] + normalizers.hardmax_average(scores)
        added = kernels.plain.add_members(tokens.copy()[:, 1 : k + 1], *kernels.plain.hardmax_members(scores))
    np.testing.assert_array_equal(added, dense)
    np.testing.assert_array_equal(scores, before)
    assert np.isnan(added[7]).all() and not np.isnan(np.delete(added, 7, axis=0)).any()


@pytest.mark.parametrize("r", [1, 5, kernels.plain.FEW_KEYS, 40])  # one key per row (up to FEW_KEYS), and by rows
def test_the_dot_hardmax_from_blas_has_the_members_of_the_fixed_order_scores(r):
    # Rows that BLAS's rounding could decide otherwise: integer scores that tie, keys an ulp apart, scores of
    # a thousand equal terms, a nan and an overflow. Every row's members are the fixed-order scores' own.
    rng = np.random.default_rng(9)
    D = 12
    queries = rng.normal(size=(3000, D))
    keys = rng.normal(size=(r, D))
    queries[:1000] = np.round(queries[:1000] * 2)
    keys[: r // 2] = np.round(keys[: r // 2] * 2)
    if r > 1:
        keys[1] = np.nextafter(keys[0], np.inf)
    queries[5, 0], queries[6] = np.nan, 1e308
    with np.errstate(invalid="ignore", over="ignore"):
        got = kernels.plain.dot_hardmax_members(queries, keys)
        want = kernels.plain.hardmax_members(products.fixed_order_scores("dot", queries, keys))
    assert got[1].keys() == want[1].keys() and 5 in want[1]
    for i, w in want[1].items():
        np.testing.assert_array_equal(got[1][i], w)
    alone = np.setdiff1d(np.arange(3000), list(want[1]))
    np.testing.assert_array_equal(got[0][alone], want[0][alone])
    wide = np.ones((4, 1000)) / 3  # sums of many equal terms: a BLAS order may round them apart
    members = kernels.plain.dot_hardmax_members(wide[:2], wide)
    assert members[1].keys() == {0, 1}


LABEL_MODELS = {"Theorem 2.1": kmt_ref.lloyd_transformer, "Theorem 2.2": kmt_ref.dot_product_lloyd_transformer,
                "Theorem 2.1, paper": lambda d, k: kmt_ref.lloyd_transformer(d, k, config="paper")}


@pytest.mark.parametrize("name", sorted(LABEL_MODELS))
def test_a_run_on_labels_computes_the_layers_assignments_and_its_centers_to_rounding(name):
    # The labels engine runs the validated constructions at gamma = inf on labels; the reference engine on the
    # residual sums. Ties (integer data), an empty cluster, a batch, and both settings of keep_assignments.
    model = LABEL_MODELS[name](2, 4)
    assert (kernels.labels.label_layer(model) is not None) == ("paper" not in name)
    rng = np.random.default_rng(11)
    X = rng.integers(0, 5, size=(3, 60, 2)).astype(float)
    init = X[:, :4].copy()
    init[0, 3] = [50.0, 50.0]  # far from every point: empty
    with pytest.warns(UserWarning, match="shares point"):
        fast = model.run(X, init, 4, engine=LABELS)
    with pytest.warns(UserWarning, match="shares point") as told:
        ref = model.run(X, init, 4, engine=REFERENCE)
    lean = model.run(X, init, 4, keep_assignments=False, warn=False, engine=LABELS)
    np.testing.assert_allclose(fast.centers, ref.centers, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(fast.labels, ref.labels)
    np.testing.assert_array_equal(fast.assignments, ref.assignments)
    np.testing.assert_array_equal(lean.centers, fast.centers)
    np.testing.assert_array_equal(lean.labels, fast.labels)
    with pytest.warns(UserWarning) as again:
        model.run(X, init, 4, engine=LABELS)
    assert str(again[0].message) == str(told[0].message)  # the same first shared point
    for b in range(3):
        alone = model.run(X[b], init[b], 4, warn=False, engine=LABELS)
        np.testing.assert_array_equal(fast.centers[:, b], alone.centers)


def test_query_sizes_are_the_rows_one_norms_a_chunk_at_a_time_for_a_batch_and_a_strided_view():
    from kmt_ref.kernels.plain import query_sizes

    q = np.random.default_rng(8).normal(size=(3, 40_000, 5))  # several chunks per task
    for view in (q, q[1], q[:, ::3, 1:]):
        np.testing.assert_allclose(query_sizes(view), np.sum(np.abs(view), axis=-1), rtol=1e-14, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert query_sizes(np.array([[1e308, -1e308]]))[0] == np.inf  # too large to hold: inf, quietly


@pytest.mark.parametrize("d", [1, 3])
def test_a_projection_of_the_points_x_and_one_made_from_x_has_the_tokens_numbers(d):
    # Theorem 2.2's queries [2x | 1] and other scalings of x and the constant one, made without the tokens;
    # a projection that reads anything else of the point tokens is left to them (None).
    from kmt_ref.kernels.labels import _of_points
    from kmt_ref.kernels.structure import _projection

    layout = kmt_ref.TokenLayout(d, 2, ("x", "y", "sqnorm", "one"))
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2, 7, d)) * 1e3
    X[0, 0, 0] = -0.0
    P = layout._tokens(X, is_center=False)
    x, one = layout.slices["x"], layout.slices["one"]
    every_other_x = layout.projector("one")
    every_other_x[np.arange(x.start, x.stop, 2), np.arange(x.start, x.stop, 2)] = 3.0  # a gather at d = 3
    made = 0
    for W, b in [(2 * layout.projector("x") + layout.projector("one"), None), (layout.projector("x"), None),
                 (-layout.projector("x", "one"), None), (np.diag(np.arange(1.0, layout.width + 1)) *
                 np.diag(layout.projector("x", "one")), np.arange(layout.width) * 0.5),
                 (np.diag(np.arange(1.0, layout.width + 1)) * np.diag(layout.projector("one", "x")), None),
                 (every_other_x, None), (layout.projector("x", "sqnorm"), None), (layout.projector("y"), None)]:
        projection = _projection(W, b, np.flatnonzero(np.any(W != 0, axis=1) | (b is not None)))
        got = _of_points(projection, X, x, one)
        reads_more = np.any(W[:, layout.slices["y"]] != 0) or np.any(W[:, layout.slices["sqnorm"]] != 0)
        if reads_more or (projection.sign == 0 and projection.diagonal is None):
            assert got is None
            continue
        made += 1
        np.testing.assert_array_equal(got, projection(P))
    assert made == 5


@pytest.mark.parametrize("spread", [400.0, 20_000.0])  # some dead scores (masked), most (exp of the live only)
def test_softmax_kernel_equals_the_reference_softmax_bit_for_bit_at_the_edges(spread):
    rng = np.random.default_rng(5)
    S = -rng.exponential(spread, size=(300, 7))
    S[::3, 0] = 0.0
    S[1:3, 0] = 0.0
    S[1, 2] = -745.1  # exp is the smallest subnormal: kept
    S[2, 3] = -746.5  # exp is 0: skipped
    S[4, 1] = -np.inf  # a score of -inf has weight 0, not nan
    S[5, :] = -np.inf
    S[5, 4] = 3.0
    S[6, 2] = np.nan  # nan stays nan, as in the reference
    S[7, :5] = [0.0, -0.1, -0.3, -1.0, -2.0]  # more than two live weights: a row summed in full
    S[8, :3] = [0.0, -0.5, -700.0]  # two
    tokens = rng.normal(size=(300, 10))
    with np.errstate(invalid="ignore"):
        ref = attention.softmax(S)
        fast = kernels.softmax.softmax_inplace(S.copy())
        added = kernels.softmax.softmax_inplace(S.copy(), add_to=tokens.copy()[:, 2:9])  # a strided view
        by_key = kernels.softmax.softmax_columns(np.ascontiguousarray(S.T), tokens.copy()[:, 2:9])  # one key per row
    np.testing.assert_array_equal(fast, ref)
    np.testing.assert_array_equal(added, tokens[:, 2:9] + ref)
    np.testing.assert_array_equal(by_key, tokens[:, 2:9] + ref)
    wide = np.full((400, 16), -spread)
    wide[:, 0] = 0.0
    wide[:40] = -rng.uniform(0.0, 5.0, size=(40, 16))  # rows of 16 live weights: NumPy sums them pairwise
    wide[50, [1, 9]] = [-34.6, -30.6]  # three live weights: NumPy's pairwise sum is not the sequential one
    crowded = wide.copy()
    crowded[:100, :3] = -rng.uniform(0.0, 5.0, size=(100, 3))  # a quarter of the rows with three live weights
    for scores in (wide, crowded):  # a few rows summed in full; so many that every row is
        np.testing.assert_array_equal(kernels.softmax.softmax_inplace(scores.copy()), attention.softmax(scores))
        np.testing.assert_array_equal(kernels.softmax.softmax_columns(scores.T.copy(), np.zeros(scores.shape)),
                                      attention.softmax(scores))
    with np.errstate(invalid="ignore"):
        assert (np.mean(S - S.max(-1, keepdims=True) < -746) > 0.75) == (spread > 1000)
    assert np.all(fast[4:6][np.isneginf(S[4:6])] == 0.0)
    assert fast[1, 2] > 0 and fast[2, 3] == 0


@pytest.mark.parametrize("keys, rows", [(100, 327), (200, 256), (300, 3_495)])
def test_plain_chunks_hold_min_rows_queries_only_up_to_min_rows_keys(monkeypatch, keys, rows):
    # Up to MIN_ROWS keys: cache-sized chunks of at least MIN_ROWS queries; more keys keep the streamed chunks
    # (chunks of another size would round BLAS's products differently).
    sizes = []
    chunk = kernels.plain.plain_chunk
    monkeypatch.setattr(kernels.plain, "plain_chunk", lambda q, *a: sizes.append(q.shape[-2]) or chunk(q, *a))
    rng = np.random.default_rng(3)
    block = attention.Block(np.eye(2), np.eye(2), np.eye(2), score="euclidean", normalizer="softmax", gamma=1.0)
    Zq, Zk = rng.normal(size=(4000, 2)), rng.normal(size=(keys, 2))
    np.testing.assert_allclose(kernels.attend(Zq, Zk, block), attention.attend(Zq, Zk, block), rtol=1e-12)
    assert sizes[0] == rows  # 2**15 // 100; MIN_ROWS; 2**20 // 300


def test_linear_attention_over_chunks_of_keys_equals_lloyd_with_an_empty_cluster(monkeypatch):
    # Force the key-streamed path (few centers, "many" points) on a small problem.
    monkeypatch.setattr(kernels.plain, "STREAM_ELEMENTS", 64)
    calls = []
    streamed = kernels.plain.linear_over_keys
    monkeypatch.setattr(kernels.plain, "linear_over_keys", lambda *a: calls.append(1) or streamed(*a))
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    init = np.vstack([X[:3], [[50.0, 50.0, 50.0]]])  # the last center gets no point: uniform attention
    model = kmt_ref.lloyd_transformer(3, 4)
    ref = kmt_ref.lloyd(X, init, 5)
    P, Q = model._embed(X, init)
    for t in range(5):  # the layer's residual sums (a run carries labels instead)
        P, Q = transformer_layer(P, Q, model.blocks)
        np.testing.assert_array_equal(np.argmax(model.layout.read(P, "y"), axis=-1), ref.labels[t])
        np.testing.assert_allclose(model.layout.read(Q, "x"), ref.centers[t + 1], rtol=0, atol=1e-13)
    np.testing.assert_allclose(ref.centers[1, 3], X.mean(axis=0), atol=1e-13)
    assert len(calls) == 5  # one CAC block per layer took the streamed path
    block = model.blocks["CAC"]
    with pytest.raises(ValueError, match="non-negative scores"):
        streamed(-np.ones((2, 3)), np.ones((300, 3)), X, block.score)


def test_streamed_linear_attention_with_the_ids_as_queries_skips_the_product(monkeypatch):
    # CAC's queries are the centers' ids (the identity): its scores are then the keys, transposed, and the
    # sums are read from them as they lie (equal to rounding to the product's, not bit for bit: BLAS sums a
    # transposed operand in another order).
    monkeypatch.setattr(kernels.plain, "STREAM_ELEMENTS", 64)
    monkeypatch.setattr(kernels.plain, "ASSIGN_ELEMENTS", 64)
    rng = np.random.default_rng(8)
    keys = rng.random((500, 6)) * (rng.random((500, 6)) < 0.4)
    keys[:, 5] = 0.0  # a center with no point: uniform attention
    values = rng.normal(size=(500, 3))
    with monkeypatch.context() as m:
        m.setattr(kernels.plain, "is_identity", lambda values: False)  # the scores computed, then the product
        product = kernels.plain.linear_over_keys(np.eye(6), keys, values, "dot")
    monkeypatch.setattr(kernels.plain, "fixed_order_scores", None)  # the shortcut computes no score
    shortcut = kernels.plain.linear_over_keys(np.eye(6), keys, values, "dot")
    np.testing.assert_allclose(shortcut, product, rtol=1e-14, atol=1e-16)
    exact = np.array([values[keys[:, j] > 0].T @ keys[keys[:, j] > 0, j] / keys[:, j].sum() for j in range(5)])
    np.testing.assert_allclose(shortcut[:5], exact, rtol=1e-13)
    np.testing.assert_allclose(shortcut[5], values.mean(axis=0), rtol=1e-14)


def test_streamed_linear_attention_runs_each_task_of_a_batch_as_if_alone(monkeypatch):
    monkeypatch.setattr(kernels.plain, "STREAM_ELEMENTS", 64)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(3, 200, 2))
    init = X[:, :4] + 0.01
    model = kmt_ref.lloyd_transformer(2, 4)
    batch = model.run(X, init, 3)
    for b in range(3):
        alone = model.run(X[b], init[b], 3)
        np.testing.assert_array_equal(batch.centers[:, b], alone.centers)
        np.testing.assert_array_equal(batch.labels[:, b], alone.labels)


def test_a_block_on_a_large_batch_gives_each_task_the_numbers_it_has_alone():
    # The paper's sizes: batch-sized row chunks would cut each task's rows differently from a task
    # alone, and BLAS rounds a row by where it falls in its block (this differed by 2e-16 before).
    from kmt_ref.learning import ModelConfig, init_params, to_transformer

    config = ModelConfig(32, 10)
    model = to_transformer(init_params(config, np.random.default_rng(0)), config)
    X = np.random.default_rng(0).normal(size=(32, 512, 32))
    P, Q = model.layout.embed(X, X[:, :10])
    block = model.blocks["CAX"]
    together = kernels.add_attention(np.zeros(P.shape), P, Q, block)
    fewer = kernels.add_attention(np.zeros(P[:8].shape), P[:8], Q[:8], block)
    np.testing.assert_array_equal(together[:8], fewer)
    np.testing.assert_array_equal(together[3], kernels.add_attention(np.zeros(P[3].shape), P[3], Q[3], block))


@pytest.mark.parametrize("k", [1, 5, kernels.plain.FEW_KEYS, 40])  # one center per row up to FEW_KEYS, then by rows
@pytest.mark.parametrize("batch", [(), (3,)])
def test_a_run_s_labels_are_numpy_s_arg_max_of_the_assignments_at_ties_and_non_finite_rows(k, batch):
    from kmt_ref.readout import _labels

    rng = np.random.default_rng(k)
    tokens = rng.integers(0, 3, size=batch + (70_000 // k + 7, k + 4)).astype(float)  # several chunks, ties
    Y = tokens[..., 2 : k + 2]
    assert np.array_equal(_labels(Y)[0], np.argmax(Y, axis=-1)) and _labels(Y)[1]
    for row, value in ((3, np.nan), (5, -np.inf), (8, np.inf)):
        Y[..., row, min(k - 1, 1)] = value
    Y[..., 9, :] = -np.inf
    before = Y.copy()
    labels, finite = _labels(Y)
    assert not finite and np.array_equal(labels, np.argmax(Y, axis=-1))
    np.testing.assert_array_equal(Y, before)
    tied = np.ones((300, k), np.float32)  # every center tied: the sum of all k powers of two is exact in float64
    assert np.array_equal(_labels(tied)[0], np.zeros(300))


@pytest.mark.parametrize("view", ["block of tokens", "whole", "reversed rows", "every other column", "float32"])
def test_add_at_adds_like_numpy_s_fancy_index_into_any_view(view):
    from kmt_ref.kernels.softmax import add_at

    rng = np.random.default_rng(3)
    tokens = rng.normal(size=(300, 20)).astype(np.float32 if view == "float32" else float)
    out = {"block of tokens": tokens[:, 4:13], "whole": tokens, "reversed rows": tokens[::-1, 2:9],
           "every other column": tokens[:, ::2], "float32": tokens[10:, 3:7]}[view]
    cells = rng.choice(out.size, size=out.size // 3, replace=False)  # distinct (row, col) pairs
    rows, cols = np.divmod(cells, out.shape[1])
    values = rng.normal(size=rows.size).astype(out.dtype)
    expected = tokens.copy()
    {"block of tokens": expected[:, 4:13], "whole": expected, "reversed rows": expected[::-1, 2:9],
     "every other column": expected[:, ::2], "float32": expected[10:, 3:7]}[view][rows, cols] += values
    assert add_at(out, rows, cols, values) is out
    np.testing.assert_array_equal(tokens, expected)  # the other coordinates untouched


#: The models with no softmax block, whose decisions at (near) ties are rules, not rounding.
HARD_MODELS = sorted(name for name, build in MODELS.items()
                     if not any(b.normalizer.startswith("softmax") for b in build().blocks.values()))


def _tie_problem(seed, offset, wobble):
    """Four centers, the midpoints of random pairs of them (exact ties at ``wobble = 0``, near ties within a few
    ulps otherwise) and the centers themselves (so that k-medoids' initial centers are data points)."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((4, 3)) + offset
    pairs = rng.integers(4, size=(24, 2))
    X = (C[pairs[:, 0]] + C[pairs[:, 1]]) / 2 + wobble * rng.standard_normal((24, 3)) * max(1.0, offset)
    return np.vstack([X, C]), C


@pytest.mark.filterwarnings("ignore:.*point self-attention")  # both engines alike is the property here
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), offset=st.sampled_from([0.0, 1e3, 1e6]),
       wobble=st.sampled_from([0.0, 1e-16, 1e-13]))
@pytest.mark.parametrize("name", sorted(HARD_MODELS))
def test_every_model_decides_near_and_exact_ties_the_same_in_both_engines(name, seed, offset, wobble):
    # One rule (kmt_ref.attention's docstring): a Euclidean hardmax averages over the keys nearest in exact
    # arithmetic, every other decision is taken on fixed-order scores; both engines apply it, so from the same
    # tokens they decide alike, layer after layer. (Their centers agree to rounding, and a point that rounding
    # of the centers puts on either side of a tie may then be decided either way in a later layer, as the same
    # centers rounded by another CPU's BLAS would: hence one layer at a time, from the same tokens.)
    model = MODELS[name]()
    X, C = _tie_problem(seed, offset, wobble)
    P, Q = model._embed(X, C)
    scale = max(1.0, offset)
    for layer in range(3):
        fast, ref = (transformer_layer(P, Q, model.blocks, model.ffn, model.norm,
                                       rng=np.random.default_rng(layer), engine=engine)
                     for engine in (Engine(), REFERENCE))
        for a, b in zip(fast, ref, strict=True):  # a decision taken otherwise moves a token by far more
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale)
        P, Q = fast


def test_equal_rows_of_weights_give_equal_rows_of_the_product():
    rng = np.random.default_rng(0)
    W = rng.random((6, 1000))
    W[[1, 4]] = W[3]  # three equal rows
    W[5] = W[0][::-1]  # the same entries in other places: another row
    V = rng.standard_normal((1000, 3)) + 1e3
    out = products.rows_product(W, V)
    np.testing.assert_array_equal(out[1], out[3])
    np.testing.assert_array_equal(out[4], out[3])
    np.testing.assert_allclose(out, W @ V, rtol=1e-13)
    assert not np.array_equal(out[5], out[0])
    first, inverse = products._row_groups(W)
    assert first.tolist() == [0, 1, 2, 5] and inverse.tolist() == [0, 1, 2, 1, 1, 3]
    assert products._row_groups(W[[0, 2, 5]]) is None
    # rows with the same sum and the same first non-zero entry, equal or not, are told apart by their entries
    same_key = np.array([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [1.0, 2.0, 3.0], [0.0, -0.0, 0.0], [-0.0, 0.0, -0.0]])
    first, inverse = products._row_groups(same_key)
    assert first.tolist() == [0, 1, 3] and inverse.tolist() == [0, 1, 0, 2, 2]
    keyed = products.rows_product(same_key, V[:3])
    np.testing.assert_array_equal(keyed[0], keyed[2])
    np.testing.assert_allclose(keyed, same_key @ V[:3], rtol=1e-14)
    batch = products.rows_product(np.stack([W, W[::-1]]), V)  # a task at a time
    np.testing.assert_array_equal(batch[0], out)
    np.testing.assert_array_equal(batch[1][[1, 2, 4]], out[[4, 3, 1]])


@pytest.mark.parametrize("score", ["dot", "euclidean"])
def test_fixed_order_scores_are_the_sums_in_order_whatever_the_chunks(score, monkeypatch):
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((2, 7, 5)) * 1e3, rng.standard_normal((2, 4, 5))
    A[:, 3] = A[:, 0]  # equal queries score equal
    whole = products.fixed_order_scores(score, A, B)
    for b, a, c in np.ndindex(2, 7, 4):
        terms = A[b, a] * B[b, c] if score == "dot" else -((A[b, a] - B[b, c]) ** 2)
        total = 0.0
        for t in terms:  # left to right, each term rounded on its own
            total += t
        assert whole[b, a, c] == total
    np.testing.assert_array_equal(whole[:, 3], whole[:, 0])
    np.testing.assert_allclose(whole, products.SCORES[score](A, B), rtol=1e-12, atol=1e-6)
    monkeypatch.setattr(products, "FIXED_ORDER_ELEMENTS", 4)  # one query row at a time
    np.testing.assert_array_equal(products.fixed_order_scores(score, A, B), whole)


def test_the_reference_engine_labels_a_near_tie_as_exact_arithmetic_does():
    # [1, 1, 0] is within rounding of equidistant from the third and fourth centers; exactly, the third is nearer.
    C = np.array([[1.05, -.95, -.95], [.05, .05, .05], [1.05, 2.05, .05], [1.05, 1.05, 1.05]])
    X = np.vstack([[1., 1., 0.], C])
    assert kmt_ref.lloyd(X, C, 1).labels[0].tolist() == [2, 0, 1, 2, 3]
    for engine in (Engine(), LABELS, REFERENCE):
        assert kmt_ref.lloyd_transformer(3, 4).run(X, C, 1, engine=engine).labels[0].tolist() == [2, 0, 1, 2, 3]


def test_centers_equal_in_exact_arithmetic_are_computed_equal_and_their_tie_is_kept():
    # Centers 1 and 2 start equal and average the same points with the same weights. A BLAS product rounds
    # each row by where it lies (on some CPUs' kernels an ulp apart, on others not); the layer computes equal
    # rows once, so after one layer they are still equal, and the second layer's tie is a tie in both engines,
    # on every CPU: the points are shared, and run(warn=True) names the tie.
    X = np.array([[c + j * np.spacing(c)] for c in (1000 - .125, 1000 - .1875) for j in range(-3, 4)])
    C = np.array([[1000 - .1875], [1000 - .125], [1000 - .125]])
    with pytest.warns(UserWarning, match="layer 1 shares point 0 between centers 1, 2"):
        runs = [kmt_ref.lloyd_transformer(1, 3).run(X, C, 2, engine=engine) for engine in (Engine(), LABELS, REFERENCE)]
    for run in runs:
        assert run.centers[1, 1, 0] == run.centers[1, 2, 0]
        np.testing.assert_array_equal(run.assignments[:, :7], [[[0, 0.5, 0.5]] * 7] * 2)
    np.testing.assert_array_equal(runs[0].centers, runs[1].centers)
    with pytest.warns(UserWarning, match="50% of the points have split assignments"), \
            pytest.warns(UserWarning, match="point 0 is exactly as near to center 1 as to center 2"):
        kmt_ref.lloyd_transformer(1, 3).run(X, C, 2, warn=True)


@pytest.mark.filterwarnings("ignore:.*point self-attention")
@pytest.mark.parametrize("build", [lambda: kmt_ref.lloyd_transformer(3, 5),
                                   lambda: kmt_ref.lloyd_transformer(3, 5, config="paper"),
                                   lambda: kmt_ref.lloyd_transformer(3, 5, config="all-attention"),
                                   lambda: kmt_ref.dot_product_lloyd_transformer(3, 5)],
                         ids=["validated", "paper", "all-attention", "Theorem 2.2"])
def test_two_clusters_emptied_in_one_layer_get_the_same_center_in_both_engines(build):
    # Both empty centers move to the mean of all the points: equal in exact arithmetic, so equal here (the
    # reset is added before the write, and equal weights give equal rows), whatever their old positions.
    # The next layer then sees their exact tie, as Lloyd's algorithm would, and warn=True names it.
    model, warned = build(), 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        X = rng.uniform(-1, 1, (23, 3))
        C = X[:5].copy()
        C[0], C[4] = rng.uniform(5, 9, 3), -rng.uniform(5, 9, 3)
        runs = []
        for engine in (Engine(), LABELS, REFERENCE):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                runs.append(model.run(X, C, 3, engine=engine, warn=True))
            tie = [w for w in caught if "tie" in str(w.message)]
            assert np.array_equal(runs[-1].centers[1, 0], runs[-1].centers[1, 4])
            shared = np.isin(np.flatnonzero(runs[-1].assignments[1, :, 0] > 0),
                             np.flatnonzero(runs[-1].assignments[1, :, 4] > 0)).any()
            assert bool(tie) == bool(shared)
            warned += bool(tie)
        np.testing.assert_array_equal(runs[0].labels, runs[1].labels)
        np.testing.assert_allclose(runs[0].centers, runs[1].centers, rtol=0, atol=1e-13)
    assert warned  # some draw puts a point nearest to the shared mean
