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
from ..learning.circuit import SUMMARIES, circuit_step, fit_circuit
from ..learning.model import run_steps
from ..objective import kmeans_objective
from ..tasks import draw_tasks
from ..variants.leaky import leaky_step
from ..variants.soft import soft_kmeans

__all__ = ["candidate_steps", "circuit_steps", "circuit_name", "CIRCUITS", "CIRCUIT", "fidelity_of_seed", "fidelity_to",
           "trajectory", "best_of_restarts", "RESTARTS", "partial_correlation", "soft_step", "averaged_step",
           "cube_symmetries", "group_averaged_step",
           "distill", "distill_soft", "distill_circuit", "CIRCUIT_SCALARS", "summarize_fidelity", "QUARTILES"]

#: The quantiles of the one-step ratio over tasks that the report gives.
QUARTILES = (0.25, 0.5, 0.75)


def soft_step(X, C, beta):
    """One soft k-means step at stiffness ``beta`` on each task of ``X`` (B, n, d) from ``C`` (B, k, d)."""
    return np.array([soft_kmeans(x, c, 1, beta, keep_assignments=False).centers[-1] for x, c in zip(X, C, strict=True)])


def candidate_steps(soft_beta, fits, distilled=None):
    """``{name: step(X, C) -> next centers}`` for batches ``X`` (B, n, d), ``C`` (B, k, d): Lloyd's algorithm,
    soft k-means at ``soft_beta``, leaky soft k-means at each of ``fits`` (``{unroll: {"beta", "sharpness"}}``,
    the interpret experiment's), and the distilled leaky scalars when given."""
    beta = soft_beta
    steps = {
        "Lloyd": lambda X, C: lloyd(X, C, 1).centers[-1],
        f"soft k-means, beta = {beta:g}": lambda X, C: soft_step(X, C, beta),
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


def trajectory(step, X, init, n_steps):
    """``(n_steps + 1, B, k, d)``: ``init`` and the centers after each of ``n_steps`` applications of ``step``."""
    centers = [init]
    for _ in range(n_steps):
        centers.append(step(X, centers[-1]))
    return np.array(centers)


#: Lloyd's restarts from random data points in the nulls of the fidelity measures (:func:`best_of_restarts`).
RESTARTS = 10


def best_of_restarts(X, k, n_steps, rng, restarts=RESTARTS):
    """Per task of ``X`` (B, n, d), the lowest final log objective of Lloyd's algorithm run ``n_steps`` from each
    of ``restarts`` starts of ``k`` distinct data points (drawn from ``rng``, restart by restart, task by task):
    a candidate that knows nothing of a layer."""
    starts = np.array([[x[rng.permutation(x.shape[0])[:k]] for x in X] for _ in range(restarts)])
    return np.min([_final_logs(X, lloyd(X, c, n_steps).centers[-1]) for c in starts], axis=0)


def partial_correlation(a, b, given):
    """The correlation over tasks of ``a`` and ``b`` with the part of each that is linear in ``given`` removed
    (least squares with an intercept); nan when either has nothing left."""
    basis = np.stack([np.ones_like(given), given], axis=1)
    rest = [v - basis @ np.linalg.lstsq(basis, v, rcond=None)[0] for v in (a, b)]
    norms = [np.linalg.norm(r) for r in rest]
    if min(norms) <= 1e-12 * max(np.linalg.norm(a), np.linalg.norm(b)):
        return float("nan")
    return float(rest[0] @ rest[1] / (norms[0] * norms[1]))


def fidelity_to(target, X, candidates, lloyd_final):
    """F1, F2 and the final-objective correlations of every candidate trajectory against ``target``.

    ``target`` and each of ``candidates`` (``{name: trajectory}``) are ``(T + 1, B, k, d)`` from the same
    ``init``; ``lloyd_final``: per task, Lloyd's final log objective after ``T`` steps.

    Returns
    -------
    dict
        ``{candidate: {"one_step_ratio": {"q25", "median", "q75"}, "gain_correlation", "final_correlation",
        "partial_correlation", "recovered"}}`` (the final log objectives' correlation over tasks with the
        target's, and the same given Lloyd's final log objective), and ``"layer_gain"``: the target's mean gain
        over Lloyd.
    """
    B = target.shape[1]
    moved = np.linalg.norm((target[1] - target[0]).reshape(B, -1), axis=1)
    final = _final_logs(X, target[-1])
    layer_gain = lloyd_final - final
    out = {"layer_gain": float(np.mean(layer_gain))}
    for name, run in candidates.items():
        ratio = np.linalg.norm((run[1] - target[1]).reshape(B, -1), axis=1) / moved
        own = _final_logs(X, run[-1])
        gain = lloyd_final - own
        defined = np.std(gain) > 0
        out[name] = {"one_step_ratio": dict(zip(("q25", "median", "q75"),
                                                 (float(q) for q in np.quantile(ratio, QUARTILES)), strict=True)),
                     "gain_correlation": float(np.corrcoef(gain, layer_gain)[0, 1]) if defined else float("nan"),
                     "final_correlation": float(np.corrcoef(own, final)[0, 1]),
                     "partial_correlation": partial_correlation(own, final, lloyd_final) if defined else float("nan"),
                     "recovered": float(np.mean(gain) / np.mean(layer_gain))}
    return out


def fidelity_of_seed(theta, model_config, X, init, n_steps, steps, engine=None):
    """:func:`fidelity_to` the layer ``theta`` of every candidate ``steps`` (``{name: step(X, C)}``) run from
    ``init`` for ``n_steps`` on the tasks ``X``."""
    layer = run_steps(theta, X, init, model_config, n_steps, engine=engine)  # (T + 1, B, k, d)
    lloyd_final = _final_logs(X, lloyd(X, init, n_steps).centers[-1])
    return fidelity_to(layer, X, {name: trajectory(step, X, init, n_steps) for name, step in steps.items()},
                       lloyd_final)


def _fitting_tasks(config, n_tasks, fit_seed):
    check_int(n_tasks, "n_tasks", low=1)
    return draw_tasks(np.random.default_rng(fit_seed), n_tasks, init="first", **config.task_kwargs())


def _goal(theta, config, X, init, target, engine):
    """The centers a distillation fits: ``target(X, init)``, or the layer's one step."""
    return run_steps(theta, X, init, config.model, 1, engine=engine)[1] if target is None else target(X, init)


def distill(theta, config, n_tasks=64, fit_seed=20_262, starts=((2.0, 2.0), (4.0, 8.0), (16.0, 32.0)),
            engine=None, target=None):
    """Leaky soft k-means's two scalars fitted to a trained layer's own one-step outputs on training tasks.

    ``theta``, ``config``: the layer and its run's :class:`~kmt_ref.learning.config.TrainConfig`. Tasks are
    drawn from the training distribution with a stream of their own (``fit_seed``: no run's training,
    validation or evaluation tasks); ``log beta`` and ``log sharpness`` minimize the squared distance of one
    leaky step's centers from the layer's (relative to the layer's move), by Nelder-Mead from each of
    ``starts``. Returns the best end point with every start's, so that the spread over starts is reported.
    ``target(X, init) -> centers``, if given, is fitted instead of the layer's step (the label-averaged layer).
    """
    X, init = _fitting_tasks(config, n_tasks, fit_seed)
    goal = _goal(theta, config, X, init, target, engine)
    moved = np.sum((goal - init) ** 2)

    def loss(p):
        return float(np.sum((np.asarray(leaky_step(X, init, np.exp(p[0]), np.exp(p[1]))[0]) - goal) ** 2) / moved)

    ends = []
    for start in starts:
        fit = scipy.optimize.minimize(loss, np.log(start), method="Nelder-Mead",
                                      options=dict(xatol=1e-6, fatol=1e-10, maxiter=400))
        ends.append(dict(start=list(start), beta=float(np.exp(fit.x[0])), sharpness=float(np.exp(fit.x[1])),
                         loss=float(fit.fun)))
    best = min(ends, key=lambda e: e["loss"])
    return dict(beta=best["beta"], sharpness=best["sharpness"], loss=best["loss"], starts=ends, n_tasks=n_tasks,
                fit_seed=fit_seed)


def distill_soft(theta, config, n_tasks=64, fit_seed=20_262, bounds=(-3.0, 6.0), engine=None, target=None):
    """Soft k-means's stiffness fitted as :func:`distill` fits leaky soft k-means's scalars: ``log beta`` in
    ``bounds`` minimizing one step's squared distance from the layer's (or ``target``'s), relative to its move.
    Returns ``{"beta", "loss", "n_tasks", "fit_seed"}``."""
    X, init = _fitting_tasks(config, n_tasks, fit_seed)
    goal = _goal(theta, config, X, init, target, engine)
    moved = np.sum((goal - init) ** 2)

    def loss(log_beta):
        return float(np.sum((soft_step(X, init, np.exp(log_beta)) - goal) ** 2) / moved)

    fit = scipy.optimize.minimize_scalar(loss, bounds=bounds, method="bounded", options=dict(xatol=1e-6))
    return dict(beta=float(np.exp(fit.x)), loss=float(fit.fun), n_tasks=n_tasks, fit_seed=fit_seed)


#: The scalars of the circuit with every block summarized, as :func:`distill_circuit` fits them end to end.
CIRCUIT_SCALARS = ("beta", "center_penalty", "inv_width", "sharpness", "penalty", "mu_0", "mu_1", "mu_2")


def _circuit_fit(p):
    fit = dict(zip(CIRCUIT_SCALARS[:5], (float(v) for v in p[:5]), strict=True))
    return dict(fit, mu=[float(v) for v in p[5:]])


def distill_circuit(theta, config, n_tasks=32, fit_seed=20_262, engine=None, target=None):
    """The circuit with every block summarized (:func:`~kmt_ref.learning.circuit.circuit_step`, CAX a
    softmax of distances with a term ``alpha ||c_j||^2`` shared by every id: :data:`CIRCUIT_SCALARS`, none of
    them per id) fitted end to end to the layer's one step (or ``target``'s) on training tasks.

    Starts from the block-by-block fit to the layer ``theta``
    (:func:`~kmt_ref.learning.circuit.fit_circuit`, its own tasks), then minimizes the squared distance of the
    circuit's step from the goal, relative to the goal's move, by least squares (``scipy.optimize``'s
    trust-region reflective method, finite-difference Jacobian). Returns the scalars as ``circuit_step`` reads
    them, with ``loss``, the start's ``start_loss``, ``n_tasks`` and ``fit_seed``.
    """
    X, init = _fitting_tasks(config, n_tasks, fit_seed)
    goal = _goal(theta, config, X, init, target, engine)
    scale = np.sqrt(np.sum((goal - init) ** 2))
    block = fit_circuit(theta, config)

    def residual(p):
        return ((circuit_step(theta, config.model, _circuit_fit(p), X, init, SUMMARIES, engine) - goal)
                / scale).ravel()

    start = np.array([block["beta"], 0.0, block["inv_width"], block["sharpness"], block["penalty"], *block["mu"]])
    fit = scipy.optimize.least_squares(residual, start, x_scale="jac", max_nfev=400)
    return dict(_circuit_fit(fit.x), loss=float(np.sum(fit.fun ** 2)), start_loss=float(np.sum(residual(start) ** 2)),
                n_tasks=n_tasks, fit_seed=fit_seed)


def averaged_step(theta, model_config, perms, engine=None):
    """The label-averaged layer: ``step(X, C)``, the mean over ``perms`` (permutations of the ``k`` ids) of the
    layer's step from the centers ``C[:, perm]``, mapped back to their ids. It treats every id alike up to the
    sample of permutations; the layer itself does so only if its step commutes with every relabelling."""
    return group_averaged_step(theta, model_config, [(perm, None, None) for perm in perms], engine)


def cube_symmetries(rng, k, d, count):
    """``count`` random elements of the task law's symmetry group: ``(ids, coords, flips)``, a permutation of the
    ``k`` ids, a permutation of the ``d`` coordinates and the coordinates reflected by ``x -> 1 - x`` (the tasks
    live in the unit cube, which these maps keep; a sign flip ``x -> -x`` would leave it)."""
    return [(rng.permutation(k), rng.permutation(d), rng.random(d) < 0.5) for _ in range(count)]


def _moved(Z, coords, flips):
    """``Z`` (..., m, d) with its coordinates permuted (new ``i`` = old ``coords[i]``), then reflected where
    ``flips``; ``coords`` None: as it is."""
    if coords is None:
        return Z
    Z = Z[..., coords]
    return np.where(flips, 1.0 - Z, Z)


def _moved_back(Z, coords, flips):
    """The inverse of :func:`_moved`: reflected back, then the coordinates returned to their places."""
    if coords is None:
        return Z
    Z = np.where(flips, 1.0 - Z, Z)
    back = np.empty_like(Z)
    back[..., coords] = Z
    return back


def group_averaged_step(theta, model_config, elements, engine=None):
    """The layer averaged over a sample of symmetries: ``step(X, C)``, the mean over ``elements`` (each
    ``(ids, coords, flips)`` as :func:`cube_symmetries` draws them; ``coords`` None: the ids only) of the
    layer's step on the moved tasks, mapped back. The layer itself commutes with the group only if each term
    is its own step."""
    def step(X, C):
        total = np.zeros_like(C)
        for ids, coords, flips in elements:
            out = run_steps(theta, _moved(X, coords, flips), _moved(C, coords, flips)[:, ids], model_config, 1,
                            engine=engine)[1]
            back = np.empty_like(out)
            back[:, ids] = out
            total += _moved_back(back, coords, flips)
        return total / len(elements)
    return step


def summarize_fidelity(per_seed):
    """``{candidate: {"one_step_ratio": [median per seed], "gain_correlation": [per seed]}}`` from the
    per-seed results of :func:`fidelity_of_seed` (the report's ``fidelity`` key)."""
    names = [name for name in per_seed[0] if name != "layer_gain"]
    return {name: {"one_step_ratio": [p[name]["one_step_ratio"]["median"] for p in per_seed],
                   "gain_correlation": [p[name]["gain_correlation"] for p in per_seed]} for name in names}
