"""The paper's learning experiments as functions.

Each experiment trains -- or loads, or resumes -- its models through
:func:`trained`, evaluates them on held-out tasks, and returns a JSON-able dict
of every number. ``python -m kmt_ref reproduce <experiment>`` calls them and
writes ``<output dir>/learning/<scale>/<experiment>.json`` (see
:mod:`kmt_ref._results`: the committed results under
``kmt_ref/results/learning`` are read, never written).

The scales (protocols) and the names of runs are defined in
:mod:`kmt_ref.learning.protocols`.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np

from .._validation import check_int
from ..engine import Engine
from ..learning.analysis import weight_summary
from ..learning.evaluate import evaluation_tasks, lloyd_curve, log_objective_curve, model_curve, summarize
from ..learning.model import run_steps
from ..learning.protocols import RESULTS_DIR, SCALES, checkpoint_path, committed_model, run_config, run_name
from ..learning.train import load_result, train
from ._results import check_output_dir, output_dir
from .jobs import Job, run_jobs

__all__ = ["trained", "precision", "evaluate_job", "evaluate_job_of", "train_job", "train_job_holds", "train_jobs",
           "figure_runs", "figures_whole", "committed_training_curves", "git_revision", "default_results_dir",
           "reproduce_command"]

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


def train_job(directory, scale, tokens, seed, overrides, threads=1):
    """One model trained, as a job (:mod:`kmt_ref.programs.jobs`): :func:`trained` under ``directory``
    (default :func:`default_results_dir`) on ``threads`` threads, summarized as ``checkpoint`` (relative to
    ``directory`` if trained there, else the committed checkpoint's path), ``trained`` (whether it was),
    ``step``, ``finished`` and the last ``val_ratio``."""
    directory = check_output_dir(directory or default_results_dir())
    r = trained(scale, tokens, seed, directory, engine=Engine(threads), **overrides)
    path = checkpoint_path(scale, tokens, seed, directory, **overrides)
    here = os.path.exists(path)
    if not here:  # nothing trained: the committed checkpoint is finished
        path = checkpoint_path(scale, tokens, seed, **overrides)
    return dict(checkpoint=os.path.relpath(path, directory) if here else path, trained=here, step=int(r.step),
                finished=bool(r.finished), val_ratio=float(r.history["val_ratio"][-1]))


def train_job_holds(directory, result):
    """Whether a stored :func:`train_job` result still holds: its checkpoint is there, at the same step."""
    try:
        return load_result(os.path.join(directory, result["checkpoint"])).step == result["step"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return False


def train_jobs(scale, seeds, tokens=("d+k",), settings=({},)):
    """The :class:`~kmt_ref.programs.jobs.Job` of each (seed, setting, token layout), in that nesting."""
    return [Job("train", f"{run_name(scale, **o)}-{'dk' if t == 'd+k' else 'd'}-seed{s}",
                dict(scale=scale, tokens=t, seed=int(s), overrides=dict(o)))
            for s in seeds for o in settings for t in tokens]


def default_results_dir():
    """Where learning commands write by default: ``<output dir>/learning``."""
    return os.path.join(output_dir(), "learning")


def _loaded(path, config):
    result = load_result(path)
    if result.config != config:
        raise ValueError(f"{path} holds config {result.config}, expected {config}; "
                         "move it away or choose another --results-dir")
    return result


def trained(scale, tokens, seed, results_dir=None, train_missing=True, progress=True, engine=None, **overrides):
    """The model of ``(scale, tokens, seed)``: loaded if finished, resumed if not, trained if absent.

    A checkpoint is looked for in ``results_dir`` (default
    :func:`default_results_dir`), then among the committed results. Training
    only ever writes to ``results_dir``: a committed checkpoint that needs
    more steps is copied there and resumed from the copy. With
    ``train_missing=False`` nothing is trained: an unfinished checkpoint is
    returned as it is (``result.finished`` is False) and a missing one gives
    ``None``. ``engine``: how training runs (:class:`kmt_ref.engine.Engine`).
    """
    config = run_config(scale, tokens, seed, **overrides)
    results_dir = check_output_dir(results_dir or default_results_dir())
    path = checkpoint_path(scale, tokens, seed, results_dir, **overrides)
    committed = checkpoint_path(scale, tokens, seed, RESULTS_DIR, **overrides)
    result, found = None, None
    if os.path.exists(path):
        result, found = _loaded(path, config), path
    elif os.path.exists(committed):
        # A committed run of another protocol (e.g. a scale changed for a test) is not this run.
        candidate = load_result(committed)
        if candidate.config == config:
            result, found = candidate, committed
    if result is not None:
        if result.finished or not train_missing:
            return result
        if found == committed:
            os.makedirs(os.path.dirname(check_output_dir(path)), exist_ok=True)
            shutil.copyfile(committed, path)
        _announce(progress, f"resuming {tokens} seed {seed} at step {result.step} of {config.n_steps}", path)
        return train(config, path, resume=True, progress=progress, engine=engine)
    if not train_missing:
        return None
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _announce(progress, f"training {tokens} seed {seed}: {config.n_steps} steps", path)
    return train(config, path, progress=progress, engine=engine)


def _announce(progress, what, path):
    if progress:
        print(f"{what} (at the paper's scale about an hour per model on one core; Ctrl-C saves and stops) "
              f"-> {path}", file=sys.stderr, flush=True)


def _models(scale, tokens, results_dir, train_missing, progress, seeds=None, engine=None, **overrides):
    # Finished or not, every model found is evaluated (``_status`` records how far each got).
    seeds = SCALES[scale]["seeds"] if seeds is None else seeds
    if train_missing and engine is not None and engine.client is not None:
        # On a cluster: the missing models trained there first, one job each, all at once.
        run_jobs(train_jobs(scale, seeds, (tokens,), [overrides]), results_dir or default_results_dir(),
                 engine.client, progress, options=dict(threads=engine.threads))
    out = []
    for seed in seeds:
        r = trained(scale, tokens, seed, results_dir, train_missing, progress, engine, **overrides)
        if r is not None:
            out.append(r)
    if not out:
        raise ValueError(f"no trained {tokens} models {overrides or ''} for scale={scale!r} under {results_dir}")
    return out


def _finite(values):
    return [None if not np.isfinite(v) else float(v) for v in values]


def _curves(models, n_steps, n_tasks, reembed=True, progress=True, engine=None, **task_options):
    """Per-seed model and Lloyd curves on each seed's held-out tasks: one job per seed
    (:func:`evaluate_job`), on the engine's Dask client if it has one.

    A ``k`` among ``task_options`` runs every model with that many centers
    (:meth:`~kmt_ref.learning.model.ModelConfig.at_k`).
    """
    engine = Engine() if engine is None else engine
    jobs = [evaluate_job_of(r, n_steps, n_tasks, reembed, task_options) for r in models]
    results = run_jobs(jobs, None, engine.client,
                       options=dict(threads=engine.threads, reference=engine.reference, progress=progress))
    return tuple(np.array([r[key] for r in results]) for key in ("model", "lloyd", "finite"))


def evaluate_job_of(result, n_steps, n_tasks, reembed=True, task_options=None):
    """The :class:`~kmt_ref.programs.jobs.Job` that evaluates the model of ``result`` (a
    :class:`~kmt_ref.learning.train.TrainResult` read from its checkpoint) as :func:`evaluate_job` does.

    A committed checkpoint is named relative to the committed results, so that a worker finds it in its own
    installation; any other by its absolute path (the workers must see it).
    """
    if result.path is None:
        raise ValueError("only a model with a checkpoint (TrainResult.path) can be evaluated as a job")
    path = os.path.abspath(result.path)
    inside = os.path.commonpath([path, os.path.abspath(RESULTS_DIR)]) == os.path.abspath(RESULTS_DIR)
    inputs = dict(checkpoint=os.path.relpath(path, RESULTS_DIR) if inside else path, committed=inside,
                  step=int(result.step), n_steps=int(n_steps), n_tasks=int(n_tasks), reembed=bool(reembed),
                  task_options=dict(task_options or {}))
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return Job("evaluate", f"seed{result.config.seed}-{digest}", inputs)


def evaluate_job(directory, checkpoint, committed, step, n_steps, n_tasks, reembed, task_options, threads=1,
                 reference=False, progress=False):
    """One model evaluated, as a job (:mod:`kmt_ref.programs.jobs`): its log-objective curve over ``n_steps``
    layers, the fraction of tasks with finite centers, and Lloyd's curve, on ``n_tasks`` held-out tasks of its
    seed (:func:`~kmt_ref.learning.evaluate.evaluation_tasks` with ``task_options``).

    The model is read from ``checkpoint`` (relative to the committed results if ``committed``), which must
    be at ``step`` (the model the job was made for). ``threads``, ``reference``: the
    :class:`~kmt_ref.engine.Engine` it runs on. ``directory`` is unused: the result is returned, not kept
    (an evaluation takes minutes and depends on the code as much as on the model).
    """
    r = load_result(os.path.join(RESULTS_DIR, checkpoint) if committed else checkpoint)
    if r.step != step:
        raise ValueError(f"{checkpoint} is at step {r.step}, not at step {step} as when the job was made")
    if progress:
        what = ", ".join(f"{k}={v}" for k, v in task_options.items()) or "training distribution"
        print(f"  evaluating seed {r.config.seed}: {n_tasks} tasks ({what}), {n_steps} steps"
              f"{'' if reembed else ', no re-embedding'}", file=sys.stderr, flush=True)
    X, init = evaluation_tasks(r.config, n_tasks, **task_options)
    model = r.config.model.at_k(task_options.get("k", r.config.k))
    curve, finite = model_curve(r.theta, model, X, init, n_steps, reembed=reembed,
                                 engine=Engine(threads, reference))
    return dict(model=curve.tolist(), lloyd=lloyd_curve(X, init, n_steps)[0].tolist(), finite=finite.tolist())


def _summary(curves):
    s = summarize(curves)
    return {k: _finite(v) for k, v in s.items()}


def _status(models):
    return dict(
        n_seeds=len(models), seeds=[r.config.seed for r in models], n_steps=models[0].config.n_steps,
        steps_done=[int(r.step) for r in models], partial=not all(r.finished for r in models),
        train_wall_time=[float(r.wall_time) for r in models],
    )


def learning(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Learned (d+k tokens) vs Lloyd over 20 steps, with and without re-embedding."""
    s = SCALES[scale]
    models = _models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    m, ll, _ = _curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    m_raw, _, finite_raw = _curves(models, s["n_eval_steps"], s["eval_tasks"], reembed=False, progress=progress,
                                   engine=engine)
    return dict(
        **_status(models),
        lloyd=_summary(ll), learned=_summary(m), learned_no_reembed=_summary(m_raw),
        no_reembed_finite_fraction=np.min(finite_raw, axis=0).tolist(),
        lloyd_log_objective=float(np.median(ll[:, -1])),
        learned_log_objective=float(np.median(m[:, -1])),
        lloyd_final=_finite(ll[:, -1]), learned_final=_finite(m[:, -1]),
        val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
    )


def ablation(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """The d-only model (no id/assignment block) vs Lloyd."""
    s = SCALES[scale]
    models = _models(scale, "d", results_dir, train_missing, progress, seeds, engine)
    m, ll, _ = _curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    return dict(
        **_status(models), lloyd=_summary(ll), d_only=_summary(m),
        lloyd_log_objective=float(np.median(ll[:, -1])),
        d_only_log_objective=float(np.median(m[:, -1])),
        lloyd_final=_finite(ll[:, -1]), d_only_final=_finite(m[:, -1]),
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
        models = _models(scale, "d+k", results_dir, train_missing, progress, seeds, engine, **overrides)
        m, ll, _ = _curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
        out[arithmetic] = dict(**_status(models), curve=_summary(m), final=_finite(m[:, -1]),
                               val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
                               seconds_per_step=[float(r.wall_time / max(1, r.step)) for r in models])
        out["lloyd"] = dict(seeds=[r.config.seed for r in models], final=_finite(ll[:, -1]))
    if out["float32"]["seeds"] != out["float64"]["seeds"]:
        raise ValueError(f"float32 models for seeds {out['float32']['seeds']} but float64 ones for "
                         f"{out['float64']['seeds']}: compare the same seeds (--seeds)")
    status = dict(_status(models), partial=out["float64"]["partial"] or out["float32"]["partial"])
    return dict(**status, **out)


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
    models = _models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
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
    m, ll, _ = _curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine)
    return dict(
        **_status(models), dropout=EVAL_DROPOUT,
        lloyd=_summary(ll), learned=_summary(m), learned_dropout=_summary(with_dropout),
        lloyd_log_objective=float(np.median(ll[:, -1])),
        learned_log_objective=float(np.median(m[:, -1])),
        learned_dropout_log_objective=float(np.median(with_dropout[:, -1])),
        lloyd_final=_finite(ll[:, -1]), learned_final=_finite(m[:, -1]),
        learned_dropout_final=_finite(with_dropout[:, -1]),
    )


def _shift(scale, results_dir, train_missing, progress, seeds, engine, variants):
    s = SCALES[scale]
    models = _models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    out = _status(models)
    for name, options in variants.items():
        m, ll, _ = _curves(models, s["n_eval_steps"], s["eval_tasks"], progress=progress, engine=engine, **options)
        out[name] = dict(
            options=options, lloyd=_summary(ll), learned=_summary(m),
            lloyd_log_objective=float(np.median(ll[:, -1])),
            learned_log_objective=_finite([np.median(m[:, -1])])[0],
            lloyd_final=_finite(ll[:, -1]), learned_final=_finite(m[:, -1]),
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
    return _training_panels(scale, window, lambda tokens, overrides: _models(
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
                        tokens=tokens, **overrides, **_status(models),
                        val_step=np.asarray(models[0].history["val_step"]).tolist(),
                        val_ratio=_summary([r.history["val_ratio"] for r in models]),
                        train_loss_step=((np.arange(len(models[0].history["train_loss"]) // window) + 1)
                                         * window).tolist(),
                        train_loss=_summary([_windowed(r.history["train_loss"], window) for r in models]),
                        val_ratio_final=[float(r.history["val_ratio"][-1]) for r in models],
                    )
                rows.append(done[key])
        panels[panel] = rows
    first = next(iter(done.values()))
    setting = dict(SCALES[scale].get("train", {}), n_steps=SCALES[scale]["n_steps"])
    return dict(seeds=first["seeds"], setting=setting, window=window, panels=panels)


def weights(scale="quick", results_dir=None, train_missing=True, progress=True, seeds=None, engine=None):
    """Learned weights (every seed) summarized next to the construction."""
    models = _models(scale, "d+k", results_dir, train_missing, progress, seeds, engine)
    return dict(**_status(models), per_seed=[weight_summary(r.theta, r.config.model) for r in models])


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
