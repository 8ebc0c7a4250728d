"""Time one training step of the learnable model, split into forward and backward.

The fast kernels (their Euclidean softmax attention and projections have
hand-written gradients), on each thread count asked for, in float64 and in
float32 (:attr:`~kmt_ref.learning.config.TrainConfig.precision`), autograd's
differentiation of the reference attention, and -- when PyTorch is installed
(it never is a dependency) -- the same model's loss and gradient in PyTorch
float32, the authors' framework, are timed in turn on the same batch, so
their ratios are meaningful even on a busy machine; absolute wall times are
not. The PyTorch gradient is compared with ours: the two must agree to
float32 rounding.
The process CPU time is reported too: on a shared machine it is the better
estimate of the wall time on an idle one (with one BLAS thread they agree).
"""

import time

import autograd
import numpy as np

from .._validation import check_int
from ..engine import REFERENCE, Engine
from ..layer import BLOCK_NAMES
from ..learning.config import TrainConfig
from ..learning.model import WEIGHT_NAMES, init_params, unflatten
from ..learning.train import batch_loss
from ..tasks import sample_tasks

__all__ = ["time_training_step", "format_training_step", "torch_step"]


def _timed(fn):
    """Wall and process CPU seconds of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def torch_step(theta, X, init, config):
    """The model's loss and gradient in PyTorch float32, as a function, or None without PyTorch.

    The same model as :func:`~kmt_ref.learning.train.batch_loss` (untied
    ``[x | y]`` tokens, one layer), written with the operations the authors'
    PyTorch code uses: ``Linear`` maps, squared ``cdist`` scores, softmax.

    Returns
    -------
    callable or None
        ``step()`` -> ``(loss, gradient)``: a float and an array shaped like
        ``theta`` (float64, in ``theta``'s order).
    """
    try:
        import torch
    except ImportError:
        return None
    if config.model.k_free or config.tokens != "d+k" or config.n_layers != 1:
        raise ValueError(f"torch_step is the untied one-layer [x | y] model; got {config}")
    model = config.model
    leaves = {b: {w: torch.tensor(np.asarray(p, np.float32), requires_grad=True) for w, p in params.items()}
              for b, params in unflatten(theta, model).items()}
    P0, Q0 = (torch.tensor(np.asarray(T, np.float32)) for T in model.layout.embed(X, init))
    points = torch.tensor(np.asarray(X, np.float32))
    gamma, tau, d = model.gamma, config.tau, model.d

    def attend(Zq, Zk, p):
        q, k, v = Zq @ p["Wq"].T + p["bq"], Zk @ p["Wk"].T + p["bk"], Zk @ p["Wv"].T + p["bv"]
        return torch.softmax(-gamma * torch.cdist(q, k) ** 2, dim=-1) @ v

    def step():
        for params in leaves.values():
            for t in params.values():
                t.grad = None
        P = P0 + attend(P0, Q0, leaves["CAX"]) + attend(P0, P0, leaves["SAX"])
        Q = Q0 + attend(Q0, P, leaves["CAC"]) + attend(Q0, Q0, leaves["SAC"])
        r = torch.cdist(points, Q[..., :d]) ** 2
        loss = torch.mean(torch.sum(torch.softmax(-r / tau, dim=-1) * r, dim=(-2, -1)))
        loss.backward()
        grad = [leaves[b][w].grad.numpy().ravel() for b in BLOCK_NAMES for w in WEIGHT_NAMES]
        return float(loss.detach()), np.concatenate(grad).astype(np.float64)

    return step


def _torch_threads(count):
    """Set PyTorch's thread count; the previous one."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    return previous


def time_training_step(n=512, d=32, k=10, batch=32, repeats=5, seed=0, generic=True, threads=(1,),
                       precisions=("float64",), torch=False):
    """Median seconds of the forward pass and of a full step (loss + gradient).

    Parameters
    ----------
    n, d, k, batch : int
        Points, dimension, centers, tasks per step (the authors' protocol: 512, 32, 10, 32).
    repeats : int
        Timed repetitions of each variant, after one warm-up.
    seed : int
    generic : bool
        Also time autograd's differentiation of the reference attention (on
        one thread, float64), for the speed-up of the hand-written gradient.
    threads : tuple of int
        Thread counts over the batch's tasks (:class:`kmt_ref.engine.Engine`)
        at which the fast kernels are timed, one after the other in every
        repetition, so that their ratio is measured under the same load.
    precisions : tuple of {"float64", "float32"}
        Arithmetics of the step timed at every thread count.
    torch : bool
        Also time the same step in PyTorch float32 (:func:`torch_step`) at
        every thread count, if PyTorch is installed.

    Returns
    -------
    dict
        ``setting``; per variant the median ``forward``, ``step`` and
        ``backward = step - forward`` in wall seconds, and ``step_cpu``, the
        process CPU seconds of a step: ``"fused"`` (float64) on
        ``threads[0]`` threads, ``"fused, T threads"`` on each further count
        ``T``, ``"float32"`` and ``"float32, T threads"`` likewise,
        ``"torch float32"`` and ``"torch float32, T threads"`` (a step only:
        ``forward`` is None), ``"generic"``; ``speedup`` = generic step / fused
        step; ``max_grad_difference`` between those two gradients (they must
        agree); ``threads_identical``: whether every thread count gave the
        same gradient, bit for bit, in each precision;
        ``float32_grad_difference``, ``torch_grad_difference``: the largest
        difference of the float32 and PyTorch gradients from the float64 one,
        relative to its largest entry.
    """
    threads = tuple(check_int(t, "threads", low=1) for t in threads)
    if len(threads) != len(set(threads)) or not threads:
        raise ValueError(f"threads must be distinct thread counts, at least one; got threads={threads}")
    if not precisions or len(set(precisions)) != len(precisions) or "float64" not in precisions:
        raise ValueError(f"precisions must be distinct and include 'float64'; got precisions={precisions}")
    configs = {p: TrainConfig(d=d, k=k, n=n, batch=batch, precision=p) for p in precisions}
    config = configs["float64"]
    rng = np.random.default_rng(seed)
    theta = init_params(config.model, rng)
    X, init = sample_tasks(rng, batch, **config.task_kwargs())
    grad_fn = autograd.value_and_grad(batch_loss)

    def name(prefix, i, t):
        return prefix if i == 0 else f"{prefix}, {t} threads"

    variants = {name("fused" if p == "float64" else p, i, t): (configs[p], Engine(t))
                for p in precisions for i, t in enumerate(threads)}
    if generic:
        variants["generic"] = (config, REFERENCE)
    ours = list(variants)
    step = torch_step(theta, X, init, config) if torch else None
    if step is not None:
        variants.update({name("torch float32", i, t): (None, t) for i, t in enumerate(threads)})
    times = {v: {"forward": [], "step": [], "step_cpu": []} for v in variants}
    grads = {}
    for rep in range(repeats + 1):
        for label, (cfg, how) in variants.items():
            if cfg is None:
                previous = _torch_threads(how)
                s, c = _timed(lambda label=label: grads.__setitem__(label, step()[1]))
                _torch_threads(previous)
                f = None
            else:
                f, _ = _timed(lambda cfg=cfg, how=how: batch_loss(theta, X, init, cfg, how))
                s, c = _timed(lambda label=label, cfg=cfg, how=how:
                              grads.__setitem__(label, grad_fn(theta, X, init, cfg, how)[1]))
            if rep > 0:  # the first round is a warm-up
                times[label]["forward"].append(f)
                times[label]["step"].append(s)
                times[label]["step_cpu"].append(c)
    out = {"setting": dict(n=n, d=d, k=k, batch=batch, repeats=repeats, threads=list(threads),
                           precisions=list(precisions), torch=step is not None)}
    for label in variants:
        s = float(np.median(times[label]["step"]))
        f = None if times[label]["forward"][0] is None else float(np.median(times[label]["forward"]))
        out[label] = dict(forward=f, step=s, backward=None if f is None else s - f,
                          step_cpu=float(np.median(times[label]["step_cpu"])))
    firsts = [label for label in ours if label != "generic" and "threads" not in label]
    out["threads_identical"] = all(np.array_equal(grads[label], grads[first])
                                   for first in firsts for label in ours if label.startswith(first + ","))
    scale = np.max(np.abs(grads["fused"]))
    if "float32" in precisions:
        out["float32_grad_difference"] = float(np.max(np.abs(grads["float32"] - grads["fused"])) / scale)
    if step is not None:
        out["torch_grad_difference"] = float(np.max(np.abs(grads["torch float32"] - grads["fused"])) / scale)
    if generic:
        out["speedup"] = out["generic"]["step"] / out["fused"]["step"]
        out["max_grad_difference"] = float(np.max(np.abs(grads["fused"] - grads["generic"])))
    return out


def format_training_step(res):
    """Plain-text lines for :func:`time_training_step`."""
    s = res["setting"]
    lines = [f"training step, n={s['n']}, d={s['d']}, k={s['k']}, batch {s['batch']} "
             f"(medians of {s['repeats']}; target: float32 no slower than PyTorch float32 at each thread count)"]
    for label in [v for v in res if v.startswith(("fused", "float32", "torch"))] + ["generic"]:
        if label in res and isinstance(res[label], dict):
            r = res[label]
            parts = "" if r["forward"] is None else f"forward {r['forward']:.3f} s  backward {r['backward']:.3f} s  "
            lines.append(f"  {label:<24} {parts}step {r['step']:.3f} s  (CPU {r['step_cpu']:.3f} s)")
    for i, t in enumerate(s["threads"]):
        suffix = "" if i == 0 else f", {t} threads"
        ours, theirs = "float32" + suffix, "torch float32" + suffix
        if ours in res and theirs in res:
            ratio = res[ours]["step"] / res[theirs]["step"]
            lines.append(f"  float32 / PyTorch float32 on {t} thread{'s' if t > 1 else ''}: {ratio:.2f}x "
                         f"({'met' if ratio <= 1 else 'missed'})")
    if "float32_grad_difference" in res:
        lines.append(f"  float32 gradient vs float64: largest difference {res['float32_grad_difference']:.1e} "
                     "of the largest entry")
    if "torch_grad_difference" in res:
        lines.append(f"  PyTorch float32 gradient vs ours (float64): largest difference "
                     f"{res['torch_grad_difference']:.1e} of the largest entry")
    elif s.get("torch") is False and "float32" in s.get("precisions", ()):
        lines.append("  (PyTorch not installed: its step is not timed)")
    if "speedup" in res:
        lines.append(f"  hand-written VJP speed-up {res['speedup']:.2f}x "
                     f"(max gradient difference {res['max_grad_difference']:.1e})")
    return "\n".join(lines)
