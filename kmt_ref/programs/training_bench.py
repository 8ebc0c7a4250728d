"""Time one training step of the learnable model, split into forward and backward.

The fast kernels (their Euclidean softmax attention and projections have
hand-written gradients), on each thread count asked for, and autograd's
differentiation of the reference attention are timed in turn on the same
batch, so their ratios are meaningful even on a busy machine; absolute wall
times are not.
The process CPU time is reported too: on a shared machine it is the better
estimate of the wall time on an idle one (with one BLAS thread they agree).
"""

import time

import autograd
import numpy as np

from .._validation import check_int
from ..engine import REFERENCE, Engine
from ..learning.model import init_params
from ..learning.train import TrainConfig, batch_loss
from ..tasks import sample_tasks

__all__ = ["time_training_step", "format_training_step"]


def _timed(fn):
    """Wall and process CPU seconds of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def time_training_step(n=512, d=32, k=10, batch=32, repeats=5, seed=0, generic=True, threads=(1,)):
    """Median seconds of the forward pass and of a full step (loss + gradient).

    Parameters
    ----------
    n, d, k, batch : int
        Points, dimension, centers, tasks per step (the paper: 512, 32, 10, 32).
    repeats : int
        Timed repetitions of each variant, after one warm-up.
    seed : int
    generic : bool
        Also time autograd's differentiation of the reference attention (on
        one thread), for the speed-up of the hand-written gradient.
    threads : tuple of int
        Thread counts over the batch's tasks (:class:`kmt_ref.engine.Engine`)
        at which the fast kernels are timed, one after the other in every
        repetition, so that their ratio is measured under the same load.

    Returns
    -------
    dict
        ``setting``; per variant the median ``forward``, ``step`` and
        ``backward = step - forward`` in wall seconds, and ``step_cpu``, the
        process CPU seconds of a step: ``"fused"`` on ``threads[0]`` threads,
        ``"fused, T threads"`` on each further count ``T``, ``"generic"``;
        ``speedup`` = generic step / fused step; ``max_grad_difference``
        between the two gradients (they must agree); ``threads_identical``:
        whether every thread count gave the same gradient, bit for bit.
    """
    threads = tuple(check_int(t, "threads", low=1) for t in threads)
    if len(threads) != len(set(threads)) or not threads:
        raise ValueError(f"threads must be distinct thread counts, at least one; got threads={threads}")
    config = TrainConfig(d=d, k=k, n=n, batch=batch)
    rng = np.random.default_rng(seed)
    theta = init_params(config.model, rng)
    X, init = sample_tasks(rng, batch, **config.task_kwargs())
    grad_fn = autograd.value_and_grad(batch_loss)
    variants = {("fused" if i == 0 else f"fused, {t} threads"): Engine(t) for i, t in enumerate(threads)}
    if generic:
        variants["generic"] = REFERENCE
    times = {v: {"forward": [], "step": [], "step_cpu": []} for v in variants}
    grads = {}
    for rep in range(repeats + 1):
        for name, engine in variants.items():
            f, _ = _timed(lambda engine=engine: batch_loss(theta, X, init, config, engine))
            s, c = _timed(lambda name=name, engine=engine:
                          grads.__setitem__(name, grad_fn(theta, X, init, config, engine)[1]))
            if rep > 0:  # the first round is a warm-up
                times[name]["forward"].append(f)
                times[name]["step"].append(s)
                times[name]["step_cpu"].append(c)
    out = {"setting": dict(n=n, d=d, k=k, batch=batch, repeats=repeats, threads=list(threads))}
    for name in variants:
        f, s = float(np.median(times[name]["forward"])), float(np.median(times[name]["step"]))
        out[name] = dict(forward=f, step=s, backward=s - f,
                         step_cpu=float(np.median(times[name]["step_cpu"])))
    fused = [name for name in variants if name.startswith("fused")]
    out["threads_identical"] = all(np.array_equal(grads[name], grads["fused"]) for name in fused)
    if generic:
        out["speedup"] = out["generic"]["step"] / out["fused"]["step"]
        out["max_grad_difference"] = float(np.max(np.abs(grads["fused"] - grads["generic"])))
    return out


def format_training_step(res):
    """Plain-text lines for :func:`time_training_step`."""
    s = res["setting"]
    lines = [f"training step, n={s['n']}, d={s['d']}, k={s['k']}, batch {s['batch']} "
             f"(medians of {s['repeats']}; target <= 0.4 s/step)"]
    for name in [v for v in res if v.startswith("fused")] + ["generic"]:
        if name in res:
            r = res[name]
            lines.append(f"  {name:<8} forward {r['forward']:.3f} s  backward {r['backward']:.3f} s  "
                         f"step {r['step']:.3f} s  (CPU {r['step_cpu']:.3f} s)")
    if "speedup" in res:
        lines.append(f"  hand-written VJP speed-up {res['speedup']:.2f}x "
                     f"(max gradient difference {res['max_grad_difference']:.1e})")
    return "\n".join(lines)
