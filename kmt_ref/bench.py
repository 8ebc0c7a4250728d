"""``python -m kmt_ref bench``: speed ratios measured side by side, in one run.

Timings are medians of repeated runs on the same data, so the ratios are
meaningful even on a busy machine; absolute times are not. Peak memory is the
largest NumPy allocation seen by ``tracemalloc`` during one run.
"""

import time
import tracemalloc
import warnings

import numpy as np
from scipy.cluster.vq import kmeans2

from .kernels import attend
from .classical import lloyd
from .layer import BLOCK_NAMES, transformer_layer
from .lloyd_transformer import lloyd_transformer
from .tasks import gaussian_mixture

__all__ = ["run_bench", "format_bench", "median_time", "peak_memory", "layer_breakdown"]

#: Targets of the foundation issue: transformer / lloyd and lloyd / kmeans2.
TARGETS = {"transformer / lloyd": 2.0, "lloyd / kmeans2": 1.5}


def median_time(fn, repeats):
    """Median wall time of ``repeats`` calls of ``fn()`` (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def peak_memory(fn):
    """Peak traced allocation (bytes) during one call of ``fn()``."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def layer_breakdown(model, X, init, repeats):
    """Median seconds of one layer and of each of its attention blocks.

    The blocks are timed on the tokens they see in the first layer; the rest
    of a layer (residual sums) is the difference.

    Parameters
    ----------
    model : KMeansTransformer
    X : ndarray, shape (n, d)
    init : ndarray, shape (k, d)
    repeats : int
        Runs per median (after one warm-up).

    Returns
    -------
    dict
        Seconds for each of ``BLOCK_NAMES`` and for the whole ``"layer"``.
    """
    P, Q = model.layout.embed(X, init)
    P1 = transformer_layer(P, Q, model.blocks)[0]  # CAC and SAC read the new points
    inputs = {"CAX": (P, Q), "SAX": (P, P), "CAC": (Q, P1), "SAC": (Q, Q)}
    out = {b: median_time(lambda b=b: attend(*inputs[b], model.blocks[b]), repeats) for b in BLOCK_NAMES}
    out["layer"] = median_time(lambda: transformer_layer(P, Q, model.blocks), repeats)
    return out


def run_bench(repeats=5, quick=False):
    """Measure; returns a dict of timings, ratios and peak memory.

    Sizes: n = 100,000, d = 16, k = 16, 10 iterations for the ratios; one
    faithful layer (O(n^2) self-attention, in row chunks) at n = 20,000.
    ``quick`` divides n by 20 (for tests).
    """
    n, d, k, n_iter, n_faithful = 100_000, 16, 16, 10, 20_000
    if quick:
        n, n_faithful, repeats = n // 20, n_faithful // 20, 1
    rng = np.random.default_rng(0)
    X, init, _ = gaussian_mixture(rng, n=n, d=d, k=k)
    model = lloyd_transformer(d, k)  # validated configuration, gamma = inf

    def run_lloyd():
        return lloyd(X, init, n_iter, empty_cluster="keep")

    def run_transformer():
        return model.run(X, init, n_iter)

    def run_kmeans2():
        with warnings.catch_warnings():  # an empty cluster is kept in place, as in lloyd(..., "keep")
            warnings.simplefilter("ignore", UserWarning)
            return kmeans2(X, init, iter=n_iter, minit="matrix", missing="warn")

    t = {
        "lloyd": median_time(run_lloyd, repeats),
        "transformer": median_time(run_transformer, repeats),
        "kmeans2": median_time(run_kmeans2, repeats),
    }
    Xf, initf, _ = gaussian_mixture(rng, n=n_faithful, d=2, k=5)
    faithful = lloyd_transformer(2, 5, gamma=1e4, config="faithful")

    def run_faithful():
        return faithful.run(Xf, initf, 1)

    from .learning.bench import time_training_step

    step_size = dict(n=64, d=4, k=3, batch=4) if quick else {}
    out = {
        "training_step": time_training_step(repeats=repeats, **step_size),
        "setting": {"n": n, "d": d, "k": k, "n_iter": n_iter, "repeats": repeats},
        "seconds": t,
        "layer_seconds": layer_breakdown(model, X, init, repeats),
        "ratios": {
            "transformer / lloyd": t["transformer"] / t["lloyd"],
            "lloyd / kmeans2": t["lloyd"] / t["kmeans2"],
        },
        "peak_bytes": {
            "lloyd": peak_memory(run_lloyd),
            "transformer": peak_memory(run_transformer),
        },
        "faithful_one_layer": {
            "n": n_faithful,
            "seconds": median_time(run_faithful, 1),
            "peak_bytes": peak_memory(run_faithful),
            "n_by_n_bytes": 8 * n_faithful**2,
        },
    }
    return out


def format_bench(res):
    """A plain-text report of :func:`run_bench`."""
    s, t = res["setting"], res["seconds"]
    lines = [
        f"n={s['n']}, d={s['d']}, k={s['k']}, {s['n_iter']} iterations; medians of {s['repeats']} runs",
        "",
        f"{'algorithm':<34} {'seconds':>9} {'peak MB':>9}",
        f"{'lloyd':<34} {t['lloyd']:>9.3f} {res['peak_bytes']['lloyd'] / 2**20:>9.1f}",
        f"{'Theorem 2.1 transformer (validated)':<34} {t['transformer']:>9.3f} "
        f"{res['peak_bytes']['transformer'] / 2**20:>9.1f}",
        f"{'scipy.cluster.vq.kmeans2':<34} {t['kmeans2']:>9.3f} {'':>9}",
        "",
    ]
    for name, ratio in res["ratios"].items():
        target = TARGETS[name]
        verdict = "within target" if ratio <= target else "ABOVE target"
        lines.append(f"{name:<22} {ratio:6.2f}x   (target <= {target}x: {verdict})")
    ls = res["layer_seconds"]
    blocks = " + ".join(f"{b} {1e3 * ls[b]:.1f}" for b in BLOCK_NAMES)
    lines += [
        "",
        f"where a layer's time goes (ms): {1e3 * ls['layer']:.1f} = {blocks} + residual sums; "
        f"one Lloyd iteration: {1e3 * t['lloyd'] / s['n_iter']:.1f}",
    ]
    f = res["faithful_one_layer"]
    lines += [
        "",
        f"faithful layer (chunked O(n^2) self-attention), n={f['n']}: {f['seconds']:.2f} s, "
        f"peak {f['peak_bytes'] / 2**20:.1f} MB (an n x n float64 matrix would be "
        f"{f['n_by_n_bytes'] / 2**20:.0f} MB)",
    ]
    if "training_step" in res:
        from .learning.bench import format_training_step

        lines += ["", format_training_step(res["training_step"])]
    return "\n".join(lines)
