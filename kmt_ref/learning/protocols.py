"""The learning experiments' protocols, and a reader of the results committed with the package.

A *scale* is a protocol (steps, seeds, held-out tasks); a *run* is one model of
a scale, named by its token layout, seed and the options it changes
(:func:`run_config`, :func:`checkpoint_path`). The experiments themselves
(``python -m kmt_ref reproduce ...``) live above the library, in
``kmt_ref.programs``; what they computed is committed under
``kmt_ref/results/learning`` and read here, so that the book, the plots and
the workbook read results without importing the programs that made them.

Scales: ``"paper"`` is the authors' protocol (10,000 steps, batch 32, 320
held-out tasks, 20 evaluation steps, seeds 0-9, or as many as are trained);
``"quick"`` is one seed and a few hundred steps on fewer evaluation tasks,
enough to show the trend on a laptop in minutes; ``"figures"`` (only for
``training-curves``, the paper's Figures 9 and 10) is 128 points per task,
batches of 8 and 2,000 steps, seeds 0 and 1; ``"beyond"`` (the experiments
beyond the paper: ``any-k``, ``multi-step``, ``real-data``) is 128 points
per task, batches of 8, the authors' 10,000 steps and seeds 0-2.
"""

import os

import numpy as np

from .._paths import COMMITTED_RESULTS, read_json
from .._validation import check_choice
from .config import TrainConfig
from .train import load_result

__all__ = ["SCALES", "OVERRIDABLE", "RESULTS_DIR", "PAPER_LEARNING", "run_config", "run_name", "checkpoint_path",
           "soft_kmeans_headline", "soft_kmeans_final",
           "committed", "committed_model", "learning_headline"]

#: Protocol of each scale (``"train"``: optional TrainConfig overrides, e.g. for tests).
SCALES = {
    "quick": dict(n_steps=300, seeds=(0,), eval_tasks=64, val_tasks=64, n_eval_steps=20,
                  gen_n=(128, 256, 1024)),
    "paper": dict(n_steps=10_000, seeds=tuple(range(10)), eval_tasks=320, val_tasks=320,
                  n_eval_steps=20, gen_n=(128, 256, 1024, 2048)),
    # The paper's training figures (9, 10a, 10b) at a stated reduced scale: 13 settings x 2 token layouts x 2 seeds
    # at the paper's protocol would take days on a CPU; at 128 points, batches of 8 and 2,000 steps
    # a model trains in well under a minute.
    "figures": dict(n_steps=2_000, seeds=(0, 1), eval_tasks=64, val_tasks=64, n_eval_steps=20,
                    train=dict(n=128, batch=8)),
    # Beyond the paper: 33 models (tied, [x], standard at four k, multi-step) on one core in under two
    # hours; a model trains in about three minutes.
    "beyond": dict(n_steps=10_000, seeds=(0, 1, 2), eval_tasks=64, val_tasks=64, n_eval_steps=20,
                   train=dict(n=128, batch=8)),
}

#: Training options a run may change from its scale's protocol (``train --n ...``).
OVERRIDABLE = ("n", "d", "k", "tau", "n_steps", "lr", "tied", "symmetric", "n_layers", "loss_on", "precision",
               "perturb")

#: The paper's reported mean log objectives after 20 steps (its text and Fig. 4a, 4b).
PAPER_LEARNING = dict(lloyd_log_objective=5.25, learned_log_objective=5.0, d_only_log_objective=5.35)

#: Committed results, shipped inside the package (``kmt_ref/results/learning``): read-only.
#:
#: :meta hide-value:
RESULTS_DIR = os.path.join(COMMITTED_RESULTS, "learning")


def run_config(scale, tokens="d+k", seed=0, **overrides):
    """The :class:`~kmt_ref.learning.config.TrainConfig` of one model of a scale, with ``overrides`` of
    :data:`OVERRIDABLE`."""
    s = SCALES[check_choice(scale, "scale", SCALES)]
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise ValueError(f"overrides must be among {OVERRIDABLE}; got {unknown}")
    options = dict(s.get("train", {}), n_steps=s["n_steps"], val_tasks=s["val_tasks"])
    options.update(overrides)
    return TrainConfig(tokens=tokens, seed=seed, **options)


def run_name(scale, **overrides):
    """The folder of a scale's runs: ``"paper"``, or e.g. ``"paper-k6-tau0.25"``, ``"beyond-tied"`` with overrides."""
    def part(key, value):
        if isinstance(value, bool):
            return key if value else f"not{key}"
        return f"{key}_{value}" if isinstance(value, str) else f"{key}{value:g}"
    return "-".join([scale] + [part(key, value) for key, value in sorted(overrides.items())])


def checkpoint_path(scale, tokens, seed, results_dir=None, **overrides):
    """Where the checkpoint of one run is (under ``results_dir``; ``None``: the committed results,
    :data:`RESULTS_DIR`)."""
    name = {"d+k": "dk", "d": "d"}[check_choice(tokens, "tokens", ("d+k", "d"))]
    return os.path.join(RESULTS_DIR if results_dir is None else results_dir, run_name(scale, **overrides),
                        f"{name}-seed{seed}.npz")


def committed(name, scale):
    """The committed result of an experiment at a scale: the JSON that ``reproduce name --scale`` wrote."""
    path = os.path.join(RESULTS_DIR, check_choice(scale, "scale", SCALES), f"{name}.json")
    if not os.path.exists(path):
        raise ValueError(f"no committed {scale} result for {name!r} (looked for {path})")
    return read_json(path)


def committed_model(scale, tokens, seed, **overrides):
    """The committed model of one run (:class:`~kmt_ref.learning.train.TrainResult`, finished or not); a
    checkpoint trained under another configuration than the run's (:func:`run_config`) is refused."""
    path = checkpoint_path(scale, tokens, seed, **overrides)
    result, config = load_result(path), run_config(scale, tokens, seed, **overrides)
    if result.config != config:
        raise ValueError(f"{path} holds config {result.config}, expected {config}")
    return result


def _final_range(summary):
    """``[min, max]`` over seeds after the last evaluation step."""
    return [summary["min"][-1], summary["max"][-1]]


def learning_headline(results_dir=None, scales=("paper", "quick")):
    """The headline numbers of the first of ``scales`` that has results under ``results_dir`` (``None``: the
    committed results, :data:`RESULTS_DIR`).

    The learning experiment (tokens ``[x | y]``) and its ablation (``[x]``),
    beside the paper's values (:data:`PAPER_LEARNING`). The
    ``*_log_objective`` values are medians over seeds after the last
    evaluation step; ``*_log_objective_range`` are ``[min, max]`` over seeds;
    ``*_final`` are the per-seed values, in the order of ``seeds`` (each seed
    evaluates its models and Lloyd on the same held-out tasks, so the learned and
    the ``[x]``-only model compare with Lloyd seed by seed; results written
    before 0.7.0 lack them and give ``None``).
    """
    results_dir = RESULTS_DIR if results_dir is None else results_dir
    for scale in scales:
        paths = {e: os.path.join(results_dir, scale, f"{e}.json") for e in ("learning", "ablation")}
        if os.path.exists(paths["learning"]):
            res = {}
            for e, p in paths.items():
                if os.path.exists(p):
                    res[e] = read_json(p)
            lrn, abl = res["learning"], res.get("ablation", {})
            out = dict(
                scale=scale,
                lloyd_log_objective=lrn["lloyd_log_objective"],
                learned_log_objective=lrn["learned_log_objective"],
                d_only_log_objective=abl.get("d_only_log_objective"),
                lloyd_log_objective_range=_final_range(lrn["lloyd"]),
                learned_log_objective_range=_final_range(lrn["learned"]),
                d_only_log_objective_range=_final_range(abl["d_only"]) if abl else None,
                lloyd_final=lrn.get("lloyd_final"), learned_final=lrn.get("learned_final"),
                d_only_final=abl.get("d_only_final"),
                n_seeds=lrn["n_seeds"], seeds=lrn["seeds"], d_only_seeds=abl.get("seeds"), n_steps=lrn["n_steps"],
                steps_done=lrn["steps_done"], d_only_steps_done=abl.get("steps_done"),
                partial=bool(lrn["partial"] or abl.get("partial", False)),
                paper=dict(PAPER_LEARNING),
                git_revision=lrn["git_revision"],
            )
            notes = []
            if out["partial"]:
                notes.append("PARTIAL: some models stopped before n_steps (see steps_done); "
                             "numbers are from their last checkpoints")
            if not abl:
                notes.append(f"no d-only (ablation) results at scale {scale!r}")
            planned = len(SCALES[scale]["seeds"]) if scale in SCALES else None
            out["planned_seeds"] = planned
            if planned is not None and out["n_seeds"] < planned:
                notes.append(f"{out['n_seeds']} of the {planned} planned seeds evaluated so far")
            if notes:
                out["note"] = "; ".join(notes)
            return out
    raise FileNotFoundError(f"no committed learning results under {results_dir}")


def soft_kmeans_final(config, beta, scale):
    """Soft k-means at stiffness ``beta`` on the held-out tasks of the run of ``config``
    (:func:`~kmt_ref.learning.evaluate.evaluation_tasks`, as many as ``scale`` evaluates), from their
    initial centers, for the scale's evaluation steps: the mean log objective after them."""
    from ..variants.soft import soft_kmeans
    from .evaluate import evaluation_tasks, log_objective_curve

    s = SCALES[check_choice(scale, "scale", SCALES)]
    X, init = evaluation_tasks(config, s["eval_tasks"])
    C = np.array([soft_kmeans(x, c, s["n_eval_steps"], beta, keep_assignments=False).centers[-1]
                  for x, c in zip(X, init, strict=True)])
    return float(log_objective_curve(X, C[None])[0][0])


def soft_kmeans_headline(scale="paper"):
    """Soft k-means beside the headline: at the one stiffness the committed interpret experiment chose on
    training tasks (``soft_beta``), from the same initial centers, on the same held-out tasks of every seed
    as the learning experiment (:func:`soft_kmeans_final` of each committed run), for the same number of
    steps. Computed, not read: about 16 s at the paper scale.

    Returns
    -------
    dict
        ``beta``, ``seeds``, ``final`` (per seed, the mean log objective after the steps), ``median`` and
        ``range`` over the seeds.
    """
    check_choice(scale, "scale", ("paper", "quick"))
    beta, seeds = committed("interpret", scale)["soft_beta"], list(SCALES[scale]["seeds"])
    final = [soft_kmeans_final(committed_model(scale, "d+k", seed).config, beta, scale) for seed in seeds]
    return dict(beta=beta, seeds=seeds, final=final, median=float(np.median(final)),
                range=[min(final), max(final)])

