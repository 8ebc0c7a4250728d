"""An Engine says how a model runs, never what it computes.

(That the reference engine computes the fast engine's numbers is tested per model in test_kernels.py and for the
training gradient in test_learning_model.py and test_learning_tied.py.)
"""

import dataclasses

import autograd
import numpy as np
import pytest

import kmt_ref
from kmt_ref.engine import LABELS, REFERENCE, Engine
from kmt_ref.learning import ModelConfig, init_params, to_transformer
from kmt_ref.learning.config import TrainConfig
from kmt_ref.learning.train import batch_loss, train


def _tasks(seed=8, B=5, n=40, d=3, k=4):
    X = np.random.default_rng(seed).normal(size=(B, n, d))
    return X, X[:, :k] + 0.05


def _construction_run(engine):
    X, init = _tasks()
    t = kmt_ref.lloyd_transformer(3, 4, 1e4).run(X, init, 3, engine=engine)
    return t.centers, t.labels, t.assignments


def _learned_run(engine):
    X, init = _tasks()
    config = ModelConfig(3, 4)
    t = to_transformer(init_params(config, np.random.default_rng(8)), config).run(X, init, 3, reembed=True,
                                                                                  engine=engine)
    return t.centers, t.labels, t.assignments


def _gradient(engine):
    X, init = _tasks(B=6, n=30, d=4, k=3)
    cfg = TrainConfig(d=4, k=3, n=30, batch=6)
    value, grad = autograd.value_and_grad(batch_loss)(init_params(cfg.model, np.random.default_rng(0)), X, init,
                                                      cfg, engine)
    return np.array(value), grad


def _training(engine):
    # Validation tasks (9, not a multiple of the batch) are split across the threads too.
    config = TrainConfig(d=2, k=3, n=30, batch=4, n_steps=20, eval_every=5, val_tasks=9, seed=2)
    r = train(config, progress=False, engine=engine)
    return (r.theta, *(np.asarray(v) for v in r.history.values()))


WORKLOADS = {"construction run": _construction_run, "learned run": _learned_run,
             "training-loss gradient": _gradient, "training run": _training}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_results_do_not_depend_on_the_thread_count(name):
    one, two = WORKLOADS[name](Engine(1)), WORKLOADS[name](Engine(2))
    assert len(one) == len(two)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_engine_is_a_frozen_validated_value():
    assert Engine() == Engine(1) != Engine(2) and REFERENCE.reference and not Engine().reference
    with pytest.raises(dataclasses.FrozenInstanceError):
        Engine().threads = 2
    with pytest.raises(ValueError, match="threads=0"):
        Engine(0)
    with pytest.raises(ValueError, match="threads must be an integer"):
        Engine(1.5)


def test_the_default_run_computes_the_blocks_and_the_labels_run_is_named():
    # A model's run at gamma = inf computes its four blocks on tokens unless the caller names the labels run.
    from kmt_ref.kernels import labels

    model = kmt_ref.lloyd_transformer(2, 3)
    X, init, _ = kmt_ref.gaussian_mixture(np.random.default_rng(3), n=60, d=2, k=3)
    calls = []
    original = labels.LabelLayer.step

    def counted(self, *args):
        calls.append(1)
        return original(self, *args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(labels.LabelLayer, "step", counted)
        blocks = model.run(X, init, 3)
        assert calls == []
        named = model.run(X, init, 3, engine=LABELS)
        assert len(calls) == 3
    np.testing.assert_array_equal(blocks.labels, named.labels)
    np.testing.assert_allclose(blocks.centers, named.centers, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="choose one"):
        Engine(reference=True, labels=True)


def test_a_labels_run_wrong_by_one_part_in_a_million_fails_only_verify_s_labels_rows(monkeypatch):
    # The theorem rows run the blocks: a wrong labels run must not be able to pass or fail them.
    from kmt_ref.kernels import labels
    from kmt_ref.programs import verify

    original = labels.LabelLayer.step

    def wrong(self, queries, values, kept, Q):
        Q, assigned, shared = original(self, queries, values, kept, Q)
        Q[..., self.x] *= 1 + 1e-6
        return Q, assigned, shared

    monkeypatch.setattr(labels.LabelLayer, "step", wrong)
    failing = {}
    for title, section in verify.SECTIONS.items():
        if section in (verify.theorem21_rows, verify.theorem22_rows, verify.certificate_rows, verify.labels_rows):
            failing[title] = [r for r in section(quick=True) if r.expect is True and not r.holds]
    labels_title = next(t for t, s in verify.SECTIONS.items() if s is verify.labels_rows)
    assert {t for t, rows in failing.items() if rows} == {labels_title}
    assert len(failing[labels_title]) == len(verify.labels_rows(quick=True))  # every labels row


def test_bench_sets_the_engines_side_by_side_and_names_the_labels_run_in_its_grid():
    from kmt_ref.engine import LABELS
    from kmt_ref.programs import bench

    assert all(engine is LABELS for name, (_, gamma, engine) in bench.GRID_MODELS.items() if np.isinf(gamma))
    assert {engine for _, _, engine in bench.ENGINE_MODELS.values()} == {None, LABELS}
    rows = bench.run_grid({"n": (300,), "k": (3,), "d": (2,)}, n_iter=2, models=bench.ENGINE_MODELS)
    assert set(rows[0]["ratios"]) >= {"2.1 blocks", "2.1 labels run", "2.2 blocks", "2.2 labels run"}
    assert all(v["target"] is None for v in bench.grid_verdicts(rows) if "scikit" not in v["name"])


def test_bench_engines_needs_the_grid(capsys):
    from kmt_ref.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(["bench", "--engines", "--quick"])
    assert stop.value.code == 2 and "--engines is a grid of its own" in capsys.readouterr().err
