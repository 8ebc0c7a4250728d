"""What the trained layer learned, part 1: what breaks it, and what it measures.

An ablation that costs many times the layer's gain shows a co-adapted circuit
breaking, not where the gain comes from: the ablations say which parts the
layer cannot do without; the closed form they point to is part 2
(:mod:`kmt_ref.programs.interpret`).

Evaluation only, on the committed ``[x | y]`` models: each model is run with
one part of it changed (:data:`ABLATIONS`) on held-out tasks of its seed, and
the change in the final mean log objective is recorded; on the same tasks the
quantities a hypothesis about the layer needs are measured
(:func:`first_layer_quantities`). Each seed is one job: its result file
(``dissection/seed<S>.json`` under the results folder) is written when it is
done and reused when it exists, so an interrupted run continues where it
stopped, and an ablation added later is the only work a rerun does.
"""

import json
import os
import sys

import numpy as np

from .._paths import read_json
from .._validation import check_choice
from ..classical import lloyd
from ..geometry import nearest_center, squared_distances
from ..layer import BLOCK_NAMES
from ..learning.analysis import attention_maps
from ..learning.evaluate import evaluation_tasks, lloyd_curve, model_curve
from ..learning.model import params_from_transformer, to_transformer, unflatten
from ..learning.protocols import SCALES
from ..lloyd_transformer import lloyd_transformer
from . import runs
from ._results import check_output_dir

__all__ = ["ABLATIONS", "CONSTRUCTION_GAMMA", "DISSECTION_TASKS", "QUANTITY_TASKS", "ablated", "first_layer_quantities",
           "dissection"]

#: Held-out tasks per seed for the ablations (the paper-scale evaluations use 320; 64 keep the 34 runs of a
#: seed to minutes).
DISSECTION_TASKS = 64
#: Tasks per seed on which the first layer's attention is measured (its point-to-point map is n x n).
QUANTITY_TASKS = 8


#: The inverse temperature of the construction whose blocks replace the layer's (the one the learning chapter
#: draws beside the learned weights).
CONSTRUCTION_GAMMA = 1.0


def _remove(p, x, y, built):
    p["Wv"][:] = 0.0
    p["bv"][:] = 0.0


def _uniform(p, x, y, built):  # equal scores: every query averages all the values
    for name in ("Wq", "Wk", "bq", "bk"):
        p[name][:] = 0.0


def _scores_without(part):
    def change(p, x, y, built):
        cols = {"x": x, "y": y}[part]
        p["Wq"][:, cols] = 0.0
        p["Wk"][:, cols] = 0.0
    return change


def _writes_no(part):
    def change(p, x, y, built):
        rows = {"x": x, "y": y}[part]
        p["Wv"][rows, :] = 0.0
        p["bv"][rows] = 0.0
    return change


def _construction(p, x, y, built):
    for name, value in built.items():
        p[name][...] = value


def _diagonal_summary(p, x, y, built):
    # The nearest matrix of the construction's form a_x P_x + a_y P_y is the mean of each diagonal part (least
    # squares); the nearest bias b_x 1_x + b_y 1_y the mean of each part.
    for value in p.values():
        new = np.zeros_like(value)
        for part in (x, y):
            if value.ndim == 2:
                new[part, part] = np.mean(np.diag(value)[part]) * np.eye(part.stop - part.start)
            else:
                new[part] = np.mean(value[part])
        value[...] = new


#: The changes made to one block, by name: ``change(params_of_block, x_slice, y_slice, built)`` in place,
#: ``built`` the same block of the construction (:data:`CONSTRUCTION_GAMMA`) in the learned format.
CHANGES = {
    "removed": _remove,
    "uniform attention": _uniform,
    "scores ignore x": _scores_without("x"),
    "scores ignore y": _scores_without("y"),
    "writes no x": _writes_no("x"),
    "writes no y": _writes_no("y"),
    "the construction's": _construction,
    "diagonal summary": _diagonal_summary,
}

#: Every ablation: ``"<block>: <change>"``.
ABLATIONS = tuple(f"{b}: {c}" for b in BLOCK_NAMES for c in CHANGES)


def ablated(theta, config, name):
    """A copy of ``theta`` with the ablation ``name`` (one of :data:`ABLATIONS`) made.

    ``"<block>: the construction's"`` puts the block of Theorem 2.1's all-attention construction at
    :data:`CONSTRUCTION_GAMMA` in its place; ``"<block>: diagonal summary"`` replaces each of the block's
    matrices by the nearest matrix of the construction's form ``a_x P_x + a_y P_y`` (the scalars are the
    means of its diagonal over the ``x`` and the ``y`` coordinates) and each bias by the nearest
    ``b_x 1_x + b_y 1_y``.
    """
    block, change = check_choice(name, "name", ABLATIONS).split(": ")
    phi = np.array(theta, dtype=np.float64)
    params = unflatten(phi, config)  # views of phi
    layout = config.layout
    built, _ = params_from_transformer(lloyd_transformer(config.d, config.k, CONSTRUCTION_GAMMA,
                                                         config="all-attention"))
    CHANGES[change](params[block], layout.slices["x"], layout.slices["y"], unflatten(built, config)[block])
    return phi


def _fit_through_origin(u, v):
    """``(b, r2)``: the least-squares ``v ~ b u`` and the share of ``v``'s square it explains; ``(None, None)``
    when there is nothing to fit (every weight but the largest is exactly 0: a hardmax)."""
    uu = float(np.dot(u, u))
    if uu == 0.0:
        return None, None
    b = float(np.dot(u, v) / uu)
    return b, float(1.0 - np.sum((v - b * u) ** 2) / np.sum(v * v))


def first_layer_quantities(theta, config, X, init):
    """What the first application of the layer does on tasks ``X`` (B, n, d) from ``init`` (B, k, d).

    Returns a dict of floats (means over the tasks):

    * ``cax_inverse_temperature``, ``cax_fit_r2``: CAX's weights fitted as a
      softmax of ``-beta ||x - c||^2`` over the centers (log-weight differences
      against squared-distance differences, through the origin) and the share
      of the log-weight differences the fit explains (``None`` when every
      weight but the largest underflows to 0: nothing to fit);
    * ``sax_inverse_width``, ``sax_fit_r2``: the same for SAX's point-to-point
      weights, ``-||x_i - x_l||^2 / h``; ``sax_self_weight``: the mean weight a
      point gives itself; ``sax_neighbours``: the effective number of points it
      averages, ``1 / sum_l a_il^2``;
    * ``center_step``: ``s`` in ``c_new - c ~ s (m - c)``, ``m`` the means of
      Lloyd's assignment (1: a full Lloyd step);
    * ``cax_not_nearest``: the fraction of points whose largest CAX weight is
      not on their nearest center; ``cac_not_nearest``: the fraction whose
      largest weight in CAC (the center that weighs the point most when the
      centers average the points) is not their nearest center. (The learned
      layer's ``y`` block is no assignment: CAX's values barely write it.)
    """
    model = to_transformer(np.asarray(theta), config)
    out = {key: [] for key in ("cax_inverse_temperature", "cax_fit_r2", "sax_inverse_width", "sax_fit_r2",
                               "sax_self_weight", "sax_neighbours", "center_step", "cax_not_nearest",
                               "cac_not_nearest")}
    for Xb, Cb in zip(X, init, strict=True):
        maps = attention_maps(model, Xb, Cb)
        near = nearest_center(Xb, Cb)
        D = squared_distances(Xb, Cb)
        rows = np.arange(len(Xb))
        with np.errstate(divide="ignore"):
            logs = np.log(maps["CAX"])
        ok = np.isfinite(logs)
        u = (D - D[rows, near][:, None])[ok]
        v = (logs - logs[rows, near][:, None])[ok]
        beta, r2 = _fit_through_origin(u, -v)
        out["cax_inverse_temperature"].append(beta), out["cax_fit_r2"].append(r2)
        S = maps["SAX"]
        with np.errstate(divide="ignore"):
            logs = np.log(S)
        Dp = squared_distances(Xb, Xb)
        ok = np.isfinite(logs)
        inv_h, r2 = _fit_through_origin((Dp - np.diag(Dp)[:, None])[ok], -(logs - np.diag(logs)[:, None])[ok])
        out["sax_inverse_width"].append(inv_h), out["sax_fit_r2"].append(r2)
        out["sax_self_weight"].append(float(np.mean(np.diag(S))))
        out["sax_neighbours"].append(float(np.mean(1.0 / np.sum(S * S, axis=1))))
        step = model.run(Xb, Cb, 1)
        means = lloyd(Xb, Cb, 1, empty_cluster="keep").centers[1]
        moved, target = (step.centers[1] - Cb).ravel(), (means - Cb).ravel()
        out["center_step"].append(float(np.dot(moved, target) / np.dot(target, target)))
        out["cax_not_nearest"].append(float(np.mean(np.argmax(maps["CAX"], axis=1) != near)))
        out["cac_not_nearest"].append(float(np.mean(np.argmax(maps["CAC"], axis=0) != near)))
    return {key: (float(np.mean([x for x in v if x is not None])) if any(x is not None for x in v) else None)
            for key, v in out.items()}


def _seed_job(r, n_steps, n_tasks, engine, done=None):
    """One seed's numbers: Lloyd, the learned layer and every ablation after ``n_steps``, and the quantities.

    ``done``: an earlier result of the same job; only what it lacks (ablations added since) is computed.
    """
    config = r.config.model
    X, init = evaluation_tasks(r.config, n_tasks)
    finals = {} if done is None else dict(done["final"])
    if "Lloyd" not in finals:
        finals["Lloyd"] = float(lloyd_curve(X, init, n_steps)[0][-1])
    if "learned" not in finals:
        finals["learned"] = float(model_curve(r.theta, config, X, init, n_steps, engine=engine)[0][-1])
    for name in ABLATIONS:
        if name not in finals:
            phi = ablated(r.theta, config, name)
            finals[name] = float(model_curve(phi, config, X, init, n_steps, engine=engine)[0][-1])
    quantities = (first_layer_quantities(r.theta, config, X[:QUANTITY_TASKS], init[:QUANTITY_TASKS])
                  if done is None else done["quantities"])
    return dict(seed=r.config.seed, step=int(r.step), n_tasks=n_tasks, n_eval_steps=n_steps, final=finals,
                quantities=quantities)


def _earlier(path, job):
    """The result a run wrote at ``path`` for the same ``job``, else ``None`` (a job whose inputs differ is not
    the same job)."""
    if not os.path.exists(path):
        return None
    done = read_json(path)
    return done if isinstance(done, dict) and {key: done.get(key) for key in job} == job else None


def dissection(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Where the learned layer's gain over Lloyd comes from: every ablation on every seed, and the quantities.

    Each seed is a job (:func:`_seed_job`); a finished one is read back from the results folder, and only the
    ablations it lacks (added since it ran) are computed.
    """
    s = SCALES[scale]
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    n_tasks, n_steps = min(DISSECTION_TASKS, s["eval_tasks"]), s["n_eval_steps"]
    per_seed = []
    for r in models:
        path = check_output_dir(os.path.join(results_dir, scale, "dissection", f"seed{r.config.seed}.json"))
        job = dict(seed=r.config.seed, step=int(r.step), n_tasks=n_tasks, n_eval_steps=n_steps)
        done = _earlier(path, job)
        if done is not None and set(ABLATIONS) <= set(done["final"]):
            per_seed.append(done)
            continue
        missing = [name for name in ABLATIONS if done is None or name not in done["final"]]
        if progress:
            print(f"  dissecting seed {r.config.seed}: {len(missing)} ablations on {n_tasks} tasks, "
                  f"{n_steps} steps", file=sys.stderr, flush=True)
        result = _seed_job(r, n_steps, n_tasks, engine, done)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        per_seed.append(result)
    gain = [p["final"]["Lloyd"] - p["final"]["learned"] for p in per_seed]
    summary = {}
    for name in ABLATIONS:
        loss = [p["final"][name] - p["final"]["learned"] for p in per_seed]
        summary[name] = dict(median=float(np.median(loss)), min=float(np.min(loss)), max=float(np.max(loss)),
                             share_of_gain=float(np.median([a / g for a, g in zip(loss, gain, strict=True)])))
    quantities = {key: [p["quantities"][key] for p in per_seed] for key in per_seed[0]["quantities"]}
    return dict(**runs.status(models), n_tasks=n_tasks, n_eval_steps=n_steps, quantity_tasks=QUANTITY_TASKS, gain=gain,
                ablations=summary, quantities=quantities, per_seed=per_seed)
