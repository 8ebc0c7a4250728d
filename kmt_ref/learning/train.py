"""Resumable training of the one-layer k-means transformer.

Each step draws a fresh batch of tasks, applies ONE layer from the tasks'
initial centers, and takes an Adam step on the smoothed k-means objective of
the resulting centers. Every ``eval_every`` steps the model is validated on
fixed held-out tasks: the *validation ratio* is the mean, over those tasks,
of (objective after the layer) / (objective after one Lloyd step); the
learning rate is halved when it plateaus.

Randomness: ``SeedSequence(seed)`` spawns three independent streams -- model
initialization, validation tasks, training batches. The training generator's
state is saved in every checkpoint, so a resumed run draws exactly the
batches an uninterrupted run would have drawn and ends with identical
parameters (tested).
"""

import os
import time
import warnings
from dataclasses import dataclass

import autograd
import autograd.numpy as anp
import numpy as np

from .._paths import check_not_committed, check_writable
from .._validation import check_instance, check_int
from ..classical import lloyd
from ..engine import Engine
from ..objective import kmeans_objective
from ..tasks import draw_tasks, sample_tasks
from .checkpoint import (
    check_checkpoint_dir,
    checkpoint_lock,
    load_checkpoint,
    save_checkpoint,
    stale_partial_save,
)
from .config import TrainConfig
from .loss import smoothed_objective
from .model import forward, init_params
from .optim import AdamState, PlateauState, adam_step, plateau_step
from .progress import Progress

__all__ = ["TrainResult", "TrainState", "train", "load_result", "validation_tasks", "batch_loss"]


@dataclass
class TrainResult:
    """Outcome of :func:`train`: final parameters, history and bookkeeping; ``path``: its checkpoint, if any."""

    theta: np.ndarray
    config: TrainConfig
    step: int
    history: dict
    wall_time: float
    finished: bool
    path: str | None = None


def _streams(seed):
    init_ss, val_ss, train_ss = np.random.SeedSequence(seed).spawn(3)
    return np.random.default_rng(init_ss), np.random.default_rng(val_ss), np.random.default_rng(train_ss)


def validation_tasks(config):
    """The run's held-out validation tasks and their Lloyd objectives after ``config.n_layers`` steps."""
    _, val_rng, _ = _streams(config.seed)
    X, init = sample_tasks(val_rng, config.val_tasks, **config.task_kwargs())
    return X, init, kmeans_objective(X, lloyd(X, init, config.n_layers).centers[-1])


def batch_loss(theta, X, init, config, engine=None):
    """Mean smoothed objective of the centers after ``config.n_layers`` layers (the training loss).

    ``engine``: how the layer is computed (see :func:`~kmt_ref.learning.model.forward`). With
    ``config.precision == "float32"`` the pass runs on float32 parameters (their gradient comes back
    float64).
    """
    if config.precision == "float32":
        theta = theta.astype(np.float32)
    if config.loss_on == "every":
        steps = forward(theta, X, init, config.model, engine, n_layers=config.n_layers, every_step=True)
        return sum(anp.mean(smoothed_objective(X, C, config.tau)) for C in steps) / len(steps)
    centers = forward(theta, X, init, config.model, engine, n_layers=config.n_layers)
    return anp.mean(smoothed_objective(X, centers, config.tau))


_value_and_grad = autograd.value_and_grad(batch_loss)


def _validate(theta, config, val, engine):
    """Validation ratio (mean of per-task objective / Lloyd objective) and mean objective."""
    X, init, lloyd_obj = val
    B = config.batch

    def objectives(tasks):  # a task's objective does not depend on the tasks it is batched with
        batches = [slice(i, min(i + B, tasks.stop)) for i in range(tasks.start, tasks.stop, B)]
        return [kmeans_objective(X[b], forward(theta, X[b], init[b], config.model, n_layers=config.n_layers))
                for b in batches]

    obj = np.concatenate([o for part in engine.map_tasks(objectives, X.shape[0]) for o in part])
    return float(np.mean(obj / lloyd_obj)), float(np.mean(obj))


@dataclass(frozen=True)
class TrainState:
    """A run between two steps: all it needs to continue, and what a checkpoint holds.

    A step makes a new state and leaves the old one's values as they were
    (``adam_step`` and ``plateau_step`` return new optimizer states, the
    generator travels as its state), so the state last assigned is consistent
    whenever Ctrl-C arrives and can be saved as it is. The ``history`` lists
    are append-only and shared between states; :meth:`checkpoint` cuts them to
    ``step``.
    """

    theta: np.ndarray
    adam: AdamState
    plateau: PlateauState
    lr: float
    step: int
    rng_state: dict
    wall_time: float
    history: dict

    @classmethod
    def fresh(cls, config):
        """The state before the first step of ``config``'s run."""
        init_rng, _, train_rng = _streams(config.seed)
        theta = init_params(config.model, init_rng)
        if config.perturb:  # a factor within a few ulps of 1: the same draw, rounded differently
            theta = theta * (1.0 + config.perturb * 2.0**-52)
        return cls(theta=theta, adam=AdamState.zeros(theta.size), plateau=PlateauState(), lr=config.lr, step=0,
                   rng_state=train_rng.bit_generator.state, wall_time=0.0,
                   history=dict(train_loss=[], val_step=[], val_ratio=[], val_objective=[], val_lr=[]))

    @classmethod
    def load(cls, path, config):
        """The state a checkpoint of ``config``'s run holds (``ValueError`` if it is another run's)."""
        arrays, meta = load_checkpoint(path)
        # A field added after a checkpoint was written takes its default (the behaviour it was written with).
        saved = dict(TrainConfig().to_dict(), **meta.get("config", {}))
        mismatch = {k: (saved.get(k), v) for k, v in config.to_dict().items() if saved.get(k) != v}
        mismatch.update({k: (v, None) for k, v in saved.items() if k not in config.to_dict()})
        if mismatch:
            detail = ", ".join(f"{k}: checkpoint={a!r} vs config={b!r}" for k, (a, b) in sorted(mismatch.items()))
            raise ValueError(f"checkpoint {path!r} was written with a different config ({detail})")
        n_val = len(arrays["val_step"])
        history = dict(
            train_loss=list(arrays["train_loss"]), val_step=[int(s) for s in arrays["val_step"]],
            val_ratio=list(arrays["val_ratio"]), val_objective=list(arrays["val_objective"]),
            val_lr=list(arrays["val_lr"]),
        )
        if len(history["train_loss"]) != meta["step"] or any(len(history[k]) != n_val for k in history
                                                              if k.startswith("val")):
            raise ValueError(f"checkpoint {path!r} is inconsistent (history length vs step)")
        if "adam_m" in arrays:
            adam = AdamState(arrays["adam_m"].copy(), arrays["adam_v"].copy(), meta["adam_t"])
        elif meta["step"] == config.n_steps:  # finished: no step is left to take, the moments are never read
            adam = AdamState(np.zeros_like(arrays["theta"]), np.zeros_like(arrays["theta"]), meta["adam_t"])
        else:
            raise ValueError(f"checkpoint {path!r} has no optimizer moments but is not finished "
                             f"(step {meta['step']} of {config.n_steps}): it cannot be resumed")
        return cls(theta=arrays["theta"].copy(), adam=adam,
                   plateau=PlateauState(meta["plateau_best"], meta["plateau_bad"]), lr=meta["lr"],
                   step=meta["step"], rng_state=meta["rng_state"], wall_time=meta["wall_time"], history=history)

    def checkpoint(self, config):
        """``(arrays, meta)`` of a checkpoint file. A finished run keeps no optimizer moments: nothing
        continues from it."""
        h = self.history
        n_val = sum(1 for s in h["val_step"] if s <= self.step)  # a validation cut short by Ctrl-C is not kept
        arrays = dict(
            theta=self.theta, train_loss=np.array(h["train_loss"][: self.step]),
            val_step=np.array(h["val_step"][:n_val], dtype=int), val_ratio=np.array(h["val_ratio"][:n_val]),
            val_objective=np.array(h["val_objective"][:n_val]), val_lr=np.array(h["val_lr"][:n_val]),
        )
        if self.step < config.n_steps:
            arrays.update(adam_m=self.adam.m, adam_v=self.adam.v)
        meta = dict(
            format="kmt_ref.learning.checkpoint/1", config=config.to_dict(), step=self.step,
            adam_t=self.adam.t, lr=self.lr, plateau_best=self.plateau.best, plateau_bad=self.plateau.bad,
            rng_state=self.rng_state, wall_time=self.wall_time,
        )
        return arrays, meta


def _generator(state):
    """A generator continuing from a saved ``bit_generator.state``."""
    rng = np.random.Generator(np.random.PCG64())
    rng.bit_generator.state = state
    return rng


def train(config, checkpoint=None, resume=False, checkpoint_every=None, stop_at=None,
          progress=True, on_step=None, engine=None):
    """Train (or continue training) a model.

    Parameters
    ----------
    config : TrainConfig
    checkpoint : str, optional
        Path of the ``.npz`` checkpoint, written every ``checkpoint_every``
        steps, at the end, at ``stop_at`` and on Ctrl-C (KeyboardInterrupt).
    resume : bool
        Continue from ``checkpoint``, which must exist and have been written
        with the same ``config``. With ``resume=False`` an existing
        checkpoint is an error: a run never silently restarts over, or from,
        earlier work.
    checkpoint_every : int, optional
        Defaults to ``config.eval_every``.
    stop_at : int, optional
        Stop (after checkpointing) once this many steps are done; a later
        call with ``resume=True`` continues.
    progress : bool
        Progress bar on stderr.
    on_step : callable, optional
        ``on_step(step)`` after every completed step (used by tests to
        simulate an interruption).
    engine : Engine, optional
        How steps and validations are computed (:class:`kmt_ref.engine.Engine`,
        default ``Engine()``): its threads share a batch's tasks. The run's
        numbers do not depend on it, to the bit.

    Returns
    -------
    TrainResult
    """
    check_instance(config, "config", TrainConfig)
    engine = Engine() if engine is None else check_instance(engine, "engine", Engine)
    every = config.eval_every if checkpoint_every is None else check_int(checkpoint_every, "checkpoint_every", low=1)
    if checkpoint is None:
        return _train(config, None, resume, every, stop_at, progress, on_step, engine)
    checkpoint = check_not_committed(checkpoint, "checkpoint")
    check_checkpoint_dir(checkpoint)
    check_writable(checkpoint, "checkpoint", folder=False)
    with checkpoint_lock(checkpoint):
        return _train(config, checkpoint, resume, every, stop_at, progress, on_step, engine)


def _train(config, checkpoint, resume, every, stop_at, progress, on_step, engine):
    """:func:`train` with its arguments checked and, with a checkpoint, its lock held."""
    if checkpoint is not None:
        partial = stale_partial_save(checkpoint)
        if partial is not None:
            warnings.warn(f"{partial} is left over from a save that was interrupted; it is ignored "
                          f"({'the checkpoint itself is intact' if os.path.exists(checkpoint) else 'no checkpoint'}"
                          ") and will be overwritten", stacklevel=3)
    if resume:
        if checkpoint is None:
            raise ValueError("resume=True needs checkpoint=path")
        state = TrainState.load(checkpoint, config)
    else:
        if checkpoint is not None and os.path.exists(checkpoint):
            raise ValueError(
                f"checkpoint={checkpoint!r} exists: pass resume=True to continue it, "
                "or remove it to start over"
            )
        state = TrainState.fresh(config)
    val = validation_tasks(config)
    hist = state.history
    if not hist["val_step"]:
        ratio, obj = _validate(state.theta, config, val, engine)
        hist["val_step"].append(0), hist["val_ratio"].append(ratio)
        hist["val_objective"].append(obj), hist["val_lr"].append(state.lr)
    end = config.n_steps if stop_at is None else min(config.n_steps, check_int(stop_at, "stop_at", low=1))
    bar = Progress(config.n_steps, start=state.step) if progress else None
    tasks = config.task_kwargs()  # validated once, by TrainConfig
    t_start, wall0 = time.perf_counter(), state.wall_time
    try:
        while state.step < end:
            rng = _generator(state.rng_state)
            X, init = draw_tasks(rng, config.batch, init="first", **tasks)
            loss, grad = _value_and_grad(state.theta, X, init, config, engine)
            if not np.all(np.isfinite(grad)):
                raise FloatingPointError(f"non-finite gradient at step {state.step} (loss={loss})")
            theta, adam = adam_step(state.theta, grad, state.adam, state.lr)
            step, lr, plateau, validated = state.step + 1, state.lr, state.plateau, False
            hist["train_loss"].append(float(loss))
            if step % config.eval_every == 0 or step == config.n_steps:
                ratio, obj = _validate(theta, config, val, engine)
                hist["val_step"].append(step), hist["val_ratio"].append(ratio)
                hist["val_objective"].append(obj), hist["val_lr"].append(lr)
                if step < config.n_steps:
                    lr, plateau = plateau_step(ratio, plateau, lr, config.patience, config.lr_factor)
                validated = True
            state = TrainState(theta=theta, adam=adam, plateau=plateau, lr=lr, step=step,
                               rng_state=rng.bit_generator.state, history=hist,
                               wall_time=wall0 + time.perf_counter() - t_start)
            if checkpoint is not None and (step % every == 0 or step == end):
                save_checkpoint(checkpoint, *state.checkpoint(config))
            if bar is not None:
                bar.update(step, float(loss), hist["val_ratio"][-1], lr, validated)
            if on_step is not None:
                on_step(step)
    except KeyboardInterrupt:
        if checkpoint is not None:
            save_checkpoint(checkpoint, *state.checkpoint(config))
        raise
    finally:
        if bar is not None:
            bar.close()
    arrays, meta = state.checkpoint(config)
    if checkpoint is not None and state.step == 0:
        save_checkpoint(checkpoint, arrays, meta)
    return TrainResult(
        theta=arrays["theta"], config=config, step=meta["step"],
        history={k: v for k, v in arrays.items() if k not in ("theta", "adam_m", "adam_v")},
        wall_time=meta["wall_time"], finished=meta["step"] == config.n_steps, path=checkpoint,
    )


def load_result(path):
    """A :class:`TrainResult` from a checkpoint file (finished or not)."""
    arrays, meta = load_checkpoint(path)
    try:
        config = TrainConfig.from_dict(meta["config"])
    except (ValueError, TypeError) as err:
        raise ValueError(f"checkpoint {path!r} holds a config no run writes: {err}") from None
    if meta["step"] > config.n_steps:
        raise ValueError(f"checkpoint {path!r} is at step {meta['step']}, beyond its config's {config.n_steps}")
    return TrainResult(
        theta=arrays["theta"], config=config, step=meta["step"],
        history={k: v for k, v in arrays.items() if k not in ("theta", "adam_m", "adam_v")},
        wall_time=meta["wall_time"], finished=meta["step"] == config.n_steps, path=path,
    )
