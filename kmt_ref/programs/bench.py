"""``python -m kmt_ref bench``: speed ratios measured side by side, in one run.

Timings are medians of repeated runs on the same data, the runs compared
taking turns, so the ratios are meaningful even on a busy machine; absolute
times are not. Peak memory is the largest NumPy allocation seen by
``tracemalloc`` during one run.
"""

import time
import tracemalloc
import warnings

import numpy as np
from scipy.cluster.vq import kmeans2

from ..classical import lloyd
from ..dot_product_transformer import dot_product_lloyd_transformer
from ..kernels import attend
from ..layer import BLOCK_NAMES, transformer_layer
from ..lloyd_transformer import lloyd_transformer
from ..tasks import gaussian_mixture
from ._cli import keep_freed_memory

__all__ = ["run_bench", "format_bench", "median_time", "median_times", "peak_memory", "layer_breakdown", "GRID",
           "QUICK_GRID", "run_grid", "format_grid"]

#: Targets, as ratios to an anchor measured in the same run.
TARGETS = {"transformer / lloyd": 3.0, "lloyd / kmeans2": 1.5, "training step, 2 threads / 1 thread": 1 / 1.6}


def median_times(fns, repeats):
    """``{name: median wall time}`` of ``repeats`` calls of each ``fns[name]()`` (after one warm-up each).

    The functions take turns within every repeat, so that a change of the
    machine's load during the measurement affects all of them alike.
    """
    times = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) for name, t in times.items()}


def median_time(fn, repeats):
    """Median wall time of ``repeats`` calls of ``fn()`` (after one warm-up)."""
    return median_times({"fn": fn}, repeats)["fn"]


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


def machine_floor(n, d, k, repeats):
    """Seconds one layer cannot beat on this machine, from measured throughput.

    The layer must read the point tokens (``n x (d + k)``), write them, and
    read the assignments again for the centers (``n x k``); it needs about
    ``4 n k d`` flops (the CAX scores and the CAC means). Throughput is
    measured here: a large float64 matrix product and a large copy.
    """
    rng = np.random.default_rng(0)
    A = rng.random((1024, 1024))
    gemm = 2 * 1024**3 / median_time(lambda: A @ A, repeats)
    big = rng.random(2**24)
    dst = np.empty_like(big)
    copy = 2 * big.nbytes / median_time(lambda: np.copyto(dst, big), repeats)  # bytes read + written
    flops, bytes_moved = 4 * n * k * d, 8 * n * (2 * (d + k) + k)
    return {"gemm_flops_per_s": gemm, "copy_bytes_per_s": copy,
            "layer_seconds": max(flops / gemm, bytes_moved / copy)}


def run_bench(repeats=5, quick=False):
    """Measure; returns a dict of timings, ratios and peak memory.

    Sizes: n = 100,000, d = 16, k = 16, 10 iterations for the ratios; one
    all-attention layer (O(n^2) self-attention, in row chunks) at n = 20,000.
    ``quick`` divides n by 10 (a smoke test; its ratios are indicative only).
    """
    n, d, k, n_iter, n_all_attention = 100_000, 16, 16, 10, 20_000
    if quick:
        n, n_all_attention, repeats = n // 10, n_all_attention // 20, min(repeats, 3)
    rng = np.random.default_rng(0)
    X, init, _ = gaussian_mixture(rng, n=n, d=d, k=k)
    models = {"gamma=inf": lloyd_transformer(d, k), "gamma=1e4": lloyd_transformer(d, k, gamma=1e4)}

    def run_lloyd():
        return lloyd(X, init, n_iter, empty_cluster="keep")

    def run_kmeans2():
        with warnings.catch_warnings():  # an empty cluster is kept in place, as in lloyd(..., "keep")
            warnings.simplefilter("ignore", UserWarning)
            return kmeans2(X, init, iter=n_iter, minit="matrix", missing="warn")

    runs = {"lloyd": run_lloyd, "kmeans2": run_kmeans2}
    for name, model in models.items():
        runs[f"transformer {name}"] = lambda model=model: model.run(X, init, n_iter, keep_assignments=False)
    runs["transformer gamma=inf, all assignments kept"] = lambda: models["gamma=inf"].run(X, init, n_iter)
    t = median_times(runs, repeats)
    Xf, initf, _ = gaussian_mixture(rng, n=n_all_attention, d=2, k=5)
    all_attention = lloyd_transformer(2, 5, gamma=1e4, config="all-attention")

    def run_all_attention():
        return all_attention.run(Xf, initf, 1)

    from .training_bench import time_training_step

    step_size = dict(n=64, d=4, k=3, batch=4) if quick else {}
    step = time_training_step(repeats=repeats, threads=(1, 2), precisions=("float64", "float32"), torch=True,
                              **step_size)
    out = {
        "training_step": step,
        # As every ``python -m kmt_ref`` command does; it makes lloyd, the anchor, faster too.
        "setting": {"n": n, "d": d, "k": k, "n_iter": n_iter, "repeats": repeats,
                    "keeps_freed_memory": keep_freed_memory()},
        "seconds": t,
        "floor": machine_floor(n, d, k, repeats),
        "layer_seconds": {name: layer_breakdown(model, X, init, repeats) for name, model in models.items()},
        "ratios": {
            "transformer / lloyd": {name: t[f"transformer {name}"] / t["lloyd"] for name in models},
            "lloyd / kmeans2": t["lloyd"] / t["kmeans2"],
            "training step, 2 threads / 1 thread": step["fused, 2 threads"]["step"] / step["fused"]["step"],
        },
        "peak_bytes": {name: peak_memory(runs[name]) for name in
                       ("lloyd", "transformer gamma=inf", "transformer gamma=inf, all assignments kept")},
        "all_attention_one_layer": {
            "n": n_all_attention,
            "seconds": median_time(run_all_attention, 1),
            "peak_bytes": peak_memory(run_all_attention),
            "n_by_n_bytes": 8 * n_all_attention**2,
        },
    }
    return out


#: Sizes at which the transformers' cost is set beside lloyd's (``bench --grid``): every n x k x d.
GRID = {"n": (10_000, 100_000, 1_000_000), "k": (4, 16, 64, 256), "d": (2, 16, 128)}
#: The same at sizes a test can afford (``bench --grid --quick``).
QUICK_GRID = {"n": (2_000,), "k": (4, 16), "d": (2, 16)}
#: The grid's targets: each transformer's cost over lloyd's, and lloyd's over scikit-learn's, at every point.
GRID_TARGET, SKLEARN_TARGET = 2.0, 1.5
#: The models of the grid: Theorems 2.1 and 2.2 in their validated configuration, exact and at gamma = 1e4.
GRID_MODELS = {"2.1 gamma=inf": (lloyd_transformer, np.inf), "2.1 gamma=1e4": (lloyd_transformer, 1e4),
               "2.2 gamma=inf": (dot_product_lloyd_transformer, np.inf),
               "2.2 gamma=1e4": (dot_product_lloyd_transformer, 1e4)}


def _sklearn_lloyd(k, n_iter):
    """scikit-learn's Lloyd for ``n_iter`` iterations from given centers, or ``None`` when it is not installed.

    It stops early if the labels stop changing (``tol=0``); from uniform data and a few iterations they rarely do.
    """
    try:
        from sklearn.cluster import KMeans
    except ImportError:
        return None

    def run(X, init):
        return KMeans(k, init=init, n_init=1, max_iter=n_iter, tol=0.0, algorithm="lloyd").fit(X)
    return run


def run_grid(grid=GRID, n_iter=3, repeats=1):
    """Each model of :data:`GRID_MODELS` against lloyd at every point of ``grid``, the runs of a point taking turns.

    Data: ``n`` uniform points in ``[0, 1]^d`` (one generator for the whole grid), the first ``k`` as initial
    centers, ``n_iter`` layers or iterations; the transformers keep labels only (``keep_assignments=False``).

    Returns
    -------
    list of dict
        One per point: ``n, k, d``, the ``seconds`` of every run and the ``ratios`` to lloyd's.
    """
    rng = np.random.default_rng(0)
    rows = []
    for n in grid["n"]:
        for d in grid["d"]:
            for k in grid["k"]:
                X = rng.random((n, d))
                init = X[:k].copy()
                runs = {"lloyd": lambda X=X, init=init: lloyd(X, init, n_iter, empty_cluster="keep")}
                for name, (build, gamma) in GRID_MODELS.items():
                    model = build(d, k, gamma)
                    runs[name] = lambda model=model, X=X, init=init: model.run(X, init, n_iter,
                                                                               keep_assignments=False)
                sk = _sklearn_lloyd(k, n_iter)
                if sk is not None:
                    runs["scikit-learn"] = lambda X=X, init=init, sk=sk: sk(X, init)
                t = median_times(runs, repeats)
                rows.append(dict(n=n, k=k, d=d, seconds=t,
                                 ratios={name: sec / t["lloyd"] for name, sec in t.items() if name != "lloyd"}))
    return rows


def format_grid(rows):
    """The grid as a table of cost ratios to lloyd (1: as fast as lloyd)."""
    names = list(rows[0]["ratios"])
    lines = ["cost of each model over lloyd's (same data, same iterations; runs of a point taking turns):",
             f"{'n':>9} {'k':>4} {'d':>4} {'lloyd s':>9} " + " ".join(f"{name:>14}" for name in names)]
    for r in rows:
        lines.append(f"{r['n']:>9} {r['k']:>4} {r['d']:>4} {r['seconds']['lloyd']:>9.3f} "
                     + " ".join(f"{r['ratios'][name]:>13.2f}x" for name in names))
    worst = {name: max(r["ratios"][name] for r in rows) for name in names if name != "scikit-learn"}
    lines.append("largest ratio over the grid, each against its target:")
    lines += [f"  {name}: {v:.2f}x, {_verdict(v, GRID_TARGET)}" for name, v in worst.items()]
    if "scikit-learn" in names:
        slowest = max(1 / r["ratios"]["scikit-learn"] for r in rows)
        lines.append(f"lloyd over scikit-learn's Lloyd: at most {slowest:.2f}x its time, "
                     f"{_verdict(slowest, SKLEARN_TARGET)}")
    return "\n".join(lines)


def _verdict(ratio, target):
    return f"target <= {target:.2f}x: {'met' if ratio <= target else f'missed by {ratio / target:.2f}x'}"


def format_bench(res):
    """A plain-text report of :func:`run_bench`: each figure beside the anchor it is measured against."""
    s, t, fl = res["setting"], res["seconds"], res["floor"]
    mb = {name: v / 2**20 for name, v in res["peak_bytes"].items()}
    lines = [
        f"n={s['n']}, d={s['d']}, k={s['k']}, {s['n_iter']} iterations; medians of {s['repeats']} runs taking turns",
        "malloc keeps freed memory (as every command of python -m kmt_ref): "
        + ("yes" if s.get("keeps_freed_memory") else "no (not glibc)"),
        "",
        f"{'algorithm':<56} {'seconds':>8} {'peak MB':>8}",
    ]
    for name, sec in t.items():
        label = {"lloyd": "lloyd (anchor)", "kmeans2": "scipy.cluster.vq.kmeans2"}.get(
            name, f"Theorem 2.1 {name.removeprefix('transformer ')} (validated)")
        peak = f"{mb[name]:>8.1f}" if name in mb else f"{'':>8}"
        lines.append(f"{label:<56} {sec:>8.3f} {peak}")
    lines += [""]
    for name, ratio in res["ratios"]["transformer / lloyd"].items():
        verdict = _verdict(ratio, TARGETS["transformer / lloyd"])
        lines.append(f"transformer {name} / lloyd     {ratio:6.2f}x   ({verdict})")
    r = res["ratios"]["lloyd / kmeans2"]
    lines.append(f"lloyd / scipy kmeans2          {r:6.2f}x   ({_verdict(r, TARGETS['lloyd / kmeans2'])})")
    lines += [
        f"memory: the transformer's peak is {mb['transformer gamma=inf'] / mb['lloyd']:.2f}x lloyd's "
        f"(target <= 2x) keeping labels only; {mb['transformer gamma=inf, all assignments kept']:.0f} MB "
        "with every layer's assignment block kept (the default of run)",
        "",
        f"machine floor of one layer (measured: matrix product {fl['gemm_flops_per_s'] / 1e9:.0f} GFLOP/s, "
        f"copy {fl['copy_bytes_per_s'] / 1e9:.0f} GB/s): {1e3 * fl['layer_seconds']:.2f} ms",
    ]
    for name, ls in res["layer_seconds"].items():
        blocks = " + ".join(f"{b} {1e3 * ls[b]:.1f}" for b in BLOCK_NAMES)
        lines.append(f"where a layer's time goes (ms), {name}: {1e3 * ls['layer']:.1f} = {blocks} + residual sums "
                     f"({ls['layer'] / fl['layer_seconds']:.0f}x the floor)")
    lines.append(f"one Lloyd iteration (anchor): {1e3 * t['lloyd'] / s['n_iter']:.1f} ms")
    f = res["all_attention_one_layer"]
    lines += [
        "",
        f"all-attention layer (chunked O(n^2) self-attention), n={f['n']}: {f['seconds']:.2f} s, "
        f"peak {f['peak_bytes'] / 2**20:.1f} MB (an n x n float64 matrix would be "
        f"{f['n_by_n_bytes'] / 2**20:.0f} MB)",
    ]
    if "training_step" in res:
        from .training_bench import format_training_step

        lines += ["", format_training_step(res["training_step"])]
        two = res["training_step"]["fused, 2 threads"]
        r = res["ratios"]["training step, 2 threads / 1 thread"]
        want = 1 / TARGETS["training step, 2 threads / 1 thread"]
        same = "the same gradient" if res["training_step"]["threads_identical"] else "A DIFFERENT GRADIENT"
        lines.append(f"  on 2 threads (tasks split across them, timed in turn with 1): step {two['step']:.3f} s, "
                     f"{1 / r:.3f}x faster than on 1 (target >= {want:.1f}x: {'met' if 1 / r >= want else 'missed'}; "
                     f"needs two idle cores), {same} bit for bit")
    return "\n".join(lines)
