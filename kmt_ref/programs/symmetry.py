"""The learned layers and the symmetries of the task law: relabellings of the starts' ids, permutations of the
coordinates and reflections ``x -> 1 - x`` of the unit cube the tasks live in.

``reproduce full-group`` (:func:`full_group`): the closed forms against the learned layers averaged over the
whole group. ``reproduce symmetric-layer`` (:func:`symmetric_layer`): the layer that has every symmetry by
construction (``ModelConfig(symmetric=True)``) beside Lloyd, the standard and tied layers and soft k-means.

The ``symmetric`` experiment (:func:`~kmt_ref.programs.interpret.symmetric`) averages over the ids only; a
layer that depends on the coordinate frame then still differs from every closed form, which treats the
coordinates alike. Here each target, the standard and the tied layer alike, is averaged over
:data:`AVERAGED` draws of the whole group, its floor is a second, independent average over as many, and the
null of the final-objective correlation is the layer against its own transformed twin (one group element).
"""


import numpy as np

from ..classical import lloyd
from ..learning.evaluate import evaluation_tasks
from ..learning.model import run_steps
from ..learning.protocols import SCALES
from ..objective import kmeans_objective
from . import runs
from .dissection import DISSECTION_TASKS
from .fidelity import best_of_restarts, candidate_steps, cube_symmetries, group_averaged_step, trajectory
from .interpret import BEST_OF, _against, _distilled, _distilled_steps, _fitted, each_layer

__all__ = ["full_group", "symmetric_layer", "AVERAGED"]

#: Group elements averaged in each fully averaged target; a second, independent draw of as many is its floor.
AVERAGED = 32


def full_group(scale="paper", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Per standard and tied seed, on its first :data:`~kmt_ref.programs.dissection.DISSECTION_TASKS` held-out
    tasks: the fully averaged layer as the target, and beside it the layer, its transformed twin, a second
    average (the floor), Lloyd's algorithm, soft and leaky soft k-means as the interpret experiment fitted them,
    and soft k-means, leaky soft k-means and the circuit distilled to the target's one step on training tasks,
    each by :func:`~kmt_ref.programs.fidelity.fidelity_to` (one step and through the scale's evaluation steps).
    Group elements and Lloyd's restarts are drawn from ``numpy.random.default_rng(seed)``."""
    s = SCALES[scale]
    n_tasks, n_steps = min(DISSECTION_TASKS, s["eval_tasks"]), s["n_eval_steps"]
    soft_beta, fit = _fitted(scale, results_dir, n_steps)
    common = candidate_steps(soft_beta, {n_steps: fit})
    standard = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    tied_models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine, tied=True)
    out = dict(**runs.status(standard), tied_status=runs.status(tied_models), n_tasks=n_tasks, n_eval_steps=n_steps,
               averaged=AVERAGED, best_of=BEST_OF, soft_beta=soft_beta, leaky_fit=fit, standard=[], tied=[])
    for kind, r, rng, X, init in each_layer(standard + tied_models, n_tasks, progress, "full-group"):
        model = r.config.model
        elements = cube_symmetries(rng, init.shape[1], X.shape[-1], 2 * AVERAGED + 1)
        average = group_averaged_step(r.theta, model, elements[:AVERAGED], engine)
        target = trajectory(average, X, init, n_steps)
        ready = {"layer": run_steps(r.theta, X, init, model, n_steps, engine=engine),
                 "transformed twin": trajectory(group_averaged_step(r.theta, model, elements[-1:], engine), X, init,
                                                n_steps),
                 "another fully averaged layer": trajectory(
                     group_averaged_step(r.theta, model, elements[AVERAGED:2 * AVERAGED], engine), X, init, n_steps)}
        lloyd_final = np.log(kmeans_objective(X, lloyd(X, init, n_steps).centers[-1]))
        best_final = best_of_restarts(X, init.shape[1], n_steps, rng, BEST_OF)
        fits = _distilled(r.theta, r.config, average, engine)
        steps = dict(common, **_distilled_steps(r.theta, model, fits, engine))
        out[kind].append(dict(seed=r.config.seed, fits=fits, fidelity={
            "fully averaged layer": _against(target, X, init, n_steps, steps, ready, lloyd_final, best_final)}))
    return out


def symmetric_layer(scale="paper", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The symmetric layer (every symmetry of the task law by construction) on each seed's held-out tasks, beside
    Lloyd's algorithm, the standard and the tied layer of the same seed (where trained) and soft k-means at the
    interpret experiment's stiffness; its 48 scalars by name
    (:func:`~kmt_ref.learning.sharing.symmetric_scalars`); and its one step's change under one draw of the group
    (``(ids, coords, flips)`` from ``numpy.random.default_rng(seed)``), relative to the step: rounding only."""
    from ..learning.protocols import committed, soft_kmeans_final
    from ..learning.sharing import symmetric_scalars

    s = SCALES[scale]
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine, symmetric=True)
    done = [r.config.seed for r in models]
    others = {kind: _trained(scale, results_dir, progress, done, engine, **options)
              for kind, options in (("standard", {}), ("tied", dict(tied=True)))}
    m_sym, ll, _ = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    out = dict(**runs.status(models), lloyd_final=runs.finite(ll[:, -1]), symmetric_final=runs.finite(m_sym[:, -1]),
               val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
               scalars=[symmetric_scalars(r.theta, r.config.model) for r in models])
    for kind, trained in others.items():
        finals = dict(zip([r.config.seed for r in trained],
                          runs.finite(runs.curves(trained, s["n_eval_steps"], s["eval_tasks"], progress=progress,
                                                  engine=engine)[0][:, -1]) if trained else [], strict=True))
        out[f"{kind}_final"] = [finals.get(seed) for seed in done]
        out[f"{kind}_seeds"] = sorted(finals)
    beta = committed("interpret", scale)["soft_beta"]
    out.update(soft_beta=beta, soft_final=[soft_kmeans_final(r.config, beta, scale) for r in models])
    moved = []
    for r in models:
        X, init = evaluation_tasks(r.config, min(DISSECTION_TASKS, s["eval_tasks"]))
        rng = np.random.default_rng(r.config.seed)
        own = run_steps(r.theta, X, init, r.config.model, 1, engine=engine)[1]
        twin = group_averaged_step(r.theta, r.config.model, cube_symmetries(rng, init.shape[1], X.shape[-1], 1),
                                   engine)(X, init)
        move = np.linalg.norm((own - init).reshape(len(X), -1), axis=1)
        moved.append(float(np.max(np.linalg.norm((twin - own).reshape(len(X), -1), axis=1) / move)))
    out["group_change_worst"] = moved
    return out


def _trained(scale, results_dir, progress, seeds, engine, **overrides):
    """The trained models of ``seeds`` that exist (none trained here: a comparison, not a reason to train)."""
    try:
        return runs.seed_models(scale, "d+k", results_dir, False, progress, seeds, engine, **overrides)
    except runs.MissingModelsError:
        return []
