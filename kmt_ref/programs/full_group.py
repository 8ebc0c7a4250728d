"""``reproduce full-group``: the closed forms against the learned layers averaged over every symmetry of the
task law: relabellings of the starts' ids, permutations of the coordinates and reflections ``x -> 1 - x`` of
the unit cube the tasks live in.

The ``symmetric`` experiment (:func:`~kmt_ref.programs.interpret.symmetric`) averages over the ids only; a
layer that depends on the coordinate frame then still differs from every closed form, which treats the
coordinates alike. Here each target, the standard and the tied layer alike, is averaged over
:data:`AVERAGED` draws of the whole group, its floor is a second, independent average over as many, and the
null of the final-objective correlation is the layer against its own transformed twin (one group element).
"""

import sys

import numpy as np

from ..classical import lloyd
from ..learning.evaluate import evaluation_tasks
from ..learning.model import run_steps
from ..learning.protocols import SCALES
from ..objective import kmeans_objective
from . import runs
from .dissection import DISSECTION_TASKS
from .fidelity import best_of_restarts, candidate_steps, cube_symmetries, group_averaged_step, trajectory
from .interpret import BEST_OF, _against, _distilled, _distilled_steps, _fitted

__all__ = ["full_group", "AVERAGED"]

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
    for r in standard + tied_models:
        kind = "tied" if r.config.tied else "standard"
        if progress:
            print(f"  full-group: {kind} layer, seed {r.config.seed}", file=sys.stderr, flush=True)
        rng = np.random.default_rng(r.config.seed)
        model = r.config.model
        X, init = evaluation_tasks(r.config, n_tasks)
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
