"""How faithfully a closed form describes the trained layer, task by task: fidelity, not only gain.

A candidate explanation of the trained layer (Lloyd's algorithm, soft k-means, leaky soft k-means with
fitted scalars) is run on each seed's held-out tasks beside the layer, from the same initial centers, and
measured two ways (the report's keys):

* ``one_step_ratio`` (F1): per task, ``||C_cand - C_layer||_F / ||C_layer - C_0||_F`` after one step,
  the distance between the candidate's centers and the layer's over the distance the layer moved; its
  median and quartiles over the tasks. 0: the candidate moves the centers where the layer does; 1: as
  far from the layer as the layer moved at all.
* ``gain_correlation`` (F2): the correlation over tasks of the candidate's gain over Lloyd's algorithm
  after the evaluation's steps (Lloyd's final log objective minus the candidate's) with the layer's.
  Near 1: the candidate does well on the tasks the layer does well on.

Beside them, ``recovered``: the candidate's mean gain over the layer's (as the interpret experiment
reports it). An explanation that beats the layer (``recovered`` above 1) need not predict it (F1, F2).

The interpret experiment (:func:`kmt_ref.programs.interpret.interpret`) measures them for its candidates,
whose scalars it fits on the training distribution, for :func:`distill`'s (the leaky scalars fitted to each
seed's layer's own one-step outputs on training tasks), and for the :data:`CIRCUITS`: the layer distilled
block by block (:mod:`kmt_ref.learning.circuit`), one block summarized more at a time, which says where in
the layer the fidelity of a closed form is lost.
"""

import numpy as np
import scipy.optimize

from .._validation import check_int
from ..classical import lloyd
from ..geometry import kmeans_objective
from ..learning.circuit import SUMMARIES, circuit_step
from ..learning.model import run_steps
from ..tasks import draw_tasks
from ..variants.leaky import leaky_step
from ..variants.soft import soft_kmeans

__all__ = ["candidate_steps", "circuit_steps", "circuit_name", "CIRCUITS", "CIRCUIT", "fidelity_of_seed", "distill",
           "summarize_fidelity", "QUARTILES"]

#: The quantiles of the one-step ratio over tasks that the report gives.
QUARTILES = (0.25, 0.5, 0.75)


def candidate_steps(soft_beta, fits, distilled=None):
    """``{name: step(X, C) -> next centers}`` for batches ``X`` (B, n, d), ``C`` (B, k, d): Lloyd's algorithm,
    soft k-means at ``soft_beta``, leaky soft k-means at each of ``fits`` (``{unroll: {"beta", "sharpness"}}``,
    the interpret experiment's), and the distilled leaky scalars when given."""
    beta = soft_beta
    steps = {
        "Lloyd": lambda X, C: lloyd(X, C, 1).centers[-1],
        f"soft k-means, beta = {beta:g}": lambda X, C: np.array(
            [soft_kmeans(x, c, 1, beta, keep_assignments=False).centers[-1] for x, c in zip(X, C, strict=True)]),
    }
    fits = dict(fits, **({"distilled": distilled} if distilled else {}))
    for unroll, f in fits.items():
        name = "leaky, distilled from the layer" if unroll == "distilled" else f"leaky, fitted through {unroll}"
        steps[name] = lambda X, C, f=f: np.asarray(leaky_step(X, C, f["beta"], f["sharpness"])[0])
    return steps


#: The circuits measured (:mod:`kmt_ref.learning.circuit`), each by the blocks it summarizes: the values
#: alone, then SAX or CAC besides, then both (:data:`CIRCUIT`, around the layer's own CAX), then every block.
CIRCUITS = (("values",), ("values", "SAX"), ("values", "CAC"), ("values", "SAX", "CAC"), SUMMARIES)
#: The circuit that keeps only the layer's CAX: the closed form of the rest of the layer.
CIRCUIT = ("values", "SAX", "CAC")


def circuit_name(summarized):
    """A circuit's candidate name in the report: ``"circuit, summarized: values, SAX"``."""
    return "circuit, summarized: " + ", ".join(summarized)


def circuit_steps(theta, model_config, fit, circuits=CIRCUITS, engine=None):
    """``{name: step(X, C)}`` of each of ``circuits`` around the layer ``theta`` at :func:`fit_circuit
    <kmt_ref.learning.circuit.fit_circuit>`'s ``fit``."""
    return {circuit_name(c): lambda X, C, c=c: circuit_step(theta, model_config, fit, X, C, c, engine)
            for c in circuits}


def _final_logs(X, centers):
    """Per task, the log k-means objective of ``centers`` (B, k, d)."""
    return np.log(kmeans_objective(X, centers))


def fidelity_of_seed(theta, model_config, X, init, n_steps, steps, engine=None):
    """F1 and F2 of every candidate ``steps`` against the layer ``theta`` on the tasks ``(X, init)``.

    Returns
    -------
    dict
        ``{candidate: {"one_step_ratio": {"q25", "median", "q75"}, "gain_correlation": float,
        "recovered": float}}``, and ``"layer_gain"``: the layer's mean gain over Lloyd.
    """
    layer = run_steps(theta, X, init, model_config, n_steps, engine=engine)  # (T + 1, B, k, d)
    moved = np.linalg.norm((layer[1] - init).reshape(len(X), -1), axis=1)
    lloyd_final = _final_logs(X, lloyd(X, init, n_steps).centers[-1])
    layer_gain = lloyd_final - _final_logs(X, layer[-1])
    out = {"layer_gain": float(np.mean(layer_gain))}
    for name, step in steps.items():
        first = step(X, init)
        ratio = np.linalg.norm((first - layer[1]).reshape(len(X), -1), axis=1) / moved
        C = first
        for _ in range(n_steps - 1):
            C = step(X, C)
        gain = lloyd_final - _final_logs(X, C)
        correlation = float(np.corrcoef(gain, layer_gain)[0, 1]) if np.std(gain) > 0 else float("nan")
        out[name] = {"one_step_ratio": dict(zip(("q25", "median", "q75"),
                                                 (float(q) for q in np.quantile(ratio, QUARTILES)), strict=True)),
                     "gain_correlation": correlation,
                     "recovered": float(np.mean(gain) / np.mean(layer_gain))}
    return out


def distill(theta, config, n_tasks=64, fit_seed=20_262, starts=((2.0, 2.0), (4.0, 8.0), (16.0, 32.0)),
            engine=None):
    """Leaky soft k-means's two scalars fitted to a trained layer's own one-step outputs on training tasks.

    ``theta``, ``config``: the layer and its run's :class:`~kmt_ref.learning.config.TrainConfig`. Tasks are
    drawn from the training distribution with a stream of their own (``fit_seed``: no run's training,
    validation or evaluation tasks); ``log beta`` and ``log sharpness`` minimize the squared distance of one
    leaky step's centers from the layer's (relative to the layer's move), by Nelder-Mead from each of
    ``starts``. Returns the best end point with every start's, so that the spread over starts is reported.
    """
    check_int(n_tasks, "n_tasks", low=1)
    X, init = draw_tasks(np.random.default_rng(fit_seed), n_tasks, init="first", **config.task_kwargs())
    target = run_steps(theta, X, init, config.model, 1, engine=engine)[1]
    moved = np.sum((target - init) ** 2)

    def loss(p):
        return float(np.sum((np.asarray(leaky_step(X, init, np.exp(p[0]), np.exp(p[1]))[0]) - target) ** 2) / moved)

    ends = []
    for start in starts:
        fit = scipy.optimize.minimize(loss, np.log(start), method="Nelder-Mead",
                                      options=dict(xatol=1e-6, fatol=1e-10, maxiter=400))
        ends.append(dict(start=list(start), beta=float(np.exp(fit.x[0])), sharpness=float(np.exp(fit.x[1])),
                         loss=float(fit.fun)))
    best = min(ends, key=lambda e: e["loss"])
    return dict(beta=best["beta"], sharpness=best["sharpness"], loss=best["loss"], starts=ends, n_tasks=n_tasks,
                fit_seed=fit_seed)


def summarize_fidelity(per_seed):
    """``{candidate: {"one_step_ratio": [median per seed], "gain_correlation": [per seed]}}`` from the
    per-seed results of :func:`fidelity_of_seed` (the report's ``fidelity`` key)."""
    names = [name for name in per_seed[0] if name != "layer_gain"]
    return {name: {"one_step_ratio": [p[name]["one_step_ratio"]["median"] for p in per_seed],
                   "gain_correlation": [p[name]["gain_correlation"] for p in per_seed]} for name in names}
