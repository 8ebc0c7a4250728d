"""The models of the learning experiments: trained, resumed or loaded, and evaluated, as jobs.

:func:`trained` finds a model's checkpoint (this run's results, then the committed ones) and trains or resumes
it where needed; :func:`seed_models` does so for every seed of a protocol, on a Dask cluster when the engine
has one. :func:`train_job` and :func:`evaluate_job` are the two kinds of :mod:`~kmt_ref.programs.jobs` job
that the experiments (:mod:`~kmt_ref.programs.experiments`, :mod:`~kmt_ref.programs.beyond`,
:mod:`~kmt_ref.programs.dissection`, :mod:`~kmt_ref.programs.interpret`) are made of; :func:`curves` runs the
evaluations, :func:`summary` and :func:`status` put them into a result.
"""

import hashlib
import json
import os
import shutil
import sys
import zipfile

import numpy as np

from ..engine import Engine
from ..learning.evaluate import evaluation_tasks, lloyd_curve, model_curve, summarize
from ..learning.protocols import RESULTS_DIR, SCALES, checkpoint_path, run_config, run_name
from ..learning.train import load_result, train
from ._results import check_output_dir, output_dir
from .jobs import Job, run_jobs

__all__ = ["trained", "seed_models", "MissingModelsError", "curves", "finite", "summary", "status", "train_job",
           "train_job_holds", "train_jobs", "evaluate_job", "evaluate_job_of", "default_results_dir"]


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


class MissingModelsError(ValueError):
    """An experiment told not to train found none of the models it evaluates."""


def seed_models(scale, tokens, results_dir, train_missing, progress, seeds=None, engine=None, **overrides):
    # Finished or not, every model found is evaluated (``status`` records how far each got).
    seeds = SCALES[scale]["seeds"] if seeds is None else seeds
    if train_missing and engine is not None and engine.client is not None:
        # On a cluster: the missing models trained there first, one job each, all at once.
        run_jobs(train_jobs(scale, seeds, (tokens,), [overrides]), results_dir or default_results_dir(),
                 engine.client, progress, options=dict(threads=engine.threads))
    out, missing = [], []
    for seed in seeds:
        r = trained(scale, tokens, seed, results_dir, train_missing, progress, engine, **overrides)
        if r is None:
            missing.append(seed)
        else:
            out.append(r)
    if missing:
        what = f"no trained {tokens} model" + "".join(f", {key}={value!r}" for key, value in overrides.items())
        where = f"at the {scale} scale under {results_dir or default_results_dir()} or among the committed results"
        if overrides.get("perturb"):
            where += (" (the chaos reruns' checkpoints ship with the repository, not with the installed package: "
                      "pass a clone's kmt_ref/results/learning as --results-dir)")
        if not out:
            raise MissingModelsError(f"{what} {where} for seeds {missing}: train them, or run without --no-train")
        if progress:
            print(f"seeds {missing}: {what} {where}; evaluated without them", file=sys.stderr, flush=True)
    return out


def finite(values):
    return [None if not np.isfinite(v) else float(v) for v in values]


def curves(models, n_steps, n_tasks, reembed=True, progress=True, engine=None, **task_options):
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


def summary(curves):
    s = summarize(curves)
    return {k: finite(v) for k, v in s.items()}


def status(models):
    return dict(
        n_seeds=len(models), seeds=[r.config.seed for r in models], n_steps=models[0].config.n_steps,
        steps_done=[int(r.step) for r in models], partial=not all(r.finished for r in models),
        train_wall_time=[float(r.wall_time) for r in models],
    )
