"""Checks for the chapter "Learning a clustering layer"."""

import math
import time

import numpy as np

from ..classical import kmeans_objective, lloyd
from ..layer import KMeansTransformer
from ..tasks import gaussian_mixture
from ..tokens import TokenLayout
from ._feedback import as_array, call, expect, expect_close, gradient, inputs


def _loss_by_definition(X, C, tau):
    """``sum_i sum_j softmax_j(-r_ij / tau) r_ij`` with plain Python floats (moderate tau only)."""
    total = 0.0
    for x in X:
        r = [float(np.sum((x - c) ** 2)) for c in C]
        w = [math.exp(-v / tau) for v in r]
        total += sum(wj * rj for wj, rj in zip(w, r, strict=True)) / sum(w)
    return total


def check_smoothed_loss(smoothed_loss):
    """Exercise 16: the smoothed k-means loss, an upper bound of the objective."""
    rng = np.random.default_rng(13)
    tasks = [gaussian_mixture(rng, n=20, d=2, k=3)[:2] for _ in range(3)]
    X, C = tasks[0]
    for tau in (0.1, 1.0):
        on = inputs(X=X, centers=C, tau=tau)
        got = as_array(call(smoothed_loss, X, C, tau, on=on), "loss", on, shape=())
        expect_close(got, _loss_by_definition(X, C, tau), "loss", on, rtol=1e-9,
                     hint="sum over points AND centers of softmax_j(-r_ij / tau) * r_ij; no mean, no log")
    XB, CB = np.array([t[0] for t in tasks]), np.array([t[1] for t in tasks])
    on = "  (a batch of 3 tasks)\n" + inputs(X=XB, centers=CB, tau=0.1)
    got = as_array(call(smoothed_loss, XB, CB, 0.1, on=on), "batch loss", on, shape=())
    expect_close(got, np.mean([_loss_by_definition(x, c, 0.1) for x, c in tasks]),
                 "loss of a batch (mean over tasks)", on, rtol=1e-9)
    for tau in (1e-6, 1e-12):  # exp(-r / tau) underflows to 0 unless the row maximum is subtracted
        on = "  (tiny tau: the loss must approach the k-means objective without NaN)\n" + inputs(
            X=X, centers=C, tau=tau)
        hint = "subtract the row maximum of -r_ij / tau before exp"
        got = as_array(call(smoothed_loss, X, C, tau, on=on), "loss", on, shape=(), hint=hint)
        expect_close(got, kmeans_objective(X, C), "loss at tiny tau", on, rtol=1e-4, hint=hint)
    for seed in range(5):
        r = np.random.default_rng(100 + seed)
        X_, C_ = r.uniform(size=(15, 3)), r.uniform(size=(4, 3))
        on = inputs(X=X_, centers=C_, tau=0.5)
        got = float(as_array(call(smoothed_loss, X_, C_, 0.5, on=on), "loss", on, shape=()))
        expect(got >= kmeans_objective(X_, C_) - 1e-12,
               f"upper bound violated: loss {got:.6g} < k-means objective {kmeans_objective(X_, C_):.6g}"
               f"\n  on input:\n{on}")
    on = "  (gradient in the centers, by autograd)\n" + inputs(X=X, centers=C, tau=0.1)
    g = as_array(call(gradient(smoothed_loss, 1), X, C, 0.1, on=on, traced=True), "gradient", on, shape=C.shape)
    h, numeric = 1e-6, np.zeros_like(C)
    for idx in np.ndindex(C.shape):
        e = np.zeros_like(C)
        e[idx] = h
        numeric[idx] = (_loss_by_definition(X, C + e, 0.1) - _loss_by_definition(X, C - e, 0.1)) / (2 * h)
    expect_close(g, numeric, "autograd gradient vs central differences", on, rtol=1e-4, atol=1e-6,
                 hint="write it with autograd.numpy so that it can be differentiated")
    return ("matches the definition, averages a batch, is stable at tiny tau, bounds the objective, "
            "has the right gradient")


def _held_out(d, k, n, n_tasks):
    rng = np.random.default_rng(2024)  # the reader never sees these tasks
    return [gaussian_mixture(rng, n=n, d=d, k=k)[:2] for _ in range(n_tasks)]


def check_train_tiny_model(train_tiny_model):
    """Exercise 17: a trained one-layer model that beats one Lloyd step on held-out tasks."""
    d, k, n = 2, 3, 32
    on = "    rng = numpy.random.default_rng(0)"
    start = time.perf_counter()
    model = call(train_tiny_model, np.random.default_rng(0), on=on)
    seconds = time.perf_counter() - start
    expect(isinstance(model, KMeansTransformer) and model.layout == TokenLayout(d, k),
           f"expected a KMeansTransformer with layout TokenLayout(d={d}, k={k}); got {model!r}")
    tasks = _held_out(d, k, n, 64)
    learned = np.mean([kmeans_objective(X, call(model.run, X, C, 1, on=on).centers[1]) for X, C in tasks])
    one_lloyd = np.mean([kmeans_objective(X, lloyd(X, C, 1).centers[1]) for X, C in tasks])
    ratio = learned / one_lloyd
    expect(ratio < 0.99,  # a clear margin: the exact construction ties with Lloyd up to rounding
           f"not better than one Lloyd step: mean objective after one layer {learned:.4f} vs after one "
           f"Lloyd step {one_lloyd:.4f} (ratio {ratio:.3f}, need < 0.99) on 64 held-out tasks "
           f"(n={n}, d={d}, k={k})\n  hint: start from the Theorem 2.1 weights at a moderate gamma and "
           "let Adam improve them; check that your loss decreases")
    return (f"objective ratio learned / one Lloyd step = {ratio:.3f} on 64 held-out tasks; "
            f"trained in {seconds:.1f} s")


def _block_weights(block, d, k, rng):
    """``(Wq, Wk, Wv)`` of a block, disguised as training would: scaled Equation 5 plus noise."""
    layout = TokenLayout(d, k)
    Px, Py = layout.projector("x"), layout.projector("y")
    reads, values = {"CAX": (Px, Py), "SAX": (Px, -Py), "CAC": (Py, Px), "SAC": (Py, -Px)}[block]
    noise = 0.08
    D = layout.width
    Wq = rng.uniform(0.6, 3.0) * reads + noise * rng.normal(size=(D, D))
    Wk = rng.uniform(0.6, 3.0) * reads + noise * rng.normal(size=(D, D))
    Wv = rng.uniform(0.5, 1.2) * values + noise * rng.normal(size=(D, D))
    return Wq, Wk, Wv


def check_name_block(name_block):
    """Exercise 18: name the block a (noisy, rescaled) weight triple belongs to."""
    rng = np.random.default_rng(15)
    d, k = 3, 4
    truth = [b for b in ("CAX", "SAX", "CAC", "SAC") for _ in range(3)]
    rng.shuffle(truth)
    for i, block in enumerate(truth):
        Wq, Wk, Wv = _block_weights(block, d, k, rng)
        on = f"  (weight triple #{i}, d={d}, k={k})\n" + inputs(Wq=Wq, Wk=Wk, Wv=Wv)
        got = call(name_block, Wq, Wk, Wv, d, k, on=on)
        expect(got == block,
               f"weight triple #{i}: expected {block!r}, got {got!r}\n  on input:\n{on}\n"
               "  hint: which coordinates do Wq and Wk read (x: positions, y: ids)? what does Wv write, "
               "and with which sign? compare the block norms, not single entries")
    return f"named all {len(truth)} noisy weight triples correctly"


def check_without_reembedding(without_reembedding):
    """Exercise 19: the loop without re-embedding, on the committed quick model, and what it does."""
    from ..learning import run_steps
    from ..learning.evaluate import evaluation_tasks, log_objective_curve
    from ..learning.protocols import committed_model

    run = committed_model("quick", "d+k", 0)
    X, init = evaluation_tasks(run.config, 4, n=128)
    on = "  (the committed quick model, d = 32, k = 10; 4 held-out tasks of n = 128, 20 steps)\n"
    got = call(without_reembedding, run.theta, X, init, run.config.model, 20, on=on)
    expected = run_steps(run.theta, X, init, run.config.model, 20, reembed=False)
    got = np.asarray(got, dtype=float)
    expect(got.shape == expected.shape, f"expected shape {expected.shape}, got {got.shape}\n{on}")
    finite = np.isfinite(expected)
    expect(np.array_equal(np.isfinite(got), finite) and np.allclose(got[finite], expected[finite], rtol=1e-9),
           "your centers differ from the layer applied to its own output tokens\n" + on
           + "  hint: embed once, then P, Q = transformer_layer(P, Q, blocks) and read Q's x block each step")
    fed_back = log_objective_curve(X, got)[0]
    reembedded = log_objective_curve(X, run_steps(run.theta, X, init, run.config.model, 20))[0]
    expect(fed_back[-1] > reembedded[-1],
           f"without re-embedding the run should end worse than with it; got {fed_back[-1]:.3g} vs "
           f"{reembedded[-1]:.3g}\n" + on)
    return (f"fed back its own tokens the layer ends at mean log objective {fed_back[-1]:.3g} "
            f"(re-embedded: {reembedded[-1]:.3g}): it was trained for one step from fresh tokens")


def check_assignment_basis(assignment_basis):
    """Exercise 20: read the assignment channel's basis from the weights of a rotated construction."""
    from dataclasses import replace

    from scipy.linalg import block_diag

    from ..lloyd_transformer import lloyd_transformer

    rng = np.random.default_rng(23)
    for d, k in ((2, 3), (4, 5)):
        built = lloyd_transformer(d, k, gamma=1e3, config="all-attention")
        R = rng.normal(size=(k, k))
        G = block_diag(np.eye(d), R)
        blocks = dict(built.blocks)
        blocks["CAX"] = replace(blocks["CAX"], Wv=G @ blocks["CAX"].Wv)
        blocks["CAC"] = replace(blocks["CAC"], Wk=blocks["CAC"].Wk @ np.linalg.inv(G))
        model = KMeansTransformer(built.layout, blocks, name="construction, y in another basis")
        on = f"  (the Theorem 2.1 construction with d={d}, k={k}, its assignments written in an unknown basis R)\n"
        got = as_array(call(assignment_basis, model, on=on), "R", on, shape=(k, k))
        expect_close(got, R, "R", on, atol=1e-12,
                     hint="CAX's value matrix maps y to y through R in this model (the identity in Equation 5)")
    return "R recovered from CAX's value matrix for two models"
