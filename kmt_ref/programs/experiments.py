"""The paper's learning experiments as functions.

Each experiment trains -- or loads, or resumes -- its models through
:func:`~kmt_ref.programs.runs.trained`, evaluates them on held-out tasks, and returns a JSON-able dict
of every number. ``python -m kmt_ref reproduce <experiment>`` calls them and
writes ``<output dir>/learning/<scale>/<experiment>.json`` (see
:mod:`kmt_ref._results`: the committed results under
``kmt_ref/results/learning`` are read, never written).

The scales (protocols) and the names of runs are defined in
:mod:`kmt_ref.learning.protocols`; the models are trained, loaded and evaluated, as jobs, by
:mod:`kmt_ref.programs.runs`.
"""

import os
import subprocess
import sys

import numpy as np

from .._validation import check_int
from ..classical import lloyd
from ..learning.analysis import weight_summary
from ..learning.evaluate import evaluation_tasks, log_objective_curve
from ..learning.model import run_steps
from ..learning.protocols import SCALES, checkpoint_path, committed_model, run_config
from . import runs
from .fidelity import RESTARTS, _final_logs, best_of_restarts

__all__ = ["precision", "tied", "relabelled", "relabelled_agreement", "symmetries", "symmetry_of_seed",
           "figure_runs", "figures_whole",
           "committed_training_curves", "git_revision", "reproduce_command"]

#: The settings of the paper's training figures: ``{panel: [overrides, ...]}`` (both token layouts each).
FIGURE_SETTINGS = {
    "Figure 9 (k = 6, d = 4)": [dict(k=6, d=4, tau=tau) for tau in (1.0, 0.25, 0.143, 0.1)],
    "Figure 9 (k = 6, d = 32)": [dict(k=6, d=32, tau=tau) for tau in (1.0, 0.25, 0.143, 0.1)],
    # The authors' Figure 10a plots k = 6 too (the Figure 9 runs at d = 32, tau = 0.1): the same models here.
    "Figure 10a (d = 32)": [dict(k=k, d=32, tau=0.1) for k in (6, 10, 16, 25)],
    "Figure 10b (k = 6)": [dict(k=6, d=d, tau=0.1) for d in (4, 8, 16, 32)],
}


def figure_runs(scale):
    """The distinct settings of :data:`FIGURE_SETTINGS` as override dicts, cheapest first (by ``d``, then ``k``,
    then descending ``tau``). A setting that is the scale's own protocol is ``{}``: the scale's own runs
    (at the paper's scale, the paper's models)."""
    unique = {tuple(sorted(o.items())): o for settings in FIGURE_SETTINGS.values() for o in settings}
    return [_own(scale, o) for o in sorted(unique.values(), key=lambda o: (o["d"], o["k"], -o["tau"]))]


def figures_whole(scale, seed):
    """The panels of the training figures that are finished at one seed.

    Parameters
    ----------
    scale : str
        A scale of :data:`kmt_ref.learning.protocols.SCALES`.
    seed : int
        The run seed (>= 0).

    Returns
    -------
    list of str
        The panels of :data:`FIGURE_SETTINGS` whose every setting has a finished committed model at ``seed``
        in both token layouts (a setting that is the scale's own protocol: the scale's own model), in order.
    """
    seed = check_int(seed, "seed", low=0)

    def finished(tokens, overrides):
        return (os.path.exists(checkpoint_path(scale, tokens, seed, **overrides))
                and committed_model(scale, tokens, seed, **overrides).finished)
    return [panel for panel, settings in FIGURE_SETTINGS.items()
            if all(finished(tokens, _own(scale, o)) for o in settings for tokens in ("d+k", "d"))]


def _own(scale, overrides):
    """``{}`` if ``overrides`` give the scale's own protocol (the same training), else ``overrides``."""
    return {} if run_config(scale, **overrides) == run_config(scale) else overrides


def learning(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Learned (d+k tokens) vs Lloyd over 20 steps, with and without re-embedding."""
    s = SCALES[scale]
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    m, ll, _ = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    m_raw, _, finite_raw = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], reembed=False, progress=progress,
                                   engine=engine)
    return dict(
        **runs.status(models),
        lloyd=runs.summary(ll), learned=runs.summary(m), learned_no_reembed=runs.summary(m_raw),
        no_reembed_finite_fraction=np.min(finite_raw, axis=0).tolist(),
        lloyd_log_objective=float(np.median(ll[:, -1])),
        learned_log_objective=float(np.median(m[:, -1])),
        lloyd_final=runs.finite(ll[:, -1]), learned_final=runs.finite(m[:, -1]),
        val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
    )


def ablation(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The d-only model (no id/assignment block) vs Lloyd."""
    s = SCALES[scale]
    models = runs.seed_models(scale, "d", results_dir, train_missing, progress, seeds, engine)
    m, ll, _ = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    return dict(
        **runs.status(models), lloyd=runs.summary(ll), d_only=runs.summary(m),
        lloyd_log_objective=float(np.median(ll[:, -1])),
        d_only_log_objective=float(np.median(m[:, -1])),
        lloyd_final=runs.finite(ll[:, -1]), d_only_final=runs.finite(m[:, -1]),
        val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
    )


def precision(scale="paper", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The layer trained with float32 steps beside the float64-trained one of the same seed, over 20 steps.

    The two runs share everything but the arithmetic of their steps (the same initial parameters, batches
    and validation tasks), and are evaluated in float64 on the same held-out tasks; ``seconds_per_step``
    is each run's recorded wall time over its steps (one core each, on whatever load the machine had).
    """
    s = SCALES[scale]
    out = {}
    for arithmetic in ("float64", "float32"):
        overrides = {} if arithmetic == "float64" else dict(precision="float32")
        models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine, **overrides)
        m, ll, _ = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
        out[arithmetic] = dict(**runs.status(models), curve=runs.summary(m), final=runs.finite(m[:, -1]),
                               val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
                               seconds_per_step=[float(r.wall_time / max(1, r.step)) for r in models])
        out["lloyd"] = dict(seeds=[r.config.seed for r in models], final=runs.finite(ll[:, -1]))
    if out["float32"]["seeds"] != out["float64"]["seeds"]:
        raise ValueError(f"float32 models for seeds {out['float32']['seeds']} but float64 ones for "
                         f"{out['float64']['seeds']}: compare the same seeds (--seeds)")
    status = dict(runs.status(models), partial=out["float64"]["partial"] or out["float32"]["partial"])
    return dict(**status, **out)


#: Relabellings of the starts' ids in :func:`tied` (the same permutations for every model and seed).
RELABELLINGS = 32


def relabelled_agreement(run, X, init, n_relabellings=RELABELLINGS, seed=0, engine=None):
    """How far a trained layer's one step moves when the ids of its starts are permuted and the outputs
    mapped back, relative to the step itself: per relabelling, the median over tasks of
    ``||step(init[perm])[inverse] - step(init)|| / ||step(init) - init||`` (0 for a layer that acts alike
    on every id, up to rounding). The permutations are drawn from ``numpy.random.default_rng(seed)``;
    ``engine`` runs the steps (results do not depend on it)."""
    theta, config = run.theta, run.config.model
    step = run_steps(theta, X, init, config, 1, engine=engine)[1]
    move = np.linalg.norm((step - init).reshape(len(X), -1), axis=1)
    rng = np.random.default_rng(seed)
    medians, worst = [], 0.0
    for _ in range(n_relabellings):
        perm = rng.permutation(init.shape[1])
        back = np.empty_like(step)
        back[:, perm] = run_steps(theta, X, init[:, perm], config, 1, engine=engine)[1]
        ratio = np.linalg.norm((back - step).reshape(len(X), -1), axis=1) / move
        medians.append(float(np.median(ratio)))
        worst = max(worst, float(np.max(ratio)))
    return dict(median=medians, worst=worst)


def tied(scale="paper", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The id-equivariant (tied) layer beside the standard one, Lloyd's algorithm and tuned soft k-means on
    the same held-out tasks of every seed it has, with both layers' relabelled self-agreement
    (:func:`relabelled_agreement`)."""
    from ..learning.protocols import committed, soft_kmeans_final

    s = SCALES[scale]
    tied_models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine, tied=True)
    done = [r.config.seed for r in tied_models]
    standard = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, done, engine)
    m_tied, ll, _ = runs.curves(tied_models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    m_std, ll_std, _ = runs.curves(standard, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    if not np.array_equal(ll, ll_std):
        raise AssertionError("the tied and the standard layer were evaluated on different tasks")
    agreement = {key: _relabelled_seeds(models, s["eval_tasks"], engine)
                 for key, models in (("tied", tied_models), ("standard", standard))}
    beta = committed("interpret", scale)["soft_beta"]
    return dict(
        **runs.status(tied_models), standard_status=runs.status(standard),
        lloyd_final=runs.finite(ll[:, -1]), tied_final=runs.finite(m_tied[:, -1]),
        standard_final=runs.finite(m_std[:, -1]), soft_beta=beta,
        soft_final=[soft_kmeans_final(r.config, beta, scale) for r in standard],
        tied_val_ratio_final=[float(r.history["val_ratio"][-1]) for r in tied_models],
        standard_val_ratio_final=[float(r.history["val_ratio"][-1]) for r in standard],
        relabellings=RELABELLINGS, tied_relabelled=agreement["tied"], standard_relabelled=agreement["standard"],
    )


def relabelled(scale="paper", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The standard layer's one step against itself with the ids of its starts permuted
    (:func:`relabelled_agreement`, :data:`RELABELLINGS` permutations) on each seed's held-out tasks: the task
    law makes the ids arbitrary, so a layer that treats ids alike would move by rounding only."""
    s = SCALES[scale]
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    return dict(**runs.status(models), relabellings=RELABELLINGS,
                relabelled=_relabelled_seeds(models, s["eval_tasks"], engine))


#: Coordinate permutations and reflections in :func:`symmetries`.
COORDINATE_TRANSFORMS = 32


def _correlation(a, b):
    return float(np.corrcoef(a, b)[0, 1])


def symmetry_of_seed(run, X, init, n_steps, rng, engine=None):
    """A trained layer against itself under the task law's symmetries, and the nulls of the gain correlation.

    The task law draws the starts as arbitrary points and the mixtures isotropically, so the ids of the starts,
    the order of the coordinates and their signs carry no information. Per relabelling of the starts' ids
    (:data:`RELABELLINGS`): the one-step ratio (the median over tasks of the relabelled step's distance from
    the step, mapped back, over the step's length), and over the tasks the correlation of the relabelled run's
    gain over Lloyd's algorithm with the run's, and of their final log objectives. Per permutation and per
    reflection of the coordinates (:data:`COORDINATE_TRANSFORMS` each): the one-step ratio. And the gain
    correlation (F2) of two candidates that know nothing of the layer: one whose final log objective is the same
    on every task (its correlation is that of Lloyd's final log objective with the layer's gain), and Lloyd's
    algorithm at its best of :data:`~kmt_ref.programs.fidelity.RESTARTS` restarts from random data points
    (:func:`~kmt_ref.programs.fidelity.best_of_restarts`). ``rng`` draws every permutation, sign and restart."""
    theta, config = run.theta, run.config.model
    layer = run_steps(theta, X, init, config, n_steps, engine=engine)
    move = np.linalg.norm((layer[1] - init).reshape(len(X), -1), axis=1)
    lloyd_final = _final_logs(X, lloyd(X, init, n_steps).centers[-1])
    final = _final_logs(X, layer[-1])
    gain = lloyd_final - final

    def ratio(step):
        return float(np.median(np.linalg.norm((step - layer[1]).reshape(len(X), -1), axis=1) / move))

    relabelled = dict(one_step=[], gain_correlation=[], final_correlation=[])
    for _ in range(RELABELLINGS):
        perm = rng.permutation(init.shape[1])
        other = run_steps(theta, X, init[:, perm], config, n_steps, engine=engine)
        back = np.empty_like(other[1])
        back[:, perm] = other[1]
        other_final = _final_logs(X, other[-1])
        relabelled["one_step"].append(ratio(back))
        relabelled["gain_correlation"].append(_correlation(lloyd_final - other_final, gain))
        relabelled["final_correlation"].append(_correlation(other_final, final))
    coordinates = dict(permuted=[], reflected=[])
    for _ in range(COORDINATE_TRANSFORMS):
        perm, signs = rng.permutation(X.shape[-1]), rng.choice([-1.0, 1.0], size=X.shape[-1])
        step = run_steps(theta, X[..., perm], init[..., perm], config, 1, engine=engine)[1]
        back = np.empty_like(step)
        back[..., perm] = step
        coordinates["permuted"].append(ratio(back))
        coordinates["reflected"].append(ratio(run_steps(theta, X * signs, init * signs, config, 1,
                                                        engine=engine)[1] * signs))
    best = best_of_restarts(X, init.shape[1], n_steps, rng, RESTARTS)
    return dict(layer_gain=float(np.mean(gain)), relabelled=relabelled, coordinates=coordinates,
                constant_final_f2=_correlation(lloyd_final, gain),
                lloyd_restarts_f2=_correlation(lloyd_final - best, gain),
                lloyd_restarts_gain=float(np.mean(lloyd_final - best)))


def symmetries(scale="paper", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """:func:`symmetry_of_seed` for the standard layer of every seed, on its first :data:`DISSECTION_TASKS`
    held-out tasks, with the permutations, signs and restarts of ``numpy.random.default_rng(seed)``."""
    from .dissection import DISSECTION_TASKS

    s = SCALES[scale]
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    n_tasks, n_steps = min(DISSECTION_TASKS, s["eval_tasks"]), s["n_eval_steps"]
    per_seed = []
    for r in models:
        if progress:
            print(f"  symmetries: seed {r.config.seed}", file=sys.stderr, flush=True)
        per_seed.append(symmetry_of_seed(r, *evaluation_tasks(r.config, n_tasks), n_steps,
                                         np.random.default_rng(r.config.seed), engine))
    return dict(**runs.status(models), n_tasks=n_tasks, n_eval_steps=n_steps, relabellings=RELABELLINGS,
                transforms=COORDINATE_TRANSFORMS, restarts=RESTARTS, per_seed=per_seed)


def _relabelled_seeds(models, n_tasks, engine):
    """:func:`relabelled_agreement` of each model on its seed's ``n_tasks`` held-out tasks."""
    return [relabelled_agreement(r, *evaluation_tasks(r.config, n_tasks), engine=engine) for r in models]


#: The authors' attention dropout, which their model keeps active at evaluation.
EVAL_DROPOUT = 0.01


def eval_dropout(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The learned ``[x | y]`` layer evaluated as the authors evaluate it: attention dropout on.

    On each seed's held-out tasks (those of :func:`learning`): Lloyd, the
    layer as trained (no dropout) and the layer with dropout ``p =``
    :data:`EVAL_DROPOUT` on every block, its draws from a generator of the
    run's own seed (``SeedSequence(seed)``'s fifth child; the tasks use the
    fourth).
    """
    s = SCALES[scale]
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    with_dropout = []
    for i, r in enumerate(models):
        if progress:
            print(f"  evaluating seed {r.config.seed} ({i + 1}/{len(models)}) with attention dropout "
                  f"p = {EVAL_DROPOUT}", file=sys.stderr, flush=True)
        X, init = evaluation_tasks(r.config, s["eval_tasks"])
        rng = np.random.default_rng(np.random.SeedSequence(r.config.seed).spawn(5)[4])
        centers = run_steps(r.theta, X, init, r.config.model, s["n_eval_steps"], dropout=EVAL_DROPOUT, rng=rng,
                            engine=engine)
        with_dropout.append(log_objective_curve(X, centers)[0])
    with_dropout = np.array(with_dropout)
    m, ll, _ = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    return dict(
        **runs.status(models), dropout=EVAL_DROPOUT,
        lloyd=runs.summary(ll), learned=runs.summary(m), learned_dropout=runs.summary(with_dropout),
        lloyd_log_objective=float(np.median(ll[:, -1])),
        learned_log_objective=float(np.median(m[:, -1])),
        learned_dropout_log_objective=float(np.median(with_dropout[:, -1])),
        lloyd_final=runs.finite(ll[:, -1]), learned_final=runs.finite(m[:, -1]),
        learned_dropout_final=runs.finite(with_dropout[:, -1]),
    )


def _shift(scale, results_dir, train_missing, progress, seeds, engine, variants):
    s = SCALES[scale]
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    out = runs.status(models)
    for name, options in variants.items():
        m, ll, _ = runs.curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine, **options)
        out[name] = dict(
            options=options, lloyd=runs.summary(ll), learned=runs.summary(m),
            lloyd_log_objective=float(np.median(ll[:, -1])),
            learned_log_objective=runs.finite([np.median(m[:, -1])])[0],
            lloyd_final=runs.finite(ll[:, -1]), learned_final=runs.finite(m[:, -1]),
        )
    return out


def generalization(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The model trained at n = 512 applied to other numbers of points."""
    return _shift(scale, results_dir, train_missing, progress, seeds, engine,
                  {f"n={n}": dict(n=n) for n in SCALES[scale]["gen_n"]})


def kmeanspp(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """k-means++ initial centers (never seen in training) for model and Lloyd."""
    return _shift(scale, results_dir, train_missing, progress, seeds, engine, {"kmeans++": dict(init="kmeans++")})


def families(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Other mixture families and options (trained on isotropic equal-weight normal)."""
    variants = {f: dict(family=f) for f in ("normal", "cauchy", "gumbel", "laplace", "lognormal")}
    variants["normal, unequal weights"] = dict(equal_weights=False)
    variants["normal, anisotropic"] = dict(isotropic=False)
    return _shift(scale, results_dir, train_missing, progress, seeds, engine, variants)


def _windowed(loss, window):
    n = len(loss) // window
    return np.asarray(loss[: n * window]).reshape(n, window).mean(axis=1)


def training_curves(scale="figures", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None,
                    window=50):
    """The paper's training figures: training loss and validation ratio of every setting, over seeds.

    For each panel of :data:`FIGURE_SETTINGS` and each token layout: the
    training loss averaged over ``window``-step windows and the validation
    ratio (objective after the layer / after one Lloyd step, on the run's
    validation tasks) at every validation, as median, min and max over seeds,
    and the final validation ratio of each seed.
    """
    return _training_panels(scale, window, lambda tokens, overrides: runs.seed_models(
        scale, tokens, results_dir, train_missing, progress, seeds, engine, **overrides))


def committed_training_curves(scale, seeds, window=50):
    """:func:`training_curves` of the committed checkpoints alone: nothing is trained or read from an output folder.

    Parameters
    ----------
    scale : str
        A scale of :data:`kmt_ref.learning.protocols.SCALES`.
    seeds : sequence of int
        The run seeds (each >= 0); every setting must have a committed checkpoint at each.
    window : int, default 50
        Training steps per averaged loss value.

    Returns
    -------
    dict
        As :func:`training_curves`; a run not finished gives its curves so far (``partial``, ``steps_done``).
        A missing checkpoint raises ``FileNotFoundError``, one of another protocol than the scale's
        ``ValueError`` (:func:`kmt_ref.learning.protocols.committed_model`).
    """
    seeds = [check_int(seed, "seeds", low=0) for seed in seeds]
    return _training_panels(scale, check_int(window, "window", low=1), lambda tokens, overrides: [
        committed_model(scale, tokens, seed, **overrides) for seed in seeds])


def _training_panels(scale, window, models_of):
    """The panels of :func:`training_curves` from ``models_of(tokens, overrides)``, the models of one setting."""
    panels = {}
    done = {}
    for panel, settings in FIGURE_SETTINGS.items():
        rows = []
        for overrides in settings:
            for tokens in ("d+k", "d"):
                key = (tokens, tuple(sorted(overrides.items())))
                if key not in done:
                    models = models_of(tokens, _own(scale, overrides))
                    done[key] = dict(
                        tokens=tokens, **overrides, **runs.status(models),
                        val_step=np.asarray(models[0].history["val_step"]).tolist(),
                        val_ratio=runs.summary([r.history["val_ratio"] for r in models]),
                        train_loss_step=((np.arange(len(models[0].history["train_loss"]) // window) + 1)
                                         * window).tolist(),
                        train_loss=runs.summary([_windowed(r.history["train_loss"], window) for r in models]),
                        val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
                    )
                rows.append(done[key])
        panels[panel] = rows
    first = next(iter(done.values()))
    setting = dict(SCALES[scale].get("train", {}), n_steps=SCALES[scale]["n_steps"])
    return dict(seeds=first["seeds"], setting=setting, window=window, panels=panels)


def weights(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Learned weights (every seed) summarized next to the construction."""
    models = runs.seed_models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    return dict(**runs.status(models), per_seed=[weight_summary(r.theta, r.config.model) for r in models])


def git_revision():
    """The commit of the checkout this package runs from (not of the working directory), or ``"unknown"``."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=root)
        # Checkpoints of runs in progress change under kmt_ref/results; only code makes a result "dirty".
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "kmt_ref", ":(exclude)kmt_ref/results"],
                               capture_output=True, text=True, check=True, cwd=root).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def reproduce_command(name, scale, train_missing=True, seeds=None):
    """The command that recomputes a result (no machine-specific paths: output goes where the user runs it)."""
    return " ".join(["python -m kmt_ref reproduce", name, f"--{scale}"] + ([] if train_missing else ["--no-train"])
                    + ([] if seeds is None else ["--seeds", ",".join(str(s) for s in seeds)]))
