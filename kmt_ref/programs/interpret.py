"""What the trained layer learned, part 2: the closed form its dissection points to, against the layer.

Leaky soft k-means (:mod:`kmt_ref.variants.leaky`) with two scalars fitted on the training distribution,
and soft k-means at its best single stiffness, run beside the trained layers on each seed's held-out tasks
(their final objectives, the share of the layer's gain each recovers, how far one step moves the centers
that own and that share their points, and how faithfully each describes the layer task by task:
:mod:`kmt_ref.programs.fidelity`, with the layer distilled block by block besides), off the training
distribution, from starts made to test the account, and on the real data sets.
"""

import os
import sys

import numpy as np

from .._paths import read_json
from .._validation import check_choice
from ..classical import lloyd
from ..geometry import nearest_center
from ..learning.circuit import SUMMARIES, circuit_step, fit_circuit
from ..learning.closed_form import fit_leaky
from ..learning.evaluate import evaluation_tasks, lloyd_curve, log_objective_curve, model_curve
from ..learning.model import run_steps, to_transformer
from ..learning.protocols import SCALES, committed, run_config
from ..objective import kmeans_objective
from ..real_data import DATASETS, load_dataset, to_width
from ..tasks import sample_tasks
from ..variants.leaky import leaky_step
from ..variants.soft import responsibilities, soft_kmeans
from . import runs
from .beyond import _learned_on, _scores, real_data_starts
from .dissection import DISSECTION_TASKS, QUANTITY_TASKS
from .fidelity import (
    CIRCUIT,
    RESTARTS,
    averaged_step,
    best_of_restarts,
    candidate_steps,
    circuit_name,
    circuit_steps,
    distill,
    distill_circuit,
    distill_soft,
    fidelity_of_seed,
    fidelity_to,
    partial_correlation,
    soft_step,
    summarize_fidelity,
    trajectory,
)

__all__ = ["interpret", "symmetric", "symmetric_summary", "AVERAGED_RELABELLINGS", "BEST_OF", "FLOOR_MARGIN",
           "DESCRIBES", "strides",
           "SOFT_BETAS", "FIT", "OWNERSHIP_BETA", "OWNS", "SHIFTS", "MADE_STARTS"]


#: The stiffnesses among which soft k-means's best single one is chosen (on training tasks).
SOFT_BETAS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: How the closed form's scalars are fitted, per scale: the tasks of the fitting sample (they also choose soft
#: k-means's stiffness) and the seed of the fitting stream (its own: no run's training, validation or
#: evaluation tasks).
FIT = {"quick": dict(n_tasks=32, seed=20_261), "paper": dict(n_tasks=256, seed=20_261)}


def _leaky_curve(X, init, n_steps, beta, sharpness):
    centers = [init]
    for _ in range(n_steps):
        centers.append(leaky_step(X, centers[-1], beta, sharpness)[0])
    return log_objective_curve(X, np.array(centers))


def _soft_final(X, init, n_steps, beta):
    centers = np.array([soft_kmeans(x, c, n_steps, beta).centers[-1] for x, c in zip(X, init, strict=True)])
    return float(log_objective_curve(X, centers[None])[0][0])


#: A center *owns* its points when their responsibilities at stiffness :data:`OWNERSHIP_BETA` (about the
#: trained layer's CAX, see the dissection) give it on average at least :data:`OWNS`; otherwise it shares them.
OWNERSHIP_BETA = 4.0
OWNS = 0.75


def strides(X, init, steps):
    """How far one step moves the centers that own their points and those that share them.

    ``steps``: ``{name: step(X, C) -> new centers}`` for one task. A center's
    *stride* is the length of its move over that of Lloyd's step
    (``|c_new - c| / |m - c|``, ``m`` its Lloyd mean; 1: as far as Lloyd).
    Ownership: :data:`OWNS` of the responsibilities at :data:`OWNERSHIP_BETA`
    of the points nearest to the center; centers with no point nearest, or
    already at their mean, are left out.

    Returns
    -------
    strides : dict
        ``{name: {"owns": [median, 90th percentile], "shares": [...]}}`` over
        the centers of the tasks ``X`` (B, n, d), ``init`` (B, k, d); ``None``
        for a kind with no center.
    counts : dict
        ``{"owns": int, "shares": int}``.
    """
    moved = {name: {"owns": [], "shares": []} for name in steps}
    counts = {"owns": 0, "shares": 0}
    for Xb, Cb in zip(X, init, strict=True):
        near = nearest_center(Xb, Cb)
        R = responsibilities(Xb, Cb, OWNERSHIP_BETA)
        lloyd_move = np.linalg.norm(lloyd(Xb, Cb, 1, empty_cluster="keep").centers[1] - Cb, axis=1)
        move = {name: np.linalg.norm(step(Xb, Cb) - Cb, axis=1) for name, step in steps.items()}
        for j in range(len(Cb)):
            mine = near == j
            if not mine.any() or lloyd_move[j] == 0.0:
                continue
            kind = "owns" if R[mine, j].mean() >= OWNS else "shares"
            counts[kind] += 1
            for name, m in move.items():
                moved[name][kind].append(float(m[j] / lloyd_move[j]))
    summary = {name: {kind: [float(q) for q in np.quantile(v, [0.5, 0.9])] if v else None for kind, v in r.items()}
               for name, r in moved.items()}
    return summary, counts


#: Where the learned layer was evaluated off its training distribution (committed experiments of the same
#: scale, each ``{condition: task options}`` in its result): the closed form runs on the same tasks.
SHIFTS = ("generalization", "kmeanspp", "families")


def _shifted(models, scale, fit, n_steps, progress, results_dir=None):
    """The fitted closed form on the tasks of every shift experiment, beside the layer's numbers there.

    Each experiment's result is read from ``results_dir`` when a run wrote it there, else from the
    committed results.

    Lloyd is recomputed on the same tasks and its median over seeds must equal the committed one to 1e-12
    (the tasks are the same; the last digits may differ from a result committed by an older version).
    ``learned_median`` is the layer's committed median; ``shares`` the fraction of the first centers
    that share their points (:func:`strides`' rule), per seed.
    """
    out = {}
    for name in SHIFTS:
        mine = None if results_dir is None else os.path.join(results_dir, scale, f"{name}.json")
        if mine is not None and os.path.exists(mine):
            done = read_json(mine)
        else:
            done = committed(name, scale)
        seeds = [r.config.seed for r in models]
        if done["seeds"] != seeds:
            raise ValueError(f"the committed {name} result covers seeds {done['seeds']}, not {seeds}")
        out[name] = {}
        for condition, row in done.items():
            if not (isinstance(row, dict) and "options" in row):
                continue
            if progress:
                print(f"  {name}: {condition}", file=sys.stderr, flush=True)
            lloyd_final, leaky, shares = [], [], []
            for r in models:
                X, init = evaluation_tasks(r.config, SCALES[scale]["eval_tasks"], **row["options"])
                lloyd_final.append(float(lloyd_curve(X, init, n_steps)[0][-1]))
                curve, _ = _leaky_curve(X, init, n_steps, fit["beta"], fit["sharpness"])
                leaky.append(float(curve[-1]))
                shares.append(_share_of_sharing(X[:QUANTITY_TASKS], init[:QUANTITY_TASKS]))
            if not np.isclose(np.median(lloyd_final), row["lloyd"]["median"][-1], rtol=1e-12, atol=0):
                raise ValueError(f"{name} {condition}: Lloyd gives {np.median(lloyd_final)}, the committed result "
                                 f"{row['lloyd']['median'][-1]}: not the same tasks")
            out[name][condition] = dict(options=row["options"], lloyd_final=lloyd_final, leaky_final=leaky,
                                        learned_median=row["learned"]["median"][-1], shares=shares)
    return out


def _share_of_sharing(X, init):
    _, counts = strides(X, init, {})
    total = counts["owns"] + counts["shares"]
    return counts["shares"] / total if total else None


#: Initial centers made to test the explanation (:func:`~kmt_ref.tasks.initial_centers`), on each seed's
#: held-out tasks: spread out (few centers share their points) and crowded together (every center shares).
MADE_STARTS = ("farthest-first", "crowded")


def _made(models, n_tasks, n_steps, fit, progress, engine):
    """Lloyd, the learned layer and the fitted closed form from the :data:`MADE_STARTS` on each seed's held-out
    tasks, and the share of centers that start sharing their points."""
    out = {}
    for kind in MADE_STARTS:
        if progress:
            print(f"  starts made for the explanation: {kind}", file=sys.stderr, flush=True)
        row = dict(lloyd_final=[], learned_final=[], leaky_final=[], shares=[])
        for r in models:
            X, init = evaluation_tasks(r.config, n_tasks, init=kind)  # the same points as the "first" tasks
            row["lloyd_final"].append(float(lloyd_curve(X, init, n_steps)[0][-1]))
            row["learned_final"].append(float(model_curve(r.theta, r.config.model, X, init, n_steps,
                                                          engine=engine)[0][-1]))
            row["leaky_final"].append(float(_leaky_curve(X, init, n_steps, fit["beta"], fit["sharpness"])[0][-1]))
            row["shares"].append(_share_of_sharing(X[:QUANTITY_TASKS], init[:QUANTITY_TASKS]))
        out[kind] = row
    return out


def _real(models, fit, soft_beta, progress, engine):
    """The fitted closed form and soft k-means beside Lloyd on the real data sets, with the real-data
    experiment's starts, width and number of steps; the learned layers where the data have their ``k``.

    Lloyd's mean log objective must equal the committed real-data result's to 1e-12 (the same data, width,
    starts and steps), or the run stops.
    """
    done = committed("real-data", "beyond")
    width, n_steps, out = done["width"], done["n_eval_steps"], {}
    for index, name in enumerate(DATASETS):
        X, labels = load_dataset(name)
        n, k = X.shape[0], int(labels.max()) + 1
        Xw = to_width(X, width)
        inits = Xw[real_data_starts(index, n, k)]
        Xb = np.broadcast_to(Xw, (len(inits),) + Xw.shape)
        if progress:
            print(f"  real data: {name}", file=sys.stderr, flush=True)
        lloyd_run = np.stack([lloyd(Xw, c, n_steps).centers for c in inits], axis=1)
        row = dict(k=k, shares=_share_of_sharing(Xb[:QUANTITY_TASKS], inits[:QUANTITY_TASKS]),
                   lloyd=_scores(Xw, lloyd_run, labels))
        if not np.isclose(row["lloyd"]["log_objective"], done["per_dataset"][name]["lloyd"]["log_objective"],
                          rtol=1e-12, atol=0):
            raise ValueError(f"real data {name}: Lloyd gives {row['lloyd']['log_objective']}, the committed result "
                             f"{done['per_dataset'][name]['lloyd']['log_objective']}: not the same starts")
        centers = [inits]
        for _ in range(n_steps):
            centers.append(leaky_step(Xb, centers[-1], fit["beta"], fit["sharpness"])[0])
        row["leaky"] = _scores(Xw, np.array(centers), labels)
        soft = np.stack([soft_kmeans(Xw, c, n_steps, soft_beta).centers for c in inits], axis=1)
        row["soft k-means"] = _scores(Xw, soft, labels)
        if k == models[0].config.model.k and width == models[0].config.model.d:
            row["learned"] = _learned_on(models, Xw, inits, labels, n_steps, progress, f"{name}, learned", engine)
        out[name] = row
    return out


def interpret(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The learned layer against the closed form it points to (leaky soft k-means), on the dissection's tasks.

    The closed form's two scalars are fitted on the training distribution
    (:func:`~kmt_ref.learning.closed_form.fit_leaky`) twice: on the layer's
    own loss (one step) and on the loss after the evaluation's number of
    steps, and once more per seed on that seed's layer's own one-step outputs
    (:func:`~kmt_ref.programs.fidelity.distill`). Soft k-means runs at the one stiffness of :data:`SOFT_BETAS` with
    the lowest mean log objective after those steps on a batch of training
    tasks. Every seed's held-out tasks then give the final mean log
    objective of Lloyd, soft k-means, both fits and the learned layer, the
    share of the layer's gain over Lloyd each recovers, and, on the first
    :data:`QUANTITY_TASKS` of them, how far one step of each moves the
    centers that own and that share their points (:func:`strides`), and how
    faithfully each candidate describes the layer task by task (its one-step
    ratio and gain correlation, :mod:`kmt_ref.programs.fidelity`), among
    them the layer distilled block by block
    (:func:`~kmt_ref.learning.circuit.fit_circuit`, on each seed's layer;
    its fit on each disjoint slice of the fitting tasks is measured too).

    Off the training distribution, with the scalars fitted through the
    evaluation's steps: the tasks of the committed shift experiments
    (:data:`SHIFTS`), each seed's held-out tasks from starts made to test the
    explanation (:data:`MADE_STARTS`), and the real data sets of the
    real-data experiment (its starts, width and steps).
    """
    s, fit = SCALES[scale], FIT[check_choice(scale, "scale", FIT)]
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    n_tasks, n_steps = min(DISSECTION_TASKS, s["eval_tasks"]), s["n_eval_steps"]
    config = run_config(scale, "d+k", 0)
    rng = np.random.default_rng(fit["seed"])
    fits = {}
    for unroll in (1, n_steps):
        if progress:
            print(f"  fitting leaky soft k-means through {unroll} step(s)", file=sys.stderr, flush=True)
        fits[unroll] = fit_leaky(rng, config, unroll, n_tasks=fit["n_tasks"])
    X, init = sample_tasks(rng, fit["n_tasks"], init="first", **config.task_kwargs())
    soft_beta = min(SOFT_BETAS, key=lambda b: _soft_final(X, init, n_steps, b))
    per_seed = []
    for r in models:
        X, init = evaluation_tasks(r.config, n_tasks)
        final = {"Lloyd": float(lloyd_curve(X, init, n_steps)[0][-1]),
                 "soft k-means": _soft_final(X, init, n_steps, soft_beta),
                 "learned": float(model_curve(r.theta, r.config.model, X, init, n_steps, engine=engine)[0][-1])}
        for unroll, f in fits.items():
            curve, _ = _leaky_curve(X, init, n_steps, f["beta"], f["sharpness"])
            final[f"leaky, fitted through {unroll}"] = float(curve[-1])
        model = to_transformer(r.theta, r.config.model)
        steps = {"Lloyd": lambda x, c: lloyd(x, c, 1).centers[1],
                 "soft k-means": lambda x, c: soft_kmeans(x, c, 1, soft_beta).centers[1],
                 "learned": lambda x, c, model=model: model.run(x, c, 1).centers[1]}
        for unroll, f in fits.items():
            steps[f"leaky, fitted through {unroll}"] = lambda x, c, f=f: leaky_step(x, c, f["beta"], f["sharpness"])[0]
        stride, counts = strides(X[:QUANTITY_TASKS], init[:QUANTITY_TASKS], steps)
        distilled = distill(r.theta, r.config, engine=engine)
        circuit = fit_circuit(r.theta, r.config)
        candidates = dict(candidate_steps(soft_beta, fits, distilled),
                          **circuit_steps(r.theta, r.config.model, circuit, engine=engine))
        slices = {f"slice {i}": circuit_steps(r.theta, r.config.model, part, (CIRCUIT,), engine)[circuit_name(CIRCUIT)]
                  for i, part in enumerate(circuit["subsets"])}
        faithful = fidelity_of_seed(r.theta, r.config.model, X, init, n_steps, dict(candidates, **slices), engine)
        circuit["subsets_fidelity"] = [faithful.pop(name) for name in slices]
        per_seed.append(dict(seed=r.config.seed, final=final, stride=stride, centers=counts, fidelity=faithful,
                             distilled=distilled, circuit=circuit))
    shifted = _shifted(models, scale, fits[n_steps], n_steps, progress, results_dir)
    made = _made(models, n_tasks, n_steps, fits[n_steps], progress, engine)
    real = _real(models, fits[n_steps], soft_beta, progress, engine)
    gain = [p["final"]["Lloyd"] - p["final"]["learned"] for p in per_seed]
    recovered = {name: [(p["final"]["Lloyd"] - p["final"][name]) / g for p, g in zip(per_seed, gain, strict=True)]
                 for name in per_seed[0]["final"] if name not in ("Lloyd", "learned")}
    return dict(**runs.status(models), n_tasks=n_tasks, n_eval_steps=n_steps, soft_beta=soft_beta,
                fits={str(u): dict(f, **fit) for u, f in fits.items()},
                recovered=recovered, fidelity=summarize_fidelity([p["fidelity"] for p in per_seed]),
                per_seed=per_seed, shifted=shifted, made=made, real_data=real)


#: Relabellings of the starts' ids averaged in the label-averaged layer (:func:`symmetric`); a second, independent
#: set of as many measures the floor that their number leaves.
AVERAGED_RELABELLINGS = 32
#: Lloyd's restarts from random data points in :func:`symmetric`'s null of the final-objective correlation.
BEST_OF = RESTARTS


def _distilled(theta, config, target, engine):
    """Soft k-means, leaky soft k-means and the circuit of :data:`~kmt_ref.programs.fidelity.CIRCUIT_SCALARS`,
    each fitted to one step of ``target`` (``None``: the layer's) on training tasks."""
    return dict(soft=distill_soft(theta, config, engine=engine, target=target),
                leaky=distill(theta, config, engine=engine, target=target),
                circuit=distill_circuit(theta, config, engine=engine, target=target))


def _distilled_steps(theta, model_config, fits, engine):
    return {"soft k-means, distilled": lambda X, C: soft_step(X, C, fits["soft"]["beta"]),
            "leaky, distilled": lambda X, C: np.asarray(
                leaky_step(X, C, fits["leaky"]["beta"], fits["leaky"]["sharpness"])[0]),
            "circuit, distilled": lambda X, C: circuit_step(theta, model_config, fits["circuit"], X, C, SUMMARIES,
                                                            engine)}


def _against(target, X, init, n_steps, steps, runs_, lloyd_final, best_final):
    """:func:`~kmt_ref.programs.fidelity.fidelity_to` ``target`` of ``steps`` and of the ready trajectories
    ``runs_``, with the final-objective correlations of Lloyd's best restarts (a null: it knows nothing of the
    layer)."""
    candidates = dict({name: trajectory(step, X, init, n_steps) for name, step in steps.items()}, **runs_)
    out = fidelity_to(target, X, candidates, lloyd_final)
    final = np.log(kmeans_objective(X, target[-1]))
    out["best-of restarts"] = dict(final_correlation=float(np.corrcoef(best_final, final)[0, 1]),
                                   partial_correlation=partial_correlation(best_final, final, lloyd_final))
    return out


def _held_out_finals(run, n_tasks, soft_beta, fit, n_steps, engine):
    """The final mean log objective on ``run``'s seed's ``n_tasks`` held-out tasks (as the learning experiment
    evaluates the layer) of Lloyd's algorithm, the layer, soft k-means at ``soft_beta`` and leaky soft k-means
    at ``fit``."""
    X, init = evaluation_tasks(run.config, n_tasks)
    return {"Lloyd": float(lloyd_curve(X, init, n_steps)[0][-1]),
            "layer": float(model_curve(run.theta, run.config.model, X, init, n_steps, engine=engine)[0][-1]),
            f"soft k-means, beta = {soft_beta:g}": _soft_final(X, init, n_steps, soft_beta),
            f"leaky, fitted through {n_steps}": float(_leaky_curve(X, init, n_steps, fit["beta"],
                                                                   fit["sharpness"])[0][-1])}


def each_layer(models, n_tasks, progress, what):
    """``(kind, run, rng, X, init)`` for each trained layer: ``"tied"`` or ``"standard"``, a generator seeded by its
    seed, and its first ``n_tasks`` held-out tasks; said on stderr with ``progress``."""
    for r in models:
        kind = "tied" if r.config.tied else "standard"
        if progress:
            print(f"  {what}: {kind} layer, seed {r.config.seed}", file=sys.stderr, flush=True)
        X, init = evaluation_tasks(r.config, n_tasks)
        yield kind, r, np.random.default_rng(r.config.seed), X, init


def _fitted(scale, results_dir, n_steps):
    """``(soft_beta, leaky fit through n_steps)`` as the interpret experiment fitted them: its result in
    ``results_dir`` if a run wrote one, else the committed one."""
    mine = None if results_dir is None else os.path.join(results_dir, scale, "interpret.json")
    done = read_json(mine) if mine is not None and os.path.exists(mine) else committed("interpret", scale)
    if str(n_steps) not in done["fits"]:
        raise ValueError(f"this experiment runs leaky soft k-means as the interpret experiment fitted it through "
                         f"{n_steps} steps; its result has fits through {sorted(done['fits'])}: run "
                         f"`reproduce interpret` at this scale first")
    return done["soft_beta"], done["fits"][str(n_steps)]


def symmetric(scale="paper", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The closed forms against targets that treat the ids of the starts alike: the label-averaged standard layer
    (:func:`~kmt_ref.programs.fidelity.averaged_step`, :data:`AVERAGED_RELABELLINGS` relabellings) and the tied
    layer, beside the standard layer itself, on each seed's first :data:`DISSECTION_TASKS` held-out tasks.

    Candidates: Lloyd's algorithm, soft k-means and leaky soft k-means as the interpret experiment fitted them
    on the training distribution (its result in ``results_dir`` if a run wrote one, else the committed one), and
    soft k-means, leaky soft k-means and the circuit of :data:`~kmt_ref.programs.fidelity.CIRCUIT_SCALARS`
    distilled to each target's own one step on training
    tasks; for the standard layer's targets also the circuit around the layer's own CAX (fitted block by block,
    as the interpret experiment fits it), which is not a closed form. And per seed, on all its held-out tasks,
    the final mean log objective of Lloyd's algorithm, the layer and the interpret experiment's two closed forms
    (``final``: their shares of the layer's gain on more tasks than the fidelity's). Each candidate is measured
    by the one-step ratio (F1), the correlation over tasks of its final log objective with the target's and the
    same given Lloyd's (:func:`~kmt_ref.programs.fidelity.fidelity_to`); the gain correlation (F2) is kept. The
    floor of the averaged target is a second average over as many other relabellings; the nulls: the standard
    layer against its own average, Lloyd's best of :data:`BEST_OF` restarts. Permutations and restarts are
    drawn from ``numpy.random.default_rng(seed)``.
    """
    s = SCALES[scale]
    n_tasks, n_steps = min(DISSECTION_TASKS, s["eval_tasks"]), s["n_eval_steps"]
    soft_beta, fit = _fitted(scale, results_dir, n_steps)
    common = candidate_steps(soft_beta, {n_steps: fit})
    standard = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    tied_models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine, tied=True)
    by_seed = {r.config.seed: r for r in standard}
    out = dict(**runs.status(standard), tied_status=runs.status(tied_models), n_tasks=n_tasks, n_eval_steps=n_steps,
               relabellings=AVERAGED_RELABELLINGS, best_of=BEST_OF, soft_beta=soft_beta, leaky_fit=fit,
               standard=[], tied=[])
    for kind, r, rng, X, init in each_layer(standard + tied_models, n_tasks, progress, "symmetric"):
        model = r.config.model
        layer = run_steps(r.theta, X, init, model, n_steps, engine=engine)
        lloyd_final = np.log(kmeans_objective(X, lloyd(X, init, n_steps).centers[-1]))
        best_final = best_of_restarts(X, init.shape[1], n_steps, rng, BEST_OF)
        row = dict(seed=r.config.seed, fits={}, fidelity={},
                   final=_held_out_finals(r, s["eval_tasks"], soft_beta, fit, n_steps, engine))
        if kind == "standard":
            perms = [rng.permutation(init.shape[1]) for _ in range(2 * AVERAGED_RELABELLINGS)]
            average = averaged_step(r.theta, model, perms[:AVERAGED_RELABELLINGS], engine)
            averaged = trajectory(average, X, init, n_steps)
            floor = trajectory(averaged_step(r.theta, model, perms[AVERAGED_RELABELLINGS:], engine), X, init, n_steps)
            targets = {"layer": (layer, None, {"label-averaged layer": averaged}),
                       "label-averaged layer": (averaged, average, {"layer": layer,
                                                                    "another label-averaged layer": floor})}
        else:
            other = by_seed.get(r.config.seed)
            ready = {} if other is None else {"standard layer": run_steps(other.theta, X, init, other.config.model,
                                                                          n_steps, engine=engine)}
            targets = {"tied layer": (layer, None, ready)}
        # the circuit around the layer's own CAX (fitted block by block to the layer): not a closed form
        own = {} if kind == "tied" else circuit_steps(r.theta, model, fit_circuit(r.theta, r.config), (CIRCUIT,),
                                                      engine)
        for name, (target, step, ready) in targets.items():
            fits = _distilled(r.theta, r.config, step, engine)
            steps = dict(common, **_distilled_steps(r.theta, model, fits, engine), **own)
            row["fits"][name] = fits
            row["fidelity"][name] = _against(target, X, init, n_steps, steps, ready, lloyd_final, best_final)
        out[kind].append(row)
    return out


#: How close to its floor a closed form must come on every seed to describe the label-averaged layer, and the
#: F1 and final-objective correlation at which one describes the tied layer.
FLOOR_MARGIN = 0.1
DESCRIBES = dict(one_step_ratio=0.25, final_correlation=0.8)
#: The candidates of :func:`symmetric` that are layers or the floor, not closed forms.
_NOT_CLOSED = ("layer", "label-averaged layer", "another label-averaged layer", "standard layer", "best-of restarts",
               "layer_gain", circuit_name(CIRCUIT), "transformed twin", "another fully averaged layer")


def symmetric_summary(result):
    """Per target of :func:`symmetric`'s ``result``, each candidate's measures per seed, and the verdicts.

    Returns ``{kind: {target: {"candidates": {name: {"one_step_ratio": [median per seed], "final_correlation",
    "partial_correlation", "gain_correlation": [per seed]}}, "closed_forms": [names], "best": [(name, F1) per
    seed]}}}`` for kind ``"standard"`` and ``"tied"``; the label-averaged target adds ``"floor"`` (per seed, the
    second average's F1) and ``"within_floor"`` (the best closed form within :data:`FLOOR_MARGIN` of the floor on
    every seed); the tied layer adds ``"describe"``: the closed forms within :data:`DESCRIBES` on every seed.
    """
    out = {}
    for kind in ("standard", "tied"):
        rows = result[kind]
        if not rows:
            continue
        out[kind] = {}
        for target in rows[0]["fidelity"]:
            fids = [row["fidelity"][target] for row in rows]
            names = [n for n in fids[0] if n != "layer_gain"]
            cands = {n: {key: [f[n][key]["median"] if key == "one_step_ratio" else f[n][key] for f in fids]
                         for key in ("one_step_ratio", "final_correlation", "partial_correlation", "gain_correlation")
                         if key in fids[0][n]} for n in names}
            closed = [n for n in names if n not in _NOT_CLOSED]
            best = [min(((n, cands[n]["one_step_ratio"][i]) for n in closed), key=lambda e: e[1])
                    for i in range(len(rows))]
            entry = dict(candidates=cands, closed_forms=closed, best=best)
            second = next((n for n in cands if n.startswith("another ")), None)  # a second average: the floor
            if second is not None:
                floor = cands[second]["one_step_ratio"]
                entry["floor"] = floor
                entry["within_floor"] = all(b[1] - f <= FLOOR_MARGIN for b, f in zip(best, floor, strict=True))
            if kind == "tied":
                entry["describe"] = [n for n in closed
                                     if max(cands[n]["one_step_ratio"]) <= DESCRIBES["one_step_ratio"]
                                     and min(cands[n]["final_correlation"]) >= DESCRIBES["final_correlation"]]
            out[kind][target] = entry
    return out
