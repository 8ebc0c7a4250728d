"""The learning experiments beyond the paper: one layer at any k, layers trained through several steps,
the real data sets, and how far a reduced-scale run moves under rounding-level changes.

Each is run like the paper's (:mod:`kmt_ref.programs.experiments`): it trains or
loads its models at the ``"beyond"`` scale (:mod:`kmt_ref.learning.protocols`),
evaluates them and returns a JSON-able dict of every number.
"""

import sys

import numpy as np

from ..certificate import exactness_certificate
from ..classical import lloyd
from ..engine import LABELS
from ..geometry import nearest_center, squared_distances
from ..learning.model import run_steps
from ..learning.protocols import SCALES, run_config
from ..lloyd_transformer import lloyd_transformer
from ..objective import kmeans_objective
from ..real_data import (
    DATASETS,
    adjusted_rand_index,
    load_dataset,
    minmax_scale,
    separation_ratio,
    spread_classes,
    to_width,
)
from ..tasks import gaussian_mixture
from ..variants.registry import EXACT_TOL
from . import runs

__all__ = ["any_k", "multi_step", "chaos", "real_data", "real_data_starts", "ANY_K", "MULTI_STEP", "MULTI_STEP_EVERY",
           "PERTURBATIONS", "CHAOS_MODELS", "CHAOS_REAL_DATA"]

#: Numbers of clusters of the any-k experiment (the models train at the authors' k = 10).
ANY_K = (5, 10, 16, 25)
#: Layer applications trained through in the multi-step experiment (loss on the last application).
MULTI_STEP = (1, 2, 3)
#: The same with the loss averaged over every application.
MULTI_STEP_EVERY = (2, 3)


def any_k(scale="beyond", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """One set of weights at every k: the tied layer trained at k = 10 against Lloyd and per-k models.

    For each k of :data:`ANY_K`: Lloyd, the tied ``[x | y]`` layer trained at
    k = 10, the ``[x]``-only layer trained at k = 10 (its parameters do not
    depend on k either) and the standard ``[x | y]`` layer trained at that k,
    each on the same held-out tasks of every seed.
    """
    s = SCALES[scale]
    base = run_config(scale).k
    kinds = {
        "tied": (f"tied [x | y], trained at k = {base}", "d+k", dict(tied=True)),
        "d_only": (f"[x] only, trained at k = {base}", "d", {}),
    }
    models = {key: runs.seed_models(scale, tokens, results_dir, train_missing, progress, seeds, engine, **o)
              for key, (_, tokens, o) in kinds.items()}
    out = dict(ks=list(ANY_K), trained_at_k=base, models={key: label for key, (label, _, _) in kinds.items()},
               status={key: runs.status(m) for key, m in models.items()}, per_k={})
    for k in ANY_K:
        standard = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine,
                           **({} if k == base else dict(k=k)))
        row = dict(standard_model=f"standard [x | y], trained at k = {k}", standard_status=runs.status(standard))
        m, ll, _ = runs.curves(standard, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine, k=k)
        row.update(lloyd=runs.summary(ll), standard=runs.summary(m), lloyd_log_objective=float(np.median(ll[:, -1])),
                   standard_log_objective=runs.finite([np.median(m[:, -1])])[0],
                   lloyd_final=runs.finite(ll[:, -1]), standard_final=runs.finite(m[:, -1]))
        for key, ms in models.items():
            m, ll2, _ = runs.curves(ms, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine, k=k)
            if not np.array_equal(ll, ll2):
                raise AssertionError("the models of one k were evaluated on different tasks")
            row[key] = runs.summary(m)
            row[f"{key}_log_objective"] = runs.finite([np.median(m[:, -1])])[0]
            row[f"{key}_final"] = runs.finite(m[:, -1])
        row["learned_log_objective"] = row["tied_log_objective"]
        row["seeds"] = row["standard_status"]["seeds"]
        out["per_k"][f"k={k}"] = row
    return out


def multi_step(scale="beyond", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Layers trained through T re-embedded applications, evaluated at 20 steps.

    ``T`` in :data:`MULTI_STEP` with the loss on the last application's
    centers, and ``T`` in :data:`MULTI_STEP_EVERY` with the mean loss over
    every application (``loss_on="every"``). Each row records its ``n_layers``
    and ``loss_on``.
    """
    s = SCALES[scale]
    settings = [(T, "last") for T in MULTI_STEP] + [(T, "every") for T in MULTI_STEP_EVERY]
    out = dict(n_layers=list(MULTI_STEP), n_layers_every=list(MULTI_STEP_EVERY), per_n_layers={})
    lloyd = None
    for T, loss_on in settings:
        overrides = {} if T == 1 else dict(n_layers=T, **({} if loss_on == "last" else dict(loss_on=loss_on)))
        models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine, **overrides)
        m, ll, _ = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
        if lloyd is not None and not np.array_equal(ll, lloyd):
            raise AssertionError("the models of different T were evaluated on different tasks")
        lloyd = ll
        key = f"T={T}" + ("" if loss_on == "last" else ", loss on every step")
        out["per_n_layers"][key] = dict(
            n_layers=T, loss_on=loss_on,
            **runs.status(models), learned=runs.summary(m), lloyd=runs.summary(ll),
            lloyd_log_objective=float(np.median(ll[:, -1])),
            learned_log_objective=runs.finite([np.median(m[:, -1])])[0],
            learned_log_objective_at_T=runs.finite([np.median(m[:, T])])[0],
            lloyd_final=runs.finite(ll[:, -1]), learned_final=runs.finite(m[:, -1]),
            lloyd_log_objective_at_T=float(np.median(ll[:, T])),
            val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
        )
    return out


#: The runs of the chaos experiment: each seed's own (0) and three reruns whose initial parameters are multiplied
#: by ``1 + p 2^-52`` (the ``perturb`` of :class:`~kmt_ref.learning.config.TrainConfig`).
PERTURBATIONS = (0, 1, 2, 3)


#: The models the chaos experiment reruns at each scale: ``{key: (label, tokens, overrides)}``. At the beyond
#: scale: the standard layer at each ``k`` of the any-k section, the tied and the ``[x]``-only layers, and the
#: layers of the multi-step experiment trained through T > 1 steps; the figures scale trains the standard and
#: tied layers.
CHAOS_MODELS = {
    "beyond": {"standard": ("standard [x | y]", "d+k", {}), "tied": ("tied [x | y]", "d+k", dict(tied=True)),
               "d_only": ("[x] only", "d", {}),
               **{f"standard k={k}": (f"standard [x | y] at k = {k}", "d+k", dict(k=k)) for k in ANY_K if k != 10},
               **{f"T={T}": (f"trained through T = {T}, loss on the last step", "d+k", dict(n_layers=T))
                  for T in MULTI_STEP if T > 1},
               **{f"T={T}, loss on every step": (f"trained through T = {T}, loss on every step", "d+k",
                                                 dict(n_layers=T, loss_on="every")) for T in MULTI_STEP_EVERY}},
    "figures": {"standard": ("standard [x | y]", "d+k", {}), "tied": ("tied [x | y]", "d+k", dict(tied=True))},
}


#: The chaos models that are also run on the real data sets, per scale: the real-data experiment's layers (its keys).
CHAOS_REAL_DATA = {"beyond": ("standard", "tied", "d_only"), "figures": ()}


def chaos(scale="beyond", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """How far a run's result moves when its initial parameters move by a few roundings.

    For each model of the scale's :data:`CHAOS_MODELS` and each seed: the run and its reruns at every
    ``perturb`` of :data:`PERTURBATIONS`, each evaluated on the seed's held-out tasks (at the model's ``k``;
    the same tasks for all the runs of a model), with Lloyd's algorithm from the same initial centers. Per
    run: the mean log objective after each step summarized over seeds (``learned``; Lloyd's in ``lloyd``). Per
    model and seed: each run's final mean log objective, its gap to Lloyd's and its final validation ratio,
    the spread (max - min) of the gap over the runs and how many of the runs end below Lloyd. The models of
    :data:`CHAOS_REAL_DATA` run on the real data sets too, from the real-data experiment's initializations:
    each run's gap to Lloyd and adjusted Rand index per seed, and the separation diagnostic's gaps where the
    real-data experiment runs it with that layer.
    """
    s = SCALES[scale]
    base = run_config(scale)
    out = dict(perturbations=list(PERTURBATIONS), models={})
    sets = {}
    if CHAOS_REAL_DATA[scale]:
        sets = {name: dict(_at_width(X, labels, picks, base.d, s["n_eval_steps"]), k=int(labels.max()) + 1)
                for name, X, labels, picks in _datasets()}
        out["real_data_lloyd"] = {name: data["lloyd"] for name, data in sets.items()}
    for key, (label, tokens, overrides) in CHAOS_MODELS[scale].items():
        entry, lloyd = dict(label=label, k=overrides.get("k", base.k), per_perturbation={}), None
        for p in PERTURBATIONS:
            models = runs.seed_models(scale, tokens, results_dir, train_missing, progress, seeds, engine,
                                      **overrides, **({} if p == 0 else dict(perturb=p)))
            m, ll, _ = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine,
                                   **({"k": overrides["k"]} if "k" in overrides else {}))
            if lloyd is not None and not np.array_equal(ll, lloyd):
                raise AssertionError("the reruns were evaluated on different tasks (or seeds) than the run")
            lloyd = ll
            entry["per_perturbation"][f"p={p}"] = dict(
                **runs.status(models), learned=runs.summary(m), learned_final=runs.finite(m[:, -1]),
                gap=runs.finite(m[:, -1] - ll[:, -1]),
                val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models])
            if key in CHAOS_REAL_DATA[scale]:
                entry["per_perturbation"][f"p={p}"]["real_data"] = _rerun_on_real_data(
                    models, key, sets, base.k, s["n_eval_steps"], progress, engine)
        rows = entry["per_perturbation"].values()
        gaps = np.array([[np.inf if g is None else g for g in row["gap"]] for row in rows])  # (runs, seeds)
        ratios = np.array([row["val_ratio_final"] for row in rows])
        entry.update(lloyd=runs.summary(lloyd), lloyd_final=runs.finite(lloyd[:, -1]),
                     gap_spread=runs.finite(gaps.max(axis=0) - gaps.min(axis=0)),
                     val_ratio_spread=(ratios.max(axis=0) - ratios.min(axis=0)).tolist(),
                     runs_below_lloyd=[int(n) for n in (gaps < 0).sum(axis=0)])
        out["models"][key] = entry
    seeds_of = {tuple(next(iter(e["per_perturbation"].values()))["seeds"]) for e in out["models"].values()}
    if len(seeds_of) != 1:
        raise AssertionError(f"the chaos models cover different seeds: {sorted(seeds_of)}")
    out["seeds"] = list(seeds_of.pop())
    return out


#: Random initial centers per real data set (k distinct data points each).
REAL_DATA_RESTARTS = 20
#: Inverse temperatures at which the Theorem 2.1 construction is run on the real data sets.
REAL_DATA_GAMMAS = (1e4, 1e6)
#: Layers of the construction checks on real data (the authors' sweep runs 10).
REAL_DATA_LAYERS = 10
#: Factors by which the class means are moved apart in the real-data diagnostic.
REAL_DATA_SPREADS = (1.0, 2.0, 3.0)


def real_data_starts(index, n, k):
    """The initializations of data set number ``index`` of :data:`~kmt_ref.real_data.DATASETS`: indices of
    ``k`` distinct points for each of :data:`REAL_DATA_RESTARTS` restarts, shape (restarts, k)."""
    rng = np.random.default_rng(np.random.SeedSequence([2026, index]))
    return np.array([rng.choice(n, size=k, replace=False) for _ in range(REAL_DATA_RESTARTS)])


def _has_tie(X, centers):
    """Whether some point is exactly as near to two of Lloyd's centers at some layer (Theorem 2.1 excludes it)."""
    for C in centers[:-1]:
        D = np.sort(squared_distances(X, C), axis=1)
        if D.shape[1] > 1 and np.any(D[:, 0] == D[:, 1]):
            return True
    return False


def _construction_on(X, inits):
    """The Theorem 2.1 transformer against Lloyd on one data set, over every initialization.

    At ``gamma = inf`` the claim covers the initializations along whose Lloyd
    trajectory no point is equidistant from its two nearest centers (the
    theorem's assumption); the others are counted and reported apart. At
    finite gamma: how many runs the certificate proves to have Lloyd's
    assignments, and whether every measured deviation is below its bound.
    """
    k = inits.shape[1]
    rows = {"inf": dict(tie_free=0, exact=0, max_center_deviation=0.0, with_ties=0, with_ties_equal=0)}
    rows.update({f"{g:g}": dict(certified=0, bound_holds=True, max_center_deviation=0.0, median_bound=None,
                                max_log_objective_gap=0.0) for g in REAL_DATA_GAMMAS})
    bounds = {g: [] for g in REAL_DATA_GAMMAS}
    for init in inits:
        ref = lloyd(X, init, REAL_DATA_LAYERS)
        # the labels run, named for speed (verify checks it against the layer on its own rows)
        run = lloyd_transformer(X.shape[1], k, np.inf).run(X, init, REAL_DATA_LAYERS, engine=LABELS)
        dev = float(np.max(np.abs(run.centers - ref.centers)))
        equal = bool(np.array_equal(run.labels, ref.labels)) and dev <= EXACT_TOL
        r = rows["inf"]
        if _has_tie(X, ref.centers):
            r["with_ties"] += 1
            r["with_ties_equal"] += equal
        else:
            r["tie_free"] += 1
            r["exact"] += equal
            r["max_center_deviation"] = max(r["max_center_deviation"], dev)
        for g in REAL_DATA_GAMMAS:
            run = lloyd_transformer(X.shape[1], k, g).run(X, init, REAL_DATA_LAYERS, warn=False)  # its gap is the row
            cert = exactness_certificate(X, init, REAL_DATA_LAYERS, g)
            r = rows[f"{g:g}"]
            deviation = np.max(np.abs(run.centers - ref.centers), axis=(1, 2))
            gap = abs(np.log(kmeans_objective(X, run.centers[-1])) - np.log(kmeans_objective(X, ref.centers[-1])))
            r["max_center_deviation"] = max(r["max_center_deviation"], float(deviation.max()))
            r["bound_holds"] &= bool(np.all(deviation <= cert.bound))
            r["certified"] += bool(cert.assignments_exact)
            r["max_log_objective_gap"] = max(r["max_log_objective_gap"], float(gap))
            bounds[g].append(float(cert.bound[-1]))
    for g in REAL_DATA_GAMMAS:
        rows[f"{g:g}"]["median_bound"] = float(np.median(bounds[g]))
    return rows


def _learned_on(models, X, inits, labels, n_steps, progress, what, engine):
    """Log objective after ``n_steps`` and agreement with the classes, per seed (means over initializations)."""
    k = inits.shape[1]
    Xb = np.broadcast_to(X, (len(inits),) + X.shape)
    per_seed = []
    for r in models:
        if progress:
            print(f"  {what}: seed {r.config.seed}", file=sys.stderr, flush=True)
        centers = run_steps(r.theta, Xb, inits, r.config.model.at_k(k), n_steps, chunk=4, engine=engine)
        per_seed.append(_scores(X, centers, labels))
    return dict(
        log_objective=float(np.median([p["log_objective"] for p in per_seed])),
        ari=float(np.median([p["ari"] for p in per_seed])),
        per_seed=per_seed, seeds=[r.config.seed for r in models],
    )


def _scores(X, centers, labels):
    """Mean over initializations of the final log objective and of the adjusted Rand index."""
    final = centers[-1]
    finite = bool(np.all(np.isfinite(final)))
    logs = [np.log(kmeans_objective(X, C)) for C in final] if finite else [np.inf]
    aris = [adjusted_rand_index(labels, nearest_center(X, C)) for C in final] if finite else [np.nan]
    return dict(log_objective=float(np.mean(logs)), ari=float(np.mean(aris)), finite=finite)


def real_data(scale="beyond", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Four real data sets: the constructions' exactness, and the learned layers against Lloyd.

    On each data set (scaled to ``[0, 1]``, ``k`` = its number of classes)
    and each of :data:`REAL_DATA_RESTARTS` initializations (k distinct data
    points), the Theorem 2.1 transformer runs :data:`REAL_DATA_LAYERS` layers
    at ``gamma = inf`` and at :data:`REAL_DATA_GAMMAS` against Lloyd's
    algorithm, with the certificate's bound. Then the data are brought to the
    learned layers' width (:func:`~kmt_ref.real_data.to_width`) and the tied
    layer, the ``[x]``-only layer (both trained at k = 10, run at the data's
    k) and, where the data have k = 10, the standard layer run the evaluation
    steps beside Lloyd from the same initial centers; reported: mean log
    objective and adjusted Rand index with the classes, median over seeds.

    A diagnostic tests one reason for the result: how separated the classes
    are (:func:`~kmt_ref.real_data.separation_ratio`, against the training
    tasks'), and the layer (standard where k = 10, else tied) against Lloyd on
    the data with its class means moved apart by :data:`REAL_DATA_SPREADS`.
    """
    s = SCALES[scale]
    base = run_config(scale)
    kinds = {"tied": ("d+k", dict(tied=True)), "d_only": ("d", {}), "standard": ("d+k", {})}
    models = {key: runs.seed_models(scale, tokens, results_dir, train_missing, progress, seeds, engine, **o)
              for key, (tokens, o) in kinds.items()}
    out = dict(restarts=REAL_DATA_RESTARTS, construction_layers=REAL_DATA_LAYERS, gammas=list(REAL_DATA_GAMMAS),
               n_eval_steps=s["n_eval_steps"], width=base.d, status={key: runs.status(m) for key, m in models.items()},
               training_separation=_training_separation(base), per_dataset={})
    for name, X, labels, picks in _datasets():
        n, k = X.shape[0], int(labels.max()) + 1
        scaled = minmax_scale(X)
        if progress:
            print(f"{name}: n={n}, d={X.shape[1]}, k={k}", file=sys.stderr, flush=True)
        row = dict(n=n, d=X.shape[1], k=k, construction=_construction_on(scaled, scaled[picks]))
        data = _at_width(X, labels, picks, base.d, s["n_eval_steps"])
        row["lloyd"] = data["lloyd"]
        for key, ms in models.items():
            if not _runs_on(key, k, base.k):
                continue
            row[key] = _learned_on(ms, data["X"], data["inits"], labels, s["n_eval_steps"], progress,
                                   f"{name}, {key}", engine)
        key = _spread_model(k, base.k)
        row["separation"] = separation_ratio(data["X"], labels)
        row["spread"] = dict(model=key, per_factor=_spread_diagnostic(models[key], data, s["n_eval_steps"], progress,
                                                                      name, engine))
        out["per_dataset"][name] = row
    return out


def _datasets():
    """Each of :data:`~kmt_ref.real_data.DATASETS`: its name, points, classes and initializations
    (:func:`real_data_starts`)."""
    for index, name in enumerate(DATASETS):
        X, labels = load_dataset(name)
        yield name, X, labels, real_data_starts(index, X.shape[0], int(labels.max()) + 1)


def _runs_on(key, k, base_k):
    """Whether the real-data layer ``key`` runs on a data set with ``k`` classes: the standard layer's
    parameters exist at the training k only."""
    return key != "standard" or k == base_k


def _at_width(X, labels, picks, width, n_steps):
    """A data set brought to the learned layers' width, with its initial centers and Lloyd's scores from them."""
    Xw = to_width(X, width)
    inits = Xw[picks]
    return dict(X=Xw, labels=labels, picks=picks, inits=inits,
                lloyd=_scores(Xw, np.stack([lloyd(Xw, c, n_steps).centers for c in inits], axis=1), labels))


def _spread_model(k, base_k):
    """The layer of the separation diagnostic on a data set with ``k`` classes: the standard layer where it
    exists (``k`` = the training k), else the tied one."""
    return "standard" if k == base_k else "tied"


def _rerun_on_real_data(models, key, sets, base_k, n_steps, progress, engine):
    """The real-data layer ``key``'s runs on each data set it runs on (``sets`` as :func:`_at_width` makes
    them, with their ``k``): per seed, its log objective minus Lloyd's and its adjusted Rand index; where the
    layer is the data set's separation diagnostic, the diagnostic's gaps per seed too."""
    out = {}
    for name, data in sets.items():
        if not _runs_on(key, data["k"], base_k):
            continue
        learned = _learned_on(models, data["X"], data["inits"], data["labels"], n_steps, progress,
                              f"{name}, {key}", engine)["per_seed"]
        row = dict(gap=runs.finite([p["log_objective"] - data["lloyd"]["log_objective"] for p in learned]),
                   ari=runs.finite([p["ari"] for p in learned]))
        if _spread_model(data["k"], base_k) == key:
            row["spread_gap"] = {f: runs.finite(v["gap_per_seed"]) for f, v in
                                 _spread_diagnostic(models, data, n_steps, progress, name, engine).items()}
        out[name] = row
    return out


def _spread_diagnostic(models, data, n_steps, progress, name, engine):
    """The layers against Lloyd on the data with its class means moved apart by each of
    :data:`REAL_DATA_SPREADS`: per factor, the classes' separation ratio, both log objectives and the gap
    per seed."""
    X, labels, picks = data["X"], data["labels"], data["picks"]
    per_factor = {}
    for factor in REAL_DATA_SPREADS:
        Z = spread_classes(X, labels, factor)
        lloyd_z = _scores(Z, np.stack([lloyd(Z, c, n_steps).centers for c in Z[picks]], axis=1), labels)
        learned = _learned_on(models, Z, Z[picks], labels, n_steps, progress, f"{name}, class means x{factor:g}",
                              engine)
        per_factor[f"x{factor:g}"] = dict(
            separation=separation_ratio(Z, labels), lloyd_log_objective=lloyd_z["log_objective"],
            learned_log_objective=learned["log_objective"],
            gap_per_seed=[p["log_objective"] - lloyd_z["log_objective"] for p in learned["per_seed"]])
    return per_factor


def _training_separation(config, n_tasks=20):
    """Median :func:`~kmt_ref.real_data.separation_ratio` of tasks like the training ones (points labelled by
    their nearest mixture mean)."""
    rng = np.random.default_rng(np.random.SeedSequence([2026, 99]))
    ratios = []
    for _ in range(n_tasks):
        X, _, means = gaussian_mixture(rng, n=config.n, d=config.d, k=config.k, scale=config.scale)
        ratios.append(separation_ratio(X, nearest_center(X, means)))
    return float(np.median(ratios))
